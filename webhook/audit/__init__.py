"""`topospread audit`: the spread of what already runs, as kube-scheduler sees it.

The stages, in the order data flows (each imports only the ones before it):

state/      running pods, their workloads, the model's Snapshot (ClusterState), one reader;
measure/    each workload's constraints evaluated, PodDisruptionBudgets, deletion costs;
plan/       the fewest feasible moves after which nothing checked is violated;
drills/     nodes unreachable, drained or deleted, as the cluster's controllers handle them;
workloads/  scale and rollout drills, the controllers' own choices simulated;
act/        pure step decisions, the applier, the evictor (the one write path), the keeper;
report/     the JSON document and its text, PolicyReports, metrics;
pipeline    one audit, start to end;
serve/      the in-cluster loop and its HTTP endpoints.
"""

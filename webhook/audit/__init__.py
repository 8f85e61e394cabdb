"""`topospread audit`: the spread of what already runs, as kube-scheduler sees it.

inventory: running pods, their workloads, the model's Snapshot (ClusterState);
spread: each workload's constraints evaluated (domains, skew, violated);
plan: the fewest feasible moves after which nothing checked is violated;
whatif: what a drill reports, the queue that re-places recreated pods, nodes deleted;
drills: nodes unreachable (an outage) and nodes drained, as the cluster handles them;
budgets: PodDisruptionBudgets as the disruption controller and the Eviction API count;
report: the JSON document and the text a person reads.
"""

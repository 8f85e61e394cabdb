"""`topospread audit`: the spread of what already runs, as kube-scheduler sees it.

inventory: running pods, their workloads, the model's Snapshot (ClusterState);
spread: each workload's constraints evaluated (domains, skew, violated);
plan: the fewest feasible moves after which nothing checked is violated;
whatif: nodes removed and their pods re-placed (the zone-loss drill);
report: the JSON document and the text a person reads.
"""

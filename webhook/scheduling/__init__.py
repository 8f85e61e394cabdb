"""A port of kube-scheduler's PodTopologySpread plugin and the placement around it.

    snapshot.py   nodes, bound pods, workload objects; incremental matching counts
    common.py     constraints, node inclusion, counting, Go arithmetic
    filtering.py  PreFilter state and Filter (DoNotSchedule)
    scoring.py    PreScore state, Score, NormalizeScore (ScheduleAnyway)
    placement.py  place() / simulate(): every filter on every node, then a choice
    status.py     codes, reasons, MAX_NODE_SCORE

Pure: no I/O, no web framework, no Kubernetes client.
"""

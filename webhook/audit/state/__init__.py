"""Reading cluster state: running pods, their workloads, the model's Snapshot."""

"""The workload controllers of kube-controller-manager, and the deletion costs that keep a
spread."""

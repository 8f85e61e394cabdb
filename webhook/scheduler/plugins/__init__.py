"""kube-scheduler's in-tree plugins, one module or folder each."""

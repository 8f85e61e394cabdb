"""A pure port of kube-scheduler (pkg/scheduler): framework, plugins, config, placement."""

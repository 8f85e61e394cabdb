"""NodeResourcesFit and NodeResourcesBalancedAllocation
(pkg/scheduler/framework/plugins/noderesources)."""

"""NodeResourcesFit and NodeResourcesBalancedAllocation
(pkg/scheduler/framework/plugins/noderesources): the Filter, the scoring strategies and
the shared resource-allocation scorer."""

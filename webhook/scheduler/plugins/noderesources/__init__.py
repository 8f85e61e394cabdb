"""The NodeResourcesFit and NodeResourcesBalancedAllocation plugins
(pkg/scheduler/framework/plugins/noderesources)."""

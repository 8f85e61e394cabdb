"""Acting on the cluster: pure step decisions, the applier, the evictor (the one write
path for evictions) and the deletion-cost keeper."""

"""The PodTopologySpread plugin: constraints, Filter, Score."""

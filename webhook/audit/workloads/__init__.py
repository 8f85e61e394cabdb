"""Workload changes: scale-ups, scale-downs and rollouts as the controllers make them."""

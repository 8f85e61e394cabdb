"""Drills: nodes lost, drained or deleted, played as the cluster's controllers play them."""

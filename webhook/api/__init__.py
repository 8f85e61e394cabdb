"""Kubernetes API vocabulary: raw objects, field errors, names, selectors, constraints,
resources. Pure: imports nothing of ours above it."""

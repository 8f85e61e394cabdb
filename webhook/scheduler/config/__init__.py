"""Scheduler configuration: plugin args, their defaults and validation."""

"""Measuring what runs: each workload's spread, its disruption budgets, deletion costs."""

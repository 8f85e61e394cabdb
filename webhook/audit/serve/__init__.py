"""Serving: the audit loop and its HTTP endpoints."""

"""Reporting: the audit document and its text, PolicyReports, Prometheus metrics."""

"""Tests for webhook/scheduler/plugins/nodeports.py."""

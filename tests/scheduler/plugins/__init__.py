"""Tests for webhook/scheduler/plugins."""

"""Tests for webhook/scheduler/plugins/helper."""

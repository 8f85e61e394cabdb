"""Tests for webhook/scheduler/plugins/noderesources."""

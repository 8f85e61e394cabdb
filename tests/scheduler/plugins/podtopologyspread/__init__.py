"""Tests for webhook/scheduler/plugins/podtopologyspread."""

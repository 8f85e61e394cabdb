"""Tests for webhook/scheduler/config."""

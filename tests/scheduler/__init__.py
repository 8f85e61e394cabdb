"""Tests for webhook/scheduler."""

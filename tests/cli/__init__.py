"""Tests for webhook/cli."""

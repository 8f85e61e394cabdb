"""Tests for webhook/scheduler/plugins/imagelocality.py."""

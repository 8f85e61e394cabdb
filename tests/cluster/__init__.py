"""Tests for webhook/cluster."""

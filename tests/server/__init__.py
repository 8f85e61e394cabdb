"""Tests for webhook/server."""

"""Tests for webhook/api."""

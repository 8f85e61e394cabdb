"""Tests for webhook/validation."""

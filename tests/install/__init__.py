"""Tests for webhook/install."""

"""Tests for webhook/admission."""

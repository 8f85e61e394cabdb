"""Tests for webhook/scheduler/framework."""

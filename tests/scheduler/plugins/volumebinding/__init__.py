"""volumebinding tests."""

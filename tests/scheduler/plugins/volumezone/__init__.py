"""volumezone tests."""

"""volumerestrictions tests."""

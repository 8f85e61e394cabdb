"""InterPodAffinity tests."""

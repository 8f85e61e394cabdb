"""The scheduler framework: status codes, the read-only snapshot, the plugin runtime."""

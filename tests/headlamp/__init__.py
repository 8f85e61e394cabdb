"""What `make test-plugin` runs around the Headlamp plugin's own tests (headlamp-plugin/):
the audit documents its tests read, made by the real CLI, and its Storybook in Chromium."""

"""nodevolumelimits tests."""

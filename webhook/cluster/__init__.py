"""Where cluster state comes from: snapshot files, a live informer, static fakes."""

"""The `topospread` command line: one module per subcommand."""

"""The `loopguard` command: one module per subcommand family."""

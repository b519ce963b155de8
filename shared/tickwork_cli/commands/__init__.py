"""The `tickwork` commands, a module per noun: each module is named as its command is (`workflow_runs` is
`tickwork workflow-runs`) and has a `register(app)` that puts its group, or its one command, on the `tickwork` app
(tickwork_cli.main). What several nouns share is in tickwork_cli.options (option groups, `api_command`),
tickwork_cli.command_shapes and tickwork_cli.clock."""

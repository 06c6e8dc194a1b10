"""The operator side: what the `mesh` command is (CLI, launcher, console, traces)."""

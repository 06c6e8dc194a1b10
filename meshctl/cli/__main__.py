"""`python -m meshctl.cli` is the `mesh` command."""

from meshctl.cli.entry import main

main()

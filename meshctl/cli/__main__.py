"""`python -m meshctl.cli` is the `mesh` command."""

from meshctl.cli.app import main

main()

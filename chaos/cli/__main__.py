"""`python -m chaos.cli` is the `mesh` command."""

from chaos.cli.app import main

main()

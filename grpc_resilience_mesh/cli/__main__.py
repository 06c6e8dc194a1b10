"""`python -m grpc_resilience_mesh.cli` is the `mesh` command."""

from grpc_resilience_mesh.cli.entry import main

main()

"""`python -m grpc_resilience_mesh.embedded_toxiproxy` runs the server
(grpc_resilience_mesh.embedded_toxiproxy.server)."""

from grpc_resilience_mesh.embedded_toxiproxy.server import main

if __name__ == "__main__":
    raise SystemExit(main())

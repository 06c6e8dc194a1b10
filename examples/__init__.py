"""Services that are not the mesh's, protected by grpc_aio_resilience (run from the repo root)."""

"""A small key-value service and its client, each protected by grpc_aio_resilience."""

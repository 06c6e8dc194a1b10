"""Three grpc.aio services in a row, front -> middle -> back, each protected by the library."""

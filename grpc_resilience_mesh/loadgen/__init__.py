"""Load through the gateway: the line protocol (protocol.py), the generator process (generator.py
and its Go twin in grpc_resilience_mesh/loadgen/go), the runner's side that drives it
(in_process.py: the package's face), steady open-loop load (steady.py) and the one percentile
(percentile.py). Load on any method of a user's own services, in the caller's process, is
any_method/."""

"""Chaos experiments against a user's own gRPC topology: the files (model.py), the processes and
proxies a run starts (services.py, proxies.py), the run itself (run.py) and its report
(report.py). The built-in mesh's catalogue (grpc_resilience_mesh/chaos/experiment) is another
kind of experiment and is not touched by this package."""

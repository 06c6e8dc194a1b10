"""The mesh's resilience policy: the model (model.py), its loading (loading.py) and the
declared worker pool a server's policy adds to the library's (pool.py); the presets are the
YAML files beside it in grpc_resilience_mesh/services/policies/."""

"""The mesh's resilience policy: the model (model.py) and its loading (loading.py); the
presets are the YAML files beside it in services/mesh/policies/."""

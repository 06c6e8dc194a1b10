"""What two services agree on, in one place both can import: the charge-id rule (gateway and
payment) and the receipt job's shape (payment enqueues it, notification runs it). Imports only
leaves (`grpc_resilience_mesh.services.config_error`, `grpc_resilience_mesh.services.customers`,
`grpc_resilience_mesh.services.runtime.refusal`), never a service package; and the API's field rules
(fields.py) every servicer checks requests with, with their numbers (limits.py)."""

"""Span attribute and event names. `rpc.*` are OpenTelemetry's; `mesh.*` are this project's own.

| attribute              | on        | meaning                                            |
|------------------------|-----------|----------------------------------------------------|
| rpc.system             | Recv, Att | "grpc"                                             |
| rpc.service            | Recv, Att | e.g. "mesh.v1.ProfileService"                      |
| rpc.method             | Recv, Att | e.g. "GetProfile"                                  |
| rpc.grpc.status_code   | all spans | final gRPC status code (0 = OK)                    |
| mesh.dependency        | Sent      | the dependency this channel protects               |
| mesh.attempt           | Attempt   | 1-based attempt number                             |
| mesh.previous_attempts | Attempt   | attempts made before this one (A72)                |
| mesh.attempt_timeout_s | Attempt   | the attempt's own gRPC deadline                    |
| mesh.call_budget_s     | Sent      | time the call had left at its first attempt        |
| mesh.attempts_sent     | Sent      | attempts that reached the wire (0: rejected by us) |
| mesh.error_type        | Sent, Att | e.g. BreakerOpenError, AioRpcError                 |
| mesh.criticality       | Attempt   | the resilience-criticality the attempt carried           |
| mesh.degraded          | Recv      | true when a fallback answered part of the request  |
| mesh.degraded_parts    | Recv      | the dependencies a fallback stood in for           |
| mesh.fate              | Recv      | the call's fate (grpc_aio_resilience.fates), e.g. ok   |
| mesh.client_trace_id   | Recv      | trace id a public client sent (gateway, `link`)    |
| mesh.chaos.run_id      | Recv      | the chaos run that caused the call (W3C baggage)   |
"""

from __future__ import annotations

RPC_SYSTEM = "rpc.system"
RPC_SERVICE = "rpc.service"
RPC_METHOD = "rpc.method"
GRPC_STATUS_CODE = "rpc.grpc.status_code"

DEPENDENCY = "mesh.dependency"
ATTEMPT = "mesh.attempt"
PREVIOUS_ATTEMPTS = "mesh.previous_attempts"
ATTEMPT_TIMEOUT_S = "mesh.attempt_timeout_s"
CALL_BUDGET_S = "mesh.call_budget_s"
ATTEMPTS_SENT = "mesh.attempts_sent"
ERROR_TYPE = "mesh.error_type"
CRITICALITY = "mesh.criticality"
DEGRADED = "mesh.degraded"
DEGRADED_PARTS = "mesh.degraded_parts"
FATE = "mesh.fate"
CLIENT_TRACE_ID = "mesh.client_trace_id"
CHAOS_RUN_ID = "mesh.chaos.run_id"
"""Also the W3C baggage key a chaos run sends (`baggage: mesh.chaos.run_id=<id>`); baggage
carries it to every hop the call causes, and each SERVER span records it."""

# Event attributes.
METHOD = "mesh.method"
REASON = "mesh.reason"
CODE = "mesh.code"
DELAY_S = "mesh.delay_s"
PUSHBACK_S = "mesh.pushback_s"
STAGE = "mesh.stage"
DEADLINE_LEFT_S = "mesh.deadline_left_s"
CALLER_TIMEOUT_S = "mesh.caller_timeout_s"
FROM_STATE = "mesh.from_state"
BREAKER_STATE = "mesh.breaker_state"
BREAKER_SCOPE = "mesh.breaker_scope"
TIME_UNTIL_PROBE_S = "mesh.time_until_probe_s"
LIMIT = "mesh.limit"
WAITED_S = "mesh.waited_s"
SERVED_BY = "mesh.served_by"
IN_FLIGHT = "mesh.in_flight"
STREAM_OUTCOME = "mesh.stream_outcome"
CRITICALITY = "mesh.criticality"
SERVICE_S = "mesh.service_s"
EXPECTED_S = "mesh.expected_s"
MESSAGES = "mesh.messages"
PROBABILITY = "mesh.probability"
REQUESTS = "mesh.requests"
ACCEPTS = "mesh.accepts"

# Event names.
EV_RETRY_SCHEDULED = "retry scheduled"
EV_RETRY_SKIPPED = "retry skipped"
EV_PUSHBACK = "pushback received"
EV_DEADLINE_EXHAUSTED = "deadline exhausted"
EV_DEADLINE_CLAMPED = "deadline clamped"
EV_BREAKER = {0: "breaker closed", 1: "breaker half-opened", 2: "breaker opened"}
EV_BREAKER_REJECTED = "breaker rejected call"
EV_BULKHEAD_REJECTED = "bulkhead rejected"
EV_CLIENT_THROTTLED = "client throttled"
EV_FALLBACK = "fallback served"
EV_SHED = "call shed"
EV_FAULT = "fault injected"
EV_POOL_WORK = "pool work done"
EV_REPLICA_EJECTED = "replica ejected"
EV_REPLICA_RETURNED = "replica returned"
EV_STREAM_COMMITTED = "stream committed"
EV_STREAM_ENDED = "stream ended"

"""The names of the `traces` check's rules, apart from its declaration: the experiment model
(an expectation's `traces:` key, grpc_resilience_mesh/chaos/experiment/fault_kinds.py) checks a
file's rule against them without importing the declarations, which import the registry, whose
contexts name the experiment model (an import cycle). What breaks each rule: trace_rules.py."""

COUNTED_RULES = ("max_attempts_per_request",)
"""Trace rules that take a number, `{rule: N}`."""
FLAG_RULES = ("breaker_open_then_fallback", "no_attempt_after_deadline")
"""Trace rules that take none: the rule's name alone."""
RULES = COUNTED_RULES + FLAG_RULES
METRIC_PREFIX = "traces_broken."
"""Before a rule's name, the metric that counts the traces that broke it."""

"""grpc_aio_resilience: Polly-style resilience for grpc.aio, one pipeline per dependency.

    import grpc_aio_resilience as resilience
    channel = resilience.insecure_channel("localhost:50051", resilience.EdgePolicy())

The names below are the library's face (as httpx's `__init__`); each lives in the module the
table says. They load on first use (PEP 562), so importing one small module of the package
(`grpc_aio_resilience.classify`, say) does not import the whole library with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grpc_aio_resilience.admission_policy import AimdPolicy as AimdPolicy
    from grpc_aio_resilience.admission_policy import Gradient2Policy as Gradient2Policy
    from grpc_aio_resilience.admission_policy import IntakePolicy as IntakePolicy
    from grpc_aio_resilience.admission_policy import LimitPolicy as LimitPolicy
    from grpc_aio_resilience.admission_policy import QueuePolicy as QueuePolicy
    from grpc_aio_resilience.admission_policy import ServerPolicy as ServerPolicy
    from grpc_aio_resilience.admission_policy import VegasPolicy as VegasPolicy
    from grpc_aio_resilience.admission_policy import WindowPolicy as WindowPolicy
    from grpc_aio_resilience.attempt import AttemptObserver as AttemptObserver
    from grpc_aio_resilience.breaker import BreakerStrategy as BreakerStrategy
    from grpc_aio_resilience.breaker import state_at as state_at
    from grpc_aio_resilience.bulkhead import Bulkhead as Bulkhead
    from grpc_aio_resilience.channel import NO_BUILTIN_RETRIES as NO_BUILTIN_RETRIES
    from grpc_aio_resilience.channel import ROUND_ROBIN as ROUND_ROBIN
    from grpc_aio_resilience.channel import balanced_target as balanced_target
    from grpc_aio_resilience.channel import replica_router as replica_router
    from grpc_aio_resilience.channel import resilient_channel as resilient_channel
    from grpc_aio_resilience.channels import close_channel as close_channel
    from grpc_aio_resilience.channels import insecure_channel as insecure_channel
    from grpc_aio_resilience.channels import pipeline_of as pipeline_of
    from grpc_aio_resilience.channels import secure_channel as secure_channel
    from grpc_aio_resilience.classify import RETRYABLE_CODES as RETRYABLE_CODES
    from grpc_aio_resilience.classify import callers_deadline as callers_deadline
    from grpc_aio_resilience.classify import is_transient as is_transient
    from grpc_aio_resilience.classify import pushback_s as pushback_s
    from grpc_aio_resilience.clock import Clock as Clock
    from grpc_aio_resilience.clock import SystemClock as SystemClock
    from grpc_aio_resilience.context import CallContext as CallContext
    from grpc_aio_resilience.criticality import METADATA_KEY as CRITICALITY_KEY
    from grpc_aio_resilience.criticality import Criticality as Criticality
    from grpc_aio_resilience.criticality import current as current_criticality
    from grpc_aio_resilience.criticality import from_metadata as criticality_from_metadata
    from grpc_aio_resilience.criticality import reset_current as reset_criticality
    from grpc_aio_resilience.criticality import set_current as set_criticality
    from grpc_aio_resilience.deadline import AttemptTimeout as AttemptTimeout
    from grpc_aio_resilience.deadline import TotalDeadline as TotalDeadline
    from grpc_aio_resilience.deadline import inbound_deadline as inbound_deadline
    from grpc_aio_resilience.deadline import served_deadline as served_deadline
    from grpc_aio_resilience.description import PipelineDescriptor as PipelineDescriptor
    from grpc_aio_resilience.description import StrategyDescriptor as StrategyDescriptor
    from grpc_aio_resilience.description import describe as describe
    from grpc_aio_resilience.edge_policy import BreakerPolicy as BreakerPolicy
    from grpc_aio_resilience.edge_policy import BulkheadPolicy as BulkheadPolicy
    from grpc_aio_resilience.edge_policy import DeadlinePolicy as DeadlinePolicy
    from grpc_aio_resilience.edge_policy import EdgePolicy as EdgePolicy
    from grpc_aio_resilience.edge_policy import NativeRetryPolicy as NativeRetryPolicy
    from grpc_aio_resilience.edge_policy import PipelineOrder as PipelineOrder
    from grpc_aio_resilience.edge_policy import RetryBudgetPolicy as RetryBudgetPolicy
    from grpc_aio_resilience.edge_policy import RetryPolicy as RetryPolicy
    from grpc_aio_resilience.errors import CALLER_DEADLINE_KEY as CALLER_DEADLINE_KEY
    from grpc_aio_resilience.errors import PUSHBACK_KEY as PUSHBACK_KEY
    from grpc_aio_resilience.errors import BreakerOpenError as BreakerOpenError
    from grpc_aio_resilience.errors import BulkheadFullError as BulkheadFullError
    from grpc_aio_resilience.errors import ClientThrottledError as ClientThrottledError
    from grpc_aio_resilience.errors import (
        DeadlineBudgetExhaustedError as DeadlineBudgetExhaustedError,
    )
    from grpc_aio_resilience.errors import InjectedFaultError as InjectedFaultError
    from grpc_aio_resilience.errors import PoolFullError as PoolFullError
    from grpc_aio_resilience.errors import ResilienceError as ResilienceError
    from grpc_aio_resilience.errors import ShedError as ShedError
    from grpc_aio_resilience.errors import StreamBrokenError as StreamBrokenError
    from grpc_aio_resilience.events import AttemptFinished as AttemptFinished
    from grpc_aio_resilience.events import AttemptStarted as AttemptStarted
    from grpc_aio_resilience.events import BreakerRejected as BreakerRejected
    from grpc_aio_resilience.events import BreakerState as BreakerState
    from grpc_aio_resilience.events import BreakerStateChanged as BreakerStateChanged
    from grpc_aio_resilience.events import BulkheadRejected as BulkheadRejected
    from grpc_aio_resilience.events import CallFinished as CallFinished
    from grpc_aio_resilience.events import CallShed as CallShed
    from grpc_aio_resilience.events import ClientThrottled as ClientThrottled
    from grpc_aio_resilience.events import ConcurrencyLimitChanged as ConcurrencyLimitChanged
    from grpc_aio_resilience.events import DeadlineExhausted as DeadlineExhausted
    from grpc_aio_resilience.events import Event as Event
    from grpc_aio_resilience.events import EventBus as EventBus
    from grpc_aio_resilience.events import FallbackServed as FallbackServed
    from grpc_aio_resilience.events import FaultInjected as FaultInjected
    from grpc_aio_resilience.events import HedgeSettled as HedgeSettled
    from grpc_aio_resilience.events import HedgeSkipped as HedgeSkipped
    from grpc_aio_resilience.events import HedgeStarted as HedgeStarted
    from grpc_aio_resilience.events import Listener as Listener
    from grpc_aio_resilience.events import PoolWorkDone as PoolWorkDone
    from grpc_aio_resilience.events import RejectionRatioChanged as RejectionRatioChanged
    from grpc_aio_resilience.events import ReplicaEjected as ReplicaEjected
    from grpc_aio_resilience.events import ReplicaReturned as ReplicaReturned
    from grpc_aio_resilience.events import RetryScheduled as RetryScheduled
    from grpc_aio_resilience.events import RetrySkipped as RetrySkipped
    from grpc_aio_resilience.events import ServerCallFinished as ServerCallFinished
    from grpc_aio_resilience.events import ServerCallStarted as ServerCallStarted
    from grpc_aio_resilience.events import StreamCommitted as StreamCommitted
    from grpc_aio_resilience.events import StreamEnded as StreamEnded
    from grpc_aio_resilience.events import StreamExpired as StreamExpired
    from grpc_aio_resilience.fate_kinds import KINDS as KINDS
    from grpc_aio_resilience.fate_kinds import SHED_REASONS as SHED_REASONS
    from grpc_aio_resilience.fates import FATE_KEY as FATE_KEY
    from grpc_aio_resilience.fates import LISTENS_TO as FATE_EVENTS
    from grpc_aio_resilience.fates import FateFacts as FateFacts
    from grpc_aio_resilience.fates import current as current_fate
    from grpc_aio_resilience.fates import fate_in as fate_in
    from grpc_aio_resilience.fates import fate_of as fate_of
    from grpc_aio_resilience.fates import kind_of as kind_of
    from grpc_aio_resilience.fates import listen as fate_listener
    from grpc_aio_resilience.fates import note_cause as note_cause
    from grpc_aio_resilience.fates import note_degraded as note_degraded
    from grpc_aio_resilience.fates import note_shed as note_shed
    from grpc_aio_resilience.fates import seen_by_caller as seen_by_caller
    from grpc_aio_resilience.fates import trailers_with_fate as trailers_with_fate
    from grpc_aio_resilience.fault_admin import fault_admin_handler as fault_admin_handler
    from grpc_aio_resilience.faults import FAULT_ADMIN_PREFIX as FAULT_ADMIN_PREFIX
    from grpc_aio_resilience.faults import FaultLayer as FaultLayer
    from grpc_aio_resilience.faults import FaultRule as FaultRule
    from grpc_aio_resilience.faults import FaultTable as FaultTable
    from grpc_aio_resilience.hedging import Hedging as Hedging
    from grpc_aio_resilience.hedging_options import HedgingOptionError as HedgingOptionError
    from grpc_aio_resilience.hedging_options import HedgingOptions as HedgingOptions
    from grpc_aio_resilience.inbound import AssignCriticality as AssignCriticality
    from grpc_aio_resilience.inbound import InboundInterceptor as InboundInterceptor
    from grpc_aio_resilience.intake import TIMEOUT_KEY as TIMEOUT_KEY
    from grpc_aio_resilience.intake import timeout_value as timeout_value
    from grpc_aio_resilience.interceptor import ResilienceInterceptor as ResilienceInterceptor
    from grpc_aio_resilience.options import OptionError as OptionError
    from grpc_aio_resilience.options import OptionRow as OptionRow
    from grpc_aio_resilience.options import at_most as at_most
    from grpc_aio_resilience.options import check as check
    from grpc_aio_resilience.options import from_dict as from_dict
    from grpc_aio_resilience.options import option as option
    from grpc_aio_resilience.options import option_rows as option_rows
    from grpc_aio_resilience.options import to_dict as to_dict
    from grpc_aio_resilience.outcome import served_code as served_code
    from grpc_aio_resilience.outlier import OutlierDetector as OutlierDetector
    from grpc_aio_resilience.outlier_policy import OutlierPolicy as OutlierPolicy
    from grpc_aio_resilience.outlier_router import ReplicaRouter as ReplicaRouter
    from grpc_aio_resilience.pipeline import PIPELINE_ORDER as PIPELINE_ORDER
    from grpc_aio_resilience.pipeline import Pipeline as Pipeline
    from grpc_aio_resilience.pipeline import build_pipeline as build_pipeline
    from grpc_aio_resilience.rejection import PidPolicy as PidPolicy
    from grpc_aio_resilience.retry import Retry as Retry
    from grpc_aio_resilience.retry import RetryBudget as RetryBudget
    from grpc_aio_resilience.server import ServerInterceptors as ServerInterceptors
    from grpc_aio_resilience.server import server_interceptors as server_interceptors
    from grpc_aio_resilience.server_layer import EXEMPT_PREFIXES as EXEMPT_PREFIXES
    from grpc_aio_resilience.server_layer import Behaviour as Behaviour
    from grpc_aio_resilience.server_layer import HandlerLookup as HandlerLookup
    from grpc_aio_resilience.server_layer import ServerLayer as ServerLayer
    from grpc_aio_resilience.server_layer import WrappedHandlers as WrappedHandlers
    from grpc_aio_resilience.server_layer import abort_with as abort_with
    from grpc_aio_resilience.server_layer import code_set as code_set
    from grpc_aio_resilience.server_mount import ProtectedServer as ProtectedServer
    from grpc_aio_resilience.server_mount import ServerChain as ServerChain
    from grpc_aio_resilience.server_mount import protect_server as protect_server
    from grpc_aio_resilience.shedding import SheddingInterceptor as SheddingInterceptor
    from grpc_aio_resilience.stream_guard import StreamGuard as StreamGuard
    from grpc_aio_resilience.streaming import (
        StreamResilienceInterceptor as StreamResilienceInterceptor,
    )
    from grpc_aio_resilience.streaming_server import StreamBehaviour as StreamBehaviour
    from grpc_aio_resilience.streaming_server import StreamStatus as StreamStatus
    from grpc_aio_resilience.streaming_server import responses as responses
    from grpc_aio_resilience.streaming_server import tracked as tracked
    from grpc_aio_resilience.throttle import AdaptiveThrottle as AdaptiveThrottle
    from grpc_aio_resilience.throttle_policy import ThrottlePolicy as ThrottlePolicy
    from grpc_aio_resilience.traps import ResiliencePolicyWarning as ResiliencePolicyWarning
    from grpc_aio_resilience.traps import Trap as Trap
    from grpc_aio_resilience.traps import find_traps as find_traps
    from grpc_aio_resilience.traps import service_methods as service_methods
    from grpc_aio_resilience.xds_policy import XdsFaultPolicy as XdsFaultPolicy
    from grpc_aio_resilience.xds_policy import XdsPolicy as XdsPolicy
    from grpc_aio_resilience.xds_policy import XdsRetryPolicy as XdsRetryPolicy

_WHERE: dict[str, str] = {
    # a protected channel in one call, as grpc.aio's own (the pieces below for the rest)
    "insecure_channel": "channels",
    "close_channel": "channels",
    "secure_channel": "channels",
    "pipeline_of": "channels",
    # the pipeline (one per dependency) and its order
    "Pipeline": "pipeline",
    "build_pipeline": "pipeline",
    "PIPELINE_ORDER": "pipeline",
    # what a built pipeline is (for tests of a composition), and its build-time traps
    "describe": "description",
    "PipelineDescriptor": "description",
    "StrategyDescriptor": "description",
    "Trap": "traps",
    "ResiliencePolicyWarning": "traps",
    # client strategies
    "Retry": "retry",
    "RetryBudget": "retry",
    "Hedging": "hedging",
    "BreakerStrategy": "breaker",
    "Bulkhead": "bulkhead",
    "TotalDeadline": "deadline",
    "AttemptTimeout": "deadline",
    "AdaptiveThrottle": "throttle",
    "OutlierDetector": "outlier",
    # server interceptors: the three in their order, or each alone
    "server_interceptors": "server",
    "ServerInterceptors": "server",
    # ... or run as one chain: without grpc.aio's interceptor API, or as one interceptor
    "protect_server": "server_mount",
    "ProtectedServer": "server_mount",
    "ServerChain": "server_mount",
    "EXEMPT_PREFIXES": "server_layer",
    "AssignCriticality": "inbound",
    "SheddingInterceptor": "shedding",
    "StreamGuard": "stream_guard",
    "InboundInterceptor": "inbound",
    # app-level faults a chaos run sets at runtime: the rules, the layer, the admin serving them
    "FaultRule": "faults",
    "FaultTable": "faults",
    "FaultLayer": "faults",
    "FAULT_ADMIN_PREFIX": "faults",
    "fault_admin_handler": "fault_admin",
    # what they are written with, for a server's own layers (a server chain runs many as one)
    "ServerLayer": "server_layer",
    "HandlerLookup": "server_layer",
    # their settings
    "EdgePolicy": "edge_policy",
    "ServerPolicy": "admission_policy",
    "HedgingOptions": "hedging_options",
    "BreakerPolicy": "edge_policy",
    "BulkheadPolicy": "edge_policy",
    "DeadlinePolicy": "edge_policy",
    "NativeRetryPolicy": "edge_policy",
    "RetryBudgetPolicy": "edge_policy",
    "RetryPolicy": "edge_policy",
    "Gradient2Policy": "admission_policy",
    "IntakePolicy": "admission_policy",
    "LimitPolicy": "admission_policy",
    "QueuePolicy": "admission_policy",
    "VegasPolicy": "admission_policy",
    "WindowPolicy": "admission_policy",
    "AimdPolicy": "admission_policy",
    "ThrottlePolicy": "throttle_policy",
    "OutlierPolicy": "outlier_policy",
    "HedgingOptionError": "hedging_options",
    "PipelineOrder": "edge_policy",
    "XdsPolicy": "xds_policy",
    "XdsRetryPolicy": "xds_policy",
    "XdsFaultPolicy": "xds_policy",
    # options from plain data (YAML, JSON) and back; a bad value's error names its path
    "OptionError": "options",
    "from_dict": "options",
    "to_dict": "options",
    "option_rows": "options",
    "OptionRow": "options",
    # the fields of an options class of one's own
    "option": "options",
    "check": "options",
    "at_most": "options",
    # errors (each carries its gRPC code)
    "ResilienceError": "errors",
    "BreakerOpenError": "errors",
    "BulkheadFullError": "errors",
    "ClientThrottledError": "errors",
    "DeadlineBudgetExhaustedError": "errors",
    "ShedError": "errors",
    "StreamBrokenError": "errors",
    "InjectedFaultError": "errors",
    # events, and the bus listeners subscribe to
    "EventBus": "events",
    "Event": "events",
    "Listener": "events",
    "AttemptStarted": "events",
    "AttemptFinished": "events",
    "CallFinished": "events",
    "RetryScheduled": "events",
    "RetrySkipped": "events",
    "HedgeStarted": "events",
    "HedgeSkipped": "events",
    "HedgeSettled": "events",
    "BreakerStateChanged": "events",
    "BreakerRejected": "events",
    "BulkheadRejected": "events",
    "ClientThrottled": "events",
    "DeadlineExhausted": "events",
    "FallbackServed": "events",
    "CallShed": "events",
    "ConcurrencyLimitChanged": "events",
    "ServerCallStarted": "events",
    "ServerCallFinished": "events",
    "StreamExpired": "events",
    "FaultInjected": "events",
    # the one interceptor per dependency, and the channel it is attached to
    "ResilienceInterceptor": "interceptor",
    "StreamResilienceInterceptor": "streaming",
    "resilient_channel": "channel",
    # injected time
    "Clock": "clock",
    "SystemClock": "clock",
    # used by the mesh's own layers and tooling (extension points)
    "AttemptObserver": "attempt",
    "state_at": "breaker",
    "NO_BUILTIN_RETRIES": "channel",
    "ROUND_ROBIN": "channel",
    "balanced_target": "channel",
    "replica_router": "channel",
    "RETRYABLE_CODES": "classify",
    "pushback_s": "classify",
    "CallContext": "context",
    "Criticality": "criticality",
    "inbound_deadline": "deadline",
    "served_deadline": "deadline",
    "CALLER_DEADLINE_KEY": "errors",
    "PUSHBACK_KEY": "errors",
    "PoolFullError": "errors",
    "SHED_REASONS": "fate_kinds",
    "PoolWorkDone": "events",
    "RejectionRatioChanged": "events",
    "PidPolicy": "rejection",
    "KINDS": "fate_kinds",
    "fate_in": "fates",
    "kind_of": "fates",
    "seen_by_caller": "fates",
    "TIMEOUT_KEY": "intake",
    "timeout_value": "intake",
    "ReplicaRouter": "outlier_router",
    "Behaviour": "server_layer",
    "WrappedHandlers": "server_layer",
    "abort_with": "server_layer",
    "code_set": "server_layer",
    "served_code": "outcome",
    "StreamBehaviour": "streaming_server",
    "StreamStatus": "streaming_server",
    "responses": "streaming_server",
    "tracked": "streaming_server",
    "find_traps": "traps",
    "service_methods": "traps",
    # a call's criticality (set on the task that sends, read where it is served), and what
    # classifies a failure
    "CRITICALITY_KEY": "criticality:METADATA_KEY",
    "criticality_from_metadata": "criticality:from_metadata",
    "current_criticality": "criticality:current",
    "set_criticality": "criticality:set_current",
    "reset_criticality": "criticality:reset_current",
    "callers_deadline": "classify",
    "is_transient": "classify",
    "BreakerState": "events",
    "ReplicaEjected": "events",
    "ReplicaReturned": "events",
    "StreamCommitted": "events",
    "StreamEnded": "events",
    # a call's fate (served, shed, degraded...), for a server layer that records it
    "fate_listener": "fates:listen",
    "FATE_EVENTS": "fates:LISTENS_TO",
    "current_fate": "fates:current",
    "FateFacts": "fates",
    "fate_of": "fates",
    "FATE_KEY": "fates",
    "note_cause": "fates",
    "note_shed": "fates",
    "note_degraded": "fates",
    "trailers_with_fate": "fates",
}

__all__ = [
    "CALLER_DEADLINE_KEY",
    "CRITICALITY_KEY",
    "EXEMPT_PREFIXES",
    "FATE_EVENTS",
    "FATE_KEY",
    "FAULT_ADMIN_PREFIX",
    "KINDS",
    "NO_BUILTIN_RETRIES",
    "PIPELINE_ORDER",
    "PUSHBACK_KEY",
    "RETRYABLE_CODES",
    "ROUND_ROBIN",
    "SHED_REASONS",
    "TIMEOUT_KEY",
    "AdaptiveThrottle",
    "AimdPolicy",
    "AssignCriticality",
    "AttemptFinished",
    "AttemptObserver",
    "AttemptStarted",
    "AttemptTimeout",
    "Behaviour",
    "BreakerOpenError",
    "BreakerPolicy",
    "BreakerRejected",
    "BreakerState",
    "BreakerStateChanged",
    "BreakerStrategy",
    "Bulkhead",
    "BulkheadFullError",
    "BulkheadPolicy",
    "BulkheadRejected",
    "CallContext",
    "CallFinished",
    "CallShed",
    "ClientThrottled",
    "ClientThrottledError",
    "Clock",
    "ConcurrencyLimitChanged",
    "Criticality",
    "DeadlineBudgetExhaustedError",
    "DeadlineExhausted",
    "DeadlinePolicy",
    "EdgePolicy",
    "Event",
    "EventBus",
    "FallbackServed",
    "FateFacts",
    "FaultInjected",
    "FaultLayer",
    "FaultRule",
    "FaultTable",
    "Gradient2Policy",
    "HandlerLookup",
    "HedgeSettled",
    "HedgeSkipped",
    "HedgeStarted",
    "Hedging",
    "HedgingOptionError",
    "HedgingOptions",
    "InboundInterceptor",
    "InjectedFaultError",
    "IntakePolicy",
    "LimitPolicy",
    "Listener",
    "NativeRetryPolicy",
    "OptionError",
    "OptionRow",
    "OutlierDetector",
    "OutlierPolicy",
    "PidPolicy",
    "Pipeline",
    "PipelineDescriptor",
    "PipelineOrder",
    "PoolFullError",
    "PoolWorkDone",
    "ProtectedServer",
    "QueuePolicy",
    "RejectionRatioChanged",
    "ReplicaEjected",
    "ReplicaReturned",
    "ReplicaRouter",
    "ResilienceError",
    "ResilienceInterceptor",
    "ResiliencePolicyWarning",
    "Retry",
    "RetryBudget",
    "RetryBudgetPolicy",
    "RetryPolicy",
    "RetryScheduled",
    "RetrySkipped",
    "ServerCallFinished",
    "ServerCallStarted",
    "ServerChain",
    "ServerInterceptors",
    "ServerLayer",
    "ServerPolicy",
    "ShedError",
    "SheddingInterceptor",
    "StrategyDescriptor",
    "StreamBehaviour",
    "StreamBrokenError",
    "StreamCommitted",
    "StreamEnded",
    "StreamExpired",
    "StreamGuard",
    "StreamResilienceInterceptor",
    "StreamStatus",
    "SystemClock",
    "ThrottlePolicy",
    "TotalDeadline",
    "Trap",
    "VegasPolicy",
    "WindowPolicy",
    "WrappedHandlers",
    "XdsFaultPolicy",
    "XdsPolicy",
    "XdsRetryPolicy",
    "abort_with",
    "at_most",
    "balanced_target",
    "build_pipeline",
    "callers_deadline",
    "check",
    "close_channel",
    "code_set",
    "criticality_from_metadata",
    "current_criticality",
    "current_fate",
    "describe",
    "fate_in",
    "fate_listener",
    "fate_of",
    "fault_admin_handler",
    "find_traps",
    "from_dict",
    "inbound_deadline",
    "insecure_channel",
    "is_transient",
    "kind_of",
    "note_cause",
    "note_degraded",
    "note_shed",
    "option",
    "option_rows",
    "pipeline_of",
    "protect_server",
    "pushback_s",
    "replica_router",
    "reset_criticality",
    "resilient_channel",
    "responses",
    "secure_channel",
    "seen_by_caller",
    "served_code",
    "served_deadline",
    "server_interceptors",
    "service_methods",
    "set_criticality",
    "state_at",
    "timeout_value",
    "to_dict",
    "tracked",
    "trailers_with_fate",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'grpc_aio_resilience' has no attribute {name!r}")
    module, _, attribute = where.partition(":")  # "module:attribute" where the face renames
    value = getattr(importlib.import_module(f"grpc_aio_resilience.{module}"), attribute or name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

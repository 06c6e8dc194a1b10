"""mesh.resilience: Polly-style resilience for grpc.aio, one pipeline per dependency.

    from mesh.resilience import EdgePolicy, EventBus, build_pipeline, resilient_channel

The names below are the library's face (as httpx's `__init__`); each lives in the module the
table says. They load on first use (PEP 562), so importing one small module of the package
(`mesh.resilience.classify`, say) does not import the whole library with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mesh.resilience.admission_policy import ServerPolicy as ServerPolicy
    from mesh.resilience.breaker import BreakerStrategy as BreakerStrategy
    from mesh.resilience.bulkhead import Bulkhead as Bulkhead
    from mesh.resilience.channel import resilient_channel as resilient_channel
    from mesh.resilience.clock import Clock as Clock
    from mesh.resilience.clock import SystemClock as SystemClock
    from mesh.resilience.deadline import AttemptTimeout as AttemptTimeout
    from mesh.resilience.deadline import TotalDeadline as TotalDeadline
    from mesh.resilience.description import PipelineDescriptor as PipelineDescriptor
    from mesh.resilience.description import StrategyDescriptor as StrategyDescriptor
    from mesh.resilience.description import describe as describe
    from mesh.resilience.edge_policy import EdgePolicy as EdgePolicy
    from mesh.resilience.errors import BreakerOpenError as BreakerOpenError
    from mesh.resilience.errors import BulkheadFullError as BulkheadFullError
    from mesh.resilience.errors import ClientThrottledError as ClientThrottledError
    from mesh.resilience.errors import DeadlineBudgetExhaustedError as DeadlineBudgetExhaustedError
    from mesh.resilience.errors import InjectedFaultError as InjectedFaultError
    from mesh.resilience.errors import ResilienceError as ResilienceError
    from mesh.resilience.errors import ShedError as ShedError
    from mesh.resilience.errors import StreamBrokenError as StreamBrokenError
    from mesh.resilience.events import AttemptFinished as AttemptFinished
    from mesh.resilience.events import AttemptStarted as AttemptStarted
    from mesh.resilience.events import BreakerRejected as BreakerRejected
    from mesh.resilience.events import BreakerStateChanged as BreakerStateChanged
    from mesh.resilience.events import BulkheadRejected as BulkheadRejected
    from mesh.resilience.events import CallFinished as CallFinished
    from mesh.resilience.events import CallShed as CallShed
    from mesh.resilience.events import ClientThrottled as ClientThrottled
    from mesh.resilience.events import DeadlineExhausted as DeadlineExhausted
    from mesh.resilience.events import Event as Event
    from mesh.resilience.events import EventBus as EventBus
    from mesh.resilience.events import FallbackServed as FallbackServed
    from mesh.resilience.events import FaultInjected as FaultInjected
    from mesh.resilience.events import HedgeSettled as HedgeSettled
    from mesh.resilience.events import HedgeSkipped as HedgeSkipped
    from mesh.resilience.events import HedgeStarted as HedgeStarted
    from mesh.resilience.events import Listener as Listener
    from mesh.resilience.events import RetryScheduled as RetryScheduled
    from mesh.resilience.events import RetrySkipped as RetrySkipped
    from mesh.resilience.hedging import Hedging as Hedging
    from mesh.resilience.hedging_options import HedgingOptionError as HedgingOptionError
    from mesh.resilience.hedging_options import HedgingOptions as HedgingOptions
    from mesh.resilience.inbound import InboundInterceptor as InboundInterceptor
    from mesh.resilience.interceptor import ResilienceInterceptor as ResilienceInterceptor
    from mesh.resilience.outlier import OutlierDetector as OutlierDetector
    from mesh.resilience.pipeline import PIPELINE_ORDER as PIPELINE_ORDER
    from mesh.resilience.pipeline import Pipeline as Pipeline
    from mesh.resilience.pipeline import build_pipeline as build_pipeline
    from mesh.resilience.retry import Retry as Retry
    from mesh.resilience.retry import RetryBudget as RetryBudget
    from mesh.resilience.shedding import SheddingInterceptor as SheddingInterceptor
    from mesh.resilience.stream_guard import StreamGuard as StreamGuard
    from mesh.resilience.streaming import StreamResilienceInterceptor as StreamResilienceInterceptor
    from mesh.resilience.throttle import AdaptiveThrottle as AdaptiveThrottle
    from mesh.resilience.traps import ResiliencePolicyWarning as ResiliencePolicyWarning
    from mesh.resilience.traps import Trap as Trap

_WHERE: dict[str, str] = {
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
    # server strategies
    "SheddingInterceptor": "shedding",
    "StreamGuard": "stream_guard",
    "InboundInterceptor": "inbound",
    # their settings
    "EdgePolicy": "edge_policy",
    "ServerPolicy": "admission_policy",
    "HedgingOptions": "hedging_options",
    "HedgingOptionError": "hedging_options",
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
    "FaultInjected": "events",
    # the one interceptor per dependency, and the channel it is attached to
    "ResilienceInterceptor": "interceptor",
    "StreamResilienceInterceptor": "streaming",
    "resilient_channel": "channel",
    # injected time
    "Clock": "clock",
    "SystemClock": "clock",
}

__all__ = [
    "PIPELINE_ORDER",
    "AdaptiveThrottle",
    "AttemptFinished",
    "AttemptStarted",
    "AttemptTimeout",
    "BreakerOpenError",
    "BreakerRejected",
    "BreakerStateChanged",
    "BreakerStrategy",
    "Bulkhead",
    "BulkheadFullError",
    "BulkheadRejected",
    "CallFinished",
    "CallShed",
    "ClientThrottled",
    "ClientThrottledError",
    "Clock",
    "DeadlineBudgetExhaustedError",
    "DeadlineExhausted",
    "EdgePolicy",
    "Event",
    "EventBus",
    "FallbackServed",
    "FaultInjected",
    "HedgeSettled",
    "HedgeSkipped",
    "HedgeStarted",
    "Hedging",
    "HedgingOptionError",
    "HedgingOptions",
    "InboundInterceptor",
    "InjectedFaultError",
    "Listener",
    "OutlierDetector",
    "Pipeline",
    "PipelineDescriptor",
    "ResilienceError",
    "ResilienceInterceptor",
    "ResiliencePolicyWarning",
    "Retry",
    "RetryBudget",
    "RetryScheduled",
    "RetrySkipped",
    "ServerPolicy",
    "ShedError",
    "SheddingInterceptor",
    "StrategyDescriptor",
    "StreamBrokenError",
    "StreamGuard",
    "StreamResilienceInterceptor",
    "SystemClock",
    "TotalDeadline",
    "Trap",
    "build_pipeline",
    "describe",
    "resilient_channel",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mesh.resilience' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"mesh.resilience.{module}"), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

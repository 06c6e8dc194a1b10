"""What the build-time trap check and describe() cost (grpc_aio_resilience.traps, .description).

Both run when a pipeline is built (at start-up and on each policy swap) or described, never per
call. This builds `full`'s gateway_to_recommendation pipeline in a loop, without and with the
services whose methods the check reads, times the check alone, describe() and its text, and
prints the best of the rounds per operation, in microseconds.

    python -m grpc_resilience_mesh.bench.build_cost --builds 2000 --rounds 5
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable, Sequence

from grpc_aio_resilience import EventBus, build_pipeline, describe, find_traps, service_methods
from grpc_resilience_mesh.services.policy.loading import load_policy
from grpc_resilience_mesh.services.v1 import recommendation_pb2

SERVICES = (recommendation_pb2.DESCRIPTOR.services_by_name["RecommendationService"].full_name,)


def best_us(work: Callable[[], object], builds: int, rounds: int) -> float:
    """The fastest round's time per call of `work`, in microseconds."""
    best_s = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(builds):
            work()
        best_s = min(best_s, (time.perf_counter() - started) / builds)
    return best_s * 1e6


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # the edge's one trap, warned once, is not the figure
    edge = load_policy("full", {}).edge("gateway_to_recommendation")
    bus = EventBus()
    pipeline = build_pipeline(edge, dependency="recommendation", bus=bus, services=SERVICES)
    work: dict[str, Callable[[], object]] = {
        "build_pipeline": lambda: build_pipeline(edge, dependency="recommendation", bus=bus),
        "build_pipeline(services=)": lambda: build_pipeline(
            edge, dependency="recommendation", bus=bus, services=SERVICES
        ),
        "trap check alone": lambda: find_traps(
            edge, "recommendation", pipeline.names, *service_methods(SERVICES)
        ),
        "describe()": lambda: describe(pipeline),
        "str(describe())": lambda: str(describe(pipeline)),
    }
    for name, fn in work.items():
        print(f"{name:<28}{best_us(fn, args.builds, args.rounds):8.1f} us")


if __name__ == "__main__":
    main()

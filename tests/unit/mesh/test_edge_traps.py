"""A service's edges are built with their services' methods, so their traps are warned at
start-up, once: PolicyAdmin's swaps rebuild every pipeline without repeating them, and the
service's log keeps its one-JSON-object-per-line form with the warning in it."""

from __future__ import annotations

import io
import json
import logging
import sys
import warnings
from collections.abc import Iterator

import pytest

from grpc_aio_resilience import traps
from grpc_aio_resilience.description import describe
from grpc_aio_resilience.traps import ResiliencePolicyWarning
from grpc_resilience_mesh.services.policy.loading import load_policy, load_policy_text
from grpc_resilience_mesh.services.runtime.logging import setup_logging
from grpc_resilience_mesh.services.v1 import recommendation_pb2_grpc
from tests.support.runtimes import runtime_for

TIGHTER = """
name: tighter
edges:
  gateway_to_recommendation:
    deadline: {total_s: 0.7, attempt_s: 0.35}
"""


@pytest.fixture(autouse=True)
def fresh_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(traps, "_warned", {})
    yield


async def test_an_edges_trap_is_warned_at_start_and_not_again_on_a_swap() -> None:
    runtime = runtime_for("gateway")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        edge = runtime.edge("recommendation", recommendation_pb2_grpc.RecommendationServiceStub)
        at_start = [str(w.message) for w in caught if w.category is ResiliencePolicyWarning]
        for _ in range(3):
            runtime.apply_policy(load_policy("full", {}))
        after_swaps = [str(w.message) for w in caught if w.category is ResiliencePolicyWarning]
        runtime.apply_policy(load_policy_text(TIGHTER, "tighter.yaml", {}))
        changed = [str(w.message) for w in caught if w.category is ResiliencePolicyWarning]
    try:
        assert len(at_start) == 1
        assert at_start[0].startswith("recommendation: deadline.attempt_s (0.35) x retry")
        assert after_swaps == at_start
        assert len(changed) == 2 and "deadline.total_s (0.7)" in changed[1]
        retry = describe(edge.pipeline).strategy("retry")
        assert set(retry.methods) == {
            "/mesh.v1.RecommendationService/Recommend",
            "/mesh.v1.RecommendationService/Popular",
            "/mesh.v1.RecommendationService/StreamRecommend",
        }
    finally:
        await runtime.edges.close()


def test_a_services_log_carries_a_trap_as_one_json_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    # A service started in this process before (an in-process test) left logging capturing
    # warnings; pytest's per-test catch_warnings then put warnings.showwarning back, and
    # captureWarnings(True) would not take it again: start from logging's own state.
    logging.captureWarnings(False)
    try:
        setup_logging("gateway", {})
        warnings.simplefilter("always")  # pytest restores the filters after the test
        warnings.warn("a trap", ResiliencePolicyWarning, stacklevel=1)
    finally:
        logging.captureWarnings(False)
        root.handlers[:] = handlers
        root.setLevel(level)
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert (entry["level"], entry["logger"]) == ("warning", "py.warnings")
    assert "ResiliencePolicyWarning: a trap" in entry["msg"]

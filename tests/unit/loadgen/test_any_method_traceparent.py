"""Each load call's traceparent: a fresh sampled trace per call, or the caller's own kept and
its trace id recorded (none when a receiver would not continue it)."""

from __future__ import annotations

import re

from grpc_resilience_mesh.loadgen.any_method.traceparent import trace_id_of, with_traceparent

THEIRS = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_call_without_one_gets_a_fresh_sampled_traceparent() -> None:
    ids = set()
    for _ in range(100):
        trace_id, metadata = with_traceparent((("x-tenant", "t1"),))
        assert metadata[0] == ("x-tenant", "t1")
        key, value = metadata[1]
        assert key == "traceparent"
        assert re.fullmatch(rf"00-{trace_id}-[0-9a-f]{{16}}-01", value), value
        ids.add(trace_id)
    assert len(ids) == 100


def test_the_caller_s_own_traceparent_is_kept_and_its_trace_id_recorded() -> None:
    metadata = (("traceparent", THEIRS), ("x-tenant", "t1"))
    assert with_traceparent(metadata) == ("4bf92f3577b34da6a3ce929d0e0e4736", metadata)


def test_a_traceparent_no_receiver_would_continue_records_no_trace_id() -> None:
    assert trace_id_of(THEIRS) == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace_id_of("00-" + "0" * 32 + "-00f067aa0ba902b7-01") == ""
    assert trace_id_of("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == ""
    assert trace_id_of("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01") == ""
    assert trace_id_of("trace-1") == ""

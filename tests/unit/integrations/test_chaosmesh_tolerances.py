"""The extension's tolerances: bounds on a probe's metrics, and the expectations, which are
due only once the method began."""

from __future__ import annotations

from chaosgrpcmesh.tolerances import expectations_met, within


def test_bounds_hold_only_on_measured_values_inside_them() -> None:
    bounds: dict[str, dict[str, float]] = {"error_rate": {"max": 0.0}, "ok": {"min": 50}}
    assert within({"error_rate": 0.0, "ok": 50.0}, bounds)
    assert not within({"error_rate": 0.02, "ok": 50.0}, bounds)
    assert not within({"error_rate": 0.0}, bounds)  # ok never measured
    assert within({}, {"code.UNAVAILABLE": {"max": 0}})  # a code never returned: 0


def test_expectations_are_due_once_the_method_began() -> None:
    wanted = [{"phase": "fault", "metric": "dependency_calls", "min": 10, "max": 14}]
    assert expectations_met({"started": False, "phases": {}}, wanted)
    assert not expectations_met({"started": True, "phases": {}}, wanted)
    assert expectations_met(
        {"started": True, "phases": {"fault": {"dependency_calls": 14}}}, wanted
    )
    assert not expectations_met(
        {"started": True, "phases": {"fault": {"dependency_calls": 15}}}, wanted
    )

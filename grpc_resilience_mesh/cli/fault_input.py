"""What `mesh fault add` checks before it talks to the mesh: the edge, the toxic type and its
attributes, by the experiment schema's rules (grpc_resilience_mesh/chaos/experiment/toxic_rules.py),
each refusal with the close name. A typo used to reach Toxiproxy, which keeps an unknown attribute's
toxic at 0 (`-a latnecy=300` added a 0 ms latency). And an xDS fault's edge (one the gateway or
recommendation dials through xDS), method, percent and abort code."""

from __future__ import annotations

from dataclasses import dataclass

from grpc_resilience_mesh.chaos.experiment.fault_kinds import check_xds_edge
from grpc_resilience_mesh.chaos.experiment.grpc_names import check_code, check_method
from grpc_resilience_mesh.chaos.experiment.toxic_rules import (
    attribute_problems,
    check_edge,
    check_toxic_type,
)
from grpc_resilience_mesh.services.topology import Edge


class FaultInputError(ValueError):
    """`mesh fault add`'s arguments name no edge, toxic or attribute (exit 2)."""


@dataclass(frozen=True)
class ToxicRequest:
    """A toxic to add, every name checked."""

    edge: str
    type: str
    attributes: dict[str, int]


def parse_attributes(pairs: list[str]) -> dict[str, int]:
    """`-a KEY=INTEGER` pairs into a mapping; a pair that is not one raises FaultInputError."""
    out: dict[str, int] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        try:
            if not sep or not key:
                raise ValueError
            out[key] = int(value)
        except ValueError:
            raise FaultInputError(
                f"-a {pair!r}: expected KEY=INTEGER, e.g. -a latency=1000"
            ) from None
    return out


def toxic_request(edge: str, type_: str, pairs: list[str]) -> ToxicRequest:
    """The toxic `mesh fault add EDGE -t TYPE -a K=V...` asks for, or FaultInputError naming
    every name that is wrong (edge, type, then each attribute) with the close one."""
    found = []
    try:
        check_edge(edge)
    except ValueError as err:
        found.append(f"EDGE: {err}")
    attributes = parse_attributes(pairs)
    try:
        check_toxic_type(type_)
    except ValueError as err:
        found.append(f"-t: {err}")
    else:
        problems = attribute_problems(type_, attributes)
        found += [f"-a {why.removeprefix('attributes.')}" for why in problems]
    if found:
        raise FaultInputError("; ".join(found))
    return ToxicRequest(edge, type_, attributes)


@dataclass(frozen=True)
class XdsRequest:
    """An A33 fault to push, every name and number checked."""

    edge: Edge
    method: str | None
    """The dependency's method whose route it is on; None: every call of the edge."""
    abort: tuple[float, str] | None
    """(percent, status code name)"""
    delay: tuple[float, float] | None
    """(percent, seconds)"""


def xds_request(
    edge: str, method: str | None, delay_ms: float | None, abort_code: str | None, percent: float
) -> XdsRequest:
    """The fault `mesh fault add --xds EDGE [--method M] (--delay-ms N | --abort-code C)
    --percent P` asks for, or FaultInputError naming every part that is wrong."""
    found = []
    dependency = None
    try:
        dependency = check_xds_edge(edge)
    except ValueError as err:
        found.append(f"EDGE: {err}")
    if method not in (None, "*") and dependency is not None:
        try:
            check_method(dependency.dependency, method)
        except ValueError as err:
            found.append(f"--method: {err}")
    if not 0 <= percent <= 100:
        found.append(f"--percent: {percent:g} is not in [0, 100]")
    if delay_ms is None and abort_code is None:
        found.append("give --delay-ms MS, --abort-code CODE, or both")
    if delay_ms is not None and not 0 < delay_ms <= 60_000:
        found.append(f"--delay-ms: {delay_ms:g} is not in (0, 60000]")
    if abort_code is not None:
        try:
            abort_code = check_code(abort_code.upper())
        except ValueError as err:
            found.append(f"--abort-code: {err}")
    if found or dependency is None:
        raise FaultInputError("; ".join(found))
    return XdsRequest(
        dependency,
        None if method in (None, "*") else method,
        None if abort_code is None else (percent, abort_code),
        None if delay_ms is None else (percent, delay_ms / 1000),
    )

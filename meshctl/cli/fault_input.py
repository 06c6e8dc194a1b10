"""What `mesh fault add` checks before it talks to the mesh: the edge, the toxic type and its
attributes, by the experiment schema's rules (chaos/experiment/toxic_rules.py), each refusal
with the close name. A typo used to reach Toxiproxy, which keeps an unknown attribute's
toxic at 0 (`-a latnecy=300` added a 0 ms latency)."""

from __future__ import annotations

from dataclasses import dataclass

from chaos.experiment.toxic_rules import attribute_problems, check_edge, check_toxic_type


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

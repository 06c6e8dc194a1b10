"""`mesh chaos run --xds`: every variant of every experiment run under xDS (as if each said
`xds: true`), on an embedded mesh started that way (`mesh up --xds`'s wiring: the gateway and
recommendation dial xds:/// targets served by mesh-xds). What steps aside is what a variant's
`xds: true` moves aside: the replica router (gRPC balances over the endpoints EDS sends), and
the edges' own `outlier:` ejection; our interceptor stays on every channel."""

from __future__ import annotations

from pathlib import Path

from grpc_resilience_mesh.chaos.experiment.model import Experiment
from grpc_resilience_mesh.chaos.session.errors import SessionRefused
from grpc_resilience_mesh.launch.ports import free_ports
from grpc_resilience_mesh.launch.xds_plane import XDS_BINARY, XdsPlane, missing_extra

Resolved = list[tuple[str, Path, Experiment]]


class XdsRunRefused(SessionRefused):
    """--xds cannot be honoured here (exit 2); the message says why and what to do."""


def under_xds(resolved: Resolved) -> Resolved:
    """The experiments with every variant under xDS."""
    out = []
    for name, path, exp in resolved:
        variants = [v.model_copy(update={"xds": True}) for v in exp.variants]
        out.append((name, path, exp.model_copy(update={"variants": variants})))
    return out


def without_xds(resolved: Resolved) -> tuple[Resolved, list[str]]:
    """The experiments without their `xds: true` variants and those variants' expectations (an
    experiment left with no variant or no expectation goes whole), and what went, as
    `experiment/variant` (the demo's choice where mesh-xds is not built: a run of them would
    only skip them, and say partial)."""
    kept: Resolved = []
    left: list[str] = []
    for name, path, exp in resolved:
        gone = {v.name for v in exp.variants if v.xds}
        variants = [v for v in exp.variants if v.name not in gone]
        expectations = [e for e in exp.expectations if e.variant not in gone]
        if not gone:
            kept.append((name, path, exp))
        elif variants and expectations:
            update = {"variants": variants, "expectations": expectations}
            kept.append((name, path, exp.model_copy(update=update)))
            left += [f"{name}/{v}" for v in sorted(gone)]
        else:
            left.append(f"{name} (every variant it judges is xds)")
    return kept, left


def embedded_plane(state_dir: Path, target: str | None) -> XdsPlane:
    """The control plane the embedded mesh starts with; XdsRunRefused with --target or without
    mesh-xds."""
    if target is not None:
        raise XdsRunRefused(
            "--xds starts the embedded mesh under xDS; for a running mesh, start it with "
            "`mesh up --xds` and run against it without --xds"
        )
    if not XDS_BINARY.is_file():
        raise XdsRunRefused(f"--xds needs the control plane {XDS_BINARY}: run `make peers`")
    missing = missing_extra()
    if missing is not None:
        raise XdsRunRefused(f"--xds {missing}")
    ads_port, admin_port = free_ports(2)
    return XdsPlane(state_dir.resolve(), ads_port, admin_port)


def with_xds(resolved: Resolved, state_dir: Path, target: str | None) -> tuple[Resolved, XdsPlane]:
    """The experiments under xDS and the plane to start the embedded mesh with."""
    return under_xds(resolved), embedded_plane(state_dir, target)

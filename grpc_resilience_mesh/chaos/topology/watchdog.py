"""The dead-man's switch for real Toxiproxy, which has no leases: a small process of its own.

    python -m grpc_resilience_mesh.chaos.topology.watchdog --toxiproxy URL --heartbeat FILE
        --pid PID [--ttl-s 3] --proxy NAME [--proxy NAME ...]     (token: MESH_TOXIPROXY_TOKEN)

The runner (lease.FaultLease) starts it in a session of its own, so that a Ctrl-C or a kill of
the runner's process group spares it, and touches FILE every ttl_s/3. Once FILE has not been
touched for ttl_s, or the runner's PID is gone (or a zombie), the watchdog removes every toxic of
the named proxies, enables them, and exits; when the runner writes `released` into FILE (a
clean end, the runner rolled back itself) it exits doing nothing. It writes FILE.armed once it
watches, so the runner injects nothing before the switch is live.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

from grpc_resilience_mesh.embedded_toxiproxy.api_token import token_from_env
from grpc_resilience_mesh.embedded_toxiproxy.client import ToxiproxyClient, ToxiproxyError

log = logging.getLogger("chaos.watchdog")

RELEASED = "released"
ROLLBACK_TRIES_S = 10.0
"""How long a rollback keeps trying a Toxiproxy that does not answer (restarting, say)."""


def armed_path(heartbeat: Path) -> Path:
    return heartbeat.with_name(heartbeat.name + ".armed")


def runner_alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie (killed, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the heartbeat's age decides
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def why_roll_back(heartbeat: Path, pid: int, ttl_s: float, since: float = 0.0) -> str | None:
    """Why the faults must go now, or None while the runner lives; RELEASED on a clean end.
    The heartbeat's age counts from `since` (time.time()) at the earliest: the runner's
    first beat comes after the watchdog starts watching, and a watchdog whose start took
    longer than ttl_s (a loaded machine) once rolled back a live run's faults at once."""
    try:
        text = heartbeat.read_text().strip()
        age_s = time.time() - max(heartbeat.stat().st_mtime, since)
    except FileNotFoundError:
        return "the heartbeat file is gone"
    if text == RELEASED:
        return RELEASED
    if not runner_alive(pid):
        return f"the runner (PID {pid}) is gone"
    if age_s > ttl_s:
        return f"no heartbeat for {age_s:.1f} s (ttl {ttl_s:g} s)"
    return None


def roll_back(client: ToxiproxyClient, proxies: Sequence[str]) -> None:
    """Every toxic of `proxies` removed and each enabled; retried while Toxiproxy is
    unreachable (for ROLLBACK_TRIES_S), a proxy that no longer exists skipped."""
    left = list(proxies)
    until = time.monotonic() + ROLLBACK_TRIES_S
    while left:
        name = left[0]
        try:
            for toxic in client.toxics(name):
                _remove_toxic(client, name, str(toxic["name"]))
            client.enable(name)
        except ToxiproxyError as err:
            if err.status == 0 and time.monotonic() < until:
                time.sleep(0.2)
                continue
            if err.status not in (404, 409):
                log.error("could not roll back %s: %s", name, err)
        left.pop(0)


def _remove_toxic(client: ToxiproxyClient, proxy: str, toxic: str) -> None:
    try:
        client.remove_toxic(proxy, toxic)
    except ToxiproxyError as err:
        if err.status != 404:  # removed meanwhile (the runner's own rollback): fine
            raise


def watch(
    client: ToxiproxyClient, heartbeat: Path, pid: int, ttl_s: float, proxies: list[str]
) -> str:
    """Waits until the faults must go (rolling them back) or the runner released them."""
    every_s = min(0.25, ttl_s / 4)
    armed_path(heartbeat).write_text(f"{os.getpid()}\n")
    since = time.time()
    while (why := why_roll_back(heartbeat, pid, ttl_s, since)) is None:
        time.sleep(every_s)
    if why != RELEASED:
        log.warning("rolling back %s: %s", ", ".join(proxies), why)
        roll_back(client, proxies)
    return why


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grpc_resilience_mesh.chaos.topology.watchdog")
    parser.add_argument("--toxiproxy", required=True, help="Toxiproxy's API URL")
    parser.add_argument("--heartbeat", required=True, type=Path, help="the runner's heartbeat")
    parser.add_argument("--pid", required=True, type=int, help="the runner's PID")
    parser.add_argument("--ttl-s", type=float, default=3.0, help="heartbeat age that ends it")
    parser.add_argument("--proxy", action="append", default=[], help="a proxy to roll back")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s watchdog %(message)s")
    client = ToxiproxyClient(args.toxiproxy, timeout_s=2.0, token=token_from_env())
    watch(client, args.heartbeat, args.pid, args.ttl_s, args.proxy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run each running container's healthcheck at its declared interval, as Docker does.

Podman schedules healthchecks with systemd timers; without systemd nothing ever runs them, and
Compose's `depends_on: condition: service_healthy` (and `up --wait`) wait forever. This loop
calls `podman healthcheck run` for every running container that declares a healthcheck: first
at once, then every `interval`. Podman itself applies `timeout`, `retries` and `start_period`.
Runs until killed (deploy/rehearsal/stop.sh ends it by its pid file). Stdlib only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

POLL_S = 0.5
NS_PER_S = 1e9


def running() -> dict[str, float]:
    """Running containers with a healthcheck: id -> interval in seconds."""
    ps = subprocess.run(
        ["podman", "ps", "--format", "json"], capture_output=True, text=True, timeout=30
    )
    if ps.returncode != 0:
        return {}
    ids = [c["Id"] for c in json.loads(ps.stdout or "[]")]
    if not ids:
        return {}
    found = subprocess.run(
        ["podman", "inspect", "--type", "container", *ids],
        capture_output=True,
        text=True,
        timeout=30,
    )
    out: dict[str, float] = {}
    for c in json.loads(found.stdout or "[]"):
        check = (c.get("Config") or {}).get("Healthcheck") or {}
        test = check.get("Test") or []
        if test and test[0] != "NONE":
            out[c["Id"]] = (check.get("Interval") or 30 * NS_PER_S) / NS_PER_S
    return out


def main() -> None:
    due: dict[str, float] = {}
    busy: dict[str, subprocess.Popen[bytes]] = {}
    while True:
        now = time.monotonic()
        for cid in [c for c, p in busy.items() if p.poll() is not None]:
            del busy[cid]
        try:
            current = running()
        except (subprocess.SubprocessError, ValueError) as err:
            print(f"health ticker: {err}", file=sys.stderr, flush=True)
            current = {}
        for cid in list(due):
            if cid not in current:
                del due[cid]
        for cid, interval in current.items():
            if cid in busy or due.get(cid, now) > now:
                continue
            due[cid] = now + interval
            busy[cid] = subprocess.Popen(
                ["podman", "healthcheck", "run", cid],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        time.sleep(POLL_S)


if __name__ == "__main__":
    main()

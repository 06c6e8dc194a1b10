"""What the compose rehearsal's tests use to look at the stack: span trees from Jaeger and from
the embedded mesh's files, relays to the containers' admin ports, a checkout load, waiting."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any

import grpc

from grpc_resilience_mesh.services.v1 import gateway_pb2, gateway_pb2_grpc, payment_pb2
from tests.compose.stack import ROOT, Stack, http_json, inspect
from tests.support.polling import wait_until

MESH_SERVICES = ("gateway", "payment", "profile", "recommendation", "notification")

# A span tree as its parent -> child links between (service, span name, kind) labels, a root
# linked from None; the same shape from both sources. A retried attempt repeats a link rather
# than adding one, so a retry on a loaded machine leaves the tree as it is; a span that lost
# its parent (context not propagated) becomes a root and changes it.
Label = tuple[str, str, str]
Tree = frozenset[tuple[Label | None, Label]]


def jaeger_tree(base: str, trace_id: str) -> Tree | None:
    """The trace as Jaeger's query API (GET /api/traces/{id}) returns it, or None."""
    try:
        data = http_json(f"{base}/api/traces/{trace_id}")["data"]
    except OSError:
        return None
    if not data:
        return None
    doc = data[0]
    spans = [
        {
            "span_id": s["spanID"],
            "parent_span_id": next(
                (r["spanID"] for r in s["references"] if r["refType"] == "CHILD_OF"), None
            ),
            "service": doc["processes"][s["processID"]]["serviceName"],
            "name": s["operationName"],
            "kind": next((t["value"] for t in s["tags"] if t["key"] == "span.kind"), ""),
        }
        for s in doc["spans"]
    ]
    return tree_of(spans)


def tree_of(spans: list[dict[str, Any]]) -> Tree:
    by_id = {
        s["span_id"]: (str(s["service"]), str(s["name"]), str(s["kind"]).lower()) for s in spans
    }
    return frozenset((by_id.get(s.get("parent_span_id") or ""), by_id[s["span_id"]]) for s in spans)


@contextmanager
def admin_bridges(stack: Stack) -> Iterator[str]:
    """CHAOS_TARGET_EXTRA for `make chaos`: every mesh container's admin and metrics address,
    named as the runner names the instance (`profile`, a replica `profile-2`).

    Admin and metrics listen on the container's loopback only, so a forwarder started in that
    container's network namespace (nsenter) relays to each, and the host reaches the relay on
    the rehearsal's podman network: rehearsal-only, see deploy/rehearsal/netns_forward.py."""
    entries: list[str] = []
    with ExitStack() as stop:
        for c in stack.containers():
            info = inspect(c["Name"])
            env = dict(e.partition("=")[::2] for e in info["Config"]["Env"])
            if env.get("SERVICE") not in MESH_SERVICES:
                continue
            instance = env.get("MESH_REPLICA") or c["Service"]
            # Any of its addresses: the host is on every podman network (internal or not).
            address = min(n["IPAddress"] for n in info["NetworkSettings"]["Networks"].values())
            entries += relay_entries(stop, instance, info["State"]["Pid"], address, env)
        yield ",".join(entries)


def relay_entries(
    stop: ExitStack, instance: str, pid: int, address: str, env: dict[str, str]
) -> list[str]:
    """`admin.INSTANCE` and `metrics.INSTANCE` of `--target` for the mesh process `pid`, whose
    ADMIN_ADDR and METRICS_ADDR `env` gives and whose network namespace has `address`: its
    loopback-only ports through relays started in that namespace (nsenter; rehearsal-only,
    deploy/rehearsal/netns_forward.py), stopped by `stop`."""
    forwarder = ROOT / "deploy" / "rehearsal" / "netns_forward.py"
    command = ["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, str(forwarder)]
    relays = []
    for var in ("ADMIN_ADDR", "METRICS_ADDR"):
        port = int(env[var].rpartition(":")[2])
        relay = port + 1000
        proc = subprocess.Popen([*command, str(relay), str(port)], stdout=subprocess.DEVNULL)
        stop.callback(proc.wait, 10)
        stop.callback(proc.terminate)
        wait_until(partial(connects, address, relay), 30, f"{instance}'s {var} relay", 0.1)
        relays.append(relay)
    admin, metrics = relays
    return [
        f"admin.{instance}={address}:{admin}",
        f"metrics.{instance}=http://{address}:{metrics}/metrics",
    ]


def connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return False
    return True


async def checkout_load(
    stack: Stack, acked: dict[str, str], stop: asyncio.Event, workers: int = 4
) -> int:
    """Checkouts with fresh idempotency keys until `stop` (at most 4,000 per worker and 280 s,
    the test's own limit); every SUCCEEDED answer goes into `acked` (key -> charge id). A
    refused checkout is followed by a 0.2 s pause, as a client backs off: while payment is
    down the gateway refuses at once (breaker open), and the load must outlast the restart
    and the healthcheck that follows it (a count of 400 per worker ran out in 20 s of that).
    Returns the calls made."""
    md = (("authorization", f"Bearer {stack.api_key}"),)
    made = 0
    ends_at = time.monotonic() + 280

    async def worker(n: int) -> None:
        nonlocal made
        async with grpc.aio.insecure_channel(stack.gateway) as channel:
            stub = gateway_pb2_grpc.GatewayStub(channel)
            for _ in range(4000):
                if stop.is_set() or time.monotonic() > ends_at:
                    return
                key = f"kill-{n}-{uuid.uuid4().hex}"
                request = gateway_pb2.CheckoutRequest(
                    user_id=f"u-{n + 1:04d}",
                    amount_cents=1234,
                    currency="USD",
                    idempotency_key=key,
                )
                made += 1
                try:
                    reply = await stub.Checkout(request, timeout=5, metadata=md)
                except grpc.aio.AioRpcError:
                    await asyncio.sleep(0.2)
                    continue
                if reply.status == payment_pb2.CHARGE_STATUS_SUCCEEDED:
                    acked[key] = reply.charge_id

    await asyncio.gather(*(worker(n) for n in range(workers)))
    return made


async def until(probe: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not await asyncio.to_thread(probe):
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not reached within {timeout_s:g} s")
        await asyncio.sleep(0.2)

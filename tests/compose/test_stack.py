"""docker-compose.yml, unchanged, up under podman: what the user's main path promises.

Run by `make compose-rehearsal` against the stack it brought up (tests/compose/stack.py), in
this file's order: the last test is `make down`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_resilience_mesh.services.v1 import gateway_pb2_grpc, payment_pb2
from tests.compose.probes import (
    Tree,
    admin_bridges,
    checkout_load,
    jaeger_tree,
    tree_of,
    until,
)
from tests.compose.stack import (
    PROJECT,
    ProcessView,
    Stack,
    http_json,
    inspect,
    podman,
)
from tests.e2e.mesh_up_process import MESH, MeshUp
from tests.support.chaos_calls import against_embedded, outputs
from tests.support.polling import wait_until

LOOPBACK_PUBLISHERS = {"gateway", "toxiproxy", "jaeger", "smtp"}


def call(stack: Stack, *args: str) -> dict[str, Any]:
    """`mesh call ARGS --addr <published gateway> --json -`, as a user runs it."""
    done = subprocess.run(
        [*MESH, "call", *args, "--addr", stack.gateway, "--json", "-"],
        capture_output=True,
        text=True,
        env={**os.environ, "MESH_API_KEY": stack.api_key},
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout))


# -- every service healthy under its hardening ----------------------------------------------


def test_every_service_is_healthy_under_its_declared_hardening(stack: Stack) -> None:
    declared = stack.config()["services"]

    def all_healthy() -> list[dict[str, Any]] | None:
        found = stack.containers()
        ok = {c["Service"] for c in found if c["State"] == "running" and c["Health"] == "healthy"}
        return found if ok == set(declared) else None

    containers = wait_until(all_healthy, 60, "every service running and healthy", 1.0)
    assert containers is not None
    for c in containers:
        svc = declared[c["Service"]]
        info = inspect(c["Name"])
        view = ProcessView.of(int(info["State"]["Pid"]))
        where = f"{c['Service']} ({c['Name']})"
        assert 0 not in view.uids and 0 not in view.gids, f"{where} runs as root: {view.uids}"
        if "user" in svc:  # a declared numeric user is the one the kernel sees
            uid, _, gid = str(svc["user"]).partition(":")
            assert view.uids[0] == int(uid), f"{where}: uid {view.uids[0]}, declared {uid}"
            if gid:
                assert view.gids[0] == int(gid), f"{where}: gid {view.gids[0]}, declared {gid}"
        assert svc.get("cap_drop") == ["ALL"]
        assert view.cap_eff == view.cap_prm == view.cap_bnd == 0, f"{where} holds capabilities"
        assert "no-new-privileges:true" in svc.get("security_opt", [])
        assert view.no_new_privs, f"{where}: no_new_privs is not set"
        assert svc.get("read_only") is True
        assert "ro" in view.mounts["/"][1], f"{where}: the root filesystem is writable"
        for path in svc.get("tmpfs", []):
            assert view.mounts.get(path, ("",))[0] == "tmpfs", f"{where}: {path} is not a tmpfs"
        for volume in svc.get("volumes", []):
            _, options = view.mounts[volume["target"]]
            assert ("ro" in options) == bool(volume.get("read_only")), f"{where}: {volume}"


def test_only_the_four_published_ports_and_all_on_loopback(stack: Stack) -> None:
    published: dict[str, list[dict[str, Any]]] = {}
    for c in stack.containers():
        ports = [p for p in c.get("Publishers") or [] if p.get("PublishedPort")]
        if ports:
            published[c["Service"]] = ports
    assert set(published) == LOOPBACK_PUBLISHERS
    for service, ports in published.items():
        assert {p["URL"] for p in ports} == {"127.0.0.1"}, f"{service}: {ports}"
    # Each container is on the networks the file gives it, and no other (no flat default).
    declared = stack.config()["services"]
    for c in stack.containers():
        joined = set(inspect(c["Name"])["NetworkSettings"]["Networks"])
        expected = {f"{PROJECT}_{n}" for n in declared[c["Service"]]["networks"]}
        assert joined == expected, c["Service"]


def test_a_service_reaches_its_own_proxies_but_not_the_toxiproxy_api(stack: Stack) -> None:
    """From inside the gateway's network namespace: its proxy to payment answers; the Toxiproxy
    API (listening on chaos-api only, at any of Toxiproxy's addresses), notification's proxy to
    Redis and payment itself do not."""

    def addresses(service: str) -> dict[str, str]:
        nets = inspect(stack.container(service)["Name"])["NetworkSettings"]["Networks"]
        return {n.removeprefix(f"{PROJECT}_"): v["IPAddress"] for n, v in nets.items()}

    toxiproxy = addresses("toxiproxy")
    probes = {
        "own proxy": (toxiproxy["proxied-gateway"], 26054),
        "api here": (toxiproxy["proxied-gateway"], 8474),
        "api on chaos-api": (toxiproxy["chaos-api"], 8474),
        "another caller's proxy": (toxiproxy["proxied-notification"], 26391),
        "payment": (addresses("payment")["proxied-payment"], 50054),
    }
    script = (
        "import socket,sys,json\n"
        "def ok(a):\n"
        "  try: socket.create_connection(tuple(a),timeout=2).close(); return True\n"
        "  except OSError: return False\n"
        "print(json.dumps({k: ok(a) for k, a in json.loads(sys.argv[1]).items()}))\n"
    )
    pid = inspect(stack.container("gateway")["Name"])["State"]["Pid"]
    done = subprocess.run(
        ["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, "-c", script, json.dumps(probes)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    reached = json.loads(done.stdout)
    assert reached == {k: k == "own proxy" for k in probes}, reached


# -- the user's calls through the published gateway -------------------------------------------


def test_home_and_checkout_answer_through_the_published_gateway(stack: Stack) -> None:
    home = call(stack, "home", "--user", "u-0001")
    assert home["profile"]["user_id"] == "u-0001"
    assert home["recommendations"], home
    assert not home.get("degraded"), home
    key = f"compose-{uuid.uuid4().hex}"
    first = call(stack, "checkout", "--user", "u-0001", "--amount", "12.50", "--key", key)
    assert first["status"] == "CHARGE_STATUS_SUCCEEDED", first
    again = call(stack, "checkout", "--user", "u-0001", "--amount", "12.50", "--key", key)
    assert again["charge_id"] == first["charge_id"] and again.get("replayed") is True, again


def test_a_receipt_reaches_mailpit(stack: Stack) -> None:
    email = call(stack, "home", "--user", "u-0007")["profile"]["email"]
    charge = call(stack, "checkout", "--user", "u-0007", "--amount", "3.21")["charge_id"]
    api = stack.url("MAILPIT_UI_PORT", "/api/v1")

    def receipt() -> dict[str, Any] | None:
        listing = http_json(f"{api}/messages?limit=500")
        for m in listing["messages"]:
            if charge in m["MessageID"] or charge in m["Snippet"]:
                return dict(http_json(f"{api}/message/{m['ID']}"))
        return None

    message = wait_until(receipt, 60, f"the receipt of {charge} in Mailpit", 0.5)
    assert message is not None
    assert [to["Address"] for to in message["To"]] == [email]
    assert charge in message["Text"] and "3.21" in message["Text"]


# -- traces: Jaeger's copy of the stack's spans, the embedded mesh's own files ---------------


@pytest.mark.timeout(300)
def test_traces_in_jaeger_have_the_embedded_mesh_span_tree(stack: Stack, mesh_up: MeshUp) -> None:
    from grpc_resilience_mesh.client.traces import load_spans, trace_files

    def user_calls(addr: str, key: str | None) -> dict[str, str]:
        env = {**os.environ, "MESH_API_KEY": key or ""}
        ids = {}
        for rpc, args in (
            ("home", ["--user", "u-0003"]),  # the second home: caches warm in both meshes
            ("home", ["--user", "u-0003"]),
            ("checkout", ["--user", "u-0003", "--amount", "4.56"]),
        ):
            done = subprocess.run(
                [*MESH, "call", rpc, *args, "--addr", addr, "--json", "-"],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert done.returncode == 0, done.stdout + done.stderr
            ids[rpc] = json.loads(done.stdout)["trace_id"]
        return ids

    jaeger = stack.url("JAEGER_UI_PORT", "")
    in_stack = user_calls(stack.gateway, stack.api_key)
    embedded = user_calls(mesh_up.state["gateway"], mesh_up.state.get("api_key"))
    traces = mesh_up.state_dir / "traces"

    def embedded_tree(trace_id: str) -> Tree | None:
        spans = [s for s in load_spans(trace_files(traces)) if s["trace_id"] == trace_id]
        return tree_of(spans) if spans else None

    # Each service exports its spans in batches (every 5 s to Jaeger), so a trace fills
    # in over a few seconds on both sides: poll until each pair agrees, then compare.
    last: dict[str, tuple[Tree | None, Tree | None]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for rpc in in_stack:
            last[rpc] = (jaeger_tree(jaeger, in_stack[rpc]), embedded_tree(embedded[rpc]))
        if all(a is not None and a == b for a, b in last.values()):
            break
        time.sleep(1.0)
    for rpc, (through_stack, on_host) in last.items():
        assert through_stack == on_host, f"{rpc}: Jaeger's trace differs from the embedded one"
    home = last["home"][0]
    assert home is not None
    services = {child[0] for _, child in home}
    assert services >= {"gateway", "profile", "recommendation"}, services


# -- make chaos EXP=provider-outage through the stack's real Toxiproxy ------------------------


@pytest.mark.timeout(900)
def test_provider_outage_through_the_stack_counts_the_calls_the_embedded_run_counts(
    stack: Stack, tmp_path: Path
) -> None:
    with admin_bridges(stack) as extra:
        done = stack.make(
            "chaos",
            "EXP=provider-outage",
            f"CHAOS_TARGET_EXTRA={extra}",
            f"CHAOS_ARGS={' '.join(outputs(tmp_path, 'compose'))}",
        )
    in_stack = tmp_path / "compose.json"
    # Whether the hypothesis held (make's status) can turn on a timing bound on a loaded
    # machine; what this test compares is what the runner measured, in its JSON.
    assert in_stack.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    # The stack runs MESH_POLICY (full); the runner swaps each variant's policy in place through
    # each service's PolicyAdmin (gRPC's own retries included: the edge gets a new channel), so
    # every variant is measured through the stack and compared, but for one that asks for xDS
    # (`xds: true`): its services restart into `mesh up --xds`, which only the embedded mesh
    # can do, so the stack skips it saying so (and the embedded run without mesh-xds built).
    compose_calls, embedded_calls, differ = against_embedded(in_stack, tmp_path)
    assert not differ, f"{differ}; stack {compose_calls}, embedded {embedded_calls}"


# -- a killed payment container loses no acknowledged charge ----------------------------------


@pytest.mark.timeout(300)
async def test_a_killed_payment_container_loses_no_acknowledged_charge(stack: Stack) -> None:
    name = stack.container("payment")["Name"]
    before = inspect(name)
    acked: dict[str, str] = {}
    stop = asyncio.Event()
    load = asyncio.create_task(checkout_load(stack, acked, stop))
    try:
        await until(lambda: len(acked) >= 20, 60, "20 acknowledged checkouts before the kill")
        # A crash, not a stop: SIGKILL to the container's first process, from this host.
        os.kill(int(before["State"]["Pid"]), signal.SIGKILL)
        at_kill = len(acked)

        def back() -> bool:
            now = inspect(name)
            return (
                now["RestartCount"] > before["RestartCount"]
                and now["State"]["Status"] == "running"
                and (now["State"].get("Health") or {}).get("Status") == "healthy"
            )

        await until(back, 120, "payment restarted (unless-stopped) and healthy again")
        at_back = len(acked)
        await until(
            lambda: len(acked) >= at_back + 20 or load.done(),
            60,
            "20 more charges after the restart",
        )
        assert not load.done(), "the checkout load ended before 20 charges after the restart"
    finally:
        stop.set()
        made = await load
    assert made > len(acked) >= at_kill + 20
    # Every acknowledged charge is in the ledger that came back: GetCharge finds it SUCCEEDED,
    # and a retry with its key replays it instead of charging again.
    md = (("authorization", f"Bearer {stack.api_key}"),)
    async with grpc.aio.insecure_channel(stack.gateway) as channel:
        stub = gateway_pb2_grpc.GatewayStub(channel)
        lost = []
        for key, charge in acked.items():
            found = await stub.GetCharge(
                payment_pb2.GetChargeRequest(charge_id=charge), timeout=5, metadata=md
            )
            if found.status != payment_pb2.CHARGE_STATUS_SUCCEEDED:
                lost.append((key, charge, found.status))
        assert not lost, f"{len(lost)} of {len(acked)} acknowledged charges lost: {lost[:5]}"


# -- last: make down --------------------------------------------------------------------------


def test_make_down_leaves_no_container_network_or_volume(stack: Stack) -> None:
    done = stack.make("down")
    assert done.returncode == 0, done.stdout + done.stderr
    label = f"label=com.docker.compose.project={PROJECT}"
    for kind in ("container", "network", "volume"):
        listed = podman(
            kind,
            "ls",
            *(["--all"] if kind == "container" else []),
            "--filter",
            label,
            "--format",
            "{{.Names}}" if kind == "container" else "{{.Name}}",
        )
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.strip() == "", f"left after make down: {kind}s {listed.stdout}"
    # Nothing at all: this podman's storage is the rehearsal's own (.rehearsal/).
    assert podman("ps", "--all", "--quiet").stdout.strip() == ""
    assert podman("volume", "ls", "--quiet").stdout.strip() == ""
    assert podman("network", "ls", "--format", "{{.Name}}").stdout.split() == ["podman"]

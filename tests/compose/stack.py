"""The compose stack as the rehearsal's tests see it: Docker Compose v2 against podman's API.

`make compose-rehearsal` (deploy/rehearsal/rehearse.sh) brings the stack up, sets
MESH_COMPOSE_REHEARSAL=1, REHEARSAL_COMPOSE (the docker-compose binary), DOCKER_HOST and
podman's CONTAINERS_* variables, and the published ports it chose (GATEWAY_PORT, ...), then runs
these tests. What a container really runs with (uid, capabilities, no_new_privs, mounts) is read
from /proc of its first process on this host, not from what the engine says it asked for.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PROJECT = "grpc-resilience-mesh"
PUBLISHED_PORT_VARS = ("GATEWAY_PORT", "TOXIPROXY_API_PORT", "JAEGER_UI_PORT", "MAILPIT_UI_PORT")


def dotenv(name: str) -> str:
    """A .env value as Compose reads it: the shell's value wins."""
    if os.environ.get(name):
        return os.environ[name]
    for line in (ROOT / ".env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    raise KeyError(f"{name} is not in .env")


@dataclass(frozen=True)
class Stack:
    compose_binary: Path

    def port(self, var: str) -> int:
        return int(dotenv(var))

    @property
    def gateway(self) -> str:
        return f"127.0.0.1:{self.port('GATEWAY_PORT')}"

    @property
    def api_key(self) -> str:
        return dotenv("MESH_API_KEYS").split(",")[0]

    def url(self, var: str, path: str) -> str:
        return f"http://127.0.0.1:{self.port(var)}{path}"

    def compose(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.compose_binary), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def make(self, *args: str, timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
        """`make ARGS` in the checkout, with Compose pointed at podman (COMPOSE=...)."""
        return subprocess.run(
            ["make", "--no-print-directory", *args, f"COMPOSE={self.compose_binary}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )

    def config(self) -> dict[str, Any]:
        """The file as Compose resolved it (`docker compose config --format json`)."""
        done = self.compose("config", "--format", "json")
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    def containers(self) -> list[dict[str, Any]]:
        """`docker compose ps --all`: one entry per container of the project."""
        done = self.compose("ps", "--all", "--format", "json")
        assert done.returncode == 0, done.stderr
        text = done.stdout.strip()
        if text.startswith("["):
            return list(json.loads(text))
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def container(self, service: str) -> dict[str, Any]:
        found = [c for c in self.containers() if c["Service"] == service]
        assert len(found) == 1, f"{service}: {len(found)} containers"
        return found[0]


def podman(*args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout_s)


def inspect(name: str) -> dict[str, Any]:
    done = podman("inspect", "--type", "container", name)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)[0])


def http_json(url: str, timeout_s: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout_s) as reply:
        return json.loads(reply.read())


@dataclass(frozen=True)
class ProcessView:
    """A container's first process as the kernel sees it."""

    uids: tuple[int, ...]
    gids: tuple[int, ...]
    cap_eff: int
    cap_prm: int
    cap_bnd: int
    no_new_privs: bool
    mounts: dict[str, tuple[str, set[str]]]
    """mount point -> (filesystem type, mount options)."""

    @classmethod
    def of(cls, pid: int) -> ProcessView:
        fields: dict[str, str] = {}
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        mounts: dict[str, tuple[str, set[str]]] = {}
        for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            parts = left.split()
            fstype = right.split()[0]
            mounts[parts[4]] = (fstype, set(parts[5].split(",")))
        return cls(
            uids=tuple(int(x) for x in fields["Uid"].split()),
            gids=tuple(int(x) for x in fields["Gid"].split()),
            cap_eff=int(fields["CapEff"], 16),
            cap_prm=int(fields["CapPrm"], 16),
            cap_bnd=int(fields["CapBnd"], 16),
            no_new_privs=fields.get("NoNewPrivs") == "1",
            mounts=mounts,
        )

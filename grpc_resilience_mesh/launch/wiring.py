"""How the mesh's processes find each other: each one's environment and command line, the
Toxiproxy configuration, the API key and certificates, and the state mesh.json records."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grpc_resilience_mesh.client import trace_source
from grpc_resilience_mesh.client.state import MeshState
from grpc_resilience_mesh.embedded_toxiproxy.api_token import TOKEN_ENV as TOXIPROXY_TOKEN_ENV
from grpc_resilience_mesh.launch.ports import Ports
from grpc_resilience_mesh.launch.processes import LaunchError
from grpc_resilience_mesh.launch.xds_plane import XDS_TOKEN_ENV, XdsPlane
from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.gateway.auth import API_KEYS, API_KEYS_FILE
from grpc_resilience_mesh.services.runtime.admin_auth import TOKEN_ENV as ADMIN_TOKEN_ENV
from grpc_resilience_mesh.services.runtime.admin_auth import admin_token
from grpc_resilience_mesh.services.runtime.config import ADMIN_TOKEN, INTERNAL_TOKEN
from grpc_resilience_mesh.services.runtime.internal_auth import TOKEN_ENV as INTERNAL_TOKEN_ENV
from grpc_resilience_mesh.services.runtime.internal_auth import internal_token
from grpc_resilience_mesh.services.runtime.tls import CA_CERT, TLS_DIR, tls_enabled
from grpc_resilience_mesh.services.topology import (
    EDGES,
    INSTANCES,
    PROXIES,
    Edge,
    ServiceSpec,
    edge_proxies,
    replica_of,
    service,
)


@dataclass(frozen=True)
class Security:
    """The API key the load sends (and the one generated for the gateway, if none was
    configured), the certificates' directory with MESH_TLS=1, the admin token the admin
    ports and Toxiproxy's API require (None: MESH_ADMIN_AUTH=off, both open), and the internal
    token the services behind the gateway require (None: MESH_INTERNAL_AUTH=off, open)."""

    api_key: str | None
    generated_key: str | None
    tls_dir: Path | None
    admin_token: str | None = None
    internal_token: str | None = None

    @property
    def tokens(self) -> tuple[str | None, str | None]:
        """(admin token, internal token), as mesh.json records them."""
        return self.admin_token, self.internal_token


def _first_key(path: Path) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    return next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), None)


ADMIN_AUTH = settings.Var(
    "MESH_ADMIN_AUTH",
    settings.lower_choice("on", "off"),
    "on",
    "off: `mesh up` gives the admin ports and Toxiproxy no token",
)


def control_token(env: Mapping[str, str]) -> str | None:
    """MESH_ADMIN_TOKEN if set, else a fresh token for this run; None with MESH_ADMIN_AUTH=off
    (anyone on the host may then drive the admin ports and Toxiproxy)."""
    if ADMIN_AUTH.read(env) == "off":
        return None
    try:
        configured = admin_token(ADMIN_TOKEN.read(env))
    except ConfigError as err:
        raise LaunchError(str(err)) from None
    return configured or secrets.token_urlsafe(32)


INTERNAL_AUTH = settings.Var(
    "MESH_INTERNAL_AUTH",
    settings.lower_choice("on", "off"),
    "on",
    "off: `mesh up` gives the services no internal token (any local process may call them)",
)


def mesh_token(env: Mapping[str, str]) -> str | None:
    """MESH_INTERNAL_TOKEN if set, else a fresh token for this run; None with
    MESH_INTERNAL_AUTH=off (anyone on the host may then call the services behind the gateway)."""
    if INTERNAL_AUTH.read(env) == "off":
        return None
    try:
        configured = internal_token(INTERNAL_TOKEN.read(env))
    except ConfigError as err:
        raise LaunchError(str(err)) from None
    return configured or secrets.token_urlsafe(32)


def prepare_security(env_overrides: Mapping[str, str], state_dir: Path) -> Security:
    """The configured API key, else a fresh one; the admin token (grpc_resilience_mesh.launch.wiring
    .control_token); with MESH_TLS=1, certificates (made once)."""
    env = {**os.environ, **env_overrides}
    generated = None
    if API_KEYS.read(env):
        api_key: str | None = API_KEYS.read(env).split(",")[0].strip()
    elif API_KEYS_FILE.read(env):
        api_key = _first_key(Path(API_KEYS_FILE.read(env)))
    else:
        api_key = generated = secrets.token_urlsafe(24)
    tls_dir = None
    if tls_enabled(env):
        tls_dir = Path(settings.read(env, TLS_DIR.name, TLS_DIR.rule, str(state_dir / "certs")))
        tls_dir = tls_dir.resolve()
        if not (tls_dir / CA_CERT).exists():
            from grpc_resilience_mesh.launch.certs import write_certs

            write_certs(tls_dir)
    return Security(api_key, generated, tls_dir, control_token(env), mesh_token(env))


@dataclass
class Wiring:
    """The addresses and settings every process of one mesh is started with."""

    ports: Ports
    state_dir: Path
    direct: bool
    env: dict[str, str]
    """Set in every service's environment."""
    per_service: dict[str, dict[str, str]]
    """Set in one service's environment, last."""
    xds: XdsPlane | None = None
    """With `mesh up --xds`: the control plane the gateway's and recommendation's channels use."""
    started_ns: int = 0
    """When this mesh began (time.time_ns(); 0: unknown): spans older than this in its traces
    dir are an earlier run's."""

    @property
    def toxiproxy_url(self) -> str | None:
        return None if self.direct else f"http://127.0.0.1:{self.ports.toxiproxy_api}"

    @property
    def gateway(self) -> str:
        return f"127.0.0.1:{self.ports.listen['gateway']}"

    def listen(self, name: str) -> str:
        return f"127.0.0.1:{self.ports.listen.get(name, 0)}"

    def proxy_config(self) -> list[dict[str, object]]:
        return [
            {
                "name": p.name,
                "listen": f"127.0.0.1:{self.ports.proxies[p.name]}",
                "upstream": f"127.0.0.1:{self.ports.listen[p.upstream.name]}",
                "enabled": True,
            }
            for p in PROXIES
        ]

    def dependency_addr(self, edge: Edge) -> str:
        """Where `edge`'s caller finds its dependency: every replica's proxy (or, direct,
        every replica), separated by commas; the caller balances over them."""
        ports = self.ports
        return ",".join(
            f"127.0.0.1:{ports.listen[p.upstream.name] if self.direct else ports.proxies[p.name]}"
            for p in edge_proxies(edge)
        )

    def service_env(self, spec: ServiceSpec, policy: str, security: Security) -> dict[str, str]:
        env = {
            "LISTEN_ADDR": f"127.0.0.1:{self.ports.listen[spec.name]}",
            "ADMIN_ADDR": f"127.0.0.1:{self.ports.admin[spec.name]}",
            "METRICS_ADDR": f"127.0.0.1:{self.ports.metrics[spec.name]}",
            "MESH_POLICY": policy,
            "PAYMENT_DB_PATH": str(self.state_dir / "payment" / "ledger.sqlite3"),
            "MESH_TRACES_DIR": str(self.state_dir / "traces"),
            # Spans reach the files within half a second (the SDK's default is 5 s), so a
            # report written right after an experiment finds its breaker moves there.
            "OTEL_BSP_SCHEDULE_DELAY": "500",
            "OTEL_SERVICE_NAME": replica_of(spec.name),
            # Each replica writes its own trace file (two processes must not append to one).
            "MESH_REPLICA": spec.name,
            **self.env,
        }
        own = [e for e in EDGES if e.caller == replica_of(spec.name)]
        for e in own:
            env[e.addr_env] = self.dependency_addr(e)
        if self.xds is not None:
            env.update(self.xds.caller_env(replica_of(spec.name), own))
        env.update({ADMIN_TOKEN_ENV: security.admin_token or ""})
        env.update({INTERNAL_TOKEN_ENV: security.internal_token or ""})
        if spec.name == "gateway" and security.generated_key:
            env["MESH_API_KEYS"] = security.generated_key
        if security.tls_dir is not None:
            env.update(MESH_TLS="1", MESH_TLS_DIR=str(security.tls_dir))
        env.update(self.per_service.get(spec.name, {}))
        return env

    def command(
        self, name: str, policy: str, security: Security
    ) -> tuple[list[str], dict[str, str], bool]:
        """(arguments, environment, run under Python?) for one of the mesh's own processes."""
        if name == "redis":
            from grpc_resilience_mesh.launch.redis_server import redis_args

            return redis_args(self.ports.listen["redis"], self.state_dir / "redis"), {}, False
        if name == "smtp":
            mailbox = str(self.state_dir / "mailbox")
            listen = self.listen(name)
            return (
                [
                    "-m",
                    "grpc_resilience_mesh.client.mail.smtp_sink",
                    "--listen",
                    listen,
                    "--dir",
                    mailbox,
                ],
                {},
                True,
            )
        if name == "xds" and self.xds is not None:
            return self.xds.args(), {XDS_TOKEN_ENV: security.admin_token or ""}, False
        if name == "toxiproxy":
            api = ["--host", "127.0.0.1", "--port", str(self.ports.toxiproxy_api)]
            config = ["--config", str(self.state_dir / "toxiproxy.json")]
            token = {TOXIPROXY_TOKEN_ENV: security.admin_token or ""}
            return ["-m", "grpc_resilience_mesh.cli", "toxiproxy", *api, *config], token, True
        spec = service(name)
        return ["-m", spec.module], self.service_env(spec, policy, security), True

    def describe(
        self,
        pids: dict[str, int],
        policy: str,
        api_key: str | None,
        control: str | None,
        admin_token: str | None = None,
        internal_token: str | None = None,
    ) -> MeshState:
        """What mesh.json records about this mesh."""
        return MeshState(
            gateway=self.gateway,
            toxiproxy=self.toxiproxy_url,
            services={
                s.name: {
                    "listen": f"127.0.0.1:{self.ports.listen[s.name]}",
                    "admin": f"127.0.0.1:{self.ports.admin[s.name]}",
                    "metrics": f"http://127.0.0.1:{self.ports.metrics[s.name]}/metrics",
                }
                for s in INSTANCES
            },
            proxies={
                p.name: {
                    "listen": f"127.0.0.1:{self.ports.proxies[p.name]}"
                    if not self.direct
                    else f"127.0.0.1:{self.ports.listen[p.upstream.name]}",
                    "upstream": f"127.0.0.1:{self.ports.listen[p.upstream.name]}",
                }
                for p in PROXIES
            },
            pids=pids,
            policy=policy,
            state_dir=str(self.state_dir),
            api_key=api_key,
            admin_token=admin_token,
            internal_token=internal_token,
            extra={
                "redis": f"127.0.0.1:{self.ports.listen['redis']}",
                "smtp": f"127.0.0.1:{self.ports.listen['smtp']}",
                "mailbox": str(self.state_dir / "mailbox"),
                **({"xds_ads": self.xds.ads, "xds_admin": self.xds.admin_url} if self.xds else {}),
                **trace_source.record({**os.environ, **self.env}, self.started_ns),
            },
            owner_pid=os.getpid(),
            control=control,
        )

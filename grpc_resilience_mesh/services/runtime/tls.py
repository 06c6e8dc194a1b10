"""Optional TLS between services: `MESH_TLS=1` and certificates from `mesh certs`.

`MESH_TLS_DIR` (default var/certs) holds `ca.crt` (the dev CA) and `<service>.crt`/`.key` for
each service, whose SANs are the service name, localhost and 127.0.0.1. Internal services
then accept only TLS, and every caller verifies its dependency against the CA under the dependency's
name (`grpc.ssl_target_name_override`), because it dials a Toxiproxy port, not the dependency:
Toxiproxy relays TCP bytes, so the handshake passes through it unchanged.

The gateway's public port stays plaintext: it is the demo's client surface (bound to
127.0.0.1 by default; in a cluster an ingress or load balancer terminates TLS in front of
it), and keeping it plain lets the load generator, the experiments and `grpcurl -plaintext`
work the same with TLS on or off. Admin ports stay plaintext on loopback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from grpc_resilience_mesh.services import settings
from grpc_resilience_mesh.services.config_error import ConfigError
from grpc_resilience_mesh.services.topology import replica_of

CA_CERT = "ca.crt"
PLAINTEXT_LISTENERS = frozenset({"gateway"})
"""Services whose public listener stays plaintext with MESH_TLS=1 (see the module docstring)."""


def cert_paths(directory: Path, name: str) -> tuple[Path, Path]:
    """(certificate, private key) of service `name`."""
    return directory / f"{name}.crt", directory / f"{name}.key"


TLS = settings.Var(
    "MESH_TLS", settings.flag, False, "on: the services behind the gateway speak only TLS"
)
TLS_DIR = settings.Var(
    "MESH_TLS_DIR", settings.text, "var/certs", "where `mesh certs` wrote the CA and certificates"
)


def tls_enabled(environ: Mapping[str, str]) -> bool:
    return TLS.read(environ)


@dataclass(frozen=True)
class MeshTls:
    """Where the mesh's CA and service certificates are, and the credentials built from them."""

    directory: Path
    """MESH_TLS_DIR: written by `mesh certs`. Default var/certs."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> MeshTls | None:
        """None unless MESH_TLS=1; a missing CA fails at start-up naming the variable."""
        if not tls_enabled(environ):
            return None
        directory = Path(TLS_DIR.read(environ))
        if not (directory / CA_CERT).is_file():
            raise ConfigError(
                f"MESH_TLS=1 but MESH_TLS_DIR={str(directory)!r} has no {CA_CERT}: "
                "run `mesh certs --dir DIR` first"
            )
        return cls(directory)

    def _read(self, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except OSError as err:
            raise ConfigError(f"MESH_TLS_DIR: cannot read {path}: {err.strerror}") from None

    def serves_tls(self, name: str) -> bool:
        return name not in PLAINTEXT_LISTENERS

    def server_credentials(self, name: str) -> grpc.ServerCredentials:
        """A replica (`profile-2`) serves under its service's identity: callers verify the
        service name, whichever replica round_robin picked."""
        cert, key = cert_paths(self.directory, replica_of(name))
        return grpc.ssl_server_credentials([(self._read(key), self._read(cert))])

    def channel_credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(root_certificates=self._read(self.directory / CA_CERT))

    def channel_options(self, dependency: str) -> list[tuple[str, Any]]:
        """Verify the dependency's certificate under its service name, whatever address we dial."""
        return [("grpc.ssl_target_name_override", dependency)]

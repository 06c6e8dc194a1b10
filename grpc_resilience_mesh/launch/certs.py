"""A development CA and one server certificate per service, for MESH_TLS=1.

For a laptop or a test cluster only: the CA key is written next to the certificates, so
anyone who can read the directory can mint certificates the mesh trusts. Use your own PKI
(cert-manager, Vault, a service mesh) for anything real.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from grpc_resilience_mesh.launch.state_guard import write_private
from grpc_resilience_mesh.services.runtime.tls import CA_CERT, cert_paths
from grpc_resilience_mesh.services.topology import SERVICES

CA_KEY = "ca.key"
VALID_DAYS = 365


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "grpc-resilience-mesh (dev)"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(path: Path, data: bytes, private: bool = False) -> None:
    write_private(path, data, 0o600 if private else 0o666)  # a link at `path`: refused
    if private:
        path.chmod(0o600)


def make_ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("mesh dev CA"))
        .issuer_name(_name("mesh dev CA"))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write(directory / CA_CERT, cert.public_bytes(serialization.Encoding.PEM))
    _write(directory / CA_KEY, _pem_key(key), private=True)
    return cert, key


def make_server_cert(
    directory: Path, name: str, ca: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey
) -> None:
    """`<name>.crt` and `<name>.key`, valid for `name`, localhost and 127.0.0.1."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    sans: list[x509.GeneralName] = [
        x509.DNSName(name),
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path = cert_paths(directory, name)
    _write(cert_path, cert.public_bytes(serialization.Encoding.PEM))
    _write(key_path, _pem_key(key), private=True)


def write_certs(directory: Path, names: Iterable[str] | None = None) -> list[Path]:
    """A fresh CA and a certificate per service in `directory`; returns the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = make_ca(directory)
    services = list(names) if names is not None else [s.name for s in SERVICES]
    for name in services:
        make_server_cert(directory, name, ca, ca_key)
    return sorted(directory.iterdir())

"""Parsing and formatting `host:port` addresses the way Go's net package does."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from grpc_resilience_mesh.embedded_toxiproxy.errors import NON_LOOPBACK_LISTEN, ApiError, internal


def split_host_port(address: str) -> tuple[str, int]:
    """Go's net.SplitHostPort plus port parsing; raises ApiError(500) with Go-like text."""
    if address.startswith("["):
        end = address.find("]")
        if end < 0 or not address[end + 1 :].startswith(":"):
            raise internal(f"address {address}: missing ']' in address")
        host, port_text = address[1:end], address[end + 2 :]
    else:
        host, sep, port_text = address.rpartition(":")
        if not sep:
            raise internal(f"address {address}: missing port in address")
        if ":" in host:
            raise internal(f"address {address}: too many colons in address")
    if port_text == "":
        return host, 0
    if not (port_text.isascii() and port_text.isdigit()):  # int() takes "٨٠", " 80", "8_0", "+80"
        raise internal(f"lookup tcp/{port_text}: unknown port")
    port = int(port_text) if len(port_text) <= 5 else 65536  # int() refuses > 4300 digits
    if not 0 <= port <= 65535:
        raise internal(f"address {port_text}: invalid port")
    return host, port


def join_host_port(host: str, port: int) -> str:
    """Go's net.JoinHostPort: IPv6 literals get brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def resolve_listen(address: str) -> str:
    """Go's net.ResolveTCPAddr(...).String(): used to decide if a proxy's listen address changed."""
    host, port = split_host_port(address)
    if host == "" or _is_ip(host):
        return join_host_port(host, port)
    try:
        _, resolved, _ = await bind_address(address)
    except OSError as exc:
        raise ApiError(f"lookup {host}: {exc}", 500) from None
    return join_host_port(resolved, port)


async def bind_address(listen: str) -> tuple[socket.AddressFamily, str, int]:
    """Family, host and port a proxy listening on `listen` binds; host "" is every interface.

    Raises OSError if the host does not resolve, ApiError(500) if `listen` is malformed.
    """
    host, port = split_host_port(listen) if listen else ("", 0)
    if host == "":
        return socket.AF_UNSPEC, "", port
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # Go prefers an IPv4 address when a name resolves to both families.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    family, _, _, _, address = infos[0]
    return family, str(address[0]), port


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and ::ffff:127.x; not "" (every interface) and not a name."""
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


async def require_loopback(listen: str) -> None:
    """Refuse (400) a `listen` that would bind beyond loopback: the server's promise by default.

    A malformed or unresolvable address passes: binding it reports Toxiproxy's own error.
    """
    try:
        _, host, _ = await bind_address(listen)
    except (OSError, ApiError):
        return
    if not is_loopback(host):
        binds = f"binds {host}" if host else "means every interface"
        raise NON_LOOPBACK_LISTEN.joined(
            f"{listen!r} {binds}; use 127.0.0.1:PORT or [::1]:PORT (Chaos Toolkit's chaostoxi"
            " create_proxy listens on 0.0.0.0 unless given listen_host: 127.0.0.1), or start"
            " the server with --allow-non-loopback"
        )

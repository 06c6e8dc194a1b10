"""Parsing and formatting `host:port` addresses the way Go's net package does."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from chaos.toxiproxy.errors import ApiError, internal


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
    try:
        port = int(port_text)
    except ValueError:
        raise internal(f"lookup tcp/{port_text}: unknown port") from None
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
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ApiError(f"lookup {host}: {exc}", 500) from None
    # Go prefers an IPv4 address when a name resolves to both families.
    infos.sort(key=lambda info: info[0] != socket.AF_INET)
    return join_host_port(str(infos[0][4][0]), port)

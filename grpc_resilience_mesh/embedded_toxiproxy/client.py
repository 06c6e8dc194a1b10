"""A thin, typed, synchronous client for the Toxiproxy HTTP API (ours or Shopify's 2.x)."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, cast


class ToxiproxyError(Exception):
    """An API error: `status` is the HTTP status (0 if the server could not be reached)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


class ToxiproxyClient:
    """Unlike toxiproxy-python: toxic updates, server-side populate, errors never swallowed,
    and the embedded server's API token (`token`, sent as a bearer header; real Toxiproxy
    ignores it)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8474",
        timeout_s: float = 10.0,
        token: str | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._token = token

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        # Toxiproxy refuses browser user agents; say who we are.
        request.add_header("User-Agent", "chaos-toxiproxy-client/1")
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as exc:
            raise _error_from(exc.code, exc.read().decode(errors="replace")) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ToxiproxyError(0, f"{self.base_url}: {exc}") from None
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            # Toxiproxy before 2.7 sent /version as plain text.
            return text.strip()

    def proxies(self) -> dict[str, dict[str, Any]]:
        return cast(dict[str, dict[str, Any]], self._request("GET", "/proxies"))

    def get_proxy(self, name: str) -> dict[str, Any]:
        return cast(dict[str, Any], self._request("GET", f"/proxies/{_quote(name)}"))

    def create_proxy(
        self, name: str, listen: str, upstream: str, enabled: bool = True
    ) -> dict[str, Any]:
        body = {"name": name, "listen": listen, "upstream": upstream, "enabled": enabled}
        return cast(dict[str, Any], self._request("POST", "/proxies", body))

    def update_proxy(self, name: str, **fields: Any) -> dict[str, Any]:
        """PATCH the given fields (listen, upstream, enabled); the others keep their value."""
        return cast(dict[str, Any], self._request("PATCH", f"/proxies/{_quote(name)}", fields))

    def delete_proxy(self, name: str) -> None:
        self._request("DELETE", f"/proxies/{_quote(name)}")

    def enable(self, name: str) -> dict[str, Any]:
        return self.update_proxy(name, enabled=True)

    def disable(self, name: str) -> dict[str, Any]:
        return self.update_proxy(name, enabled=False)

    def populate(self, proxies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Server-side populate: creates new, keeps unchanged and replaces changed proxies."""
        result = cast(dict[str, Any], self._request("POST", "/populate", proxies))
        return cast(list[dict[str, Any]], result.get("proxies") or [])

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], self._request("GET", f"/proxies/{_quote(proxy)}/toxics"))

    def get_toxic(self, proxy: str, name: str) -> dict[str, Any]:
        path = f"/proxies/{_quote(proxy)}/toxics/{_quote(name)}"
        return cast(dict[str, Any], self._request("GET", path))

    def add_toxic(
        self,
        proxy: str,
        type: str,
        stream: str = "downstream",
        toxicity: float = 1.0,
        attributes: dict[str, int] | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": type,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": attributes or {},
        }
        if name is not None:
            body["name"] = name
        return cast(dict[str, Any], self._request("POST", f"/proxies/{_quote(proxy)}/toxics", body))

    def update_toxic(
        self,
        proxy: str,
        name: str,
        attributes: dict[str, int] | None = None,
        toxicity: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if attributes is not None:
            body["attributes"] = attributes
        if toxicity is not None:
            body["toxicity"] = toxicity
        path = f"/proxies/{_quote(proxy)}/toxics/{_quote(name)}"
        return cast(dict[str, Any], self._request("PATCH", path, body))

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._request("DELETE", f"/proxies/{_quote(proxy)}/toxics/{_quote(name)}")

    def reset(self) -> None:
        self._request("POST", "/reset")

    def put_lease(self, lease_id: str, ttl_s: float, proxies: list[str]) -> dict[str, Any]:
        """Create or renew a fault lease (the embedded server's extension; real Toxiproxy
        answers 404): unless renewed within `ttl_s`, the server removes every toxic of
        `proxies` and enables them (grpc_resilience_mesh.embedded_toxiproxy.leases)."""
        body = {"ttl_s": ttl_s, "proxies": proxies}
        return cast(dict[str, Any], self._request("PUT", f"/leases/{_quote(lease_id)}", body))

    def delete_lease(self, lease_id: str) -> None:
        """Drop a lease, leaving its proxies as they are; ToxiproxyError 404 if there is none."""
        self._request("DELETE", f"/leases/{_quote(lease_id)}")

    def leases(self) -> dict[str, dict[str, Any]]:
        """Every lease by id: its ttl_s, proxies and expires_in_s."""
        return cast(dict[str, dict[str, Any]], self._request("GET", "/leases"))

    def version(self) -> str:
        result = self._request("GET", "/version")
        return str(result["version"]) if isinstance(result, dict) else str(result)


def _error_from(status: int, text: str) -> ToxiproxyError:
    try:
        body = json.loads(text)
    except ValueError:
        return ToxiproxyError(status, text.strip())
    if isinstance(body, dict) and "error" in body:
        return ToxiproxyError(status, str(body["error"]))
    return ToxiproxyError(status, text.strip())

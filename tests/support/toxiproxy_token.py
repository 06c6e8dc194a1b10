"""toxiproxy-python against a server that wants its API token
(grpc_resilience_mesh.embedded_toxiproxy.api_token)."""

from __future__ import annotations

import pytest
import requests
import toxiproxy.api


def send_token_from_toxiproxy_python(monkeypatch: pytest.MonkeyPatch, token: str | None) -> None:
    """toxiproxy-python cannot send a header: its module-level `requests.get/post/delete`
    calls go, for this test, through a Session that carries `token` (None: nothing)."""
    session = requests.Session()
    if token:
        session.headers["Authorization"] = f"Bearer {token}"
    monkeypatch.setattr(toxiproxy.api, "requests", session)

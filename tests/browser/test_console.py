"""The console in a real browser: what a newcomer sees while breaking and mending the mesh.

One mesh and one headless Chromium for the module (conftest); each test starts from a reset
mesh. Screenshots of each state go to tests/browser/artifacts/ (git-ignored).
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from toxiproxy import Toxiproxy

from tests.browser.conftest import ARTIFACTS, ConsoleMesh
from tests.support.polling import wait_until
from tests.support.toxiproxy_token import send_token_from_toxiproxy_python

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]
REC = "gateway_to_recommendation"


def api(mesh: ConsoleMesh, path: str, body: dict[str, Any] | None = None) -> Any:
    base, _, token = mesh.url.partition("?token=")
    request = urllib.request.Request(base.rstrip("/") + path)
    request.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        request.data = json.dumps(body).encode()
        request.add_header("X-Mesh-Console", "1")
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def start_load(page: Any, rate: int = 20, home: int = 1, checkout: int = 0) -> None:
    page.fill("#load-rate", str(rate))
    page.fill("#load-home", str(home))
    page.fill("#load-checkout", str(checkout))
    page.click("#load-start")
    page.wait_for_selector("#load-status:has-text('running')", timeout=5000)


def select_edge(page: Any, name: str) -> None:
    page.locator(f'g[data-edge="{name}"]').dispatch_event("click")
    page.wait_for_selector(f'#edge h2:has-text("{name}")', timeout=5000)


def edge_attr(name: str, attr: str) -> str:
    return f'document.querySelector(\'g[data-edge="{name}"]\')?.getAttribute("{attr}")'


@pytest.fixture
def page(browser_page: Any, console_mesh: ConsoleMesh) -> Any:
    api(console_mesh, "/api/load/stop", {})
    api(console_mesh, "/api/reset", {})
    browser_page.click(".tab[data-tab=graph]")
    return browser_page


def test_a_latency_toxic_added_in_the_console_raises_the_edges_p99(page: Any) -> None:
    start_load(page)
    p50 = f'Number({edge_attr("gateway_to_profile", "data-p50")} || "NaN")'
    p99 = f'Number({edge_attr("gateway_to_profile", "data-p99")} || "NaN")'
    page.wait_for_function(f"{p99} > 0 && {p50} < 150", timeout=20000)  # traffic, no toxic
    select_edge(page, "gateway_to_profile")
    page.select_option("#toxic-type", "latency")
    page.fill("#toxic-attrs", '{"latency": 200}')
    page.click("#toxic-add")
    page.wait_for_selector('#edge-faults li[data-owner="console"]', timeout=5000)
    # Every call now waits 200 ms: once the 5 s window holds only such calls, even the median
    # is past 150 ms (p99 past 190), which no call reached without the toxic's help.
    page.wait_for_function(f"{p50} >= 150 && {p99} >= 190", timeout=30000)
    shot(page, "1-latency-toxic-p99")


def test_app_faults_on_recommend_open_the_breaker_then_half_open_then_closed(page: Any) -> None:
    start_load(page)
    select_edge(page, REC)
    page.select_option("#fault-method", "Recommend")
    page.fill("#fault-rate", "1")
    page.click("#fault-add")
    breaker = edge_attr(REC, "data-breaker")
    page.wait_for_function(f'{breaker} === "open"', timeout=30000)
    assert "open, probe in" in (page.text_content(f'g[data-edge="{REC}"]') or "")
    shot(page, "2-breaker-open")
    # No calls while it waits out its open time, so the half-open state lasts until we call.
    page.click("#load-stop")
    page.click('#edge-faults li[data-fault="Recommend"] button')
    page.wait_for_selector("#edge-faults li.dim:has-text('none')", timeout=5000)
    page.wait_for_function(f'{breaker} === "half-open"', timeout=30000)
    shot(page, "3-breaker-half-open")
    start_load(page)
    page.wait_for_function(f'{breaker} === "closed"', timeout=30000)
    shot(page, "4-breaker-closed")


def test_a_toxic_set_by_another_client_appears_within_two_seconds(
    page: Any, console_mesh: ConsoleMesh, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, port = console_mesh_toxiproxy(console_mesh)
    state = json.loads((console_mesh.state_dir / "mesh.json").read_text())
    send_token_from_toxiproxy_python(monkeypatch, state["admin_token"])
    client = Toxiproxy()
    client.update_api_consumer(host, port)
    client.get_proxy("gateway_to_payment").add_toxic(
        name="latency_downstream", type="latency", attributes={"latency": 100}
    )
    added = time.monotonic()
    page.wait_for_selector(
        '[data-row="gateway_to_payment"]:has-text("latency (another client)")', timeout=2000
    )
    assert time.monotonic() - added < 2.0
    shot(page, "5-another-client")


def console_mesh_toxiproxy(mesh: ConsoleMesh) -> tuple[str, int]:
    url = api(mesh, "/api/state")["toxiproxy"]
    host, _, port = url.removeprefix("http://").rpartition(":")
    return host, int(port)


def waterfall_opened(page: Any, trace_id: str) -> None:
    """Waits for the trace's waterfall. The console reads the trace from its files when asked:
    under CI's load that took over 5 s once; the box says what went wrong, if anything did."""
    try:
        page.wait_for_selector(f'[data-open-trace="{trace_id}"]', timeout=20000)
    except Exception as err:
        raise AssertionError(f"waterfall: {page.inner_text('#waterfall')!r}") from err


def test_a_trace_opened_from_the_list_shows_its_retry_and_fallback(
    page: Any, console_mesh: ConsoleMesh
) -> None:
    start_load(page)

    def budget_full_and_closed() -> bool:
        edge = next(e for e in api(console_mesh, "/api/state")["edges"] if e["name"] == REC)
        stats = edge["stats"]
        return stats["budget_tokens"] == stats["budget_max_tokens"] and all(
            b["state"] == "closed" for b in stats["breakers"]
        )

    # Retries need tokens: a run before this one may have spent them (they come back with
    # successes), and only the first failures after the fault retry before the breaker opens.
    wait_until(budget_full_and_closed, 60, "a full retry budget and closed breakers", 0.5)
    # The traces tab lists the newest 60: the fault meets a bounded load (20/s for 2.5 s, at
    # most 50 requests), so the trace found below is still listed however long finding it
    # takes on a busy machine (an open-ended load pushed it off the list once).
    api(console_mesh, "/api/load/stop", {})
    since_ns = time.time_ns()
    api(console_mesh, "/api/faults", {"service": "recommendation", "method": "Recommend"})
    api(console_mesh, "/api/load", {"rate_per_s": 20, "home": 1, "checkout": 0, "for_s": 2.5})

    def both(trace_id: str) -> bool:
        names = {r["name"] for r in api(console_mesh, f"/api/traces/{trace_id}")["rows"]}
        return {"retry scheduled", "fallback served"} <= names

    def first_with_retry_and_fallback() -> str | None:
        listed = api(console_mesh, "/api/traces?filter=degraded&limit=500")["traces"]
        earliest = sorted(
            (t for t in listed if t["start_ns"] >= since_ns), key=lambda t: t["start_ns"]
        )[:10]
        return next((t["trace_id"] for t in earliest if both(t["trace_id"])), None)

    found = wait_until(first_with_retry_and_fallback, 60, "a degraded trace with a retry", 0.5)
    assert found is not None
    page.click(".tab[data-tab=traces]")
    page.click("#trace-filters [data-filter=degraded]")
    page.click(f'tr[data-trace="{found}"]', timeout=10000)
    waterfall_opened(page, found)
    assert page.locator('[data-event="retry scheduled"]').count() >= 1
    assert page.locator('[data-event="fallback served"]').count() >= 1
    shot(page, "6-trace-waterfall")
    page.click("#trace-filters [data-filter=all]")
    a_report_point_opens_its_trace(page, console_mesh, found)


def a_report_point_opens_its_trace(page: Any, console_mesh: ConsoleMesh, found: str) -> None:
    """An experiment's report whose slow point is that request: clicking it opens its trace."""
    report = console_mesh.reports_dir / "provider-outage"
    report.mkdir(parents=True)
    samples = [
        {"at_s": 0.1 * n, "latency_ms": 5.0, "code": "OK", "degraded": [], "trace_id": ""}
        for n in range(20)
    ]
    samples.append(
        {"at_s": 1.0, "latency_ms": 900.0, "code": "OK", "degraded": ["x"], "trace_id": found}
    )
    doc = {"title": "t", "variants": [{"name": "full", "phases": {"fault": {"samples": samples}}}]}
    (report / "result.json").write_text(json.dumps(doc))
    page.evaluate("document.getElementById('waterfall').replaceChildren()")  # shown afresh
    page.click(".tab[data-tab=reports]")
    page.locator(f'circle[data-trace="{found}"]').dispatch_event("click")
    waterfall_opened(page, found)
    assert page.locator('[data-event="fallback served"]').count() >= 1
    shot(page, "6b-report-point-trace")


def test_reset_clears_every_toxic_and_app_fault(page: Any, console_mesh: ConsoleMesh) -> None:
    api(console_mesh, "/api/faults", {"service": "recommendation", "method": "Recommend"})
    select_edge(page, "gateway_to_profile")
    page.fill("#toxic-attrs", '{"latency": 50}')
    page.click("#toxic-add")
    page.wait_for_selector('[data-row="gateway_to_profile"]:has-text("latency (console)")')
    page.wait_for_selector(f'[data-row="{REC}"]:has-text("Recommend UNAVAILABLE")')
    page.click("#reset")
    page.wait_for_function(
        "[...document.querySelectorAll('#edges tbody tr')].every("
        "r => r.lastElementChild.textContent === '\\u2013')",
        timeout=5000,
    )
    state = api(console_mesh, "/api/state")
    assert state["app_faults"] == [] and all(not e["toxics"] for e in state["edges"])
    shot(page, "7-reset")


def test_a_toxic_on_one_replica_shows_on_that_replica_and_ejection_takes_it_out(
    page: Any, console_mesh: ConsoleMesh
) -> None:
    start_load(page, rate=20, home=1)
    served = "Number(document.querySelector('[data-replica=\"profile-2\"]')?.dataset.calls || 0)"
    page.wait_for_function(f"{served} > 0", timeout=20000)  # both replicas serve
    api(
        console_mesh,
        "/api/toxics",
        {"edge": "gateway_to_profile-2", "type": "latency", "attributes": {"latency": 1000}},
    )
    slow, other = (
        page.locator('[data-replica="profile-2"]'),
        page.locator('[data-replica="profile"]'),
    )
    page.wait_for_selector('[data-replica="profile-2"]:has-text("from gateway: latency")')
    assert "latency" not in (other.text_content() or "")  # replica 1 is not slowed
    row = page.locator('[data-row="gateway_to_profile"]')
    assert "on gateway_to_profile-2 only" in (row.text_content() or "")
    # The gateway's calls to it now time out: outlier ejection takes it out of rotation.
    ejected = 'document.querySelector(\'[data-replica="profile-2"]\')?.dataset.ejectedBy || ""'
    page.wait_for_function(f'({ejected}).includes("gateway")', timeout=30000)
    assert "ejected by gateway" in (slow.text_content() or "")
    shot(page, "7-replica-ejected")

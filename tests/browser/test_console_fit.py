"""The console's boxes hold what they say, at 1280 and 1024 px: every edge's and replica's
label inside its box and the drawing (notification_to_redis's ran past the right edge), every
dropdown of the edge panel wide enough for its longest choice ("Recomm", "UNAVAI" before), the
rates' window said, and the traces tab naming where its traces come from.

Its own mesh and browser (conftest, per module); screenshots go to tests/browser/artifacts/.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import ConsoleMesh
from tests.browser.test_console import api, select_edge, shot

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.timeout(240)]

OVERFLOWS = """() => {
  const bad = [];
  const svg = document.getElementById("graph");
  const right = svg.viewBox.baseVal.width;
  for (const box of svg.querySelectorAll(".edge .label, .replica")) {
    const name = box.closest("[data-edge]")?.dataset.edge || box.dataset.replica;
    const r = box.querySelector("rect").getBBox();
    if (r.x < 0 || r.x + r.width > right + 0.5) {
      bad.push(`${name}: box ${r.x}..${r.x + r.width} past the drawing's 0..${right}`);
    }
    for (const t of box.querySelectorAll("text")) {
      const b = t.getBBox();
      if (b.x < r.x || b.x + b.width > r.x + r.width + 0.5) {
        const where = `${b.x}..${b.x + b.width} out of ${r.x}..${r.x + r.width}`;
        bad.push(`${name}: "${t.textContent}" ${where}`);
      }
    }
  }
  const ctx = document.createElement("canvas").getContext("2d");
  // Beside its widest choice an auto-width select keeps its arrow box: 20.6-20.9 px in
  // Chromium at 13 px (measured); a cut choice leaves less.
  const ARROW = 20;
  for (const sel of document.querySelectorAll("#edge select")) {
    const style = getComputedStyle(sel);
    ctx.font = `${style.fontSize} ${style.fontFamily}`;
    const widest = Math.max(...[...sel.options].map((o) => ctx.measureText(o.text).width));
    const room = sel.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (widest + ARROW > room) {
      bad.push(`select #${sel.id}: its longest choice needs ${widest} px + the arrow, has ${room}`);
    }
  }
  return bad;
}"""


@pytest.fixture
def faulted(browser_page: Any, console_mesh: ConsoleMesh) -> Any:
    """Labels at their longest: a toxic on the edge drawn nearest the right edge, an app
    fault on recommendation; the recommendation edge's panel open (its dropdowns)."""
    api(console_mesh, "/api/reset", {})
    toxic = {"edge": "notification_to_redis", "type": "latency", "attributes": {"latency": 5}}
    api(console_mesh, "/api/toxics", toxic)
    fault = {"service": "recommendation", "method": "Recommend", "error_rate": 0.5}
    api(console_mesh, "/api/faults", fault)
    page = browser_page
    page.click(".tab[data-tab=graph]")
    page.wait_for_selector('g[data-edge="notification_to_redis"] text.fault', timeout=10000)
    page.wait_for_selector('g[data-edge="gateway_to_recommendation"] text.fault', timeout=10000)
    yield page
    api(console_mesh, "/api/reset", {})


@pytest.mark.parametrize("width", [1280, 1024])
def test_no_label_or_dropdown_overflows_its_box(faulted: Any, width: int) -> None:
    page = faulted
    page.set_viewport_size({"width": width, "height": 900})
    select_edge(page, "gateway_to_recommendation")
    page.wait_for_selector("#fault-code", timeout=5000)
    page.wait_for_function("document.querySelector('#updated').textContent !== ''")
    bad = page.evaluate(OVERFLOWS)
    shot(page, f"fit-{width}")
    assert bad == []
    window = page.inner_text("#window")
    assert "rates over the last 5 s" in window and "--window 5" in window


def test_the_traces_tab_names_its_source(browser_page: Any) -> None:
    page = browser_page
    page.click(".tab[data-tab=traces]")
    page.wait_for_selector("#trace-source:has-text('traces from')", timeout=10000)
    text = page.inner_text("#trace-source")
    assert "this run's" in text and "traces" in text, text
    assert page.get_attribute("#trace-source", "data-source") == "files"

"""End to end in a real browser: `streamlit run app.py` on a loopback port, driven by
Playwright through Debian's Chromium (installed by scripts/setup.sh).

Walks every page on the sample logs, screenshots each (tests/artifacts/ or
$RAGAUDIT_SCREENSHOTS), then uploads a log whose texts carry HTML and script payloads
through the real file input and checks they show as text and open no dialog.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from tests.dashboard.browser_support import ROOT, launch_chromium, streamlit_server, wait_idle
from tests.helpers import XSS, xss_logs

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    with streamlit_server(tmp / "e2e.duckdb", tmp / "streamlit.log") as url:
        yield url, tmp


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch_chromium(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots() -> Path:
    d = Path(os.environ.get("RAGAUDIT_SCREENSHOTS", ROOT / "tests" / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _charts(page, n: int) -> None:
    """Wait until at least n Plotly charts are drawn (Plotly's bundle loads lazily, after the script ends)."""
    page.wait_for_function("n => document.querySelectorAll('.js-plotly-plot').length >= n", arg=n, timeout=60_000)


def _metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]', has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def test_every_page_on_the_sample_logs(server, browser, shots):
    url, _tmp = server
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.get_by_text("No logs loaded yet").wait_for(timeout=60_000)
    page.get_by_role("button", name="Open the sample logs").click()
    page.get_by_text("Runs and their configurations").wait_for(timeout=60_000)
    wait_idle(page)
    assert _metric(page, "Runs") == "12"
    assert _metric(page, "Queries") == "300"
    page.screenshot(path=str(shots / "home.png"), full_page=True)

    page.goto(f"{url}/Stability")
    page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert _metric(page, "gap ratio") == "2.973"
    assert _metric(page, "mean J_span") == "0.146"
    _charts(page, 3)  # scatter, density, J_min histogram
    # a click on a point of the scatter selects that run pair
    before = page.locator('[data-testid="stMarkdownContainer"]', has_text="flipped (J_span").first.inner_text()
    points = page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace path.point")
    centres = [
        (b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
        for b in (points.nth(i).bounding_box() for i in range(points.count()))
    ]
    assert len(centres) == 66
    far = max(range(len(centres)), key=lambda i: min(math.dist(centres[i], c) for j, c in enumerate(centres) if j != i))
    page.mouse.move(*centres[far])
    page.mouse.click(*centres[far])
    page.wait_for_function(
        "b => ![...document.querySelectorAll('[data-testid=stMarkdownContainer]')].some(e => e.innerText === b)",
        arg=before,
        timeout=30_000,
    )
    wait_idle(page)
    after = page.locator('[data-testid="stMarkdownContainer"]', has_text="flipped (J_span").first.inner_text()
    assert after != before and " vs " in after
    page.screenshot(path=str(shots / "stability.png"), full_page=True)

    page.goto(f"{url}/Query_drilldown?query=1012&a=k10-c256-o32&b=k10-c128-o32")
    page.get_by_text("Same document, different span").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.get_by_text("J_doc = 1.000 · J_span = 0.000").count() == 1
    _charts(page, 1)  # the J matrix
    page.screenshot(path=str(shots / "drilldown.png"), full_page=True)

    page.goto(f"{url}/Compare")
    page.get_by_text("Evidence–answer probe").wait_for(timeout=60_000)
    wait_idle(page)
    assert _metric(page, "queries flipped").endswith("/ 300")
    page.screenshot(path=str(shots / "compare.png"), full_page=True)

    page.goto(f"{url}/Citation_fidelity")
    page.get_by_text("Canary: two runs' CFS distributions").wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stMetric"]', has_text="mean CFS").count() == 2  # base and c128 provenance
    _charts(page, 3)  # funnel, CFS histogram, provenance graph
    page.screenshot(path=str(shots / "fidelity.png"), full_page=True)

    page.goto(f"{url}/Attributions")
    page.get_by_role("button", name="Explain this query").wait_for(timeout=60_000)
    wait_idle(page)
    page.screenshot(path=str(shots / "attributions.png"), full_page=True)
    assert dialogs == []
    page.close()


def test_html_in_an_uploaded_log_shows_as_text(server, browser, shots, tmp_path):
    url, _tmp = server
    logs = xss_logs(tmp_path / "xss")
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    page.get_by_text("Load logs").first.wait_for(timeout=60_000)
    wait_idle(page)
    if page.get_by_role("button", name="Clear data").count():
        page.get_by_role("button", name="Clear data").click()
        page.get_by_role("button", name="Yes, clear everything").click()
        page.get_by_text("No logs loaded yet").wait_for(timeout=60_000)
    page.locator('input[type="file"]').set_input_files([str(logs / "A.jsonl"), str(logs / "B.jsonl")])
    page.get_by_role("button", name="Load the uploaded files").click(timeout=60_000)
    page.get_by_text("Runs and their configurations").wait_for(timeout=60_000)
    wait_idle(page)
    assert _metric(page, "Runs") == "2"

    page.goto(f"{url}/Query_drilldown")
    page.get_by_text("Same document, different span").wait_for(timeout=60_000)
    wait_idle(page)
    page.wait_for_timeout(500)  # give any injected handler the chance to fire
    # the payload is on screen as text: in the query line and in both chunk views
    assert page.get_by_text(f"What is {XSS}?").count() >= 1
    assert page.get_by_text(XSS, exact=False).count() >= 3
    # and nothing from it became markup: no <img src=x>, no script, no dialog
    assert page.locator('img[src="x"]').count() == 0
    assert (
        page.evaluate("() => [...document.querySelectorAll('script')].some(s => s.textContent.includes('alert(2)'))")
        is False
    )
    page.screenshot(path=str(shots / "xss.png"), full_page=True)
    assert dialogs == []
    page.close()

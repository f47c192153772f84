"""End to end in a real browser: `streamlit run app.py` on a loopback port, driven by
Playwright through Debian's Chromium (installed by scripts/setup.sh).

Walks every page on the sample logs, screenshots each (tests/artifacts/ or
$RAGAUDIT_SCREENSHOTS), then uploads a log whose texts carry HTML and script payloads
through the real file input and checks they show as text and open no dialog.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest

from tests.dashboard.browser_support import (
    ROOT,
    TIMEOUT_MS,
    body_text,
    charts,
    images_done,
    launch_chromium,
    metric,
    new_page,
    settled,
    shown,
    streamlit_server,
    upload_logs,
)
from tests.helpers import XSS, xss_logs

pytestmark = pytest.mark.slow

FLIPPED = "flipped (J_span"  # the line under the stability scatter that names the selected pair


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


def test_every_page_on_the_sample_logs(server, browser, shots):
    from playwright.sync_api import expect

    url, _tmp = server
    page = new_page(browser)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    shown(page, "No logs loaded yet")
    page.get_by_role("button", name="Open the sample logs").click()
    shown(page, "Runs and their configurations")  # drawn only by the run after the load's st.rerun()
    assert metric(page, "Runs", "12") == "12"
    assert metric(page, "Queries", "300") == "300"
    page.screenshot(path=str(shots / "home.png"), full_page=True)

    page.goto(f"{url}/Stability")
    assert metric(page, "gap ratio") == "2.973"
    assert metric(page, "mean J_span") == "0.146"
    charts(page, 3)  # scatter, density, J_min histogram
    # a click on a point of the scatter selects that run pair
    line = page.get_by_test_id("stMarkdownContainer").filter(has_text=FLIPPED).first
    before = line.inner_text()
    points = page.locator(".js-plotly-plot").first.locator(".scatterlayer .trace path.point")
    expect(points).to_have_count(66, timeout=TIMEOUT_MS)  # every run pair drawn before the points are measured
    centres = [
        (b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
        for b in (points.nth(i).bounding_box() for i in range(points.count()))
    ]
    far = max(range(len(centres)), key=lambda i: min(math.dist(centres[i], c) for j, c in enumerate(centres) if j != i))
    page.mouse.move(*centres[far])
    page.mouse.click(*centres[far])
    expect(line).not_to_have_text(before, timeout=TIMEOUT_MS)  # the selection's run has drawn the new pair
    settled(page)
    after = line.inner_text()
    assert after != before and " vs " in after
    page.screenshot(path=str(shots / "stability.png"), full_page=True)

    page.goto(f"{url}/Query_drilldown?query=1012&a=k10-c256-o32&b=k10-c128-o32")
    shown(page, "Same document, different span")
    expect(page.get_by_text("J_doc = 1.000 · J_span = 0.000")).to_have_count(1, timeout=TIMEOUT_MS)
    charts(page, 1)  # the J matrix
    page.screenshot(path=str(shots / "drilldown.png"), full_page=True)

    page.goto(f"{url}/Compare")
    shown(page, "Evidence–answer probe")
    assert metric(page, "queries flipped", re.compile(r"/ 300$")).endswith("/ 300")
    page.screenshot(path=str(shots / "compare.png"), full_page=True)

    page.goto(f"{url}/Citation_fidelity")
    shown(page, "Canary: two runs' CFS distributions")
    cfs = page.get_by_test_id("stMetric").filter(has_text="mean CFS")
    expect(cfs).to_have_count(2, timeout=TIMEOUT_MS)  # base and c128 provenance
    charts(page, 3)  # funnel, CFS histogram, provenance graph
    page.screenshot(path=str(shots / "fidelity.png"), full_page=True)

    page.goto(f"{url}/Attributions")
    shown(page, page.get_by_role("button", name="Explain this query"))
    page.screenshot(path=str(shots / "attributions.png"), full_page=True)
    assert dialogs == []
    page.close()


def test_html_in_an_uploaded_log_shows_as_text(server, browser, shots, tmp_path):
    url, _tmp = server
    logs = xss_logs(tmp_path / "xss")
    page = new_page(browser)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    shown(page, page.get_by_role("heading", name="Load logs"))
    if page.get_by_role("button", name="Clear data").count():  # the other test loaded the sample
        page.get_by_role("button", name="Clear data").click()
        page.get_by_role("button", name="Yes, clear everything").click()
        shown(page, "No logs loaded yet")
    upload_logs(page, url, [logs / "A.jsonl", logs / "B.jsonl"])
    assert metric(page, "Runs", "2") == "2"

    page.goto(f"{url}/Query_drilldown")
    shown(page, "Same document, different span")
    images_done(page)  # any image made from the payload has failed to load: its onerror would have run
    # the payload is on screen as text: in the query line and in both chunk views
    body_text(page, f"What is {XSS}?")
    assert page.get_by_text(f"What is {XSS}?").count() >= 1
    assert page.get_by_text(XSS, exact=False).count() >= 3
    # and nothing from it became markup: no <img src=x>, no script, no inline handler, no dialog
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator("[onerror]").count() == 0
    assert (
        page.evaluate("() => [...document.querySelectorAll('script')].some(s => s.textContent.includes('alert(2)'))")
        is False
    )
    page.screenshot(path=str(shots / "xss.png"), full_page=True)
    assert dialogs == []
    page.close()


# a metric's label or value the browser cuts with an ellipsis (its text wider than its box)
_CUT_METRICS = """() => [...document.querySelectorAll(
    '[data-testid="stMetricLabel"] p, [data-testid="stMetricValue"] div'
  )].filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""


def test_headline_figures_wrap_in_a_narrow_window_instead_of_being_cut(server, browser, shots):
    """At 900 px with the sidebar open, st.columns cut the home page's seven counts and the stability
    page's six headline figures to their first character ("0…", "2…"): the walk's screenshots. They
    wrap onto a second line instead, every label and value whole."""
    url, _tmp = server
    page = new_page(browser, width=900, height=900)
    page.goto(url)
    shown(page, page.get_by_role("heading", name="Load logs"))
    if page.get_by_role("button", name="Clear data").count():  # another test's logs
        page.get_by_role("button", name="Clear data").click()
        page.get_by_role("button", name="Yes, clear everything").click()
        shown(page, "No logs loaded yet")
    page.get_by_role("button", name="Open the sample logs").click()
    shown(page, "Runs and their configurations")
    pages = {
        "": ["Runs", "Queries", "Evidence entries", "Answers", "Provenance records", "Files", "Rejected lines"],
        "Stability": [
            "mean J_doc",
            "mean J_span",
            "gap ratio",
            "collapse rate",
            "flip rate (span)",
            "null transitions",
        ],
        "Compare": ["J_avg, doc", "J_avg, span", "queries flipped", "queries collapsed", "null transitions"],
    }
    for path, labels in pages.items():
        page.goto(f"{url}/{path}")
        for label in labels:
            metric(page, label)
        assert page.evaluate(_CUT_METRICS) == [], path or "home"
    assert metric(page, "queries flipped") == "300 / 300"  # the longest value, whole
    page.screenshot(path=str(shots / "narrow-compare.png"))
    page.close()

"""In a real browser at 900 px with the sidebar open: the stability page's charts are whole.

st.columns halved the page's 440 px there: the doc-vs-span scatter and the (query, pair) density
drew at 212 px each, their titles (about 400 px) cut at the chart's edge and their square plots
60 px wide; the ranking-quality chart beside its table, at 168 px, likewise. They now stand side by
side only where both fit, and one under the other below that (ui.side_by_side).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.dashboard.browser_support import ROOT, charts, launch_chromium, new_page, shown, streamlit_server

pytestmark = pytest.mark.slow

# each Plotly chart's width and its title's left and right edges, relative to the chart
_CHARTS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(p => {
  const box = p.getBoundingClientRect(), t = p.querySelector('.gtitle');
  const tb = t ? t.getBoundingClientRect() : null;
  return {title: t ? t.textContent : '', width: box.width,
          left: tb ? tb.left - box.left : 0, right: tb ? tb.right - box.left : 0};
})"""


@pytest.mark.parametrize("width", [900, 1500])
def test_stability_charts_and_their_titles_are_whole(sample_db, tmp_path, width):
    from playwright.sync_api import sync_playwright

    db = shutil.copy(sample_db, tmp_path / "s.duckdb")
    shots = Path(os.environ.get("RAGAUDIT_SCREENSHOTS", ROOT / "tests" / "artifacts"))
    shots.mkdir(parents=True, exist_ok=True)
    with streamlit_server(db, tmp_path / "streamlit.log") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_page(browser, width=width, height=4200)  # tall: every chart drawn in view
            page.goto(f"{url}/Stability")
            shown(page, "One pair, query by query")
            charts(page, 4)  # scatter, density, ranking quality, J_min histogram
            shown(page, "One pair, query by query")
            page.screenshot(path=str(shots / f"stability-{width}.png"))
            drawn = page.evaluate(_CHARTS)
        finally:
            browser.close()
    assert len(drawn) >= 4
    for c in drawn:
        assert c["width"] >= 400, c  # a square plot under ~250 px beside its legend is unreadable
        assert c["left"] >= 0 and c["right"] <= c["width"], c  # the title within its chart

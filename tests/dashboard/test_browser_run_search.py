"""In a real browser: typing a word from the middle of a long run id into a run picker finds the run.

Streamlit's selectbox and multiselect filter their options on the label typed against, and a long
run id's label was cut in its middle ("ragas_sc…p0_2026-11-20"), so a word of the middle
("zebrafinch") found nothing: "No results". The label now ends with the whole id
(ragaudit_core.review.runlabels.picker_labels); the widget cuts it at its edge for the eye.
"""

from __future__ import annotations

import pytest

from tests.dashboard.browser_support import TIMEOUT_MS, launch_chromium, new_page, settled, shown, streamlit_server
from tests.helpers import records_db

pytestmark = pytest.mark.slow

STEM = "ragas_scifact_bm25_{}_top5_chunk128_overlap0_2026-11-20"
RUNS = [STEM.format(w) for w in ("marmalade", "quantumleap", "zebrafinch")]


_FILTERED = """word => {
  const boxes = document.querySelectorAll('[role="listbox"]');
  if (!boxes.length) return null;
  const box = boxes[boxes.length - 1];
  const text = box.innerText;
  if (!text.includes(word) && !text.includes('No results')) return null;
  const options = [...box.querySelectorAll('[role="option"]')].map(o => o.innerText);
  return options.length ? options : [text];
}"""


def _type_into(page, widget, word: str, timeout: float = TIMEOUT_MS) -> list[str]:
    """Type ``word`` into ``widget``'s search and return the options its dropdown then shows (one
    "No results" row when none matches). The options are read in the same script that sees the
    dropdown filtered: a rerun drawing the page again may close it between two calls (CI saw the
    listbox gone when its text was read after the wait)."""
    widget.locator("input").click()
    page.keyboard.press("Control+A")  # (a search left from a try before is typed over)
    page.keyboard.type(word)
    shown_options = page.wait_for_function(_FILTERED, arg=word, timeout=timeout).json_value()
    return [str(o).strip() for o in shown_options]


def _after_rerun(page, widget, word: str, tries: int = 4) -> list[str]:
    """:func:`_type_into`, again after a second while it finds nothing or its dropdown does not
    stay open: a widget whose options follow another widget's choice has them once the page's
    rerun has drawn it, which ``settled`` alone cannot tell from the run before (on a loaded
    machine the first try may see the old options, or type into the widget the rerun replaces)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    found: list[str] = []
    for _ in range(tries):
        try:
            found = _type_into(page, widget, word, timeout=15_000)
        except PlaywrightTimeout:
            found = []  # no dropdown showed the search: the rerun drew the widget again
        if found and found != ["No results"]:
            return found
        page.keyboard.press("Escape")
        page.wait_for_timeout(1000)
        settled(page)
    return found


def test_a_middle_word_of_a_run_id_finds_the_run(tmp_path):
    from playwright.sync_api import sync_playwright

    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 5}"]}
        for k, r in enumerate(RUNS, 1)
        for i in range(4)
    ]
    db = records_db(tmp_path, recs)
    with streamlit_server(db, tmp_path / "streamlit.log") as url, sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_page(browser)
            # the sidebar's "Runs compared": every run is picked at first, so one is removed to be found again
            page.goto(f"{url}/Stability")
            shown(page, "One pair, query by query")
            picker = page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").first
            picker.locator('button[aria-label^="Remove "]').last.click()  # the runs in order: zebrafinch last
            shown(page, "One pair, query by query")
            settled(page)
            found = _type_into(page, picker, "zebrafinch")
            assert len(found) == 1 and RUNS[2] in found[0], found
            page.keyboard.press("Enter")  # picks it back
            shown(page, page.get_by_test_id("stSidebar").get_by_text(RUNS[2], exact=False))
            page.keyboard.press("Escape")
            # the stability page's pair picker, and the compare page's (the drill-down's is the same helper)
            pair = page.get_by_test_id("stSelectbox").filter(has_text="Run pair").first
            found = _after_rerun(page, pair, "zebrafinch")  # (its options follow the run picked back)
            assert found and all(RUNS[2] in o for o in found), found
            page.keyboard.press("Escape")
            page.goto(f"{url}/Compare")
            shown(page, "Baseline run")
            settled(page)
            found = _type_into(page, page.get_by_test_id("stSelectbox").first, "quantumleap")
            assert len(found) == 1 and RUNS[1] in found[0], found
        finally:
            browser.close()

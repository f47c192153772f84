"""A mixed workspace in a real browser (issue #23, first "Done means" item): the bundled sample logs,
then — uploaded through the home page's file input — a Ragas CSV, Phoenix (OpenInference) spans, a
native run whose query ids collide with the sample's but ask other questions, and a provenance run.

The test visits every page on its defaults, changes each picker once (run pair, query, run), builds
and downloads the PDF report on the compare page, removes one run on the home page, and after every
step asserts that no page shows an exception: no Streamlit exception box, no error alert holding a
traceback, no traceback in the server's log. Every page is saved as a full-page screenshot at
1500 px (tests/artifacts/workspace-*.png, or $RAGAUDIT_SCREENSHOTS), for a person to look at.

Pages are reached through the sidebar's navigation, as a user does, so what a picker chose stays in
the session; every wait is on the page's state (browser_support), never a pause.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest

from tests.dashboard.browser_support import (
    ROOT,
    TIMEOUT_MS,
    body_text,
    launch_chromium,
    metric,
    new_page,
    settled,
    shown,
    streamlit_server,
    upload_logs,
)
from tests.helpers import pipeline, write_jsonl

pytestmark = pytest.mark.slow

QUESTIONS = ["What causes tides?", "Why is the sky blue?", "How do vaccines work?"]
PASSAGES = [
    "The Moon's gravity pulls the oceans.",
    "Tides follow the lunar cycle.",
    "Rayleigh scattering of light.",
    "Blue light scatters more.",
    "Vaccines train the immune system.",
    "Antibodies recognise antigens.",
]
COLLIDING = {"1": "Which bird lays the largest egg?", "3": "How tall is Mount Everest?", "5": "Who wrote Hamlet?"}
COLLIDING_RUN, PROV_RUN = "mine-colliding", "mine-prov"

# page title in the sidebar → (its URL path, a text its script draws late, once it has run to its end or
# stopped on a message that says why)
PAGES = {
    "Home": ("", "Remove a file or a run…"),
    "Evidence stability": ("Stability", "One pair, query by query"),
    "Query drill-down": ("Query_drilldown", "Same document, different span"),
    "Compare runs": ("Compare", "Evidence–answer probe"),
    "Citation fidelity": ("Citation_fidelity", "Canary: two runs' CFS distributions"),
    "Attributions": ("Attributions", "Explain this query"),
}

# the script runs that ended, counted by a MutationObserver on the app's script state: a picker's change
# is followed by at least one run, and a test waits for it to end and for the page to settle
_WATCH = """() => {
  if (window.__runs !== undefined) return;
  window.__runs = 0;
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(ms => ms.forEach(m => {
    if (m.oldValue === 'running') window.__runs += 1;  // a run ended
  })).observe(app, {attributes: true, attributeFilter: ['data-test-script-state'], attributeOldValue: true});
}"""


# --------------------------------------------------------------------------- the files an auditor brings
def _ragas_csv(path: Path) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["user_input", "retrieved_contexts", "response"])
        w.writeheader()
        for i, q in enumerate(QUESTIONS):
            picks = [(2 * i) % 6, (2 * i + 3) % 6]
            w.writerow({"user_input": q, "retrieved_contexts": repr([PASSAGES[p] for p in picks]), "response": f"a{i}"})
    return path


def _phoenix_spans(path: Path) -> Path:
    spans = []
    for i, q in enumerate(QUESTIONS):
        row = {"span_kind": "RETRIEVER", "context.trace_id": f"trace-{i}", "attributes.input.value": q}
        for n, p in enumerate((2 * i, (2 * i + 1) % 6)):
            row |= {
                f"attributes.retrieval.documents.{n}.document.id": f"doc{p}",
                f"attributes.retrieval.documents.{n}.document.content": PASSAGES[p],
                f"attributes.retrieval.documents.{n}.document.score": round(0.9 - 0.1 * n, 2),
            }
        spans += [
            row,
            {"span_kind": "LLM", "context.trace_id": f"trace-{i}", "attributes.output.value": f"phoenix answer {i}"},
        ]
    return write_jsonl(path, spans)


def _colliding_run(path: Path) -> Path:
    recs = [
        {
            "run_id": COLLIDING_RUN,
            "query_id": qid,
            "query": q,
            "answer": f"My answer to: {q}",
            "config": {"top_k": 2},
            "evidence": [
                {"doc_id": f"mine-{qid}", "text": f"A passage about {q.lower()}"},
                {"doc_id": "mine-common", "text": "A passage every query retrieves."},
            ],
        }
        for qid, q in COLLIDING.items()
    ]
    return write_jsonl(path, recs)


def _provenance_run(path: Path) -> Path:
    return write_jsonl(path, [pipeline(run=PROV_RUN, qid=q) for q in ("p1", "p2")])


# --------------------------------------------------------------------------- what every step checks
def no_exception(page, where: str, server_log: Path) -> None:
    """No Streamlit exception box, no error alert holding a traceback, no traceback in the server's log."""
    boxes = page.get_by_test_id("stException")
    assert boxes.count() == 0, f"{where}: exception box: {boxes.first.inner_text()[:2000]}"
    errors = [e.inner_text() for e in page.get_by_test_id("stAlertContentError").all()]
    assert not [e for e in errors if "Traceback" in e or 'File "' in e], f"{where}: {errors}"
    assert "Traceback" not in page.inner_text("body"), where
    assert "Traceback" not in server_log.read_text(), f"{where}: server log:\n{server_log.read_text()[-4000:]}"


def visit(page, title: str) -> str:
    """Open a page through the sidebar (the session, and what its pickers chose, stays); returns its text
    once the page has drawn its last section and settled."""
    path, needle = PAGES[title]
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    page.wait_for_url(re.compile(rf"/{path}(\?.*)?$"))
    return body_text(page, needle)


_HEIGHT = """() => Math.max(document.documentElement.scrollHeight, ...[...document.querySelectorAll(
  '[data-testid="stMain"], [data-testid="stAppViewContainer"]')].map(e => e.scrollHeight))"""


def shot(page, shots: Path, name: str) -> None:
    """The whole page at 1500 px: Streamlit scrolls inside its main container, so the viewport is made as
    tall as the content for the screenshot (and put back after)."""
    width, height = page.viewport_size["width"], page.viewport_size["height"]
    page.set_viewport_size({"width": width, "height": min(max(height, page.evaluate(_HEIGHT)), 16_000)})
    page.wait_for_function(f"() => ({_HEIGHT})() <= window.innerHeight + 2")
    settled(page)
    path = shots / f"workspace-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": width, "height": height})


def sweep(page, step: str, log: Path, shots: Path | None = None) -> dict[str, str]:
    """Every page, in the sidebar's order, checked for exceptions (and screenshot when ``shots``)."""
    seen = {}
    for title, (path, _needle) in PAGES.items():
        seen[title] = visit(page, title)
        no_exception(page, f"{step}, {title}", log)
        if shots is not None:
            shot(page, shots, path.lower() or "home")
    return seen


def pick(page, label: str, option: str | None = None) -> str:
    """Change the selectbox labelled ``label`` to ``option`` (default: the first option it does not show
    now); waits for the run the change starts to end. Returns the option chosen."""
    label_el = page.get_by_test_id("stWidgetLabel").get_by_text(label, exact=True)
    box = page.get_by_test_id("stSelectbox").filter(has=label_el).first
    field = box.get_by_role("combobox")  # Streamlit 1.67: a react-aria ComboBox
    now = field.input_value()
    page.evaluate(_WATCH)
    before = page.evaluate("() => window.__runs")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    options = page.get_by_role("option")  # the one open list (virtualised, and drawn where it fits)
    for attempt in range(8):  # a key pressed while a rerun replaces the widget is lost: press again
        field.focus()
        field.press("ArrowDown")  # opens the list (a click on the input does not, measured)
        try:
            options.first.wait_for(state="attached", timeout=15_000)
            break
        except PlaywrightTimeout:
            if attempt == 7:
                raise
            settled(page)
            field = box.get_by_role("combobox")
    if option is None:
        option = next(t.strip() for t in options.all_inner_texts() if t.strip() and t.strip() != now)
    field.fill(option)  # filters the list to the option, which the list then focuses
    page.get_by_role("option", name=option, exact=True).first.wait_for(state="attached")
    field.press("Enter")
    page.wait_for_function("n => window.__runs > n", arg=before, timeout=TIMEOUT_MS)
    settled(page)
    assert field.input_value() == option, (label, option, field.input_value())
    return option


# --------------------------------------------------------------------------- the walk
@pytest.fixture(scope="module")
def shots() -> Path:
    d = Path(os.environ.get("RAGAUDIT_SCREENSHOTS", ROOT / "tests" / "artifacts"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _load(page, url: str, files: list[Path], log: Path) -> None:
    page.goto(url)
    shown(page, "No logs loaded yet")
    page.get_by_role("button", name="Open the sample logs").click()
    shown(page, "Runs and their configurations")  # drawn only by the run after the load's st.rerun()
    assert metric(page, "Runs", "12") == "12"
    no_exception(page, "sample loaded", log)
    upload_logs(page, url, files)
    # upload_logs waits for the runs table, which the sample already drew: wait for the load's own summary
    body_text(page, "Loaded 9 records (18 evidence entries) from 4 files into 3 runs", "2 provenance records")
    assert metric(page, "Runs", "15") == "15"  # + the Ragas, Phoenix and colliding runs (provenance is not a run)
    body_text(page, "read as", "OpenInference", "Ragas")  # the ledger says what each file was read as
    no_exception(page, "uploads loaded", log)


def _pickers(page, log: Path, shots: Path) -> None:
    """Each page's picker changed once: the run pair, the query, the runs."""
    visit(page, "Evidence stability")
    pair = pick(page, "Run pair (or click a point in the scatter)")
    body_text(page, f"{pair}:")  # the pair's line under the picker
    no_exception(page, "stability: run pair changed", log)
    shot(page, shots, "stability-picked")

    visit(page, "Query drill-down")
    q = pick(page, "Query")
    body_text(page, f"Query {q.split(' — ')[0]}")
    pick(page, "Run B")
    no_exception(page, "drill-down: query and run B changed", log)
    shot(page, shots, "drilldown-picked")

    visit(page, "Compare runs")
    pick(page, "Candidate run")
    body_text(page, PAGES["Compare runs"][1])
    no_exception(page, "compare: candidate changed", log)

    visit(page, "Citation fidelity")
    pick(page, "Run", PROV_RUN)
    no_exception(page, "fidelity: run changed", log)
    shot(page, shots, "fidelity-picked")

    visit(page, "Attributions")
    pick(page, "Run", COLLIDING_RUN)
    body_text(page, "Explain this query")
    pick(page, "Query")
    no_exception(page, "attributions: run and query changed", log)
    shot(page, shots, "attributions-picked")


def _report(page, log: Path, shots: Path) -> bytes:
    visit(page, "Compare runs")
    page.get_by_role("button", name="Build the PDF report").click()
    download = page.get_by_test_id("stDownloadButton").filter(has_text="Download audit-").first
    download.wait_for(timeout=max(TIMEOUT_MS, 600_000))
    settled(page)
    no_exception(page, "compare: report built", log)
    shot(page, shots, "compare-report")
    with page.expect_download() as d:
        download.get_by_role("button").click()
    pdf = Path(d.value.path()).read_bytes()
    (shots / "workspace-report.pdf").write_bytes(pdf)
    return pdf


def _remove(page, log: Path, run: str) -> None:
    visit(page, "Home")
    page.get_by_role("button", name="Remove a file or a run…").click()
    pop = page.get_by_test_id("stPopoverBody")
    pop.get_by_text("a run", exact=True).click()
    shown(page, pop.get_by_test_id("stSelectbox").filter(has_text="Run"))
    pick(page, "Run", run)
    pop.get_by_role("button", name="Yes, remove it").click()
    body_text(page, "Runs and their configurations", "removed")
    no_exception(page, "home: run removed", log)


def test_a_mixed_workspace_never_shows_an_exception(tmp_path, shots):
    from playwright.sync_api import sync_playwright

    d = tmp_path / "logs"
    d.mkdir()
    files = [
        _ragas_csv(d / "ragas_eval.csv"),
        _phoenix_spans(d / "phoenix_spans.jsonl"),
        _colliding_run(d / "colliding.jsonl"),
        _provenance_run(d / "provenance.jsonl"),
    ]
    log = tmp_path / "streamlit.log"
    with streamlit_server(tmp_path / "mixed.duckdb", log) as url, sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            page = new_page(browser, 1500, 1100)
            dialogs: list[str] = []
            page.on("dialog", lambda dlg: (dialogs.append(dlg.message), dlg.dismiss()))
            _load(page, url, files, log)
            runs = 15
            sweep(page, "defaults after the uploads", log, shots)
            _pickers(page, log, shots)
            sweep(page, "after the pickers changed", log)
            pdf = _report(page, log, shots)
            assert pdf.startswith(b"%PDF")
            _remove(page, log, COLLIDING_RUN)
            assert metric(page, "Runs", str(runs - 1)) == str(runs - 1)
            shot(page, shots, "home-removed")
            sweep(page, "after a run was removed", log)
            assert dialogs == []
        finally:
            browser.close()
    assert "Traceback" not in log.read_text()

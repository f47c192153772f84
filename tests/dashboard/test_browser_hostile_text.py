"""Log text is data on every page and in the PDF (issue #15): run ids, query ids and citation
strings carrying Markdown links, images, bold, ``:red[…]`` directives and ``$…$`` are uploaded
through the real file input; no page makes an element from them or fetches anything from another
host, and the PDF's extracted text shows them as typed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.dashboard.browser_support import (
    body_text,
    images_done,
    launch_chromium,
    new_page,
    shown,
    streamlit_server,
    upload_logs,
)
from tests.helpers import pipeline, write_jsonl

pytestmark = pytest.mark.slow

BOLD, LINK, IMG = "**boldid**", "[clickid](http://evil.example/l)", "![imgid](http://evil.example/i.png)"
RED, TEX = ":red[redid]", "$e^{texid}$"
RUN_A, RUN_B, RUN_C = f"A {BOLD} {LINK}", f"B {RED} {TEX}", f"C {IMG}"
QUERY = f"q {IMG} {BOLD}"
CITATION = f"(Doc {BOLD} {RED} {TEX} {IMG}"
WORDS = ("boldid", "clickid", "imgid", "redid", "texid")
# each page: a heading that shows it opened, then what it is read for and what it draws last, all
# waited for before the page is read
PAGES = {
    "Stability": ("Run pairs", [f"{RUN_A} vs {RUN_B}", f"(no text or span_hash): '{RUN_C}'", "Worst case per query"]),
    "Query_drilldown": ("Query drill-down", ["J_doc =", "Same document, different span"]),
    "Compare": ("Deploy gate", [BOLD, "Evidence–answer probe"]),
    "Citation_fidelity": ("Queries", [RED, TEX, QUERY, "Canary: two runs' CFS distributions"]),
    "Attributions": ("Attributions", []),
}


def _logs(d: Path) -> list[Path]:
    d.mkdir()
    recs = []
    for run, shift in ((RUN_A, 0), (RUN_B, 1)):
        for i, qid in enumerate((QUERY, f"q2 {LINK}", "q3")):
            recs.append(
                {
                    "run_id": run,
                    "query_id": qid,
                    "query": f"question {TEX} {i}",
                    "answer": f"answer {BOLD} {i}",
                    "config": {"top_k": 2 + shift},
                    "evidence": [
                        {"doc_id": f"doc {RED} {(i + shift) % 3}", "text": f"passage {LINK} {(i + shift) % 3}"},
                        {"doc_id": f"d{i}", "text": f"other {i}"},
                    ],
                }
            )
    recs += [{"run_id": RUN_C, "query_id": qid, "evidence": [f"doc {RED} 0"]} for qid in (QUERY, "q3")]
    prov = pipeline(run=RUN_A, qid=QUERY, text=f"The answer [Doc D1, p. 2] and {CITATION}) here.")
    return [write_jsonl(d / "evidence.jsonl", recs), write_jsonl(d / "provenance.jsonl", [prov])]


_LEAKS = f"""() => {{
  const words = {list(WORDS)};
  const bad = [...document.querySelectorAll('a[href*="evil.example"], img[src*="evil.example"], .katex')];
  const made = [...document.querySelectorAll('strong, b, em, a, img, span, p, code')]
      .filter(e => e.children.length === 0 && words.includes(e.textContent.trim()));
  return [...bad, ...made].map(e => e.outerHTML.slice(0, 160));
}}"""


def test_no_page_renders_markdown_html_or_latex_from_log_text(tmp_path):
    from playwright.sync_api import sync_playwright

    files = _logs(tmp_path / "logs")
    db = tmp_path / "hostile.duckdb"
    with streamlit_server(db, tmp_path / "streamlit.log") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = new_page(browser, 1500, 1100)
        foreign = []
        page.on(
            "request",
            lambda r: (
                foreign.append(r.url) if "127.0.0.1" not in r.url and not r.url.startswith(("data:", "blob:")) else None
            ),
        )
        upload_logs(page, url, files)
        images_done(page)
        assert page.evaluate(_LEAKS) == []
        seen = {}
        for path, (heading, needles) in PAGES.items():
            page.goto(f"{url}/{path}")
            shown(page, heading)
            seen[path] = body_text(page, *needles)  # md()'s invisible autolink breaker removed
            images_done(page)  # an image made from a log's text would have been requested by now
            assert page.evaluate(_LEAKS) == [], path
        browser.close()
    assert foreign == []
    assert not any("\nDeploy\n" in text for text in seen.values())  # .streamlit/config.toml: toolbarMode viewer
    # shown as typed where Streamlit draws text from these strings (not canvas tables)
    assert (
        f"Span metrics unavailable for the run without span information (no text or span_hash): '{RUN_C}'"
        in seen["Stability"]
    )  # the warning that used to render run C's id as an image
    assert f"{RUN_A} vs {RUN_B}" in seen["Stability"]
    assert BOLD in seen["Compare"] and any(w in seen["Compare"] for w in ("PASS", "FAIL", "INCONCLUSIVE"))
    assert RED in seen["Citation_fidelity"] and TEX in seen["Citation_fidelity"]  # the parse failure, as typed
    assert QUERY in seen["Citation_fidelity"]


def test_the_pdf_shows_log_text_as_typed(tmp_path):
    from pypdf import PdfReader

    files = _logs(tmp_path / "logs")
    db = tmp_path / "hostile.duckdb"
    exe = str(Path(sys.executable).parent / "ragaudit")
    assert subprocess.run([exe, "ingest", *map(str, files), "--db", str(db)], capture_output=True).returncode == 0
    out = tmp_path / "audit.pdf"
    p = subprocess.run(
        [exe, "report", "--db", str(db), "--out", str(out), "--baseline", RUN_A, "--candidate", RUN_B, "--no-probe"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    reader = PdfReader(out)
    text = " ".join(pg.extract_text() for pg in reader.pages).replace("\n", " ")
    for s in (BOLD, RED, TEX):
        assert s in text
    uris = [a.get_object().get("/A", {}).get("/URI") for pg in reader.pages for a in (pg.get("/Annots") or [])]
    assert not any(u and "evil.example" in str(u) for u in uris)

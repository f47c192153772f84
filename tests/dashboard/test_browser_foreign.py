"""Logs RagAudit did not write, used as an auditor would in a real browser: a Ragas CSV export of
two configurations and a Phoenix (OpenInference) span export are uploaded through the file input;
the home page counts their runs, the stability page compares them, the drill-down shows a query,
and the attributions page explains one of their queries in the background."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.dashboard.browser_support import launch_chromium, streamlit_server, upload_logs, wait_idle
from tests.helpers import write_jsonl

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


def _ragas_csv(path: Path, shift: int) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["user_input", "retrieved_contexts", "retrieved_context_ids", "response"])
        w.writeheader()
        for i, q in enumerate(QUESTIONS):
            picks = [(2 * i + shift) % 6, (2 * i + 4) % 6]
            w.writerow(
                {
                    "user_input": q,
                    "retrieved_contexts": repr([PASSAGES[p] for p in picks]),
                    "retrieved_context_ids": json.dumps([f"doc{p}" for p in picks]),
                    "response": f"answer {i}",
                }
            )
    return path


def _phoenix_spans(path: Path) -> Path:
    spans = []
    for i, q in enumerate(QUESTIONS):
        docs = [
            {"document": {"id": f"doc{p}", "content": PASSAGES[p], "score": 0.9 - 0.1 * n}}
            for n, p in enumerate((2 * i, (2 * i + 3) % 6))
        ]
        spans += [
            {
                "name": "retrieve",
                "context": {"trace_id": f"t{i}", "span_id": "r"},
                "attributes": {
                    "openinference": {"span": {"kind": "RETRIEVER"}},
                    "input": {"value": q},
                    "retrieval": {"documents": docs},
                },
            },
            {
                "name": "llm",
                "context": {"trace_id": f"t{i}", "span_id": "l"},
                "attributes": {"openinference.span.kind": "LLM", "output.value": f"phoenix answer {i}"},
            },
        ]
    return write_jsonl(path, spans)


def test_an_auditor_uploads_ragas_and_phoenix_exports(tmp_path):
    from playwright.sync_api import sync_playwright

    files = [
        _ragas_csv(tmp_path / "ragas_k5.csv", 0),
        _ragas_csv(tmp_path / "ragas_k10.csv", 1),
        _phoenix_spans(tmp_path / "phoenix_spans.jsonl"),
    ]
    with streamlit_server(tmp_path / "foreign.duckdb", tmp_path / "streamlit.log") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        upload_logs(page, url, files)
        metrics = {
            m.locator('[data-testid="stMetricLabel"]').inner_text(): m.locator(
                '[data-testid="stMetricValue"]'
            ).inner_text()
            for m in page.locator('[data-testid="stMetric"]').all()
        }
        assert metrics["Runs"] == "3" and metrics["Queries"] == "3" and metrics["Rejected lines"] == "0"
        assert metrics["Evidence entries"] == "18" and metrics["Answers"] == "9"

        page.goto(f"{url}/Stability")
        page.get_by_text("Run pairs", exact=True).wait_for(timeout=60_000)
        wait_idle(page)
        body = page.inner_text("body")
        assert "3 queries × 3 run pairs" in body  # the three runs pair up by query text
        page.goto(f"{url}/Query_drilldown")
        page.get_by_text("J_doc =").first.wait_for(timeout=60_000)  # two runs' lists compared
        wait_idle(page)
        body = page.inner_text("body")
        assert "Run A" in body and "Same document, different span" in body and "Traceback" not in body

        # the Ragas run's first query explained: queued, run by the background worker (real MiniLM and
        # SmolLM2, the default settings), its progress shown, its result drawn when it lands
        page.goto(f"{url}/Attributions")
        page.get_by_role("button", name="Explain this query").wait_for(timeout=60_000)
        wait_idle(page)
        page.get_by_role("button", name="Explain this query").click()
        done = page.get_by_text("wasted retrieval", exact=True).first
        page.get_by_role("button", name="Cancel").or_(done).first.wait_for(timeout=60_000)  # queued or running
        done.wait_for(timeout=300_000)
        wait_idle(page)
        body = page.inner_text("body")
        assert "Generator: which document each answer token came from" in body and "Traceback" not in body
        assert "coalitions evaluated" in body
        browser.close()

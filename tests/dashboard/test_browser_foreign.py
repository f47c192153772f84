"""Logs RagAudit did not write, used as an auditor would in a real browser: a Ragas export of two
configurations (one as CSV, one as tab-separated text named .txt) and a Phoenix (OpenInference)
span export are uploaded through the file input;
the home page counts their runs, the stability page compares them, the drill-down shows a query,
and the attributions page explains one of their queries in the background."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.dashboard.browser_support import (
    TIMEOUT_MS,
    body_text,
    launch_chromium,
    metric,
    new_page,
    shown,
    streamlit_server,
    upload_logs,
)
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


def _ragas_csv(path: Path, shift: int, delimiter: str = ",") -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        fields = ["user_input", "retrieved_contexts", "retrieved_context_ids", "response"]
        w = csv.DictWriter(f, fieldnames=fields, delimiter=delimiter)
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
        # a table saved from a spreadsheet as tab-separated text: the uploader takes it, its content decides
        _ragas_csv(tmp_path / "ragas_k10.txt", 1, delimiter="\t"),
        _phoenix_spans(tmp_path / "phoenix_spans.jsonl"),
    ]
    with streamlit_server(tmp_path / "foreign.duckdb", tmp_path / "streamlit.log") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = new_page(browser)
        upload_logs(page, url, files)
        counts = {"Runs": "3", "Queries": "3", "Rejected lines": "0", "Evidence entries": "18", "Answers": "9"}
        assert {label: metric(page, label, value) for label, value in counts.items()} == counts

        page.goto(f"{url}/Stability")
        shown(page, page.get_by_text("Run pairs", exact=True))
        body_text(page, "3 queries × 3 run pairs")  # the three runs pair up by query text
        page.goto(f"{url}/Query_drilldown")
        shown(page, "J_doc =")  # two runs' lists compared
        body = body_text(page, "Run A", "Same document, different span")
        assert "Traceback" not in body

        # the Ragas run's first query explained: queued, run by the background worker (real MiniLM and
        # SmolLM2, the default settings), its progress shown, its result drawn when it lands
        page.goto(f"{url}/Attributions")
        explain = page.get_by_role("button", name="Explain this query")
        shown(page, explain)
        explain.click()
        done = page.get_by_text("wasted retrieval", exact=True).first
        page.get_by_role("button", name="Cancel").or_(done).first.wait_for()  # queued or running
        done.wait_for(timeout=max(TIMEOUT_MS, 300_000))
        body = body_text(page, "Generator: which document each answer token came from", "coalitions evaluated")
        assert "Traceback" not in body
        browser.close()

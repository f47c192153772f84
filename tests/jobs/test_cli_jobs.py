"""``ragaudit attribute`` and ``ragaudit judge`` as a CI job would call them: results stored,
a second batch resumes (nothing recomputed), a query that cannot be explained is reported
with its error while the others are kept (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import pipeline, write_jsonl

pytestmark = pytest.mark.slow
RAGAUDIT = str(Path(sys.executable).parent / "ragaudit")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RAGAUDIT, *args], capture_output=True, text=True, timeout=600)


def test_attribute_resumes_and_reports_a_failed_query(tmp_path):
    db = tmp_path / "a.duckdb"
    recs = [
        {
            "run_id": "base",
            "query_id": "q1",
            "query": "Where was Marie Curie born?",
            "evidence": [
                {"doc_id": "d0", "text": "Marie Curie was born in Warsaw."},
                {"doc_id": "d1", "text": "Paris is in France."},
            ],
        },
        {"run_id": "base", "query_id": "q2", "evidence": [{"doc_id": "d0", "text": "No query text here."}]},
    ]
    with store.connect(db) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    small = ["--max-docs", "2", "--ig-steps", "4", "--max-new-tokens", "6"]
    first = _cli("attribute", "--db", str(db), "--run", "base", "--all", *small, "--json", str(tmp_path / "o.json"))
    assert first.returncode == 1, first.stderr  # q2 has no query text: reported, q1 kept
    assert "1 computed, 0 already stored, 1 failed" in first.stderr
    assert "failed: query q2: run 'base', query 'q2': the log has no query text to explain" in first.stderr
    out = json.loads((tmp_path / "o.json").read_text())
    assert [r["query_id"] for r in out["results"]] == ["q1"] and out["results"][0]["method"] == "exact"
    # the run's figures with their intervals (one query: Wilson for the rates, none for the means)
    rates = {r["metric"]: r for r in out["tables"]["intervals"] if r["method"] == "wilson"}
    assert set(rates) == {"wasted_retrieval", "noise_distraction"} and rates["wasted_retrieval"]["n"] == 1
    assert all(r["lo"] is None for r in out["tables"]["intervals"] if r["method"] == "bootstrap")
    assert "95 % intervals over the explained queries" in first.stdout
    again = _cli("attribute", "--db", str(db), "--run", "base", "--queries", "q1", *small)
    assert again.returncode == 0, again.stderr
    assert "0 computed, 1 already stored, 0 failed" in again.stderr
    both = _cli("attribute", "--db", str(db), "--run", "base", "--queries", "q1", *small, "--shuffle")
    assert both.returncode == 0, both.stderr  # two lines for the query: which order each is about
    assert [ln.split(":")[0] for ln in both.stdout.splitlines() if ln.startswith("q1")] == [
        "q1 (original order)",
        "q1 (shuffled order)",
    ]


def test_judge_over_an_endpoint(tmp_path):
    db = tmp_path / "j.duckdb"
    with store.connect(db) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
    server = _Server(lambda body: json.dumps({**GOOD, "verdict": "ACCURATE"}))
    try:
        p = _cli(
            "judge",
            "--db",
            str(db),
            "--run",
            "base",
            "--endpoint",
            server.url,
            "--judge-model",
            "m",
            "--json",
            str(tmp_path / "j.json"),
        )
    finally:
        server.close()
    assert p.returncode == 0, p.stderr
    assert (
        "base: 1 citation judged by 3 judges; agreement with Pattern 3 100.0%; judges disagree on 0.0% "
        "of citations (pairwise 0.0%); 0 invalid votes"
    ) in p.stdout
    assert json.loads((tmp_path / "j.json").read_text())["citations"][0]["majority"] == "ACCURATE"
    bad = _cli("judge", "--db", str(db), "--run", "nope")
    assert bad.returncode == 2 and "has no provenance logs" in bad.stderr

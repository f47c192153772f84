"""RAGChecker's JSON (``{"results": [...]}``) loads to the same stored rows as the native log."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

DOC = {
    "results": [
        {
            "query_id": "0",
            "query": "What causes tides?",
            "gt_answer": "Lunar gravity.",
            "response": "The Moon.",
            "retrieved_context": [
                {"doc_id": "moon", "text": "The Moon's gravity pulls the oceans."},
                {"doc_id": "cycle", "text": "Tides follow the lunar cycle."},
            ],
        },
        {
            "query_id": "1",
            "query": "Who wrote Hamlet?",
            "gt_answer": "Shakespeare",
            "response": "Shakespeare.",
            "retrieved_context": [{"doc_id": "hamlet", "text": "Hamlet is a play by Shakespeare."}],
        },
    ]
}


def _stored(path):
    con = store.connect(":memory:")
    report = ingest_paths(con, [path])
    return report, (
        con.execute("SELECT * EXCLUDE (metadata) FROM evidence ORDER BY query_id, position").fetchall(),
        con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY query_id").fetchall(),
    )


def test_ragchecker_json_equals_the_native_log(tmp_path):
    (tmp_path / "checker.json").write_text(json.dumps(DOC), encoding="utf-8")
    report, got = _stored(tmp_path / "checker.json")
    assert report.n_rejected == 0 and report.runs == ["checker"] and report.n_records == 2
    native = [
        {
            "run_id": "checker",
            "query_id": r["query_id"],
            "query": r["query"],
            "answer": r["response"],
            "evidence": [
                {"doc_id": c["doc_id"], "text": c["text"], "rank": i} for i, c in enumerate(r["retrieved_context"])
            ],
        }
        for r in DOC["results"]
    ]
    _, want = _stored(write_jsonl(tmp_path / "n" / "checker.jsonl", native))
    assert got == want


def test_a_bad_result_is_quarantined_and_the_rest_kept(tmp_path):
    doc = {"results": [DOC["results"][0], {"query_id": "2", "query": "x", "retrieved_context": [{"doc_id": "d"}]}]}
    (tmp_path / "c.json").write_text(json.dumps(doc), encoding="utf-8")
    report, (_ev, rec) = _stored(tmp_path / "c.json")
    assert len(rec) == 1 and report.n_rejected == 1
    assert report.rejected[0].line_no == 2 and "retrieved_context" in report.rejected[0].message

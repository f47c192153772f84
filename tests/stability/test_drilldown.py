"""The per-query drill-down's numbers, worked out by hand."""

from __future__ import annotations

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability import drilldown
from tests.helpers import write_jsonl


def test_the_matrix_of_a_query_ignores_how_runs_cover_other_queries(tmp_path):
    """Run C logged only q1: the drill-down of q1 still compares A, B and C (it used to raise a
    coverage error for every query), and q2 compares A and B. Hand-worked Jaccard values:
    q1: A {d1,d2}, B {d2,d3} → 1/3; A vs C {d1} → 1/2; B vs C → 0."""
    recs = [
        {"run_id": "A", "query_id": "q1", "evidence": ["d1", "d2"]},
        {"run_id": "B", "query_id": "q1", "evidence": ["d2", "d3"]},
        {"run_id": "C", "query_id": "q1", "evidence": ["d1"]},
        {"run_id": "A", "query_id": "q2", "evidence": ["d5"]},
        {"run_id": "B", "query_id": "q2", "evidence": ["d5", "d6"]},
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    m = drilldown.query_matrix(con, "q1")["doc"]
    assert m.loc["A", "B"] == 1 / 3 and m.loc["A", "C"] == 1 / 2 and m.loc["B", "C"] == 0.0
    assert m.loc["C", "C"] == 1.0
    m2 = drilldown.query_matrix(con, "q2")["doc"]
    assert list(m2.index) == ["A", "B"] and m2.loc["A", "B"] == 1 / 2

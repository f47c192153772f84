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


def test_the_passage_ids_note_only_between_a_run_without_ids_and_one_with_them():
    """Said when exactly one of the two lists has passage-hash ids (text:…), counting its passages
    the other list holds word for word; never between two runs of the same kind, nor beside an empty list."""
    import pandas as pd

    def frame(ids, hashes):
        return pd.DataFrame({"doc_id": ids, "span_hash": hashes})

    ids = frame(["d1", "d2", "d3"], ["h1", "h2", "h3"])
    hashed = frame(["text:h2", "text:h9"], ["h2", "h9"])
    note = drilldown.passage_ids_note(ids, hashed, "native", "ragas")
    assert note is not None and note.startswith("ragas logged no document ids")
    assert "1 of its 2 passages is in native's list word for word." in note
    assert drilldown.passage_ids_note(hashed, ids, "ragas", "native") == note  # either side
    assert drilldown.passage_ids_note(ids, ids, "a", "b") is None
    assert drilldown.passage_ids_note(hashed, hashed, "a", "b") is None
    assert drilldown.passage_ids_note(ids, hashed.iloc[:0], "native", "ragas") is None


def test_the_matrix_leaves_blank_a_pair_whose_ids_cannot_meet(tmp_path):
    """'ids' logged document ids, 'ragas' and 'ragas2' (Ragas rows) did not: their ids are passage
    hashes, so J between 'ids' and either is 0 by how they were logged. Those cells are n/a (NaN),
    never 0; (ragas, ragas2) by hand: {A, B} vs {A, C} → 1/3 at both levels. With only a mixed pair
    the matrix is there, blank off the diagonal."""
    import math

    from ragaudit_core.logs.formats import query_id_for

    rows = {"ids": ["A", "B"], "ragas": ["A", "B"], "ragas2": ["A", "C"]}
    for name, ps in rows.items():
        row = {"user_input": "Q?", "retrieved_contexts": [f"{p} passage." for p in ps]}
        write_jsonl(tmp_path / f"{name}.jsonl", [row | ({"retrieved_context_ids": ps} if name == "ids" else {})])
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in rows])
    mats = drilldown.query_matrix(con, query_id_for("Q?"))
    for level in ("doc", "span"):
        m = mats[level]
        assert list(m.index) == ["ids", "ragas", "ragas2"]
        assert abs(m.loc["ragas", "ragas2"] - 1 / 3) < 1e-12 and m.loc["ids", "ids"] == 1.0
        assert math.isnan(m.loc["ids", "ragas"]) and math.isnan(m.loc["ragas2", "ids"])
    m = drilldown.query_matrix(con, query_id_for("Q?"), runs=["ids", "ragas"])["doc"]
    assert math.isnan(m.loc["ids", "ragas"]) and m.loc["ragas", "ragas"] == 1.0
    # the chart writes n/a in a blank cell, not "nan" and not 0
    from ragaudit_core.review.charts import matrix_heatmap

    text = matrix_heatmap(m, title="t").data[0].text
    assert [list(row) for row in text] == [[1.0, "n/a"], ["n/a", 1.0]]

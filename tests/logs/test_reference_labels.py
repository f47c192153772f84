"""Relevance labels carried by the logs themselves: Ragas reference contexts and their ids."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.quality.ranking import per_query_quality
from tests.helpers import write_jsonl

A = "Aspirin lowers the risk of a second stroke in adults with a first ischaemic stroke."
B = "Coffee intake was not associated with mortality in the cohort."
C = "Statins reduce LDL cholesterol by about a third."


def _load(tmp_path, rows):
    con = store.connect(":memory:")
    report = ingest_paths(con, [write_jsonl(tmp_path / "rag.jsonl", rows)])
    return con, report


def test_reference_contexts_label_the_passages_retrieved(tmp_path):
    rows = [
        {"user_input": "Does aspirin prevent stroke?", "retrieved_contexts": [B, A], "reference_contexts": [A]},
        {"user_input": "Is coffee harmful?", "retrieved_contexts": [C], "reference_contexts": [B]},
    ]
    con, report = _load(tmp_path, rows)
    labels = con.execute("SELECT query_id, doc_id, relevance FROM qrels ORDER BY doc_id").fetchall()
    # each reference passage labels the document stored for that passage ('text:' + its hash)
    assert sorted(d for _q, d, _r in labels) == sorted(["text:" + span_hash(A)[:16], "text:" + span_hash(B)[:16]])
    said = [w for w in report.warnings if "relevance labels from the logs' references" in w.message]
    assert len(said) == 1 and "loaded 2 relevance labels for 2 queries" in said[0].message
    assert said[0].kind == "note"  # what the load did: a note, not a warning
    q = per_query_quality(con, ["rag"], cutoffs=(1, 2))
    # query 1: its relevant A at rank 2 → RR 1/2, recall@1 0, recall@2 1; query 2: B not retrieved → 0s
    got = sorted(zip(q["mrr"], q["recall@1"], q["recall@2"]))
    assert got == [(0.0, 0.0, 0.0), (0.5, 0.0, 1.0)]


def test_reference_context_ids_label_documents(tmp_path):
    rows = [
        {
            "user_input": "Does aspirin prevent stroke?",
            "retrieved_contexts": [B, A],
            "retrieved_context_ids": ["D2", "D1"],
            "reference_context_ids": ["D1", "D7"],
        }
    ]
    con, _ = _load(tmp_path, rows)
    assert con.execute("SELECT doc_id, relevance FROM qrels ORDER BY doc_id").fetchall() == [("d1", 1), ("d7", 1)]


def test_a_reference_passage_matched_to_a_documents_id_by_span_identity(tmp_path):
    # the retrieval carries ids, the reference only texts: the passage's document is the label
    rows = [
        {
            "user_input": "Does aspirin prevent stroke?",
            "retrieved_contexts": [B, A],
            "retrieved_context_ids": ["D2", "D1"],
            "reference_contexts": [A],
        }
    ]
    con, _ = _load(tmp_path, rows)
    assert con.execute("SELECT doc_id FROM qrels").fetchall() == [("d1",)]


@pytest.mark.parametrize("bad", ["not a list", 7])
def test_a_malformed_reference_list_is_skipped_with_a_warning(tmp_path, bad):
    con, report = _load(tmp_path, [{"user_input": "q?", "retrieved_contexts": [A], "reference_context_ids": bad}])
    assert con.execute("SELECT count(*) FROM records").fetchone() == (1,)  # the row itself loads
    assert con.execute("SELECT count(*) FROM qrels").fetchone() == (0,)
    assert any("could not be read as relevance labels" in str(w) for w in report.warnings)

"""Ragas datasets (v0.2+ and v0.1) as JSONL, JSON array, CSV and Parquet load to the same stored
rows as the equivalent native log: passage texts are span identities, never document ids."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for, ragas
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl

Q1, Q2 = "What causes tides?", "Who wrote  Hamlet?"
T1, T2, T3 = "The Moon's gravity pulls the oceans.", "Tides follow the lunar cycle.", "Hamlet is a play by Shakespeare."
V2 = [
    {
        "user_input": Q1,
        "retrieved_contexts": [T1, T2],
        "retrieved_context_ids": ["moon", "cycle"],
        "response": "The Moon.",
        "reference": "Lunar gravity.",
        "reference_contexts": [T1],
    },
    {
        "user_input": Q2,
        "retrieved_contexts": [T3],
        "retrieved_context_ids": ["hamlet"],
        "response": "Shakespeare.",
        "reference": "Shakespeare",
    },
]
NATIVE = [
    {
        "run_id": "rag",
        "query_id": query_id_for(Q1),
        "query": Q1,
        "answer": "The Moon.",
        "evidence": [{"doc_id": "moon", "text": T1}, {"doc_id": "cycle", "text": T2}],
    },
    {
        "run_id": "rag",
        "query_id": query_id_for(Q2),
        "query": Q2,
        "answer": "Shakespeare.",
        "evidence": [{"doc_id": "hamlet", "text": T3}],
    },
]


def _rows(path, **opts):
    con = store.connect(":memory:")
    report = ingest_paths(con, [path], IngestOptions(**opts))
    ev = con.execute(
        "SELECT run_id, query_id, position, doc_id, span_hash, text FROM evidence ORDER BY query_id, position"
    ).fetchall()
    rec = con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY query_id").fetchall()
    return report, ev, rec


def _native_rows(tmp_path):
    _, ev, rec = _rows(write_jsonl(tmp_path / "native" / "rag.jsonl", NATIVE))
    return ev, rec


def test_v02_jsonl_equals_the_native_log(tmp_path):
    report, ev, rec = _rows(write_jsonl(tmp_path / "rag.jsonl", V2))
    assert report.n_rejected == 0 and report.runs == ["rag"]  # run id: the file name
    assert (ev, rec) == _native_rows(tmp_path)
    # passage texts are spans: the hash of the text, and the text itself is kept
    assert ("moon", span_hash(T1), T1) in [e[3:] for e in ev]
    assert query_id_for(Q2) == query_id_for("who wrote hamlet?")  # normalised: case and spaces


def test_v02_as_a_json_array_csv_and_parquet(tmp_path):
    expected = _native_rows(tmp_path)
    (tmp_path / "rag.json").write_text(json.dumps(V2, indent=2), encoding="utf-8")
    assert _rows(tmp_path / "rag.json")[1:] == expected
    with open(tmp_path / "rag.csv", "w", newline="", encoding="utf-8") as f:  # lists as pandas writes them
        w = csv.DictWriter(f, fieldnames=["user_input", "retrieved_contexts", "retrieved_context_ids", "response"])
        w.writeheader()
        for r in V2:
            w.writerow(
                {
                    "user_input": r["user_input"],
                    "retrieved_contexts": repr(r["retrieved_contexts"]),
                    "retrieved_context_ids": json.dumps(r["retrieved_context_ids"]),
                    "response": r["response"],
                }
            )
    assert _rows(tmp_path / "rag.csv")[1:] == expected
    pq.write_table(
        pa.Table.from_pylist(
            [{k: r[k] for k in ("user_input", "retrieved_contexts", "retrieved_context_ids", "response")} for r in V2]
        ),
        tmp_path / "rag.parquet",
    )
    assert _rows(tmp_path / "rag.parquet")[1:] == expected


def test_v01_rows_and_renamed_contexts_are_texts_not_ids(tmp_path):
    v01 = [{"question": Q1, "contexts": [T1, T2], "answer": "The Moon.", "ground_truth": "Lunar gravity."}]
    report, ev, rec = _rows(write_jsonl(tmp_path / "old.jsonl", v01))
    assert report.n_rejected == 0 and rec[0][3] == "The Moon."
    assert [e[4] for e in ev] == [span_hash(T1), span_hash(T2)]
    # no ids: the document id is the text's hash, and the user is told what that means
    assert [e[3] for e in ev] == ["text:" + span_hash(T1)[:16], "text:" + span_hash(T2)[:16]]
    assert any("document-level metrics equal span-level ones" in w.message for w in report.warnings)
    # what to do, for Ragas: a row has no metadata to name a key of (the advice was --doc-id-key)
    (said,) = [w.message for w in report.warnings if "carry no document ids" in w.message]
    assert said.endswith("to use real ids, give the rows a retrieved_context_ids column (one id per retrieved context)")
    renamed = [{"user_input": Q1, "contexts": [T1], "response": "x"}]
    _, ev, _ = _rows(write_jsonl(tmp_path / "renamed.jsonl", renamed))
    assert ev[0][4] == span_hash(T1) and ev[0][5] == T1


def test_run_id_option_doc_id_key_and_forced_format(tmp_path):
    rows = [{"user_input": Q1, "retrieved_contexts": [T1], "response": "a"}]
    report, _ev, rec = _rows(write_jsonl(tmp_path / "x.jsonl", rows), run_id="chosen")
    assert rec[0][0] == "chosen"
    # a bad row is rejected with its reason, the good one kept
    mixed = [
        {"user_input": Q1, "retrieved_contexts": [T1], "response": "a"},
        {"user_input": Q2, "retrieved_contexts": "not a list"},
        {"user_input": Q2, "retrieved_contexts": [T3], "retrieved_context_ids": ["a", "b"]},
    ]
    report, _ev, rec = _rows(write_jsonl(tmp_path / "m.jsonl", mixed))
    assert len(rec) == 1 and report.n_rejected == 2
    assert "retrieved_contexts is text that is neither JSON nor a Python literal" in report.rejected[0].message
    assert "one id per retrieved context" in report.rejected[1].message


@pytest.mark.parametrize("forced", ["native"])
def test_forcing_native_reads_ragas_fields_as_the_native_contract(tmp_path, forced):
    report, _, rec = _rows(write_jsonl(tmp_path / "f.jsonl", V2), format=forced)
    assert not rec and report.n_rejected == 2  # no run id in the native contract


def test_rows_for_the_id_based_metrics_load_their_ids_and_labels(tmp_path):
    """Ragas' ID-based context precision and recall take retrieved_context_ids and
    reference_context_ids without texts. Such rows were read as native records and refused ("no
    run id, no query id and no evidence list"), or as a test set with --format ragas. Now each id is
    an entry (rank order, no text), the reference ids relevance labels; an empty id without a text
    to stand for it rejects its row."""
    rows = [
        {
            "user_input": "What causes tides?",
            "retrieved_context_ids": ["moon", "cycle"],
            "reference_context_ids": ["moon"],
        },
        {"user_input": "Why is the sky blue?", "retrieved_context_ids": ["rayleigh", 7]},
        {"user_input": "Empty?", "retrieved_context_ids": ["a", ""]},
    ]
    con = store.connect(":memory:")
    rep = ingest_paths(con, [write_jsonl(tmp_path / "ids.jsonl", rows)])
    assert rep.n_records == 2 and [r.line_no for r in rep.rejected] == [3]
    assert "retrieved_context_ids[1] is empty" in rep.rejected[0].message
    ev = con.execute("SELECT query_id, doc_id, text, rank FROM evidence ORDER BY query_id, rank").fetchall()
    tides, sky = query_id_for("What causes tides?"), query_id_for("Why is the sky blue?")
    assert sorted(ev) == sorted(
        [(tides, "moon", None, 0), (tides, "cycle", None, 1), (sky, "rayleigh", None, 0), (sky, "7", None, 1)]
    )
    assert con.execute("SELECT query_id, doc_id, relevance FROM qrels").fetchall() == [(tides, "moon", 1)]
    assert any("without texts, so span-level figures are unavailable" in w.message for w in rep.warnings)


def test_integer_ids_in_csv_cells_load_as_in_jsonl_and_parquet(tmp_path):
    """Ragas types the id columns List[str | int]; pandas writes an integer list as ``[1969, 11]``.
    JSONL and Parquet loaded them; a CSV rejected every row ("must be a text, got int"), lost its
    reference ids as labels, and refused the ID-only rows."""
    f = tmp_path / "ints.csv"
    with open(f, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows(
            [
                ["user_input", "retrieved_contexts", "retrieved_context_ids", "reference_context_ids"],
                [Q1, repr([T1, T2]), "[1969, 11]", "[1969]"],
                ["Why is the sky blue?", "", "[7, 'rayleigh']", ""],
            ]
        )
    con = store.connect(":memory:")
    rep = ingest_paths(con, [f])
    assert rep.n_records == 2 and not rep.rejected
    ev = con.execute("SELECT query_id, doc_id, text FROM evidence ORDER BY query_id, rank").fetchall()
    tides, sky = query_id_for(Q1), query_id_for("Why is the sky blue?")
    assert sorted(ev) == sorted([(tides, "1969", T1), (tides, "11", T2), (sky, "7", None), (sky, "rayleigh", None)])
    assert con.execute("SELECT query_id, doc_id FROM qrels").fetchall() == [(tides, "1969")]


def test_a_malformed_reference_id_list_falls_back_to_the_reference_passages(tmp_path):
    rows = [{**V2[0], "reference_context_ids": "{not: a list}"}]
    con = store.connect(":memory:")
    rep = ingest_paths(con, [write_jsonl(tmp_path / "ref.jsonl", rows)])
    assert rep.n_records == 1
    assert con.execute("SELECT query_id, doc_id FROM qrels").fetchall() == [(query_id_for(Q1), "moon")]
    assert any("reference_context_ids could not be read" in w.message for w in rep.warnings)


def test_an_empty_contexts_cell_is_no_retrieval_not_an_empty_one(tmp_path):
    """pandas writes None or NaN as an empty cell and ``[]`` as ``[]``: the empty cell is a row
    without retrieval (counted, not loaded: it would count as a null retrieval in every figure),
    ``[]`` a retrieval that found nothing."""
    f = tmp_path / "empty.csv"
    f.write_text(
        f"user_input,retrieved_contexts,response\n{Q1},,r\n{Q2},[],r\nThird?,\"['{T3}']\",r\n",
        encoding="utf-8",
    )
    con = store.connect(":memory:")
    rep = ingest_paths(con, [f])
    got = con.execute("SELECT query_id, n_evidence FROM records ORDER BY line_no").fetchall()
    assert got == [(query_id_for(Q2), 0), (query_id_for("Third?"), 1)]
    assert not rep.rejected


def test_a_rows_own_run_and_query_ids_under_the_contracts_aliases(tmp_path):
    """A row's run and query ids are read under the contract's aliases too (config_id, qid): before,
    only run_id and query_id were, so a row naming config_id went to the file's run with a hashed
    query id — the run split in two, the query id lost, only a coverage warning."""
    rows = [
        {"user_input": Q1, "retrieved_contexts": [T1], "config_id": "bm25_k5", "qid": "Q17"},
        {"user_input": Q2, "retrieved_contexts": [T3], "run_id": "bm25_k5", "query_id": "Q18", "id": 7},
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "alias.jsonl", rows)])
    got = con.execute("SELECT run_id, query_id FROM records ORDER BY query_id").fetchall()
    assert got == [("bm25_k5", "Q17"), ("bm25_k5", "Q18")]  # (a row's own "id" is not its query's)


def test_a_multi_turn_sample_is_refused_as_one_with_its_reason(tmp_path):
    """A Ragas MultiTurnSample (user_input a conversation, no retrieved contexts) was rejected as
    "without a query" from JSONL and refused as "a test set?" from CSV: said as what it is."""
    convo = [{"content": "Hi, book a table", "type": "human"}, {"content": "For how many?", "type": "ai"}]
    f = tmp_path / "mt.csv"
    with open(f, "w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([["user_input", "reference"], [repr(convo), "Books a table"]])
    for path in (write_jsonl(tmp_path / "mt.jsonl", [{"user_input": convo, "reference": "x"}]), f):
        rep = ingest_paths(store.connect(":memory:"), [path])
        assert [r.message for r in rep.rejected] == [f"Ragas row: {ragas.MULTI_TURN}"]


def test_nan_in_an_id_column_is_a_missing_value(tmp_path):
    """A table's missing cell read as NaN (Parquet, pandas' JSON) in retrieved_context_ids or in an
    id column rejected the row ("must be a list", "got a number"): it is absent."""
    pq.write_table(
        pa.Table.from_pylist(
            [
                {"user_input": Q1, "retrieved_contexts": [T1], "retrieved_context_ids": None, "run": float("nan")},
                {"user_input": Q2, "retrieved_contexts": [T3], "retrieved_context_ids": None, "run": 2.0},
            ]
        ),
        tmp_path / "nan.parquet",
    )
    con = store.connect(":memory:")
    rep = ingest_paths(con, [tmp_path / "nan.parquet"])
    assert rep.n_records == 1 and [r.line_no for r in rep.rejected] == [2]  # 2.0: a float id, said so
    assert con.execute("SELECT run_id FROM records").fetchall() == [("nan",)]
    rows = [{"user_input": Q1, "retrieved_contexts": [T1], "retrieved_context_ids": float("nan")}]
    rep = ingest_paths(store.connect(":memory:"), [write_jsonl(tmp_path / "nan.jsonl", rows)])
    assert rep.n_records == 1 and not rep.rejected

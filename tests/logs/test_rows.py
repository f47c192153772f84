"""A record's evidence rows (logs/rows.py): the identity rules on records worked by hand."""

from __future__ import annotations

from ragaudit_core.logs.decode import FastEntry, FastRecord
from ragaudit_core.logs.identity import CanonOptions, span_hash
from ragaudit_core.logs.rows import RowCaches, RowOptions, evidence_rows
from ragaudit_core.logs.writer import EVIDENCE_SCHEMA, rows_table


def _rows(rows: list[tuple]) -> list[dict]:
    return rows_table(rows, EVIDENCE_SCHEMA).to_pylist()


def test_a_record_s_rows_by_hand():
    """Ids canonical (trimmed, lower-cased), the span the logged hash else the text's, the third
    entry a repeat of the first (same document and span) dropped and named; positions kept."""
    rec = FastRecord(
        "r",
        "q",
        [
            FastEntry("Doc-A", text="alpha beta", rank=0, score=0.5),
            FastEntry("doc-b", span_hash="h-b", rank=1),
            FastEntry("DOC-A", text="alpha  beta", rank=2, metadata={"k": [1]}),  # same normal form
            FastEntry("doc-c", rank=3, char_start=4, char_end=9, page=2),
        ],
    )
    out: list[tuple] = []
    assert evidence_rows(rec, RowOptions(), RowCaches(), out.append) == (3, ["evidence[2] repeats evidence[0]"])
    rows = _rows(out)
    assert [(r["position"], r["doc_id"], r["doc_id_raw"], r["rank"]) for r in rows] == [
        (0, "doc-a", "Doc-A", 0),
        (1, "doc-b", "doc-b", 1),
        (3, "doc-c", "doc-c", 3),
    ]
    assert [r["span_hash"] for r in rows] == [span_hash("alpha beta"), "h-b", None]
    assert [r["score"] for r in rows] == [0.5, None, None]
    assert (rows[2]["char_start"], rows[2]["char_end"], rows[2]["page"]) == (4, 9, 2)
    assert all(r["run_id"] == "r" and r["query_id"] == "q" and r["metadata"] is None for r in rows)


def test_recompute_and_casefold_decide_the_span():
    rec = FastRecord("r", "q", [FastEntry("d", text="Alpha", span_hash="logged")])
    assert _rows(_added(RowOptions(), rec))[0]["span_hash"] == "logged"
    assert _rows(_added(RowOptions(recompute=True), rec))[0]["span_hash"] == span_hash("Alpha")
    assert _rows(_added(RowOptions(casefold=True, recompute=True), rec))[0]["span_hash"] == span_hash("alpha")


def test_case_sensitive_ids_and_the_metadata_as_json():
    rec = FastRecord("r", "q", [FastEntry("Doc", text="t", metadata={"b": 1, "a": "x"})])
    row = _rows(_added(RowOptions(canon=CanonOptions(case_sensitive=True)), rec))[0]
    assert (row["doc_id"], row["metadata"]) == ("Doc", '{"b":1,"a":"x"}')


def _added(opts: RowOptions, rec: FastRecord) -> list[tuple]:
    out: list[tuple] = []
    evidence_rows(rec, opts, RowCaches(), out.append)
    return out

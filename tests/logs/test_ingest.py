"""Ingestion: contract aliases, RagCiteCheck format, idempotency, atomicity, identity."""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.identity import CanonOptions, DocIdMapError, canonical_doc_id, load_docid_map, span_hash
from ragaudit_core.logs.ingest import IngestError, IngestOptions, ingest_paths
from tests.helpers import write_jsonl


def _docs(con, run, q):
    return [
        r
        for (r,) in con.execute(
            "SELECT doc_id FROM evidence WHERE run_id = ? AND query_id = ? ORDER BY position", [run, q]
        ).fetchall()
    ]


def test_every_alias_of_the_contract(con, tmp_path):
    write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"runId": "R1", "qid": "q1", "docs": ["x"]},
            {"config_id": "R2", "id": "q1", "documents": [{"document_id": "x"}]},
            {"run": "R3", "query_id": 7, "retrieved": [{"docid": 12}]},
            {"run_id": "R4", "query_id": "q1", "contexts": [{"source_id": "x"}]},
            {"run_id": "R5", "query_id": "q1", "evidence": [{"id": "x"}]},
            {"run_id": "R6", "qid": "q1", "cited": [{"source": {"doc_id": "x"}}]},
            {"run_id": "R7", "qid": "q1", "cited": [{"a": {"b": {"c": {"docid": "x"}}}}]},
            {"run_id": "R8", "qid": "q1", "cited": [{"node": [{"meta": {"source_id": "x", "spanHash": "h"}}]}]},
        ],
    )
    rep = ingest_paths(con, [tmp_path])
    assert rep.rejected == []
    assert _docs(con, "R1", "q1") == ["x"]
    assert _docs(con, "R2", "q1") == ["x"]
    assert _docs(con, "R3", "7") == ["12"]  # integer ids read as decimal strings
    for r in ("R4", "R5", "R6", "R7"):
        assert _docs(con, r, "q1") == ["x"], r
    assert con.execute("SELECT span_hash FROM evidence WHERE run_id = 'R8'").fetchall() == [("h",)]


def test_optional_fields_are_stored(con, tmp_path):
    write_jsonl(
        tmp_path / "a.jsonl",
        [
            {
                "run_id": "r",
                "query_id": "q",
                "query": "why?",
                "answer": "because",
                "config": {"top_k": 10, "chunk_size": 256, "chunk_overlap": 32, "embedder": "m"},
                "evidence": [
                    {
                        "doc_id": "D",
                        "text": "t",
                        "rank": 0,
                        "score": 0.5,
                        "chunk_id": "D#0",
                        "char_start": 0,
                        "char_end": 1,
                        "page": 3,
                        "metadata": {"k": "v"},
                    }
                ],
            }
        ],
    )
    ingest_paths(con, [tmp_path])
    row = con.execute(
        "SELECT doc_id, doc_id_raw, span_hash, chunk_id, text, rank, score, char_start, char_end, "
        "page, metadata FROM evidence"
    ).fetchall()[0]
    assert row == ("d", "D", span_hash("t"), "D#0", "t", 0, 0.5, 0, 1, 3, '{"k":"v"}')
    assert con.execute("SELECT top_k, chunk_size, chunk_overlap, embedder FROM runs").fetchall() == [(10, 256, 32, "m")]
    assert con.execute("SELECT query, answer, n_evidence FROM records").fetchall() == [("why?", "because", 1)]


def test_ragcitecheck_run_format_loads_unchanged(con, tmp_path):
    """A RagCiteCheck-style run folder (one run per file, ``cited`` lists, mixed shapes)."""
    d = tmp_path / "runs"
    write_jsonl(
        d / "run1.jsonl",
        [
            {"run_id": "golden_run_1", "query_id": "q_stable", "cited": ["docA", "docB"]},
            {"run_id": "golden_run_1", "query_id": "q_null", "cited": []},
            {"run_id": "golden_run_1", "query_id": "q_dedup", "cited": ["docF", "docF", "docG"]},
            {"run_id": "golden_run_1", "query_id": "q_dict", "cited": [{"doc_id": "docK"}]},
            {"run_id": "golden_run_1", "query_id": "q_nested", "cited": [{"source": {"doc_id": "docL"}}]},
            {"run_id": "golden_run_1", "query_id": "q_map", "cited": ["DocM"]},
        ],
    )
    write_jsonl(
        d / "run2.jsonl",
        [
            {"run_id": "golden_run_2", "query_id": "q_stable", "cited": ["docB", "docA"]},
            {"run_id": "golden_run_2", "query_id": "q_null", "cited": []},
            {"run_id": "golden_run_2", "query_id": "q_dedup", "cited": ["docG", "docF"]},
            {"run_id": "golden_run_2", "query_id": "q_dict", "cited": ["docK"]},
            {"run_id": "golden_run_2", "query_id": "q_nested", "cited": ["docL"]},
            {"run_id": "golden_run_2", "query_id": "q_map", "cited": ["docm"]},
        ],
    )
    rep = ingest_paths(con, [d])
    assert rep.rejected == [] and rep.n_records == 12
    from ragaudit_core.stability.metrics import compute_stability

    res = compute_stability(con)
    assert res.pairs.iloc[0].j_avg == 1.0  # every query is stable at doc level once canonicalised


def test_same_content_twice_is_loaded_once(con, tmp_path):
    f = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["x"]}])
    ingest_paths(con, [f])
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(f.read_bytes())
    rep = ingest_paths(con, [f, copy])
    assert [x.status for x in rep.files] == ["already-loaded", "already-loaded"]
    assert con.execute("SELECT count(*) FROM records").fetchall()[0][0] == 1
    assert con.execute("SELECT count(*) FROM files").fetchall()[0][0] == 1


def test_duplicate_run_query_across_files_keeps_the_first(con, tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["x"]}])
    b = write_jsonl(tmp_path / "b.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["y"]}])
    rep = ingest_paths(con, [a])
    rep = ingest_paths(con, [b])
    assert [str(i) for i in rep.rejected] == [
        f"{b} line 1: duplicate record for run 'r', query 'q': already loaded from an earlier ingest; "
        "only the first is kept"
    ]
    assert _docs(con, "r", "q") == ["x"]


def test_an_error_inside_the_transaction_leaves_the_database_unchanged(tmp_path, monkeypatch):
    db = tmp_path / "x.duckdb"
    con = store.connect(db)
    ingest_paths(con, [write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["x"]}])])
    before = con.execute("SELECT count(*) FROM records").fetchall()

    import ragaudit_core.logs.ingest as ing

    def boom(_con):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ing, "workspace_warnings", boom)  # the last step of the transaction
    with pytest.raises(RuntimeError):
        ingest_paths(con, [write_jsonl(tmp_path / "b.jsonl", [{"run_id": "s", "query_id": "q", "cited": ["x"]}])])
    assert con.execute("SELECT count(*) FROM records").fetchall() == before
    assert con.execute("SELECT count(*) FROM files").fetchall()[0][0] == 1
    assert con.execute("SELECT count(*) FROM runs").fetchall()[0][0] == 1


def test_a_killed_ingest_leaves_the_database_as_it_was(tmp_path):
    """SIGKILL a real ``ragaudit ingest`` process mid-way; the file must open unchanged."""
    db = tmp_path / "kill.duckdb"
    con = store.connect(db)
    ingest_paths(con, [write_jsonl(tmp_path / "first.jsonl", [{"run_id": "r0", "query_id": "q", "cited": ["x"]}])])
    con.close()
    big = tmp_path / "big.jsonl"
    with open(big, "w") as f:
        for i in range(200_000):
            f.write(f'{{"run_id": "r1", "query_id": "q{i}", "cited": ["a", "b", "c"]}}\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragaudit_core.cli", "ingest", str(big), "--db", str(db)],
        stderr=subprocess.PIPE,
        text=True,
    )
    # wait until it has read lines (it prints progress every 100,000 lines), then kill it
    line = proc.stderr.readline()
    assert "lines read" in line, line
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    con = store.connect(db)
    assert con.execute("SELECT run_id, count(*) FROM records GROUP BY run_id").fetchall() == [("r0", 1)]
    assert con.execute("SELECT count(*) FROM files").fetchall()[0][0] == 1
    con.close()


def test_identity_options_cannot_change_within_a_database(con, tmp_path):
    ingest_paths(con, [write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["X"]}])])
    with pytest.raises(IngestError, match=r"other identity options: case_sensitive=False \(asked True\)"):
        ingest_paths(
            con,
            [write_jsonl(tmp_path / "b.jsonl", [{"run_id": "s", "query_id": "q", "cited": ["X"]}])],
            IngestOptions(canon=CanonOptions(case_sensitive=True)),
        )


def test_case_sensitive_option(con, tmp_path):
    ingest_paths(
        con,
        [write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": [" Dir\\Doc.PDF "]}])],
        IngestOptions(canon=CanonOptions(case_sensitive=True)),
    )
    assert _docs(con, "r", "q") == ["Dir/Doc.PDF"]


# ---------------------------------------------------------------- identity functions
def test_canonical_doc_id_defaults_and_options():
    assert canonical_doc_id("  Dir\\Sub\\Doc.PDF ") == "dir/sub/doc.pdf"
    assert canonical_doc_id("A  B", CanonOptions(case_sensitive=True)) == "A  B"
    assert canonical_doc_id("A \t B", CanonOptions(collapse_internal_whitespace=True)) == "a b"
    assert canonical_doc_id("DocM", CanonOptions(docid_map={"docm": "canon"})) == "canon"


def test_docid_map_csv(tmp_path):
    p = tmp_path / "map.csv"
    p.write_text("raw,canonical\nDocM,docm\n docX ,DocZ\n,ignored\n")
    assert load_docid_map(p) == {"docm": "docm", "docx": "docz"}
    p.write_text("from,to\na,b\n")
    with pytest.raises(
        DocIdMapError, match=r"alias map must have the header line 'raw,canonical' \(found \['from', 'to'\]\)"
    ):
        load_docid_map(p)
    p.write_text("raw,canonical\na,b\nA,c\n")
    with pytest.raises(DocIdMapError, match=r"line 3: raw id 'a' is mapped to 'c' here but to 'b' on line 2"):
        load_docid_map(p)


def test_span_hash_normalisation():
    want = hashlib.sha256(b"Fine fish").hexdigest()
    assert span_hash("Fine fish") == want
    assert span_hash("  Ｆｉｎｅ\t\n ﬁsh ") == want  # NFKC (full-width, ligature), whitespace runs, trim
    assert span_hash("FINE FISH") != want
    assert span_hash("FINE FISH", casefold=True) == span_hash("fine fish")


def test_span_hash_given_without_text_is_kept(con, tmp_path):
    ingest_paths(
        con,
        [
            write_jsonl(
                tmp_path / "a.jsonl",
                [{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "d", "span_hash": " abc "}]}],
            )
        ],
    )
    assert con.execute("SELECT span_hash FROM evidence").fetchall() == [("abc",)]


def test_gzip_and_folders(con, tmp_path):
    write_jsonl(tmp_path / "sub" / "a.jsonl.gz", [{"run_id": "r", "query_id": "q", "cited": ["x"]}], gz=True)
    write_jsonl(tmp_path / "sub" / "deeper" / "b.jsonl", [{"run_id": "s", "query_id": "q", "cited": ["x"]}])
    (tmp_path / "sub" / "notes.txt").write_text("ignored")
    rep = ingest_paths(con, [tmp_path / "sub"])
    assert rep.n_records == 2 and rep.rejected == []


def test_provenance_rows_are_stored_column_for_column(con, tmp_path):
    """A native provenance record's rows, every column of ``prov_records`` and ``prov_nodes`` as
    typed (written through Arrow: lists, NULLs, non-ASCII metadata, INTEGER coordinates)."""
    write_jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "schema": "ragaudit.provenance/1",
                "run_id": "R",
                "query_id": "q1",
                "query": "Wer?",
                "generated_text": "Ein Satz [1].",
                "config": {"top_k": 2},
                "nodes": [
                    {"node_id": "d1", "stage": 0, "artifact_type": "document", "coordinates": {"doc_id": " DocA "}},
                    {
                        "node_id": "c1",
                        "stage": 1,
                        "artifact_type": "chunk",
                        "derived_from": ["d1"],
                        "transformation": "split",
                        "coordinates": {"doc_id": "DocA", "page": 3, "paragraph": 2, "char_start": 10, "char_end": 42},
                        "metadata": {"text": "Größe – 大小"},
                    },
                    {"node_id": "g1", "stage": 5, "artifact_type": "generation", "derived_from": ["c1", "d1"]},
                ],
            }
        ],
    )
    ingest_paths(con, [tmp_path / "p.jsonl"])
    (rec,) = con.execute("SELECT * EXCLUDE (file_id) FROM prov_records").fetchall()
    assert rec[:2] == ("R", "q1") and rec[2:5] == (1, "Wer?", "Ein Satz [1].")
    assert rec[5] == '{"top_k":2}' and rec[-1] == 3
    nodes = con.execute("SELECT * FROM prov_nodes ORDER BY ord").fetchall()
    assert nodes == [
        ("R", "q1", 0, "d1", 0, "document", "doca", "DocA", None, None, None, None, None, [], None),
        ("R", "q1", 1, "c1", 1, "chunk", "doca", "DocA", 3, 2, 10, 42, "split", ["d1"], '{"text":"Größe – 大小"}'),
        ("R", "q1", 2, "g1", 5, "generation", None, None, None, None, None, None, None, ["c1", "d1"], None),
    ]


def test_collisions_name_each_canonical_id_that_several_raw_ids_map_to(tmp_path):
    """'D1' and 'd1' are two raw ids of 'd1' (one of them the canonical id itself: still a
    collision); 'X' alone, logged twice, is one raw id of 'x' (no collision); 'A' and 'a' collide
    only in run S, so a check over run R names 'd1' alone."""
    from ragaudit_core.logs import catalog

    records = [
        {"run_id": "R", "query_id": "q1", "evidence": ["D1", "X"]},
        {"run_id": "R", "query_id": "q2", "evidence": ["d1", "X"]},
        {"run_id": "S", "query_id": "q1", "evidence": ["d1", "A"]},
        {"run_id": "S", "query_id": "q2", "evidence": ["a"]},
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "ids.jsonl", records)])
    assert catalog.collisions(con) == [
        "2 raw ids map to the canonical id 'a': 'A', 'a'",
        "2 raw ids map to the canonical id 'd1': 'D1', 'd1'",
    ]
    assert catalog.raw_id_collisions(con, ["R"]) == [["d1", ["D1", "d1"]]]
    assert catalog.raw_id_collisions(con, ["R", "S"], limit=1) == [["a", ["A", "a"]]]

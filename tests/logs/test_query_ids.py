"""``ingest --queries``: another tool's records without query ids (``q:`` + the question's hash) take
the ids of the questions file's questions, so they pair with a native run over the same questions;
a record's own id is never rewritten, a question the file lacks keeps its hash, and each is counted."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestError, IngestOptions, ingest_paths
from ragaudit_core.logs.questions import read_questions
from ragaudit_core.logs.report import NOTE, WARNING
from ragaudit_core.stability import StabilityOptions, compute_stability
from tests.helpers import write_jsonl

# three SciFact claims (ids as SciFact's queries.jsonl gives them) and one it does not hold
Q = {
    "1": "0-dimensional biomaterials show inductive properties.",
    "3": "1,000 genomes project enables mapping of genetic sequence variation.",
    "5": "1/2000 in UK have abnormal PrP positivity.",
}
OTHER = "Is aspirin a blood thinner?"
TEXT = {d: f"passage of {d}" for d in ("d1", "d2", "d3", "d4", "d5", "d9")}


def _native(tmp_path):
    """The native run: each claim by its SciFact id."""
    docs = {"1": ["d1", "d2"], "3": ["d3"], "5": ["d4", "d5"]}
    return write_jsonl(
        tmp_path / "native.jsonl",
        [
            {
                "run_id": "native",
                "query_id": qid,
                "query": Q[qid],
                "evidence": [{"doc_id": d, "text": TEXT[d]} for d in docs[qid]],
            }
            for qid in ("1", "3", "5")
        ],
    )


def _ragas_csv(tmp_path, rows):
    """A Ragas dataset as pandas writes it (lists as Python/JSON literals in their cells)."""
    path = tmp_path / "ragas_k5.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["user_input", "retrieved_contexts", "retrieved_context_ids", "response"])
        w.writeheader()
        for question, docs in rows:
            w.writerow(
                {
                    "user_input": question,
                    "retrieved_contexts": repr([TEXT[d] for d in docs]),
                    "retrieved_context_ids": json.dumps(docs),
                    "response": "an answer",
                }
            )
    return path


# the claims as a Ragas export writes them: other case, other spacing (the hash normalises both)
RAGAS_ROWS = [
    ("0-dimensional  biomaterials show INDUCTIVE properties.", ["d1", "d9"]),
    ("1,000 genomes project enables mapping of genetic sequence variation.", ["d3"]),
    ("  1/2000 in UK have abnormal PrP positivity.", ["d4"]),
]


def _queries_jsonl(tmp_path):
    return write_jsonl(
        tmp_path / "queries.jsonl", [{"_id": qid, "text": text, "metadata": {}} for qid, text in Q.items()]
    )


def _ids(con, run):
    rows = con.execute("SELECT query_id FROM records WHERE run_id = ? ORDER BY line_no", [run]).fetchall()
    return [q for (q,) in rows]


def _said(report, code="query-ids"):
    return [w.message for w in report.warnings if w.code == code]


def test_a_ragas_run_takes_the_questions_ids_and_pairs_with_the_native_run(tmp_path):
    """Stability over the 3 shared claims. J_doc per claim: {d1,d2} vs {d1,d9} = 1/3, {d3} vs {d3}
    = 1, {d4,d5} vs {d4} = 1/2; the pair's J_avg = (1/3 + 1 + 1/2) / 3 = 11/18."""
    con = store.connect(":memory:")
    rep = ingest_paths(
        con,
        [_native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS)],
        IngestOptions(queries=str(_queries_jsonl(tmp_path))),
    )
    assert _ids(con, "ragas_k5") == ["1", "3", "5"]
    assert _ids(con, "native") == ["1", "3", "5"]
    assert _said(rep) == ["3 queries of run 'ragas_k5' took their ids from queries.jsonl"]
    assert [w.kind for w in rep.warnings if w.code == "query-ids"] == [NOTE]  # what was done, not a warning
    res = compute_stability(con, StabilityOptions(resamples=0))
    doc = res.pairs[res.pairs["level"] == "doc"].iloc[0]
    assert doc["n_queries"] == 3
    assert doc["j_avg"] == pytest.approx(11 / 18)


def test_without_the_questions_the_runs_share_no_query(tmp_path):
    """The failure the option mends: the Ragas run's ids are hashes, the native run's SciFact's."""
    con = store.connect(":memory:")
    rep = ingest_paths(con, [_native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS)])
    assert _ids(con, "ragas_k5") == [query_id_for(q) for q, _docs in RAGAS_ROWS]
    assert _said(rep) == []


def test_a_question_the_file_lacks_keeps_its_hash_and_is_counted(tmp_path):
    con = store.connect(":memory:")
    rows = [*RAGAS_ROWS, (OTHER, ["d9"])]
    rep = ingest_paths(con, [_ragas_csv(tmp_path, rows)], IngestOptions(queries=str(_queries_jsonl(tmp_path))))
    assert _ids(con, "ragas_k5") == ["1", "3", "5", query_id_for(OTHER)]
    assert _said(rep) == [
        "3 queries of run 'ragas_k5' took their ids from queries.jsonl; 1 matched no question of it "
        "and keeps its hashed id (q:…)"
    ]
    assert [w.kind for w in rep.warnings if w.code == "query-ids"] == [WARNING]  # one did not pair: a warning


def test_a_load_that_added_no_record_says_so_not_that_its_records_log_their_ids(tmp_path):
    """The walk uploaded a Ragas export again with the questions file: the file was skipped (loaded
    before), and the load said its records log their own ids — of records it never read."""
    con = store.connect(":memory:")
    ragas, queries = _ragas_csv(tmp_path, RAGAS_ROWS), IngestOptions(queries=str(_queries_jsonl(tmp_path)))
    ingest_paths(con, [ragas], queries)
    again = ingest_paths(con, [ragas], queries)
    assert again.n_records == 0 and _ids(con, "ragas_k5") == ["1", "3", "5"]
    assert _said(again) == [
        "the questions file queries.jsonl gave no query its id: this load added no record (its files were "
        "loaded before, or none of their lines was loaded)"
    ]


def test_the_ids_records_log_themselves_are_never_rewritten(tmp_path):
    """A native record whose logged id happens to be a question's hash (a log written with our hash)
    keeps it, as the native ids "1", "3", "5" keep theirs; the load says the file renamed nothing."""
    con = store.connect(":memory:")
    own = write_jsonl(
        tmp_path / "own.jsonl",
        [{"run_id": "own", "query_id": query_id_for(Q["3"]), "query": Q["3"], "evidence": [{"doc_id": "d3"}]}],
    )
    rep = ingest_paths(con, [_native(tmp_path), own], IngestOptions(queries=str(_queries_jsonl(tmp_path))))
    assert _ids(con, "native") == ["1", "3", "5"]
    assert _ids(con, "own") == [query_id_for(Q["3"])]
    assert _said(rep) == [
        "the questions file queries.jsonl gave no query its id: every record of this load logs its own query id "
        "(only ids made from question texts, q:…, take the file's)"
    ]


def test_a_question_asked_again_is_numbered_after_it_takes_its_id(tmp_path):
    """The second asking of claim 1 is sample 2 of query '1' (``1#2``), as ``q:…#2`` is of its hash."""
    con = store.connect(":memory:")
    rows = [*RAGAS_ROWS, (Q["1"], ["d2"])]
    rep = ingest_paths(con, [_ragas_csv(tmp_path, rows)], IngestOptions(queries=str(_queries_jsonl(tmp_path))))
    assert _ids(con, "ragas_k5") == ["1", "3", "5", "1#2"]
    assert _said(rep) == ["4 queries of run 'ragas_k5' took their ids from queries.jsonl"]
    assert any("kept as sample 2, query id '1#2'" in m for m in _said(rep, "repeated-question"))


def test_a_text_two_questions_share_keeps_its_hash(tmp_path):
    """Two ids of the file whose texts are one once normalised: no id is guessed."""
    con = store.connect(":memory:")
    queries = write_jsonl(
        tmp_path / "queries.jsonl",
        [{"_id": "1", "text": Q["1"]}, {"_id": "3", "text": Q["3"]}, {"_id": "9", "text": Q["3"].upper()}],
    )
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], IngestOptions(queries=str(queries)))
    assert _ids(con, "ragas_k5") == ["1", query_id_for(Q["3"]), query_id_for(Q["5"])]
    assert _said(rep) == [
        "1 query of run 'ragas_k5' took its id from queries.jsonl; 1 matched no question of it "
        "and keeps its hashed id (q:…); 1 matched 2 questions of it (ids '3', '9': the same text once "
        "normalised) and keeps its hashed id"
    ]


def test_a_shared_text_takes_the_one_of_its_ids_the_stored_runs_ask(tmp_path):
    """SciFact's claims 1291 and 1292 are one text: when the stored runs ask only one of the ids
    that share a text, a record asking it takes that id (the only one it can pair with; the
    retriever saw the same text under either) and the sentence says so. Both stored, or neither:
    the hash stays, as above."""
    con = store.connect(":memory:")
    native = _native(tmp_path)  # asks '1', '3', '5'
    ingest_paths(con, [native])
    queries = write_jsonl(
        tmp_path / "queries.jsonl",
        [{"_id": "1", "text": Q["1"]}, {"_id": "3", "text": Q["3"]}, {"_id": "9", "text": Q["3"].upper()}],
    )
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], IngestOptions(queries=str(queries)))
    assert _ids(con, "ragas_k5") == ["1", "3", query_id_for(Q["5"])]
    assert _said(rep) == [
        "2 queries of run 'ragas_k5' took their ids from queries.jsonl; 1 matched no question of it "
        "and keeps its hashed id (q:…); 1 of them asked a text 2 ids of it share (ids '3', '9') and took "
        "'3', the one the stored runs ask"
    ]


def test_a_shared_text_both_of_whose_ids_are_stored_keeps_its_hash(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    also_9 = {"run_id": "native2", "query_id": "9", "query": Q["3"].upper(), "evidence": [{"doc_id": "d3"}]}
    ingest_paths(con, [write_jsonl(tmp_path / "n2.jsonl", [also_9])])
    queries = write_jsonl(
        tmp_path / "queries.jsonl",
        [{"_id": "1", "text": Q["1"]}, {"_id": "3", "text": Q["3"]}, {"_id": "9", "text": Q["3"].upper()}],
    )
    ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], IngestOptions(queries=str(queries)))
    assert _ids(con, "ragas_k5") == ["1", query_id_for(Q["3"]), query_id_for(Q["5"])]


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("queries.tsv", "1\t<1>\n3\t<3>\n5\t<5>\n"),  # BEIR/MS MARCO style: no header
        ("queries.csv", 'query_id,text\n1,"<1>"\n3,"<3>"\n5,"<5>"\n'),  # (claim 3 holds a comma)
        ("questions.csv", 'text,id\n"<1>",1\n"<3>",3\n"<5>",5\n'),  # columns found by their header
        ("ours.jsonl", ""),
    ],
)
def test_the_questions_files_read(tmp_path, name, content):
    path = tmp_path / name
    if name == "ours.jsonl":
        write_jsonl(path, [{"query_id": int(qid), "query": text} for qid, text in Q.items()])
    else:
        for qid, text in Q.items():
            content = content.replace(f"<{qid}>", text)
        path.write_text(content, encoding="utf-8")
    got = read_questions(path)
    assert got.by_hash == {query_id_for(text): qid for qid, text in Q.items()}


def test_a_gzipped_questions_file_reads(tmp_path):
    path = tmp_path / "queries.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(json.dumps({"_id": k, "text": v}).encode() + b"\n" for k, v in Q.items())))
    assert len(read_questions(path).by_hash) == 3


def test_a_file_without_questions_is_refused_before_anything_is_written(tmp_path):
    con = store.connect(":memory:")
    bad = tmp_path / "queries.jsonl"
    bad.write_text('{"doc": 1}\nnot json\n', encoding="utf-8")
    with pytest.raises(IngestError, match=r"queries\.jsonl holds no question"):
        ingest_paths(con, [_native(tmp_path)], IngestOptions(queries=str(bad)))
    with pytest.raises(IngestError, match="cannot read the questions file"):
        ingest_paths(con, [_native(tmp_path)], IngestOptions(queries=str(tmp_path / "missing.jsonl")))
    assert con.execute("SELECT count(*) FROM records").fetchall() == [(0,)]


def test_lines_that_are_not_questions_are_said(tmp_path):
    """A line without a text and an id given twice with another text: the first kept, both said."""
    path = write_jsonl(
        tmp_path / "queries.jsonl",
        [{"_id": "1", "text": Q["1"]}, {"_id": "2"}, {"_id": "1", "text": Q["3"]}],
    )
    got = read_questions(path)
    assert got.by_hash == {query_id_for(Q["1"]): "1"}
    assert got.notes == [
        "queries.jsonl line 2: not a question (an id under _id or query_id, a text under text or query)",
        "queries.jsonl line 3: id '1' again with another text; the first is kept",
    ]


def _numbered_questions(tmp_path, n: int):
    """The questions ``question 0`` … ``question n-1`` of the fast-path test files, ids ``Q0`` …"""
    return write_jsonl(tmp_path / "queries.jsonl", [{"_id": f"Q{i}", "text": f"question {i}"} for i in range(n)])


@pytest.mark.parametrize("kind", ["ragas", "openinference"])
def test_worker_processes_give_the_ids_the_process_gives(tmp_path, monkeypatch, kind):
    """Ragas rows mapped by the workers (their ids numbered here) and OpenInference retriever spans
    held here until their file is read: the same ids, rows, warnings and counts as reading every
    line in the process — questions 0-9 from the file (Q0 … and Q0#2 … when asked again), the
    others (10-12 of the Ragas rows, 10 of the spans) keeping their hashes."""
    from tests.logs.test_fast_dialects import _oi_file, _ragas_file
    from tests.logs.test_streaming import _everything, force_pool

    path = tmp_path / "log.jsonl"
    (_ragas_file if kind == "ragas" else _oi_file)(path)
    opts = IngestOptions(queries=str(_numbered_questions(tmp_path, 10)))
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    serial = store.connect(":memory:")
    expected = _everything(serial, ingest_paths(serial, [path], opts))
    ids = {q for (q,) in serial.execute("SELECT query_id FROM records WHERE query LIKE 'question %'").fetchall()}
    assert {"Q0", "Q0#2", "Q9"} <= ids and query_id_for("question 10") in ids
    kept = {q.split("#")[0] for q in ids if q.startswith("q:")}
    assert kept == {query_id_for(f"question {i}") for i in ((10, 11, 12) if kind == "ragas" else (10,))}
    worked = force_pool(monkeypatch, 300 if kind == "ragas" else 600)
    pooled = store.connect(":memory:")
    got = _everything(pooled, ingest_paths(pooled, [path], opts))
    assert sum(worked) >= 30
    assert got == expected
    said = [m for _line, code, m in expected[2] if code == "query-ids"]
    n_took = sum(not q.startswith("q:") for (q,) in serial.execute("SELECT query_id FROM records").fetchall())
    assert len(said) == 1 and said[0].startswith(f"{n_took} queries of run 'log' took their ids from queries.jsonl; ")


def test_what_reading_the_questions_file_noticed_is_said_with_the_load(tmp_path):
    """Five lines that are not questions: the first three said, the others counted, before the count."""
    path = write_jsonl(tmp_path / "queries.jsonl", [*({"_id": str(i)} for i in range(5)), {"_id": "1", "text": Q["1"]}])
    con = store.connect(":memory:")
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS[:1])], IngestOptions(queries=str(path)))
    why = "not a question (an id under _id or query_id, a text under text or query)"
    assert _said(rep) == [
        f"queries.jsonl line 1: {why}; queries.jsonl line 2: {why}; queries.jsonl line 3: {why}; and 2 more",
        "1 query of run 'ragas_k5' took its id from queries.jsonl",
    ]

"""Issue #22 item 3: a question asked twice is two samples — in formats whose query ids are hashes
of the question (Ragas), each row is kept with an occurrence-numbered id and a warning, and runs
pair by occurrence; native ids keep "the first record of a (run, query) wins"."""

from __future__ import annotations

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

Q, OTHER = "What causes tides?", "Who wrote Hamlet?"


def _rows(answers):
    return [{"user_input": q, "retrieved_contexts": [f"passage for {a}"], "response": a} for q, a in answers]


def test_a_repeated_question_is_kept_as_numbered_samples_and_runs_pair_by_occurrence(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", _rows([(Q, "a1"), (OTHER, "a-h"), (Q, "a2"), (Q, "a3")]))
    b = write_jsonl(tmp_path / "b.jsonl", _rows([(Q, "b1"), (Q, "b2"), (OTHER, "b-h")]))
    con = store.connect(":memory:")
    rep = ingest_paths(con, [a, b])
    assert rep.n_records == 7 and rep.n_rejected == 0
    q = query_id_for(Q)
    got = con.execute("SELECT run_id, query_id, answer FROM records ORDER BY run_id, line_no").fetchall()
    assert got == [
        ("a", q, "a1"),
        ("a", query_id_for(OTHER), "a-h"),
        ("a", q + "#2", "a2"),
        ("a", q + "#3", "a3"),
        ("b", q, "b1"),
        ("b", q + "#2", "b2"),
        ("b", query_id_for(OTHER), "b-h"),
    ]
    # the second asking of each run pairs up: same query id in both runs
    paired = con.execute(
        "SELECT x.answer, y.answer FROM records x JOIN records y USING (query_id) "
        "WHERE x.run_id = 'a' AND y.run_id = 'b' ORDER BY x.answer"
    ).fetchall()
    assert paired == [("a-h", "b-h"), ("a1", "b1"), ("a2", "b2")]
    warned = [(w.path.rsplit("/", 1)[1], w.line_no) for w in rep.warnings if w.code == "repeated-question"]
    assert warned == [("a.jsonl", 3), ("a.jsonl", 4), ("b.jsonl", 2)]
    assert "kept as sample 2" in next(w.message for w in rep.warnings if w.code == "repeated-question")


def test_the_numbering_goes_on_across_ingests_and_native_ids_keep_the_first_record(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "1" / "r.jsonl", _rows([(Q, "first")]))])
    ingest_paths(con, [write_jsonl(tmp_path / "2" / "r.jsonl", _rows([(Q, "second")]))])
    assert con.execute("SELECT query_id, answer FROM records ORDER BY answer").fetchall() == [
        (query_id_for(Q), "first"),
        (query_id_for(Q) + "#2", "second"),
    ]
    native = [
        {"run_id": "n", "query_id": "1", "evidence": ["d1"], "answer": "kept"},
        {"run_id": "n", "query_id": "1", "evidence": ["d2"], "answer": "dropped"},
        {"run_id": "n", "query_id": "q:x", "user_input": Q, "retrieved_contexts": ["t"]},  # a Ragas row with its id
        {"run_id": "n", "query_id": "q:x", "user_input": Q, "retrieved_contexts": ["u"]},
    ]
    rep = ingest_paths(con, [write_jsonl(tmp_path / "n.jsonl", native)])
    assert rep.n_records == 2 and [i.line_no for i in rep.rejected] == [2, 4]
    assert all("only the first is kept" in i.message for i in rep.rejected)


def test_two_exports_named_alike_are_said_to_make_one_run(tmp_path):
    """Phoenix names every export alike: k5/spans.parquet and k10/spans.parquet (two settings) made one
    run 'spans', the second file's questions read as repeats — 50 warnings, one per line, and then
    "need at least two runs". The load says once what happened and what to do, and the repeats of one
    file are one warning."""
    from ragaudit_core.workspace import load_paths

    rows = _rows([(Q, "a1"), (OTHER, "a-h"), ("Why is the sky blue?", "a-s")])
    k5 = write_jsonl(tmp_path / "k5" / "spans.jsonl", rows)
    k10 = write_jsonl(tmp_path / "k10" / "spans.jsonl", rows[::-1])
    con = store.connect(":memory:")
    rep = load_paths(con, [k5, k10], precompute_overview=False)
    said = [str(w) for w in rep.said_once()]
    (same,) = [w for w in said if "both make run" in w]
    assert same == (
        f"{k10}: this file and spans.jsonl (another file of this load) both make run 'spans' (a log that names no "
        "run is named after its file), so this file's 3 questions were read as repeats of the other's (q:…#2): if "
        "they are two runs, remove run 'spans' and load them with names apart (rename the files, or one ingest "
        "each with --run-id)"
    )
    (repeats,) = [w for w in said if "asked again" in w]
    assert repeats.startswith(f"{k10} lines 1, 2, 3: 3 questions asked again by run 'spans'")
    assert not [w for w in said if "asks the same question again" in w] and len(rep.warnings) > len(said)

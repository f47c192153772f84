"""A load given no questions file takes the stored runs' questions as one: another tool's records
without query ids (``q:`` + the question's hash) take the ids a native run stored earlier logs for
the same questions, by the rules of ``--queries`` (tests/logs/test_query_ids.py, whose fixture —
three SciFact claims, a native run and a Ragas export of them — this reuses)."""

from __future__ import annotations

import pytest

from ragaudit_core import workspace
from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.stability import StabilityOptions, compute_stability
from tests.helpers import write_jsonl
from tests.logs.test_query_ids import OTHER, RAGAS_ROWS, Q, _ids, _native, _queries_jsonl, _ragas_csv, _said


def _j_doc(con):
    res = compute_stability(con, StabilityOptions(resamples=0, allow_missing=True))
    return res.pairs[res.pairs["level"] == "doc"].iloc[0]


def test_a_ragas_run_loaded_after_the_native_run_takes_its_ids(tmp_path):
    """Worked by hand as with --queries: J_doc per claim {d1,d2} vs {d1,d9} = 1/3, {d3} vs {d3} = 1,
    {d4,d5} vs {d4} = 1/2; the pair's J_avg = 11/18 over 3 shared queries."""
    con = store.connect(":memory:")
    assert _said(ingest_paths(con, [_native(tmp_path)])) == []
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [*RAGAS_ROWS, (OTHER, ["d9"])])])
    assert _ids(con, "ragas_k5") == ["1", "3", "5", query_id_for(OTHER)]
    assert _said(rep) == [
        "3 queries of run 'ragas_k5' took their ids from the stored runs' questions (as run 'native' asks them); "
        "1 matched "
        "none of them and keeps its hashed id (q:…)"
    ]
    doc = _j_doc(con)
    assert doc["n_queries"] == 3
    assert doc["j_avg"] == pytest.approx(11 / 18)


def test_the_same_pairs_as_a_questions_file_gives(tmp_path):
    stored = store.connect(":memory:")
    ingest_paths(stored, [_native(tmp_path)])
    ingest_paths(stored, [_ragas_csv(tmp_path, RAGAS_ROWS)])
    given = store.connect(":memory:")
    queries = IngestOptions(queries=str(_queries_jsonl(tmp_path)))
    ingest_paths(given, [_native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS)], queries)
    dump = "SELECT run_id, query_id, doc_id FROM evidence ORDER BY ALL"
    assert stored.execute(dump).fetchall() == given.execute(dump).fetchall()
    assert _j_doc(stored)["j_avg"] == _j_doc(given)["j_avg"]


def _other_native(tmp_path, rows, run="other"):
    return write_jsonl(
        tmp_path / f"{run}.jsonl",
        [{"run_id": run, "query_id": qid, "query": text, "evidence": [{"doc_id": "d3"}]} for qid, text in rows],
    )


def test_a_text_two_stored_ids_share_keeps_its_hash_and_is_counted(tmp_path):
    """Claim 3 is '3' in the native run and '9' (in capitals: one text once normalised) in another:
    which one the Ragas row asked cannot be told, so it keeps its hash; the other two take theirs."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path), _other_native(tmp_path, [("9", Q["3"].upper())])])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)])
    assert _ids(con, "ragas_k5") == ["1", query_id_for(Q["3"]), "5"]
    assert _said(rep) == [
        "2 queries of run 'ragas_k5' took their ids from the stored runs' questions (as run 'native' asks them); "
        "1 matched 2 "
        "of their questions (ids '3', '9': the same text once normalised) and keeps its hashed id"
    ]
    rep = ingest_paths(con, [_ragas(tmp_path, RAGAS_ROWS[1:2], "ragas_k10")])  # (only the shared one: no run named)
    assert _said(rep) == [
        "0 queries of run 'ragas_k10' took their ids from the stored runs' questions; 1 matched 2 of their "
        "questions (ids '3', '9': the same text once normalised) and keeps its hashed id"
    ]


def test_an_id_stored_with_two_texts_gives_it_to_both(tmp_path):
    """Run 'other' logs claim 1 under '1' in another wording: both wordings are question '1' (each text
    names one id), and the runs are named."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path), _other_native(tmp_path, [("1", "Do 0-D biomaterials induce?")])])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [("Do 0-D biomaterials induce?", ["d1"]), RAGAS_ROWS[0]])])
    assert _ids(con, "ragas_k5") == ["1", "1#2"]
    assert _said(rep) == [
        "2 queries of run 'ragas_k5' took their ids from the stored runs' questions "
        "(as runs 'native', 'other' ask them)"
    ]


def test_a_repeat_is_numbered_after_it_takes_its_id_and_numbered_ids_are_no_questions(tmp_path):
    """The second asking of claim 1 is '1#2'; stored again (a second Ragas run loaded after), '1#2' is
    a sample of question '1', not another question sharing its text."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    ingest_paths(con, [_ragas_csv(tmp_path, [*RAGAS_ROWS, (Q["1"], ["d2"])])])
    assert _ids(con, "ragas_k5") == ["1", "3", "5", "1#2"]
    rep = ingest_paths(con, [_ragas(tmp_path, RAGAS_ROWS[:1], "ragas_k10")])
    assert _ids(con, "ragas_k10") == ["1"]
    assert _said(rep) == [
        "1 query of run 'ragas_k10' took its id from the stored runs' questions (as runs 'native', 'ragas_k5' ask them)"
    ]


def test_no_stored_questions_leaves_the_hashes(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], IngestOptions(stored_questions=False))
    assert _ids(con, "ragas_k5") == [query_id_for(q) for q, _docs in RAGAS_ROWS]
    assert _said(rep) == []


def test_a_questions_file_wins_over_the_stored_questions(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    queries = write_jsonl(tmp_path / "queries.jsonl", [{"_id": f"S{qid}", "text": text} for qid, text in Q.items()])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], IngestOptions(queries=str(queries)))
    assert _ids(con, "ragas_k5") == ["S1", "S3", "S5"]
    assert _said(rep) == ["3 queries of run 'ragas_k5' took their ids from queries.jsonl"]


def _ragas(tmp_path, rows, run):
    """A Ragas export of ``rows`` whose file (so whose run) is named ``run``."""
    folder = tmp_path / run
    folder.mkdir()
    return _ragas_csv(folder, rows).rename(folder / f"{run}.csv")


def test_an_empty_database_or_one_of_hashed_runs_changes_nothing(tmp_path):
    """No stored question: the ids are the hashes and nothing is said; a Ragas run stored earlier
    gives none either (its ids are hashes), nor does a load whose questions match no stored one."""
    con = store.connect(":memory:")
    rep = ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)])
    assert _ids(con, "ragas_k5") == [query_id_for(q) for q, _docs in RAGAS_ROWS]
    assert _said(rep) == []
    rep = ingest_paths(con, [_ragas(tmp_path, RAGAS_ROWS[:2], "ragas_k10")])
    assert _ids(con, "ragas_k10") == [query_id_for(q) for q, _docs in RAGAS_ROWS[:2]]
    assert _said(rep) == []
    ingest_paths(con, [_other_native(tmp_path, [("7", "Unrelated?")])])
    rep = ingest_paths(con, [_ragas(tmp_path, [(OTHER, ["d9"])], "ragas_k20")])
    assert _ids(con, "ragas_k20") == [query_id_for(OTHER)]
    assert _said(rep) == []


def test_records_of_the_same_load_do_not_serve_and_the_load_says_how_to_pair(tmp_path):
    """The native run and the Ragas export in one load: the Ragas run keeps its hashes (a load's result
    does not depend on the order of its files), and the load says why and what to do."""
    con = store.connect(":memory:")
    rep = workspace.load_paths(con, [_native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS)], precompute_overview=False)
    assert _ids(con, "ragas_k5") == [query_id_for(q) for q, _docs in RAGAS_ROWS]
    assert _said(rep) == [
        "run 'ragas_k5' asks 3 of the questions of run 'native', loaded with it, under hashed ids (q:…), so they "
        "share no query: the stored runs' questions give ids to later loads only; to pair them, remove its file "
        "(on the home page: “Remove a file or a run…”) and load it again, or load it with the benchmark's "
        "questions (--queries, the upload's “Questions file”)"
    ]


def test_a_native_run_loaded_after_renames_no_stored_run_and_says_how_to_pair(tmp_path):
    con = store.connect(":memory:")
    workspace.load_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], precompute_overview=False)
    rep = workspace.load_paths(con, [_native(tmp_path)], precompute_overview=False)
    assert _ids(con, "ragas_k5") == [query_id_for(q) for q, _docs in RAGAS_ROWS]
    assert _said(rep) == [
        "run 'ragas_k5', loaded before, asks 3 of the questions of run 'native' under hashed ids (q:…), so they "
        "share no query: stored runs are not renamed; to pair them, remove its file (on the home page: “Remove a "
        "file or a run…”) and load it again: its records then take the stored runs' ids"
    ]
    (file_id,) = con.execute("SELECT file_id FROM files WHERE path LIKE '%.csv'").fetchone()
    workspace.remove_file(con, file_id)
    rep = workspace.load_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)], precompute_overview=False)
    assert _ids(con, "ragas_k5") == ["1", "3", "5"]
    assert _said(rep) == [
        "3 queries of run 'ragas_k5' took their ids from the stored runs' questions (as run 'native' asks them)"
    ]


@pytest.mark.parametrize("kind", ["ragas", "openinference"])
def test_worker_processes_give_the_ids_the_process_gives(tmp_path, monkeypatch, kind):
    """As with a questions file (tests/logs/test_query_ids.py): questions 0-8 stored by a native run
    as Q0 … Q8, question 9 under two ids (kept hashed, counted), the others matching none — the same
    ids, rows, warnings and counts whether the workers map the lines or the process does."""
    from tests.logs.test_fast_dialects import _oi_file, _ragas_file
    from tests.logs.test_streaming import after_stored_run

    native = _other_native(
        tmp_path, [*((f"Q{i}", f"question {i}") for i in range(10)), ("X9", "Question 9")], run="native"
    )
    path = tmp_path / "log.jsonl"
    (_ragas_file if kind == "ragas" else _oi_file)(path)
    serial, expected, got, worked = after_stored_run(monkeypatch, native, path, 300 if kind == "ragas" else 600)
    ids = {q for (q,) in serial.execute("SELECT query_id FROM records WHERE run_id = 'log'").fetchall()}
    assert {"Q0", "Q0#2", "Q8", query_id_for("question 9"), query_id_for("question 10")} <= ids
    assert worked >= 30
    assert got == expected
    said = [m for _line, code, m in expected[2] if code == "query-ids"]
    assert len(said) == 1
    assert "took their ids from the stored runs' questions (as run 'native' asks them)" in said[0]
    assert "of their questions (ids 'Q9', 'X9': the same text once normalised)" in said[0]


def test_the_database_keeps_which_sentences_are_notes(tmp_path):
    """A load's sentences are kept with their kind: the ids taken from the stored runs' questions
    are a note (done as asked), another format's keys ignored on a native record a warning. The
    overview counts both and the notes among them; a file's warning count leaves the notes out. A
    database kept before the kind was stored gets the column at its next writable open, and its
    rows read as warnings."""
    from ragaudit_core.logs import catalog

    path = tmp_path / "w.duckdb"
    con = store.connect(path)
    ingest_paths(con, [_native(tmp_path)])
    ingest_paths(con, [_ragas_csv(tmp_path, RAGAS_ROWS)])
    extra = {"run_id": "extra", "query_id": "z", "evidence": [{"doc_id": "d1", "text": "t"}], "user_input": "?"}
    ingest_paths(con, [write_jsonl(tmp_path / "x" / "extra.jsonl", [extra])])  # its ignored key: a warning
    kinds = catalog.warnings_table(con)[["kind", "code"]].values.tolist()
    assert ["note", "query-ids"] in kinds and ["warning", "ignored-keys"] in kinds
    info = catalog.overview(con)
    assert (info["warnings"], info["notes"]) == (len(kinds), sum(k == "note" for k, _ in kinds))
    per_file = catalog.files_ledger(con).set_index("file")["warnings"].to_dict()
    stored = con.execute(
        "SELECT f.path, count(*) FROM ingest_warnings w JOIN files f USING (file_id) "
        "WHERE w.kind = 'warning' GROUP BY ALL"
    ).fetchall()
    assert sum(per_file.values()) == sum(n for _p, n in stored)
    con.execute("ALTER TABLE ingest_warnings DROP COLUMN kind")  # as an older RagAudit kept it
    con.close()
    with pytest.raises(store.DatabaseRefused, match="needs its tables brought up to date"):
        store.connect(path, read_only=True)
    con = store.connect(path)
    assert set(catalog.warnings_table(con)["kind"]) == {"warning"} and catalog.overview(con)["notes"] == 0

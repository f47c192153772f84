"""Removing one file or one run takes everything derived from it and nothing else."""

from __future__ import annotations

import pytest

from ragaudit_core.attribution.storage import ATTRIBUTIONS_SCHEMA
from ragaudit_core.logs import catalog, removal, store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl


def _rec(run: str, q: str, *docs: str) -> dict:
    return {"run_id": run, "query_id": q, "evidence": list(docs)}


@pytest.fixture
def con(tmp_path):
    """File A: run a (q1, q2: 2 + 1 entries), run b (q1: 1 entry). File B: run b (q2: 2), run c (q1: 1),
    and one bad line. Attributions for (a, q1), (b, q2), (c, q1); an answer similarity for (a, c)."""
    c = store.connect(":memory:")
    a = write_jsonl(tmp_path / "A.jsonl", [_rec("a", "q1", "d1", "d2"), _rec("a", "q2", "d3"), _rec("b", "q1", "d1")])
    b = write_jsonl(tmp_path / "B.jsonl", [_rec("b", "q2", "d4", "d5"), _rec("c", "q1", "d1"), "{not json"])
    ingest_paths(c, [a, b])
    c.execute(ATTRIBUTIONS_SCHEMA)
    for key, run, q in [("k1", "a", "q1"), ("k2", "b", "q2"), ("k3", "c", "q1")]:
        c.execute(
            "INSERT INTO attributions VALUES (?, ?, ?, 'r', 'g', 'm', '{}', 'c', NULL, NULL, NULL, '{}', NULL)",
            [key, run, q],
        )
    c.execute("INSERT INTO derived_answer_similarity VALUES ('a', 'c', 'q1', 'm', 0.5)")
    yield c
    c.close()


def _counts(c) -> dict[str, int]:
    return {
        t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("records", "evidence", "runs", "files", "quarantine", "attributions", "derived_answer_similarity")
    }


def test_the_ledger_lists_files_newest_first_with_consistent_counts(con):
    led = catalog.files_ledger(con)
    assert led["file"].tolist() == ["B.jsonl", "A.jsonl"]
    assert led["runs"].tolist() == ["b, c", "a, b"]
    assert led["records"].tolist() == [2, 3] and led["rejected"].tolist() == [1, 0]


def test_removing_a_file_keeps_the_other_files_rows(con):
    v0 = store.data_version(con)
    b_id = int(catalog.files_ledger(con)["file_id"][0])
    done = removal.remove_file(con, b_id)
    # B held (b, q2) with 2 entries and (c, q1) with 1; run c had nothing else: it goes, with its results
    assert done.runs == ["c"]
    assert _counts(con) == {
        "records": 3,
        "evidence": 4,
        "runs": 2,
        "files": 1,
        "quarantine": 0,
        "attributions": 1,  # (b, q2) went with its record, (c, q1) with its run; (a, q1) stays
        "derived_answer_similarity": 0,  # the pair (a, c) lost its run c
    }
    assert con.execute("SELECT run_id, query_id FROM records ORDER BY ALL").fetchall() == [
        ("a", "q1"),
        ("a", "q2"),
        ("b", "q1"),
    ]
    assert store.data_version(con) != v0  # cached results keyed by version are stale now
    assert "runs removed: c" in done.summary()


def test_removing_a_run_keeps_the_other_runs_of_its_files(con):
    done = removal.remove_runs(con, ["a"])
    assert done.rows["records"] == 2 and done.rows["evidence"] == 3 and done.rows["attributions"] == 1
    assert _counts(con)["records"] == 3 and _counts(con)["files"] == 2
    assert {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()} == {"b", "c"}
    with pytest.raises(removal.RemovalError, match="no run named 'zz'"):
        removal.remove_runs(con, ["zz"])
    with pytest.raises(removal.RemovalError, match="no loaded file has id 99"):
        removal.remove_file(con, 99)


def test_a_removed_file_loads_again(con, tmp_path):
    a_id = int(catalog.files_ledger(con)["file_id"][1])
    removal.remove_file(con, a_id)
    report = ingest_paths(con, [tmp_path / "A.jsonl"])
    assert report.n_records == 3  # the same bytes are not "already loaded"


def test_the_ledger_says_what_each_file_was_read_as(tmp_path):
    c = store.connect(":memory:")
    mixed = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            _rec("n", "q1", "d1"),
            {"user_input": "a question?", "retrieved_contexts": ["some passage"], "response": "yes"},
            {"user_input": "another question?", "retrieved_contexts": ["more"], "response": "no"},
        ],
    )
    ingest_paths(c, [mixed, write_jsonl(tmp_path / "plain.jsonl", [_rec("p", "q1", "d1")])])
    led = catalog.files_ledger(c).set_index("file")
    assert led.loc["mixed.jsonl", "read_as"] == "Ragas 2, native 1"
    assert led.loc["plain.jsonl", "read_as"] == "native"


def test_a_removal_words_the_workspace_warnings_again(tmp_path):
    # A: runs a and b over q1, q2; B: run c over q1 only, so the load warns that c lacks q2
    c = store.connect(":memory:")
    a = write_jsonl(tmp_path / "A.jsonl", [_rec(r, q, "d1") for r in "ab" for q in ("q1", "q2")])
    b = write_jsonl(tmp_path / "B.jsonl", [_rec("c", "q1", "d1")])
    ingest_paths(c, [a, b])
    sql = "SELECT message FROM ingest_warnings WHERE code = 'coverage' AND file_id IS NULL"
    (before,) = [m for (m,) in c.execute(sql).fetchall()]
    assert "'c'" in before or "c " in before
    b_id = int(catalog.files_ledger(c)["file_id"][0])
    removal.remove_file(c, b_id)
    assert c.execute(sql).fetchall() == []  # nothing lacks a query any more
    again = write_jsonl(tmp_path / "C.jsonl", [_rec("d", "q2", "d1")])
    ingest_paths(c, [again])
    assert len(c.execute(sql).fetchall()) == 1
    removal.remove_runs(c, ["d"])
    assert c.execute(sql).fetchall() == []


def test_a_file_whose_runs_were_all_removed_loads_again(con, tmp_path):
    """Removing runs b and c empties file B (its runs' records, and its one rejected line with it):
    B's ledger row goes, so loading B again loads it instead of skipping it as already loaded. File
    A keeps run a's records, so it stays in the ledger."""
    done = removal.remove_runs(con, ["b", "c"])
    assert catalog.files_ledger(con)["file"].tolist() == ["A.jsonl"]
    assert done.rows["files"] == 1 and done.rows["quarantine"] == 1
    report = ingest_paths(con, [tmp_path / "B.jsonl"])
    assert report.n_records == 2  # (b, q2) and (c, q1) again; file A's (b, q1) went with run b
    assert {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()} == {"a", "b", "c"}


def test_what_a_load_said_of_a_removed_runs_query_ids_goes_with_it(tmp_path):
    """A Ragas run that took its ids from the stored questions: the load's sentence about it is kept
    for the home page; removing the run (or its file) removes that sentence, and no other."""
    from tests.helpers import write_jsonl as put

    qs = ["What is A?", "What is B?"]
    native = put(
        tmp_path / "n.jsonl",
        [{"run_id": "n", "query_id": str(i), "query": q, "cited": ["d"]} for i, q in enumerate(qs)],
    )
    ragas = put(tmp_path / "r.jsonl", [{"user_input": q, "retrieved_contexts": ["p"]} for q in qs])
    c = store.connect(":memory:")
    ingest_paths(c, [native])
    ingest_paths(c, [ragas])
    said = lambda: [m for (m,) in c.execute("SELECT message FROM ingest_warnings WHERE code = 'query-ids'").fetchall()]  # noqa: E731
    assert any(" of run 'r' took their ids" in m for m in said()), said()
    f = catalog.files_ledger(c)
    removal.remove_file(c, int(f.loc[f["file"] == "r.jsonl", "file_id"].iloc[0]))
    assert not [m for m in said() if " of run 'r' " in m]

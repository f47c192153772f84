"""``ragaudit ingest --queries FILE``: a Ragas export's records take the questions' ids, and the load
says how many in one sentence; a questions file that cannot be used fails before anything loads."""

from __future__ import annotations

from ragaudit_core.logs import store
from tests.cli.test_cli import run
from tests.helpers import write_jsonl
from tests.logs.test_query_ids import OTHER, RAGAS_ROWS, Q, _native, _ragas_csv


def test_ingest_with_queries_pairs_a_ragas_export_with_the_native_run(tmp_path):
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in Q.items()), encoding="utf-8")
    db = tmp_path / "q.duckdb"
    ragas = _ragas_csv(tmp_path, [*RAGAS_ROWS, (OTHER, ["d9"])])
    p = run("ingest", _native(tmp_path), ragas, "--queries", queries, "--db", db, "--no-precompute")
    assert p.returncode == 0, p.stderr
    assert (  # one question did not pair: a warning
        "warning: 3 queries of run 'ragas_k5' took their ids from queries.tsv; 1 matched no question of it and "
        "keeps its hashed id (q:…)" in " ".join(p.stderr.split())
    )
    con = store.connect(db, read_only=True)
    shared = con.execute(
        "SELECT count(*) FROM records a JOIN records b USING (query_id) "
        "WHERE a.run_id = 'native' AND b.run_id = 'ragas_k5'"
    ).fetchall()
    con.close()
    assert shared == [(3,)]


def test_ingest_with_a_questions_file_that_holds_none_exits_2_and_loads_nothing(tmp_path):
    bad = write_jsonl(tmp_path / "queries.jsonl", [{"title": "no question"}])
    db = tmp_path / "q.duckdb"
    p = run("ingest", _native(tmp_path), "--queries", bad, "--db", db)
    assert p.returncode == 2
    assert "queries.jsonl holds no question" in p.stderr
    assert not db.exists()


def test_the_commands_that_read_logs_directly_take_queries_too(tmp_path):
    """``ragaudit stability FILES --queries`` (as gate, report and quality): the Ragas run pairs with
    the native one on the 3 claims, J_doc = (1/3 + 1 + 1/2) / 3 = 11/18 (tests/logs/test_query_ids);
    without --queries the two runs share no query."""
    import json

    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in Q.items()), encoding="utf-8")
    logs = [_native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS)]
    p = run("stability", *logs, "--queries", queries, "--json", "-", "--resamples", "0")
    assert p.returncode == 0, p.stderr
    (pair,) = [r for r in json.loads(p.stdout)["pairs"] if r["level"] == "doc"]
    assert abs(pair["j_avg"] - 11 / 18) < 1e-12
    p = run("stability", *logs, "--json", "-", "--resamples", "0")
    assert p.returncode == 2 and "no query" in p.stderr


def test_queries_without_paths_to_load_exits_2_in_one_sentence(tmp_path):
    db = tmp_path / "q.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    queries = tmp_path / "queries.tsv"
    queries.write_text("1\tq\n", encoding="utf-8")
    p = run("stability", "--db", db, "--queries", queries)
    assert p.returncode == 2
    assert "--queries gives ids to the records of the PATHs this call loads" in p.stderr

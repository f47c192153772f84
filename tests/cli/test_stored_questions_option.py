"""Without ``--queries``, ``ragaudit ingest`` (and the commands that load PATHs into ``--db``) gives a
Ragas export the ids a native run stored earlier logs for the same questions, and says so;
``--no-stored-questions`` turns that off (tests/logs/test_stored_questions.py has the rules)."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from tests.cli.test_cli import run
from tests.logs.test_query_ids import RAGAS_ROWS, _native, _ragas_csv


def _shared(db) -> int:
    con = store.connect(db, read_only=True)
    try:
        return con.execute(
            "SELECT count(*) FROM records a JOIN records b USING (query_id) "
            "WHERE a.run_id = 'native' AND b.run_id = 'ragas_k5'"
        ).fetchall()[0][0]
    finally:
        con.close()


def test_ingest_after_the_native_run_pairs_and_says_so(tmp_path):
    db = tmp_path / "q.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    p = run("ingest", _ragas_csv(tmp_path, RAGAS_ROWS), "--db", db, "--no-precompute")
    assert p.returncode == 0, p.stderr
    said = " ".join(p.stderr.split())
    # what the load did, not something to look into: a note, not a warning
    assert (
        "note: 3 queries of run 'ragas_k5' took their ids from the stored runs' questions (as run 'native' asks them)"
        in said
    )
    assert "warning: 3 queries" not in said
    assert _shared(db) == 3


def test_no_stored_questions_keeps_the_hashes(tmp_path):
    db = tmp_path / "q.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    p = run("ingest", _ragas_csv(tmp_path, RAGAS_ROWS), "--db", db, "--no-precompute", "--no-stored-questions")
    assert p.returncode == 0, p.stderr
    assert "took their ids" not in p.stderr
    assert _shared(db) == 0


def test_the_commands_that_load_paths_take_the_option_too(tmp_path):
    """``stability PATH --db`` with --no-stored-questions: the Ragas run keeps its hashes, so it shares no
    query with the native run; without PATHs the option has nothing to act on and exits 2."""
    db = tmp_path / "q.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    ragas = _ragas_csv(tmp_path, RAGAS_ROWS)
    p = run("stability", ragas, "--db", db, "--json", "-", "--resamples", "0", "--no-stored-questions")
    assert p.returncode == 2 and "no query" in p.stderr
    assert _shared(db) == 0
    p = run("gate", "--db", db, "--baseline", "native", "--candidate", "ragas_k5", "--no-stored-questions")
    assert p.returncode == 2
    assert "--no-stored-questions is about the records of the PATHs a call loads" in p.stderr


def test_stability_from_files_into_a_database_pairs(tmp_path):
    """J_doc = (1/3 + 1 + 1/2) / 3 = 11/18 over the 3 claims, as with --queries."""
    db = tmp_path / "q.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    p = run("stability", _ragas_csv(tmp_path, RAGAS_ROWS), "--db", db, "--json", "-", "--resamples", "0")
    assert p.returncode == 0, p.stderr
    (pair,) = [r for r in json.loads(p.stdout)["pairs"] if r["level"] == "doc"]
    assert abs(pair["j_avg"] - 11 / 18) < 1e-12

"""``ragaudit ingest`` (and the commands that load PATHs into ``--db``) gives the passages of a Ragas export
without document ids the ids a native run stored earlier logs for the same passages, and says so;
``--no-stored-passages`` turns that off (tests/logs/test_stored_passages.py has the rules)."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from tests.cli.test_cli import run
from tests.logs.test_stored_passages import TOOK, _native, _ragas_csv


def _docs(db) -> list[str]:
    con = store.connect(db, read_only=True)
    try:
        rows = con.execute("SELECT doc_id FROM evidence WHERE run_id = 'ragas' ORDER BY query_id, position")
        return [d for (d,) in rows.fetchall()]
    finally:
        con.close()


def test_ingest_after_the_native_run_takes_its_document_ids_and_says_so(tmp_path):
    db = tmp_path / "p.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    p = run("ingest", _ragas_csv(tmp_path), "--db", db, "--no-precompute")
    assert p.returncode == 0, p.stderr
    assert TOOK in " ".join(p.stderr.split())
    assert [d for d in _docs(db) if not d.startswith("text:")] == ["d1", "d3", "d5"]


def test_no_stored_passages_keeps_the_text_ids(tmp_path):
    db = tmp_path / "p.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    p = run("ingest", _ragas_csv(tmp_path), "--db", db, "--no-precompute", "--no-stored-passages")
    assert p.returncode == 0, p.stderr
    assert "document ids from the stored runs' passages" not in p.stderr
    assert all(d.startswith("text:") for d in _docs(db))


def test_the_commands_that_load_paths_take_the_option_too(tmp_path):
    """``stability PATH --db``: J_doc = (1/3 + 1/3 + 1/2) / 3 = 7/18 over the 3 claims; with
    --no-stored-passages the only pair is mixed (nothing to compare: exit 2). Without PATHs the option
    has nothing to act on and exits 2."""
    db = tmp_path / "p.duckdb"
    assert run("ingest", _native(tmp_path), "--db", db, "--no-precompute").returncode == 0
    off = tmp_path / "off.duckdb"
    assert run("ingest", _native(tmp_path), "--db", off, "--no-precompute").returncode == 0
    ragas = _ragas_csv(tmp_path)
    p = run("stability", ragas, "--db", off, "--json", "-", "--resamples", "0", "--no-stored-passages")
    assert p.returncode == 2 and "no pair of the compared runs can be compared" in " ".join(p.stderr.split())
    p = run("stability", ragas, "--db", db, "--json", "-", "--resamples", "0")
    assert p.returncode == 0, p.stderr
    (pair,) = [r for r in json.loads(p.stdout)["pairs"] if r["level"] == "doc"]
    assert abs(pair["j_avg"] - 7 / 18) < 1e-12
    for cmd in ("gate", "quality", "report"):
        args = ["--baseline", "native", "--candidate", "ragas"] if cmd != "quality" else []
        p = run(cmd, "--db", db, *args, "--no-stored-passages")
        assert p.returncode == 2, (cmd, p.stderr)
        assert "--no-stored-passages is about the records of the PATHs a call loads" in p.stderr

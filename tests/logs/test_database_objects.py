"""What a DuckDB file holds besides RagAudit's tables: tables of other schemas or with dots in
their names (a RagAudit database still opens), views and tables of RagAudit's names that are not
its tables, ``meta`` tables of another shape, lone sequences; and a data block that fails its
checksum once the file is open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ragaudit_core.logs import store
from tests.helpers import write_jsonl
from tests.logs.test_database_files import RECORD, _digest, _duckdb, _ragaudit_db, refused


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragaudit_core.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_a_ragaudit_database_with_a_scratch_schema_or_a_dotted_table_name_still_opens(tmp_path):
    db = _ragaudit_db(tmp_path / "ours.duckdb", tmp_path)
    _duckdb(
        db, "CREATE SCHEMA scratch", "CREATE TABLE scratch.notes (a INTEGER)", "INSERT INTO scratch.notes VALUES (1)"
    )
    _duckdb(db, """CREATE TABLE "my.notes" (a INTEGER)""", """CREATE TABLE "it's" (a INTEGER)""")
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM records").fetchall() == [(1,)]
    con.close()
    r = _cli("stability", "--db", str(db))
    assert "Catalog Error" not in r.stderr and "Traceback" not in r.stderr


def test_a_view_of_ragaudits_name_is_refused_before_anything_is_written(tmp_path):
    db = _ragaudit_db(tmp_path / "view.duckdb", tmp_path)
    _duckdb(
        db,
        "DROP TABLE qrels",
        "CREATE VIEW qrels AS SELECT 'q' AS query_id, 'd' AS doc_id, 'd' AS doc_id_raw, 1 AS relevance, 's' AS source",
    )
    before = _digest(db)
    assert refused(db) == (
        "view.duckdb: 'qrels' is a view, not the table RagAudit keeps its rows in (a view cannot take them); "
        "load the logs into a new database file"
    )
    assert _digest(db) == before


def test_another_programs_tables_of_ragaudits_names_are_never_written_even_with_init(tmp_path):
    """A program's own ``jobs`` and ``attributions`` tables: RagAudit's packages keep rows under those
    names (outside the log store's schema), and a removal or a clear would delete the program's rows."""
    f = _duckdb(
        tmp_path / "crm.duckdb",
        "CREATE TABLE jobs (id INTEGER, run_id VARCHAR, note VARCHAR)",
        "INSERT INTO jobs VALUES (1, 'A', 'keep me')",
    )
    before = _digest(f)
    msg = refused(f, init=True)
    assert msg.startswith("crm.duckdb holds a table named 'jobs', a name RagAudit keeps its own rows under")
    assert _digest(f) == before


@pytest.mark.parametrize(
    ("statements", "expect"),
    [
        (
            ["CREATE TABLE meta (key INTEGER, value INTEGER)", "INSERT INTO meta VALUES (1, 2)"],
            "holds a table named 'meta' of another shape",
        ),
        (
            ["CREATE TABLE meta (key VARCHAR, value VARCHAR)", "INSERT INTO meta VALUES ('schema_version', '1')"],
            "'meta' has another shape than this RagAudit writes (its key is not RagAudit's)",
        ),
        (
            ["CREATE TABLE t (a INTEGER)", "CREATE VIEW meta AS SELECT 'schema_version' AS key, '1' AS value"],
            "'meta' is a view",
        ),
    ],
)
def test_a_meta_table_of_another_shape_is_refused_in_one_sentence(tmp_path, statements, expect):
    f = _duckdb(tmp_path / "m.duckdb", *statements)
    before = _digest(f)
    assert expect in refused(f, init=True)  # even when asked to add RagAudit's tables
    for kw in ({}, {"read_only": True}):
        assert "Error" not in refused(f, **kw)  # one sentence, not DuckDB's
    assert _digest(f) == before


def test_a_file_holding_only_a_sequence_is_another_programs(tmp_path):
    f = _duckdb(tmp_path / "seq.duckdb", "CREATE SEQUENCE ids")
    before = _digest(f)
    assert "of another program (it holds sequence 'ids')" in refused(f)
    assert _digest(f) == before
    store.connect(f, init=True).close()  # asked: RagAudit's tables beside it


def _damage_block(db: Path, table: str) -> None:
    con = duckdb.connect(str(db), read_only=True)
    (block,) = con.execute(f"SELECT max(block_id) FROM pragma_storage_info('{table}') WHERE persistent").fetchone()
    ((size,),) = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()
    con.close()
    with open(db, "r+b") as f:
        f.seek(3 * 4096 + block * size + 64)
        data = f.read(64)
        f.seek(3 * 4096 + block * size + 64)
        f.write(bytes(b ^ 0xFF for b in data))


def test_a_damaged_data_block_is_one_sentence_and_exit_2(tmp_path):
    db = tmp_path / "dmg.duckdb"
    log = write_jsonl(tmp_path / "one.jsonl", [RECORD, {**RECORD, "run_id": "r2"}])
    assert _cli("ingest", str(log), "--db", str(db)).returncode == 0
    _damage_block(db, "records")
    r = _cli("stability", "--db", str(db))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: the database {db} could not be read (") and "it is damaged" in r.stderr


def test_a_run_name_check_never_fetches_a_duckdb_extension(tmp_path):
    """``ragaudit stability b --db X`` looks whether ``b`` is a stored run; on an SQLite file DuckDB
    would fetch its sqlite extension from the internet (and create ~/.duckdb)."""
    import sqlite3

    f = tmp_path / "lite.duckdb"
    sqlite3.connect(f).execute("CREATE TABLE runs (run_id TEXT)").connection.commit()
    home = tmp_path / "home"
    home.mkdir()
    r = _cli("stability", "nosuch", "--db", str(f), env={**os.environ, "HOME": str(home)})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert not (home / ".duckdb").exists()


def test_a_schema_named_as_its_file_is_not_taken_for_the_database(tmp_path):
    """other.duckdb holding a schema 'other': "other"."t" was ambiguous (the catalog or the schema)."""
    from ragaudit_core.logs import schema

    db = _ragaudit_db(tmp_path / "other.duckdb", tmp_path)
    _duckdb(db, "CREATE SCHEMA other.other", "CREATE TABLE other.other.t AS SELECT range AS x FROM range(100000)")
    schema._BLOCKS_CHECKED.clear()
    store.connect(db).close()

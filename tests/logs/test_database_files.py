"""Database files of every kind: each refused in one sentence, never changed, or upgraded in one step.

Each file is built here: RagAudit's own (full, cut to half, with an older table), DuckDB files of
another program, a file that is not DuckDB, schema versions that are not this one.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.schema import SCHEMA_VERSION, expected_shape
from tests.helpers import write_jsonl

RECORD = {"run_id": "r1", "query_id": "q1", "evidence": [{"doc_id": "d1", "text": "alpha"}]}


def _duckdb(path: Path, *statements: str) -> Path:
    con = duckdb.connect(str(path))
    for sql in statements:
        con.execute(sql)
    con.close()
    return path


def _meta(version: str) -> tuple[str, str]:
    return (
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        f"INSERT INTO meta VALUES ('schema_version', '{version}')",
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ragaudit_db(path: Path, tmp_path: Path) -> Path:
    from ragaudit_core.logs.ingest import ingest_paths

    con = store.connect(path)
    ingest_paths(con, [write_jsonl(tmp_path / "one.jsonl", [RECORD])])
    con.close()
    return path


def refused(path: Path, **kw) -> str:
    with pytest.raises(store.StoreError) as e:
        store.connect(path, **kw)
    return str(e.value)


def test_a_new_file_gets_the_schema_and_its_version(tmp_path):
    con = store.connect(tmp_path / "new.duckdb")
    assert store.get_meta(con, "schema_version") == str(SCHEMA_VERSION)
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert set(expected_shape()) <= tables
    con.close()


def test_another_programs_database_is_refused_and_left_unchanged(tmp_path):
    f = _duckdb(tmp_path / "crm.duckdb", "CREATE TABLE customers (id INTEGER)", "INSERT INTO customers VALUES (7)")
    before = _digest(f)
    msg = refused(f)
    assert "crm.duckdb is a DuckDB database of another program (it holds table 'customers')" in msg
    assert "--init" in msg
    assert _digest(f) == before  # not one byte written
    con = duckdb.connect(str(f))
    assert [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["customers"]
    con.close()


def test_init_adds_ragaudit_tables_beside_the_programs_own(tmp_path):
    f = _duckdb(tmp_path / "crm.duckdb", "CREATE TABLE customers (id INTEGER)", "INSERT INTO customers VALUES (7)")
    con = store.connect(f, init=True)
    assert con.execute("SELECT id FROM customers").fetchall() == [(7,)]
    assert store.get_meta(con, "schema_version") == str(SCHEMA_VERSION)
    con.close()
    store.connect(f).close()  # now a RagAudit database: opens without asking again


def test_a_table_of_ragaudits_name_and_another_shape_is_refused_even_with_init(tmp_path):
    f = _duckdb(tmp_path / "m.duckdb", "CREATE TABLE meta (k INTEGER, v INTEGER)")
    msg = refused(f, init=True)
    assert "holds a table named 'meta' of another shape (k, v)" in msg


@pytest.mark.parametrize(
    ("version", "expect"),
    [
        ("1.0-beta", "records schema version '1.0-beta', which is not a version RagAudit writes"),
        ("7", "was written by a newer RagAudit (schema version 7; this one reads up to 1)"),
        ("0", "has schema version 0, which this RagAudit (version 1) cannot upgrade"),
    ],
)
def test_other_schema_versions_are_compared_as_numbers_and_refused(tmp_path, version, expect):
    f = _duckdb(tmp_path / "v.duckdb", *_meta(version))
    before = _digest(f)
    assert expect in refused(f)
    assert _digest(f) == before


def test_an_older_records_table_is_refused_naming_its_missing_columns(tmp_path):
    f = _duckdb(tmp_path / "old.duckdb", *_meta("1"), "CREATE TABLE records (run_id VARCHAR, query_id VARCHAR)")
    msg = refused(f)
    assert "table 'records' has another shape" in msg and "file_id, line_no, n_evidence" in msg


def test_a_missing_nullable_column_is_added_in_one_step(tmp_path):
    f = _duckdb(
        tmp_path / "q.duckdb",
        *_meta("1"),
        "CREATE TABLE quarantine (file_id INTEGER, path VARCHAR NOT NULL, line_no INTEGER, reason VARCHAR NOT NULL,"
        " raw VARCHAR)",
        "INSERT INTO quarantine VALUES (1, 'a.jsonl', 3, 'bad', '{')",
    )
    with pytest.raises(store.DatabaseRefused, match="needs its tables brought up to date"):
        store.connect(f, read_only=True)  # a read-only open changes nothing
    con = store.connect(f)
    assert con.execute("SELECT path, line_no, raw_bytes FROM quarantine").fetchall() == [("a.jsonl", 3, None)]
    con.close()


def test_a_truncated_database_is_refused_before_any_read_fails(tmp_path):
    full = _ragaudit_db(tmp_path / "full.duckdb", tmp_path)
    data = full.read_bytes()
    half = tmp_path / "half.duckdb"
    half.write_bytes(data[: len(data) // 2])
    msg = refused(half)
    assert msg.startswith("half.duckdb is truncated:") and "restore the file from a full copy" in msg


@pytest.mark.parametrize(
    ("content", "what"),
    [
        (b"", "is an empty file, not a DuckDB database file"),
        (b"hello, not a database", "is not a DuckDB database file"),
        (b"SQLite format 3\x00" + b"\x00" * 100, "is an SQLite database"),  # DuckDB would fetch an extension
    ],
)
def test_a_file_that_is_not_duckdb_is_refused(tmp_path, content, what):
    f = tmp_path / "x.duckdb"
    f.write_bytes(content)
    assert what in refused(f)
    assert f.read_bytes() == content


def test_read_only_and_no_create_never_make_a_file(tmp_path):
    for kw in ({"read_only": True}, {"create": False}):
        assert "no such database" in refused(tmp_path / "absent.duckdb", **kw)
    assert not (tmp_path / "absent.duckdb").exists()
    assert "is a folder" in refused(tmp_path)


def test_a_database_whose_folder_cannot_be_made_is_refused_in_one_sentence(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    msg = refused(tmp_path / "notes.txt" / "audit.duckdb")
    assert "notes.txt is a file, not a folder" in msg and "name a database file in a folder you can write" in msg


def test_the_workspace_folder_bounds_what_the_dashboard_opens(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGAUDIT_WORKSPACE", str(tmp_path))
    assert store.db_path_in_workspace("audit.duckdb") == tmp_path.resolve() / "audit.duckdb"
    assert store.db_path_in_workspace(str(tmp_path / "sub" / "a.db")) == tmp_path.resolve() / "sub" / "a.db"
    for bad, why in [
        ("../elsewhere.duckdb", "outside the workspace folder"),
        ("/etc/cron.d/x.duckdb", "outside the workspace folder"),
        ("notes.txt", "ends in .duckdb"),
        ("  ", "name a database file"),
    ]:
        with pytest.raises(store.DatabaseRefused, match=why):
            store.db_path_in_workspace(bad)
    (tmp_path / "link.duckdb").symlink_to("/tmp/outside.duckdb")
    with pytest.raises(store.DatabaseRefused, match="outside the workspace folder"):
        store.db_path_in_workspace("link.duckdb")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ragaudit_core.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_exits_2_in_one_sentence_and_leaves_a_foreign_file_alone(tmp_path):
    log = write_jsonl(tmp_path / "one.jsonl", [RECORD])
    crm = _duckdb(tmp_path / "crm.duckdb", "CREATE TABLE customers (id INTEGER)")
    before = _digest(crm)
    for args in (["stability", "--db", str(crm)], ["ingest", str(log), "--db", str(crm)]):
        r = _cli(*args)
        assert r.returncode == 2, r.stderr
        assert "crm.duckdb is a DuckDB database of another program" in r.stderr and "Traceback" not in r.stderr
    assert _digest(crm) == before
    r = _cli("ingest", str(log), "--db", str(crm), "--init")
    assert r.returncode == 0, r.stderr
    half = tmp_path / "half.duckdb"
    data = _ragaudit_db(tmp_path / "full.duckdb", tmp_path).read_bytes()
    half.write_bytes(data[: len(data) // 2])
    r = _cli("stability", "--db", str(half))
    assert r.returncode == 2 and "is truncated" in r.stderr and "Traceback" not in r.stderr


def _wal_of_another_file(tmp_path: Path) -> bytes:
    """The write-ahead log a killed program left beside another database file."""
    other = tmp_path / "other.duckdb"
    code = (
        "import duckdb, os, sys\ncon = duckdb.connect(sys.argv[1])\ncon.execute(\"SET wal_autocheckpoint = '1TB'\")\n"
        "con.execute('CREATE TABLE t AS SELECT 1 AS a')\ncon.execute('INSERT INTO t VALUES (2)')\nos._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(other)], check=True, timeout=120)
    return Path(f"{other}.wal").read_bytes()


def test_a_wal_left_by_another_database_is_named_with_what_to_do(tmp_path):
    db = _ragaudit_db(tmp_path / "audit.duckdb", tmp_path)
    Path(f"{db}.wal").write_bytes(_wal_of_another_file(tmp_path))
    for kw in ({}, {"read_only": True}):
        msg = refused(db, **kw)
        assert msg.startswith(
            f"cannot open database {db}: the file beside it, audit.duckdb.wal, is the write-ahead log of another "
            "database file (DuckDB: IO Error: Failure while replaying WAL file"
        )
        assert msg.endswith(
            "move audit.duckdb.wal out of the folder (keep it if another database may need it) and open again: the "
            "database is then as it was at its last checkpoint"
        )
    Path(f"{db}.wal").rename(tmp_path / "kept.wal")  # as the sentence says
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT run_id, query_id FROM records").fetchall() == [("r1", "q1")]
    con.close()


def test_a_read_only_open_spills_to_a_temporary_folder_not_beside_the_file(tmp_path):
    db = _ragaudit_db(tmp_path / "audit.duckdb", tmp_path)
    ro = store.connect(db, read_only=True)  # its folder may be read-only too (an artifact)
    try:
        ((spill,),) = ro.execute("SELECT current_setting('temp_directory')").fetchall()
    finally:
        ro.close()
    assert not Path(spill).is_relative_to(tmp_path)
    rw = store.connect(db)
    try:
        assert rw.execute("SELECT current_setting('temp_directory')").fetchall() == [(f"{db}.tmp",)]
    finally:
        rw.close()


def test_a_reading_command_brings_an_older_file_up_to_date_when_it_may_write_it(tmp_path, monkeypatch):
    """``read_db`` (every reading command): read-only; a file that lacks a nullable column gets it
    first when it may be written, else it is refused with what to do and left as it was."""
    from ragaudit_core.cli import common

    def older(name: str) -> Path:
        return _duckdb(
            tmp_path / name,
            *_meta("1"),
            "CREATE TABLE quarantine (file_id INTEGER, path VARCHAR NOT NULL, line_no INTEGER, "
            "reason VARCHAR NOT NULL, raw VARCHAR)",
            "INSERT INTO quarantine VALUES (1, 'a.jsonl', 3, 'bad', '{')",
        )

    con = common.read_db(older("q.duckdb"))
    assert con.execute("SELECT path, line_no, raw_bytes FROM quarantine").fetchall() == [("a.jsonl", 3, None)]
    with pytest.raises(duckdb.InvalidInputException, match="read-only mode"):
        con.execute("DELETE FROM quarantine")
    con.close()
    locked = older("locked.duckdb")
    before = _digest(locked)
    connect = store.connect

    def not_writable(path, **kw):
        if not kw.get("read_only"):
            raise store.StoreReadOnly(f"cannot open database {path} for writing: permission denied")
        return connect(path, **kw)

    monkeypatch.setattr(store, "connect", not_writable)
    with pytest.raises(store.TablesOutOfDate) as e:
        common.read_db(locked)
    assert str(e.value) == (
        "locked.duckdb was written by an earlier RagAudit and needs its tables brought up to date, which a "
        "read-only open cannot do: make the file writable and run the command again (RagAudit then adds them)"
    )
    assert _digest(locked) == before

"""The DuckDB store: schema, connections, and small read helpers.

Everything RagAudit knows lives in one DuckDB database file (or an in-memory
database in tests). Logs are validated at ingest and loaded into plain tables; every
metric is SQL over these tables. Normalisation and hashing happen at ingest, so the
metric SQL needs no user-defined functions and stays portable.

Tables (schema version 1):

``files``       one row per ingested input file, identified by the SHA-256 of its bytes.
``runs``        one row per run, with its ``config`` object (JSON) and the common
                config parameters pulled out as columns.
``records``     one row per (run, query) evidence record.
``evidence``    one row per evidence entry, in rank order (``position`` 0-based after
                de-duplication); ``doc_id`` is canonical, ``doc_id_raw`` as logged,
                ``span_hash`` as logged or computed from ``text`` (NULL when neither).
``quarantine``  every rejected line, verbatim, with its file, line number and reason.
``ingest_warnings``  non-fatal findings (BOM stripped, duplicates removed, collisions…).
``qrels``       relevance labels (query, canonical document, graded relevance, source).
``meta``        key/value settings: schema version, canonicalisation options.
"""

from __future__ import annotations

import functools
import json
import os
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import duckdb

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.tables import run_tables

__all__ = [
    "DEFAULT_DB_PATH",
    "SCHEMA_VERSION",
    "StoreBusy",
    "StoreError",
    "bump_data_version",
    "busy_message",
    "clear_data",
    "connect",
    "data_version",
    "default_db_path",
    "get_meta",
    "init_schema",
    "set_meta",
]

SCHEMA_VERSION = 1
DEFAULT_DB_PATH = Path(".ragaudit") / "ragaudit.duckdb"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS files (
    file_id     INTEGER PRIMARY KEY,
    path        VARCHAR NOT NULL,
    sha256      VARCHAR NOT NULL UNIQUE,
    kind        VARCHAR NOT NULL,
    bytes       BIGINT,
    n_lines     INTEGER,
    n_loaded    INTEGER,
    n_rejected  INTEGER,
    ingested_at TIMESTAMP,
    options     VARCHAR
);
CREATE TABLE IF NOT EXISTS runs (
    run_id        VARCHAR PRIMARY KEY,
    config        VARCHAR,
    top_k         INTEGER,
    chunk_size    INTEGER,
    chunk_overlap INTEGER,
    embedder      VARCHAR
);
CREATE TABLE IF NOT EXISTS records (
    run_id     VARCHAR NOT NULL,
    query_id   VARCHAR NOT NULL,
    file_id    INTEGER NOT NULL,
    line_no    INTEGER NOT NULL,
    query      VARCHAR,
    answer     VARCHAR,
    n_evidence INTEGER NOT NULL,
    PRIMARY KEY (run_id, query_id)
);
CREATE TABLE IF NOT EXISTS evidence (
    run_id     VARCHAR NOT NULL,
    query_id   VARCHAR NOT NULL,
    position   INTEGER NOT NULL,
    doc_id     VARCHAR NOT NULL,
    doc_id_raw VARCHAR NOT NULL,
    span_hash  VARCHAR,
    chunk_id   VARCHAR,
    text       VARCHAR,
    rank       INTEGER,
    score      DOUBLE,
    char_start INTEGER,
    char_end   INTEGER,
    page       INTEGER,
    metadata   VARCHAR
);
CREATE TABLE IF NOT EXISTS quarantine (
    file_id  INTEGER,
    path     VARCHAR NOT NULL,
    line_no  INTEGER,
    reason   VARCHAR NOT NULL,
    raw      VARCHAR,
    raw_bytes BLOB
);
CREATE TABLE IF NOT EXISTS prov_records (
    run_id         VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    file_id        INTEGER NOT NULL,
    line_no        INTEGER NOT NULL,
    query          VARCHAR,
    generated_text VARCHAR,
    config         VARCHAR,
    ground_truth   VARCHAR,
    documents      VARCHAR,
    dropped        VARCHAR,
    n_nodes        INTEGER NOT NULL,
    PRIMARY KEY (run_id, query_id)
);
CREATE TABLE IF NOT EXISTS prov_nodes (
    run_id         VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    ord            INTEGER NOT NULL,
    node_id        VARCHAR NOT NULL,
    stage          INTEGER NOT NULL,
    artifact_type  VARCHAR NOT NULL,
    doc_id         VARCHAR,
    doc_id_raw     VARCHAR,
    page           INTEGER,
    paragraph      INTEGER,
    char_start     INTEGER,
    char_end       INTEGER,
    transformation VARCHAR,
    derived_from   VARCHAR[],
    metadata       VARCHAR
);
CREATE TABLE IF NOT EXISTS derived_answer_similarity (
    run_a    VARCHAR NOT NULL,
    run_b    VARCHAR NOT NULL,
    query_id VARCHAR NOT NULL,
    model    VARCHAR NOT NULL,
    sim      DOUBLE NOT NULL,
    PRIMARY KEY (run_a, run_b, query_id, model)
);
CREATE TABLE IF NOT EXISTS derived_results (
    key          VARCHAR PRIMARY KEY,
    data_version VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    payload      BLOB NOT NULL,
    created_at   TIMESTAMP
);
CREATE TABLE IF NOT EXISTS qrels (
    query_id   VARCHAR NOT NULL,
    doc_id     VARCHAR NOT NULL,
    doc_id_raw VARCHAR NOT NULL,
    relevance  INTEGER NOT NULL,
    source     VARCHAR NOT NULL,
    PRIMARY KEY (query_id, doc_id)
);
CREATE TABLE IF NOT EXISTS ingest_warnings (
    file_id INTEGER,
    path    VARCHAR,
    line_no INTEGER,
    code    VARCHAR NOT NULL,
    message VARCHAR NOT NULL
);
"""


class StoreError(RagAuditError, RuntimeError):
    """The database cannot be used as asked; the message says why and what to do."""


def default_db_path() -> Path:
    """``$RAGAUDIT_DB`` if set, else ``.ragaudit/ragaudit.duckdb`` under the working directory."""
    env = os.environ.get("RAGAUDIT_DB")
    return Path(env) if env else DEFAULT_DB_PATH


def connect(
    path: str | Path | None = None,
    *,
    read_only: bool = False,
    wait_s: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a RagAudit database. ``":memory:"`` gives an in-memory one.

    Sharing a database file (DuckDB allows one writing process at a time): RagAudit opens a file
    only while it works — a CLI command for its run, the dashboard for one script run (one
    interaction) — and closes it after, so a dashboard, a second dashboard and CLI commands take
    turns on one file. When another process holds it, the open is retried for ``wait_s`` seconds
    (``on_wait`` is told once, with the sentence below); then :class:`StoreBusy` says who holds it
    and what to do, never DuckDB's raw error.
    """
    if path is None:
        path = default_db_path()
    target = str(path)
    if target != ":memory:":
        Path(target).parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    delay, told = 0.05, False
    while True:
        try:
            con = duckdb.connect(target, read_only=read_only)
            break
        except duckdb.Error as e:
            busy = busy_message(target, str(e))
            if busy is None:
                raise StoreError(f"cannot open database {target}: {e}") from None
            if time.monotonic() >= deadline:
                raise StoreBusy(busy) from None
            if on_wait is not None and not told:
                on_wait(busy)
                told = True
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)
    _limit_memory(con, target == ":memory:")
    if not read_only:
        init_schema(con)
    return con


def busy_message(target: str, error: str) -> str | None:
    """One sentence when ``error`` says the database is held elsewhere, else None."""
    m = re.search(r"Conflicting lock is held in (.+?) \(PID (\d+)\)", error)
    if m:
        return (
            f"the database {target} is in use by another program (PID {m.group(2)}, {Path(m.group(1)).name}): "
            "RagAudit opens it only while a command or a dashboard interaction runs; wait for that to finish "
            "and try again, or use another database file (--db)"
        )
    if "different configuration" in error or "Could not set lock" in error:
        return (
            f"the database {target} is in use (it is being opened in another mode by this program); "
            "wait a moment and try again"
        )
    return None


class StoreBusy(StoreError):
    """The database file is held by another process (or another mode in this one)."""


MEMORY_LIMIT = "512MB"
"""DuckDB's buffer pool for one database (``RAGAUDIT_DUCKDB_MEMORY`` overrides): with it, a load
and the metrics spill to disk instead of growing with the input."""


def _limit_memory(con: duckdb.DuckDBPyConnection, in_memory: bool) -> None:
    import os
    import re

    limit = os.environ.get("RAGAUDIT_DUCKDB_MEMORY", MEMORY_LIMIT)
    if not re.fullmatch(r"\d+(\.\d+)?\s*[KMGT]i?B", limit, re.IGNORECASE):
        raise StoreError(f"RAGAUDIT_DUCKDB_MEMORY must look like 512MB or 2GB, not {limit!r}")
    con.execute(f"SET memory_limit = '{limit}'")
    if in_memory:  # an in-memory database spills to a folder of its own, made only when needed
        con.execute(f"SET temp_directory = '{_spill_base() / uuid.uuid4().hex}'")


@functools.cache
def _spill_base() -> Path:
    """One temporary folder per process for in-memory databases' spill files, removed at exit."""
    import atexit
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="ragaudit-duckdb-"))
    atexit.register(shutil.rmtree, base, ignore_errors=True)
    return base


def init_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(_SCHEMA)
    version = get_meta(con, "schema_version")
    if version is None:
        set_meta(con, "schema_version", str(SCHEMA_VERSION))
    elif int(version) != SCHEMA_VERSION:
        raise StoreError(
            f"database schema version {version} is not the supported version {SCHEMA_VERSION}; "
            "re-ingest the logs into a new database"
        )


def get_meta(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])


def get_json_meta(con: duckdb.DuckDBPyConnection, key: str) -> object | None:
    v = get_meta(con, key)
    return None if v is None else json.loads(v)


def data_version(con: duckdb.DuckDBPyConnection) -> str:
    """A token that changes whenever the stored data changes (each ingest, each clear).

    Dashboards key their result caches on it, so a cached figure never outlives its data.
    """
    cur = con.cursor()
    try:
        return get_meta(cur, "data_version") or "0"
    finally:
        cur.close()


def bump_data_version(con: duckdb.DuckDBPyConnection) -> str:
    token = uuid.uuid4().hex
    set_meta(con, "data_version", token)
    return token


def clear_data(con: duckdb.DuckDBPyConnection) -> None:
    """Delete every loaded log, rejected line and result derived from them — every table the
    registry (:mod:`.tables`) knows that this database has — in one transaction.

    The identity options fixed at the first ingest are forgotten too, so the next
    ingest may choose new ones. The schema stays.
    """
    cur = con.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        present = {t for (t,) in cur.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()}
        for table in run_tables():
            if table.name in present:
                cur.execute(f'DELETE FROM "{table.name}"')
        cur.execute("DELETE FROM meta WHERE key = 'ingest_options'")
        bump_data_version(cur)
        cur.execute("COMMIT")
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    finally:
        cur.close()

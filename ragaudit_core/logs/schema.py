"""What a database file is, and the checks every open makes before RagAudit reads or writes it.

A file given as a RagAudit database may be anything: RagAudit's own (this schema version, an older
or a newer one), a DuckDB file of another program, a truncated copy, or not DuckDB at all. Every
open classifies it first (:func:`prepare`) and either goes on or says in one sentence what the file
is and what to do (:class:`DatabaseRefused`) — never a Binder Error or a traceback later, and never
a change to a file that is not RagAudit's:

- **new** (no tables): RagAudit's tables are created (not by a read-only open). ``records`` and
  ``prov_records`` have no primary key since the ingest of 4M records held 0.6 GB for its index
  (:mod:`ragaudit_core.logs.seen` says what keeps their pairs unique); a file made with one keeps it.
- **RagAudit, this version**: missing tables are created and missing *nullable* columns added,
  in one transaction (a file written before the column existed); a missing ``NOT NULL`` column or
  a column of another type refuses the file.
- **RagAudit, another version**: versions are compared as integers; an older one is migrated in
  one transaction by the registered step (:data:`MIGRATIONS`), or refused with the version found;
  a newer one, or a version that is not an integer (``"1.0-beta"``), is refused.
- **foreign** (tables, but no RagAudit schema version): refused unless the caller asks to add
  RagAudit's tables (``init=True``: ``--init``, the dashboard's checkbox); a table of RagAudit's name
  with another shape refuses it even then.
- **truncated**: the file is shorter than the blocks its tables use — refused at the open, before
  any read fails half-way.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.tables import SCHEMA_SQL, SETTINGS_TABLES, TABLES
from ragaudit_core.wording import shell_word

__all__ = [
    "MIGRATIONS",
    "SCHEMA_SQL",
    "SCHEMA_VERSION",
    "DatabaseRefused",
    "FileState",
    "StoreError",
    "TablesOutOfDate",
    "check_length",
    "expected_shape",
    "inspect",
    "prepare",
]

SCHEMA_VERSION = 1


_HEADER_BYTES = 3 * 4096
"""DuckDB's file header: one main and two database headers of 4 KiB, before the first block."""


class StoreError(RagAuditError, RuntimeError):
    """The database cannot be used as asked; the message says why and what to do."""


class DatabaseRefused(StoreError):
    """The file is not a RagAudit database this version can use as asked (nothing was changed)."""


class TablesOutOfDate(DatabaseRefused):
    """A read-only open of a file that needs tables or columns added (a writing open would add them)."""


MIGRATIONS: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {}
"""``MIGRATIONS[v]`` upgrades a schema-version ``v`` database to ``v + 1`` (run in one transaction
with the others a file needs). Version 1 is the first released schema: none exist yet."""

Column = tuple[str, bool]  # (DuckDB type, nullable)
Key = tuple[str, tuple[str, ...]]  # ("PRIMARY KEY" or "UNIQUE", its columns)


@dataclass
class FileState:
    """What an opened file holds: its tables' columns and keys (schema ``main``), the schema
    version it records, and its other objects — views (``views``: their names in ``main``),
    sequences, macros, tables of other schemas (``others``: each as ``view 'v'``)."""

    tables: dict[str, dict[str, Column]] = field(default_factory=dict)
    version: str | None = None
    keys: dict[str, set[Key]] = field(default_factory=dict)
    views: set[str] = field(default_factory=set)
    others: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if not self.tables and not self.others:
            return "new"
        return "ragaudit" if self.version is not None else "foreign"


@functools.cache
def expected_shape() -> dict[str, dict[str, Column]]:
    """The tables and columns :data:`SCHEMA_SQL` creates (read from an in-memory database once)."""
    return _expected()[0]


@functools.cache
def _expected() -> tuple[dict[str, dict[str, Column]], dict[str, set[Key]]]:
    con = duckdb.connect(":memory:")
    try:
        con.execute(SCHEMA_SQL)
        return _columns(con), _keys(con)
    finally:
        con.close()


_HERE = "database_name = current_database() AND NOT temporary"


def _columns(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Column]]:
    """The base tables of schema ``main`` (not its views) and their columns."""
    rows = con.execute(
        "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable FROM duckdb_columns() c "
        "JOIN duckdb_tables() t ON c.table_oid = t.table_oid "
        "WHERE c.database_name = current_database() AND c.schema_name = 'main' AND NOT c.internal "
        "ORDER BY c.table_name, c.column_index"
    ).fetchall()
    out: dict[str, dict[str, Column]] = {}
    for table, column, dtype, nullable in rows:
        out.setdefault(table, {})[column] = (dtype, bool(nullable))
    return out


def _keys(con: duckdb.DuckDBPyConnection) -> dict[str, set[Key]]:
    """The primary keys and unique constraints of schema ``main``'s tables (an upsert needs them)."""
    rows = con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() AND schema_name = 'main' "
        "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
    ).fetchall()
    out: dict[str, set[Key]] = {}
    for table, kind, cols in rows:
        out.setdefault(table, set()).add((kind, tuple(cols)))
    return out


def _other_objects(con: duckdb.DuckDBPyConnection) -> tuple[set[str], list[str]]:
    """Schema ``main``'s views, and every object of the file besides ``main``'s tables, named."""
    views = con.execute(f"SELECT schema_name, view_name FROM duckdb_views() WHERE {_HERE} AND NOT internal").fetchall()
    rest = [("view", s, n) for s, n in views]
    rest += [
        ("sequence", s, n)
        for s, n in con.execute(f"SELECT schema_name, sequence_name FROM duckdb_sequences() WHERE {_HERE}").fetchall()
    ]
    rest += [
        ("macro", s, n)
        for s, n in con.execute(
            "SELECT DISTINCT schema_name, function_name FROM duckdb_functions() "
            "WHERE database_name = current_database() AND NOT internal"
        ).fetchall()
    ]
    rest += [
        ("table", s, n)
        for s, n in con.execute(
            f"SELECT schema_name, table_name FROM duckdb_tables() WHERE {_HERE} AND schema_name <> 'main'"
        ).fetchall()
    ]
    named = [f"{kind} {(n if s == 'main' else f'{s}.{n}')!r}" for kind, s, n in sorted(rest)]
    return {n for s, n in views if s == "main"}, named


def inspect(con: duckdb.DuckDBPyConnection) -> FileState:
    """What ``con``'s database holds (:class:`FileState`); the schema version is the one a ``meta``
    table of RagAudit's shape (text ``key`` and ``value``) records, else None."""
    tables = _columns(con)
    version = None
    if tables.get("meta", {}).keys() >= {"key", "value"} and _compatible(tables["meta"], expected_shape()["meta"]):
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        version = None if not rows or rows[0][0] is None else str(rows[0][0])
    views, others = _other_objects(con)
    return FileState(tables, version, _keys(con), views, others)


def prepare(con: duckdb.DuckDBPyConnection, target: str, *, read_only: bool, init: bool = False) -> FileState:
    """Check the opened file ``target`` and bring it to this schema (see the module's rules);
    raise :class:`DatabaseRefused` naming what the file is and what to do."""
    if target != ":memory:":
        _check_blocks(con, target)
    state = inspect(con)
    name = Path(target).name if target != ":memory:" else target
    if state.kind == "foreign":
        _refuse_foreign(state, name, init)
    elif state.kind == "ragaudit":
        _check_version(state, name)
    work = _changes(state, name)
    if work and read_only:
        if state.kind == "new":
            raise DatabaseRefused(
                f"{name} holds no RagAudit data yet: load logs into it first "
                f"(ragaudit ingest PATH... --db {shell_word(target)})"
            )
        raise TablesOutOfDate(
            f"{name} was written by an earlier RagAudit and needs its tables brought up to date, which a read-only "
            "open cannot do: make the file writable and run the command again (RagAudit then adds them)"
        )
    if work or state.version is None:
        _apply(con, work, state)
    return state


def check_length(target: str) -> None:
    """Refuse, before DuckDB opens it, a file too short to hold DuckDB's file header."""
    size = os.path.getsize(target)
    if size < _HEADER_BYTES:
        raise DatabaseRefused(
            f"{Path(target).name} is truncated: {size:,} bytes, shorter than DuckDB's file header; restore the "
            "file from a full copy, or load the logs into a new database"
        )


_BLOCKS_CHECKED: set[tuple[str, int, int]] = set()


def _qualified(*parts: str) -> str:
    """A table's name as SQL reads it whatever it holds (another schema, a dot, a quote), with its
    database: a schema named as the file ("other" in other.duckdb) is otherwise ambiguous."""
    return ".".join('"' + part.replace('"', '""') + '"' for part in parts)


def _check_blocks(con: duckdb.DuckDBPyConnection, target: str) -> None:
    """Refuse a file shorter than the highest block its tables use (``pragma_storage_info``:
    metadata only, no data read). DuckDB cuts free blocks off the end of the file, so the header's
    block count is no bound; the blocks in use are. Checked once per file state (path, size,
    modification time) in a process: a page's every interaction opens the file."""
    st = os.stat(target)
    key = (target, st.st_size, st.st_mtime_ns)
    if key in _BLOCKS_CHECKED:
        return
    ((block_size,),) = con.execute("SELECT block_size FROM pragma_database_size()").fetchall()
    tables = [
        _qualified(database, schema, t)
        for database, schema, t in con.execute(
            "SELECT database_name, schema_name, table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND NOT temporary"
        ).fetchall()
    ]
    highest = -1
    if tables:
        parts = " UNION ALL ".join(
            "SELECT max(block_id) AS b FROM pragma_storage_info('" + t.replace("'", "''") + "') WHERE persistent"
            for t in tables
        )
        ((top,),) = con.execute(f"SELECT max(b) FROM ({parts})").fetchall()
        highest = -1 if top is None else int(top)
    need = _HEADER_BYTES + (highest + 1) * int(block_size)
    if st.st_size < need:
        raise DatabaseRefused(
            f"{Path(target).name} is truncated: {st.st_size:,} bytes, but its tables use {need:,} (a copy cut short "
            "or a disk that filled up); restore the file from a full copy, or load the logs into a new database"
        )
    _BLOCKS_CHECKED.add(key)


def _refuse_foreign(state: FileState, name: str, init: bool) -> None:
    ours = {t for t in state.tables if t in TABLES or t in SETTINGS_TABLES}
    expected = expected_shape()
    kept = sorted(t for t in ours if t not in expected)  # a package's own table (attributions, jobs…)
    if kept:
        raise DatabaseRefused(
            f"{name} holds a table named {kept[0]!r}, a name RagAudit keeps its own rows under, and no RagAudit "
            "schema version: it was not written by this RagAudit, and its tables are left as they are; load the "
            "logs into a new database file"
        )
    clash = sorted(t for t in ours if t in expected and not _fits(state, t))
    if clash:
        raise DatabaseRefused(
            f"{name} holds a table named {clash[0]!r} of another shape "
            f"({', '.join(state.tables[clash[0]])}) and no RagAudit schema version: it was not written by this "
            "RagAudit, and its tables are left as they are; load the logs into a new database file"
        )
    if not init:
        held = [f"table {t!r}" for t in sorted(state.tables)] + state.others
        shown = ", ".join(held[:5]) + (" …" if len(held) > 5 else "")
        raise DatabaseRefused(
            f"{name} is a DuckDB database of another program (it holds {shown}); RagAudit adds its tables to it "
            "only when asked (ragaudit ingest --init, or “Add RagAudit's tables” in the dashboard) — or choose a "
            "new file"
        )


def _check_version(state: FileState, name: str) -> None:
    v = state.version or ""
    if not re.fullmatch(r"[0-9]+", v):
        raise DatabaseRefused(
            f"{name} records schema version {v!r}, which is not a version RagAudit writes (this one reads "
            f"version {SCHEMA_VERSION}); load the logs into a new database file"
        )
    n = int(v)
    if n > SCHEMA_VERSION:
        raise DatabaseRefused(
            f"{name} was written by a newer RagAudit (schema version {n}; this one reads up to "
            f"{SCHEMA_VERSION}): upgrade RagAudit, or load the logs into a new database file"
        )
    missing = [m for m in range(n, SCHEMA_VERSION) if m not in MIGRATIONS]
    if missing:
        raise DatabaseRefused(
            f"{name} has schema version {n}, which this RagAudit (version {SCHEMA_VERSION}) cannot upgrade; "
            "load the logs into a new database file"
        )


def _fits(state: FileState, table: str) -> bool:
    """The file's ``table`` can hold RagAudit's rows: its columns (:func:`_compatible`) and the keys
    RagAudit's upserts rely on (a ``meta`` without its primary key cannot take ``INSERT OR REPLACE``)."""
    want_keys = _expected()[1].get(table, set())
    return _compatible(state.tables[table], expected_shape()[table]) and want_keys <= state.keys.get(table, set())


def _compatible(have: dict[str, Column], want: dict[str, Column]) -> bool:
    """``have`` can hold RagAudit's rows: every column it shares has the same type, and every
    column it lacks may be added (nullable)."""
    for col, (dtype, nullable) in want.items():
        if col in have:
            if have[col][0] != dtype:
                return False
        elif not nullable:
            return False
    return True


def _changes(state: FileState, name: str) -> list[str]:
    """The statements that bring ``state`` to this schema (tables to create, columns to add);
    refuses a table RagAudit cannot fill."""
    expected = expected_shape()
    work: list[str] = []
    for table, want in expected.items():
        have = state.tables.get(table)
        if table in state.views:
            raise DatabaseRefused(
                f"{name}: {table!r} is a view, not the table RagAudit keeps its rows in (a view cannot take them); "
                "load the logs into a new database file"
            )
        if have is None:
            work.append("create")
            continue
        if not _fits(state, table):
            bad = [c for c, (t, nul) in want.items() if (c in have and have[c][0] != t) or (c not in have and not nul)]
            what = (
                f"{'column' if len(bad) == 1 else 'columns'} {', '.join(bad)} missing or of another type"
                if bad
                else "its key is not RagAudit's"
            )
            raise DatabaseRefused(
                f"{name}: table {table!r} has another shape than this RagAudit writes ({what}); "
                "load the logs into a new database file"
            )
        work += [f'ALTER TABLE "{table}" ADD COLUMN "{c}" {t}' for c, (t, _) in want.items() if c not in have]
    return work


def _apply(con: duckdb.DuckDBPyConnection, work: list[str], state: FileState) -> None:
    """Create the missing tables, add the missing columns, run the migrations and record the
    version — in one transaction."""
    con.execute("BEGIN TRANSACTION")
    try:
        if state.kind == "ragaudit":
            for v in range(int(state.version or SCHEMA_VERSION), SCHEMA_VERSION):
                MIGRATIONS[v](con)
        con.execute(SCHEMA_SQL)
        for statement in work:
            if statement != "create":
                con.execute(statement)
        con.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise

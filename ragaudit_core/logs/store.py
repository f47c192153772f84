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

import contextlib
import functools
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ragaudit_core.logs.schema import (
    SCHEMA_VERSION,
    DatabaseRefused,
    StoreError,
    TablesOutOfDate,
    check_length,
    prepare,
)
from ragaudit_core.logs.tables import run_tables
from ragaudit_core.wording import shell_word

__all__ = [
    "DEFAULT_DB_PATH",
    "SCHEMA_VERSION",
    "DatabaseRefused",
    "StoreBusy",
    "StoreError",
    "StoreReadOnly",
    "TablesOutOfDate",
    "bump_data_version",
    "busy_message",
    "clear_data",
    "connect",
    "damage_message",
    "data_version",
    "db_path_in_workspace",
    "default_db_path",
    "get_meta",
    "init_schema",
    "is_read_only",
    "made_on_first_use",
    "path_in_workspace",
    "set_meta",
    "transaction",
    "workspace_root",
]

DEFAULT_DB_PATH = Path(".ragaudit") / "ragaudit.duckdb"


def default_db_path() -> Path:
    """``$RAGAUDIT_DB`` if set, else ``.ragaudit/ragaudit.duckdb`` under the working directory."""
    env = os.environ.get("RAGAUDIT_DB")
    return Path(env) if env else DEFAULT_DB_PATH


DB_SUFFIXES = (".duckdb", ".db")
"""The names a database file opened from the dashboard may end with."""


def workspace_root() -> Path:
    """The folder the dashboard may open and create databases in: ``$RAGAUDIT_WORKSPACE``, else
    the default database's folder (``$RAGAUDIT_DB``'s, or ``.ragaudit``), resolved."""
    env = os.environ.get("RAGAUDIT_WORKSPACE")
    return (Path(env) if env else default_db_path().parent).expanduser().resolve()


def db_path_in_workspace(path: str) -> Path:
    """``path`` (absolute, or relative to the workspace folder) as a database file the dashboard
    may open: inside :func:`workspace_root` after resolving ``..`` and links, ending in ``.duckdb``
    or ``.db``. Anything else is refused in one sentence: a page's text box must not make the server
    create or open files wherever its process may write."""
    return path_in_workspace(path, DB_SUFFIXES, "a database file", "opens databases", "audit.duckdb")


def path_in_workspace(path: str, suffixes: tuple[str, ...], what: str, does: str, example: str) -> Path:
    """``path`` (absolute, or relative to the workspace folder) resolved (``..`` and links) inside
    :func:`workspace_root` and ending in one of ``suffixes``, else :class:`DatabaseRefused` in one
    sentence naming ``what`` the name should be ("a rules file", like ``example``) and what the
    dashboard ``does`` only there ("saves files")."""
    root = workspace_root()
    raw = path.strip()
    if not raw:
        raise DatabaseRefused(f"name {what} (…/{example})")
    p = Path(raw).expanduser()
    resolved = (p if p.is_absolute() else root / p).resolve()
    if not resolved.is_relative_to(root):
        raise DatabaseRefused(
            f"{raw} is outside the workspace folder {root}: the dashboard {does} only there (name a file "
            "inside it, or start the dashboard with RAGAUDIT_WORKSPACE set to the folder you want)"
        )
    if resolved.suffix.lower() not in suffixes:
        others = f" (or {', '.join(suffixes[1:])})" if len(suffixes) > 1 else ""
        raise DatabaseRefused(f"{raw}: {what} name ends in {suffixes[0]}{others}")
    return resolved


def connect(
    path: str | Path | None = None,
    *,
    read_only: bool = False,
    wait_s: float = 0.0,
    on_wait: Callable[[str], None] | None = None,
    init: bool = False,
    create: bool = True,
) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) a RagAudit database. ``":memory:"`` gives an in-memory one.

    What the file is gets checked first (:func:`.schema.prepare`): a file that is not a RagAudit
    database this version can use — not DuckDB, truncated, another program's (unless ``init`` asks
    to add RagAudit's tables), another schema version — is refused with :class:`DatabaseRefused`
    in one sentence and left unchanged. ``read_only`` never creates or alters anything; without
    ``create`` a missing file is refused instead of made.

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
        if not Path(target).exists():
            if read_only or not create:
                raise DatabaseRefused(
                    f"{target}: no such database; load logs into it first "
                    f"(ragaudit ingest PATH... --db {shell_word(target)})"
                )
            try:
                Path(target).parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:  # a file where a folder should be, no permission, a read-only disk
                why = next(
                    (f"{p} is a file, not a folder" for p in Path(target).parents if p.exists() and not p.is_dir()),
                    f"its folder cannot be made ({e.strerror or e})",
                )
                raise StoreError(
                    f"cannot create database {target}: {why}; name a database file in a folder you can write"
                ) from None
            if not os.access(Path(target).parent, os.W_OK | os.X_OK):  # (not StoreReadOnly: nothing to browse)
                raise StoreError(
                    f"cannot create database {target}: its folder {Path(target).parent} may not be written by this "
                    "user; name a database file in a folder you can write"
                )
        elif Path(target).is_dir():
            raise DatabaseRefused(f"{target} is a folder, not a database file: name a file inside it (…/audit.duckdb)")
        else:
            try:
                _check_magic(target)
                check_length(target)
            except OSError as e:  # a file this user may not read (its permissions), or one gone meanwhile
                raise StoreError(f"cannot read database {target}: {e.strerror or e}") from None
            if not read_only and not os.access(Path(target).parent, os.W_OK | os.X_OK):
                raise StoreReadOnly(
                    f"cannot open database {target} for writing: its folder {Path(target).parent} may not be written "
                    "by this user (DuckDB keeps its write-ahead log beside the file); the commands that only read it "
                    "(stability, quality, fidelity, gate, report) open it read-only, ingest needs a copy in a folder "
                    "this user may write"
                )
    deadline = time.monotonic() + wait_s
    delay, told = 0.05, False
    while True:
        try:
            con = duckdb.connect(target, read_only=read_only, config=_CONFIG)
            break
        except duckdb.Error as e:
            busy = busy_message(target, str(e))
            if busy is None:
                raise _cannot_open(target, str(e), read_only) from None
            if time.monotonic() >= deadline:
                raise StoreBusy(busy) from None
            if on_wait is not None and not told:
                on_wait(busy)
                told = True
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.5)
    try:
        _limit_memory(con, target == ":memory:" or read_only)
        prepare(con, target, read_only=read_only, init=init)
    except StoreError:
        con.close()
        raise
    except duckdb.Error as e:
        con.close()
        raise StoreError(_unreadable(target, str(e))) from None
    return con


_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}
"""No extension is fetched or loaded behind the user's back: DuckDB would otherwise try to download
``sqlite_scanner`` from the internet when handed an SQLite file."""


def _check_magic(target: str) -> None:
    """Refuse a file that does not carry DuckDB's magic bytes (``DUCK`` at offset 8) before DuckDB
    is handed it."""
    with open(target, "rb") as f:
        head = f.read(16)
    if head[8:12] == b"DUCK":
        return
    what = "an SQLite database" if head.startswith(b"SQLite format 3") else "not a DuckDB database file"
    if not head:
        what = "an empty file, not a DuckDB database file"
    raise DatabaseRefused(
        f"{target} is {what} (RagAudit keeps its data in DuckDB files): choose a RagAudit database, or a new file "
        "name to start one"
    )


def _cannot_open(target: str, error: str, read_only: bool) -> StoreError:
    """The error for a file DuckDB could not open: :class:`StoreReadOnly` when it may not be written
    (a read-only open would do), else :class:`StoreError` with :func:`_unreadable`'s sentence."""
    if "Permission denied" in error and not read_only:
        return StoreReadOnly(
            f"cannot open database {target} for writing: permission denied (the file or its folder is read-only "
            "for this user); the commands that only read it (stability, quality, fidelity, gate, report) open it "
            "read-only, ingest needs a copy this user may write"
        )
    if "Permission denied" in error:
        return StoreError(f"cannot read database {target}: permission denied (its permissions do not let this user)")
    return StoreError(_unreadable(target, error))


def _unreadable(target: str, error: str) -> str:
    """One sentence for a file DuckDB cannot open or read."""
    if "replaying WAL" in error:
        why = (
            "is the write-ahead log of another database file"
            if "does not match" in error
            else "could not be replayed (it is damaged or cut short)"
        )
        return (
            f"cannot open database {target}: the file beside it, {Path(target).name}.wal, {why} (DuckDB: "
            f"{error.splitlines()[0]}); move {Path(target).name}.wal out of the folder (keep it if another database "
            "may need it) and open again: the database is then as it was at its last checkpoint"
        )
    if "not a valid DuckDB database file" in error:
        return (
            f"{target} is not a DuckDB database file (RagAudit keeps its data in DuckDB files): choose a RagAudit "
            "database, or a new file name to start one"
        )
    if "Could not read enough bytes" in error or "Corrupt" in error or "checksum" in error.lower():
        return (
            f"{target} is damaged or cut short (DuckDB: {error.splitlines()[0]}): restore it from a full copy, or "
            "load the logs into a new database"
        )
    return f"cannot open database {target}: {error.splitlines()[0] if error else 'unknown error'}"


def damage_message(target: str | Path, error: BaseException) -> str | None:
    """One sentence when ``error`` (raised once the file was open) is about the file: a block that
    fails its checksum or cannot be read (damaged or cut short), or another I/O error (a full disk);
    else None (any other error is not ours to word)."""
    text = str(error)
    first = text.splitlines()[0] if text else type(error).__name__
    if isinstance(error, duckdb.Error) and (
        "Corrupt database file" in text or "read enough bytes" in text or "Could not read from file" in text
    ):
        return (
            f"the database {target} could not be read ({first}): it is damaged or was cut short; restore it from a "
            "full copy, or load the logs into a new database"
        )
    if isinstance(error, duckdb.IOException):
        return (
            f"the database {target} could not be read or written ({first}): check the disk it is on (free space, "
            "permissions) and try again"
        )
    return None


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


class StoreReadOnly(StoreError):
    """The database file (or its folder) may not be written by this process; a read-only open may work."""


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
    """Create RagAudit's tables in ``con``'s database (an empty or in-memory one) — the checks of
    :func:`connect` apply."""
    prepare(con, ":memory:", read_only=False)


def is_read_only(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con``'s database was opened read-only: it can be read and computed on (temporary
    tables included), nothing can be stored in it."""
    sql = "SELECT readonly FROM duckdb_databases() WHERE database_name = current_database()"
    return bool(con.execute(sql).fetchall()[0][0])


def made_on_first_use(con: duckdb.DuckDBPyConnection, ddl: str, name: str) -> bool:
    """Create the table ``name`` that RagAudit makes when it first stores into it (``ddl``: ``CREATE
    TABLE IF NOT EXISTS …``) and say whether it is there. A connection that cannot write (a database
    opened read-only) creates nothing: False when the table was never made — nothing is stored in it."""
    try:
        con.execute(ddl)
        return True
    except duckdb.Error:
        sql = "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() AND table_name = ?"
        return bool(con.execute(sql, [name]).fetchall()[0][0])


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


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own (a transaction apart from whatever ``con`` holds) inside one
    transaction: committed when the block ends, rolled back when it raises — a writer killed
    half-way leaves nothing of what the block wrote."""
    cur = con.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        yield cur
        cur.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.TransactionException):  # a COMMIT that failed has rolled back already
            cur.execute("ROLLBACK")
        raise
    finally:
        cur.close()


def clear_data(con: duckdb.DuckDBPyConnection) -> None:
    """Delete every loaded log, rejected line and result derived from them — every table the
    registry (:mod:`.tables`) knows that this database has — in one transaction.

    The identity options fixed at the first ingest are forgotten too, so the next
    ingest may choose new ones. The schema stays.
    """
    with transaction(con) as cur:
        present = {t for (t,) in cur.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()}
        for table in run_tables():
            if table.name in present:
                cur.execute(f'DELETE FROM "{table.name}"')
        cur.execute("DELETE FROM meta WHERE key = 'ingest_options'")
        bump_data_version(cur)

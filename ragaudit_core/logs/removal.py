"""Removing one run or one file from a workspace, with everything derived from it.

An auditor's workspace mixes uploads; one wrong upload must not cost the rest ("Clear data"). The
rows to delete are found through the table registry (:mod:`.tables`), so a table a package
registers for its results (attributions, verdicts, jobs…) is emptied of the removed run's rows
without this module naming it:

- a **run**: every row of every registered table whose run columns name it (``run_id``, or either
  of ``run_a``/``run_b`` for pair results); a file it leaves with nothing loaded goes too (its
  rejected lines, warnings and ledger row), so that file loads again when given again;
- a **file**: its records, evidence, provenance, rejected lines, warnings and its ``files`` row; a
  run left with no record and no provenance is removed as a run (above); for runs that keep other
  files' records, the rows of registered tables keyed by ``(run_id, query_id)`` for the file's
  queries go too (an attribution of a query whose record was removed).

Cached results keyed by the data version (``derived_results``) are invalidated by the version bump
every removal makes; the workspace's own warnings (canonical-id collisions, query coverage),
which describe the database rather than one file, are worded again for what is left. All in one
transaction. The uploaded bytes kept on disk stay (the audit trail
of what was uploaded); a re-upload of the same file loads again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import duckdb

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.catalog import workspace_warnings
from ragaudit_core.logs.store import bump_data_version, transaction
from ragaudit_core.logs.tables import run_tables
from ragaudit_core.logs.writer import WARNING_SCHEMA, drop_workspace_warnings, insert_rows
from ragaudit_core.wording import WARNING, counted

__all__ = ["RemovalError", "Removed", "remove_file", "remove_runs"]


class RemovalError(RagAuditError, ValueError):
    """Nothing to remove under that name (the message names it and what exists)."""


@dataclass
class Removed:
    """What a removal deleted: rows per table, and the runs that went entirely."""

    rows: dict[str, int] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One sentence in the auditor's words (rows of internal tables counted as results)."""
        r = self.rows
        logs = {"records", "evidence", "prov_records", "prov_nodes", "runs", "files", "quarantine", "ingest_warnings"}
        parts = [f"{counted(r.get('records', 0), 'record')} with {counted(r.get('evidence', 0), 'evidence entry')}"]
        if r.get("prov_records"):
            parts.append(counted(r["prov_records"], "provenance record"))
        if r.get("quarantine"):
            parts.append(counted(r["quarantine"], "rejected line"))
        derived = sum(n for t, n in r.items() if t not in logs)
        if derived:
            parts.append(f"{counted(derived, 'stored result')} (attributions, verdicts, similarities…)")
        runs = f"; runs removed: {', '.join(self.runs)}" if self.runs else ""
        return "removed " + ", ".join(parts) + runs


def _present(cur: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    rows = cur.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal"
    ).fetchall()
    out: dict[str, set[str]] = {}
    for table, column in rows:
        out.setdefault(table, set()).add(column)
    return out


def _delete(cur: duckdb.DuckDBPyConnection, table: str, where: str, params: list) -> int:
    (n,) = cur.execute(f'SELECT count(*) FROM "{table}" WHERE {where}', params).fetchone() or (0,)
    if n:
        cur.execute(f'DELETE FROM "{table}" WHERE {where}', params)
    return int(n)


def _remove_runs(cur: duckdb.DuckDBPyConnection, runs: list[str], out: Removed) -> None:
    present = _present(cur)
    for table in run_tables():
        cols = [c for c in table.run_columns if c in present.get(table.name, set())]
        if not cols:
            continue
        where = " OR ".join(f'"{c}" IN (SELECT unnest(?::VARCHAR[]))' for c in cols)
        n = _delete(cur, table.name, where, [runs] * len(cols))
        out.rows[table.name] = out.rows.get(table.name, 0) + n
    out.runs += [r for r in runs if r not in out.runs]
    # what loads said about a removed run's query or document ids ("3 queries of run 'x' took their ids from …")
    named = (
        "file_id IS NULL AND code IN ('query-ids', 'doc-ids') "
        "AND len(list_filter(?::VARCHAR[], lambda s: contains(message, s))) > 0"
    )
    n = _delete(cur, "ingest_warnings", named, [[f" of run {r!r} " for r in runs]])
    out.rows["ingest_warnings"] = out.rows.get("ingest_warnings", 0) + n


def _transaction(con: duckdb.DuckDBPyConnection, work: Callable[[duckdb.DuckDBPyConnection, Removed], None]) -> Removed:
    with transaction(con) as cur:
        out = Removed()
        work(cur, out)
        bump_data_version(cur)
        _reword_workspace(cur)
    return out


def _reword_workspace(cur: duckdb.DuckDBPyConnection) -> None:
    """The warnings about the whole database (no file) as the ingest words them, for what the
    removal left: a removed file's coverage gap or id collision is no longer warned about."""
    drop_workspace_warnings(cur)
    rows = [(None, None, None, code, m, WARNING) for code, m in workspace_warnings(cur)]
    if rows:
        insert_rows(cur, "ingest_warnings", rows, WARNING_SCHEMA)


def remove_runs(con: duckdb.DuckDBPyConnection, runs: list[str]) -> Removed:
    """Delete ``runs`` and every row derived from them (see the module's rules), in one transaction."""
    known = {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()}
    known |= {r for (r,) in con.execute("SELECT DISTINCT run_id FROM prov_records").fetchall()}
    missing = [r for r in runs if r not in known]
    if missing:
        raise RemovalError(f"no run named {missing[0]!r} is loaded; loaded runs: {', '.join(sorted(known)[:10])}")
    return _transaction(con, lambda cur, out: _remove_runs_and_emptied_files(cur, list(runs), out))


def _remove_runs_and_emptied_files(cur: duckdb.DuckDBPyConnection, runs: list[str], out: Removed) -> None:
    """The runs, then each file they emptied — every record and provenance record it loaded was of
    these runs — with its rejected lines, warnings and ledger row: a file left in the ledger with
    nothing loaded would be skipped as already loaded if given again, so the run could not be loaded
    back from it. A file that keeps another run's records stays (load it again by removing it)."""
    files = """SELECT DISTINCT file_id FROM records WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
               UNION SELECT DISTINCT file_id FROM prov_records WHERE run_id IN (SELECT unnest(?::VARCHAR[]))"""
    cur.execute(f"CREATE OR REPLACE TEMP TABLE _touched AS {files}", [runs, runs])
    _remove_runs(cur, runs, out)
    emptied = """f.file_id IN (SELECT file_id FROM _touched)
                 AND NOT EXISTS (SELECT 1 FROM records r WHERE r.file_id = f.file_id)
                 AND NOT EXISTS (SELECT 1 FROM prov_records p WHERE p.file_id = f.file_id)"""
    cur.execute(f"CREATE OR REPLACE TEMP TABLE _emptied AS SELECT f.file_id FROM files f WHERE {emptied}")
    for table in ("quarantine", "ingest_warnings", "files"):
        n = _delete(cur, table, "file_id IN (SELECT file_id FROM _emptied)", [])
        out.rows[table] = out.rows.get(table, 0) + n
    for temp in ("_touched", "_emptied"):
        cur.execute(f"DROP TABLE {temp}")


def remove_file(con: duckdb.DuckDBPyConnection, file_id: int) -> Removed:
    """Delete what file ``file_id`` loaded and every row derived from it (see the module's rules),
    in one transaction."""
    if not con.execute("SELECT 1 FROM files WHERE file_id = ?", [file_id]).fetchall():
        raise RemovalError(f"no loaded file has id {file_id}; the home page's Files table lists them")
    return _transaction(con, lambda cur, out: _remove_file(cur, file_id, out))


def _keyed(table: str, gone: str) -> str:
    """Rows of ``table`` whose (run, query) is in the temporary table ``gone``."""
    return f'EXISTS (SELECT 1 FROM {gone} g WHERE g.run_id = "{table}".run_id AND g.query_id = "{table}".query_id)'


def _remove_file(cur: duckdb.DuckDBPyConnection, file_id: int, out: Removed) -> None:
    cur.execute(
        "CREATE OR REPLACE TEMP TABLE _gone_rec AS SELECT run_id, query_id FROM records WHERE file_id = ?", [file_id]
    )
    cur.execute(
        "CREATE OR REPLACE TEMP TABLE _gone_prov AS SELECT run_id, query_id FROM prov_records WHERE file_id = ?",
        [file_id],
    )
    cur.execute("CREATE OR REPLACE TEMP TABLE _gone AS SELECT * FROM _gone_rec UNION SELECT * FROM _gone_prov")
    touched = [r for (r,) in cur.execute("SELECT DISTINCT run_id FROM _gone").fetchall()]
    out.rows["evidence"] = _delete(cur, "evidence", _keyed("evidence", "_gone_rec"), [])
    out.rows["prov_nodes"] = _delete(cur, "prov_nodes", _keyed("prov_nodes", "_gone_prov"), [])
    for table in ("records", "prov_records", "quarantine", "ingest_warnings", "files"):
        out.rows[table] = _delete(cur, table, "file_id = ?", [file_id])
    # the touched runs left with no record (one anti-join: a log naming a run per record touches
    # as many runs as it has records, and a query per run scanned what other files left)
    kept = {
        r
        for (r,) in cur.execute(
            """SELECT DISTINCT run_id FROM records WHERE run_id IN (SELECT run_id FROM _gone)
           UNION SELECT DISTINCT run_id FROM prov_records WHERE run_id IN (SELECT run_id FROM _gone)"""
        ).fetchall()
    }
    empty = [r for r in touched if r not in kept]
    if empty:
        _remove_runs(cur, empty, out)
    present = _present(cur)
    for t in run_tables():  # results of the removed queries in runs that stay
        if t.name in ("records", "evidence", "prov_records", "prov_nodes"):
            continue
        if {"run_id", "query_id"} <= present.get(t.name, set()):
            n = _delete(cur, t.name, _keyed(t.name, "_gone"), [])
            out.rows[t.name] = out.rows.get(t.name, 0) + n
    for temp in ("_gone", "_gone_rec", "_gone_prov"):
        cur.execute(f"DROP TABLE {temp}")

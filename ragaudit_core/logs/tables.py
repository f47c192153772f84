"""Every table that holds run data, registered once: what it holds and which columns name a run.

Clearing the data (:func:`ragaudit_core.logs.store.clear_data`) empties every registered table, so
no result outlives the logs it came from (a verdict, a job, an attribution of a run that was
cleared and loaded again under the same id). A table a package creates for its results is added
here by name; its schema stays with the package that owns it (the spine imports no metric). A test
lists a database's tables after every feature has run and fails on any it does not find here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SETTINGS_TABLES", "TABLES", "Table", "register", "run_tables"]


@dataclass(frozen=True)
class Table:
    """A table of run data: ``run_columns`` name the run(s) a row belongs to (empty: rows of no
    single run, cleared only with everything)."""

    name: str
    holds: str
    run_columns: tuple[str, ...]
    owner: str  # the module whose schema creates it


TABLES: dict[str, Table] = {}


def register(table: Table) -> Table:
    TABLES[table.name] = table
    return table


for _t in (
    Table("files", "ingested input files (SHA-256, counts)", (), "ragaudit_core.logs.store"),
    Table("runs", "runs and their configurations", ("run_id",), "ragaudit_core.logs.store"),
    Table("records", "evidence records, one per (run, query)", ("run_id",), "ragaudit_core.logs.store"),
    Table("evidence", "evidence entries in rank order", ("run_id",), "ragaudit_core.logs.store"),
    Table("prov_records", "provenance records, one per (run, query)", ("run_id",), "ragaudit_core.logs.store"),
    Table("prov_nodes", "provenance graph nodes", ("run_id",), "ragaudit_core.logs.store"),
    Table("quarantine", "rejected lines, verbatim", (), "ragaudit_core.logs.store"),
    Table("ingest_warnings", "non-fatal ingest findings", (), "ragaudit_core.logs.store"),
    Table("qrels", "relevance labels", (), "ragaudit_core.logs.store"),
    Table(
        "derived_answer_similarity",
        "answer similarities of run pairs (the probe)",
        ("run_a", "run_b"),
        "ragaudit_core.logs.store",
    ),
    Table("derived_results", "cached stability results by data version", (), "ragaudit_core.logs.store"),
    Table("attributions", "attribution results", ("run_id",), "ragaudit_core.attribution.storage"),
    Table("judge_verdicts", "citation judges' verdicts", ("run_id",), "ragaudit_core.fidelity.judging"),
    # databases from before the queue moved beside the file (jobs.queue.queue_file) hold a jobs table
    Table("jobs", "model jobs of an older database (now in the queue file)", ("run_id",), "ragaudit_core.jobs.queue"),
):
    register(_t)

SETTINGS_TABLES = frozenset({"meta"})
"""Tables that hold settings, not run data (the schema version, the identity options …)."""


def run_tables() -> list[Table]:
    """The registered tables, in registration order."""
    return list(TABLES.values())

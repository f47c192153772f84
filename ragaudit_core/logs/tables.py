"""Every table that holds run data, registered once: what it holds and which columns name a run.

Clearing the data (:func:`ragaudit_core.logs.store.clear_data`) empties every registered table, so
no result outlives the logs it came from (a verdict, a job, an attribution of a run that was
cleared and loaded again under the same id). A table a package creates for its results is added
here by name; its schema stays with the package that owns it (the spine imports no metric). A test
lists a database's tables after every feature has run and fails on any it does not find here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SCHEMA_SQL", "SETTINGS_TABLES", "TABLES", "Table", "register", "run_tables"]


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

SCHEMA_SQL = """
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
    options     VARCHAR,
    formats     VARCHAR
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
    n_evidence INTEGER NOT NULL
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
    n_nodes        INTEGER NOT NULL
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
    source     VARCHAR NOT NULL
);
CREATE TABLE IF NOT EXISTS ingest_warnings (
    file_id INTEGER,
    path    VARCHAR,
    line_no INTEGER,
    code    VARCHAR NOT NULL,
    message VARCHAR NOT NULL,
    kind    VARCHAR  -- 'warning' or 'note' (NULL: kept before the kind was: read as a warning)
);
"""
"""The spine's tables (those :mod:`ragaudit_core.logs.store` owns), declared once: the database
is created from it (:mod:`.schema`) and the ingest's Arrow rows are typed from it
(:func:`ragaudit_core.logs.writer.arrow_schema`)."""

SETTINGS_TABLES = frozenset({"meta"})
"""Tables that hold settings, not run data (the schema version, the identity options …)."""


def run_tables() -> list[Table]:
    """The registered tables, in registration order."""
    return list(TABLES.values())

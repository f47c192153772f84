"""What is loaded: runs, queries, files, rejected lines and warnings, as data frames.

The dashboard's home page and every page's precondition check ask these questions.
Every function opens its own cursor, so one cached connection serves many sessions.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd

from ragaudit_core.logs import derived
from ragaudit_core.logs.coverage import coverage_gaps, coverage_warnings
from ragaudit_core.logs.selection import natural_key, natural_sorted

__all__ = [
    "SAMPLE_BASE_RUN",
    "all_run_ids",
    "answered_runs",
    "collisions",
    "coverage_gaps",
    "coverage_warnings",
    "default_pair",
    "distinct_query_count",
    "evidence_run_ids",
    "files_ledger",
    "files_table",
    "list_queries",
    "missing_data_message",
    "missing_provenance_message",
    "missing_text_message",
    "overview",
    "preferred_run",
    "provenance_runs_table",
    "quarantine_table",
    "query_ids",
    "query_text",
    "runs_table",
    "runs_with_texts",
    "sample_logs_dir",
    "text_id_runs",
    "uploads_dir",
    "warnings_table",
    "workspace_warnings",
]


def _q(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pd.DataFrame:
    cur = con.cursor()
    try:
        return cur.execute(sql, params or []).df()
    finally:
        cur.close()


SAMPLE_BASE_RUN = "k10-c256-o32"
"""The sample logs' base configuration (top-k 10, chunks of 256 word pieces, overlap 32):
the anchor the pages, the probe and the report open on when it is loaded."""


def preferred_run(runs: list[str]) -> str:
    """:data:`SAMPLE_BASE_RUN` when it is among ``runs``, else the first run."""
    return SAMPLE_BASE_RUN if SAMPLE_BASE_RUN in runs else runs[0]


def sample_logs_dir() -> Path | None:
    """The bundled sample logs (``sample_logs/scifact`` beside the package), if present."""
    root = Path(__file__).resolve().parents[2] / "sample_logs" / "scifact"
    return root if root.is_dir() and any(root.glob("*.jsonl*")) else None


def overview(con: duckdb.DuckDBPyConnection) -> dict:
    """Counts of what is loaded (all zero on an empty database); ``rejected`` counts the
    quarantine's rows, ``refused`` those of them that are whole files (no line); ``warnings``
    every sentence the loads kept, ``notes`` those of them that are notes."""
    row = _q(
        con,
        """
        SELECT (SELECT count(*) FROM runs) AS runs,
               (SELECT count(DISTINCT query_id) FROM records) AS queries,
               (SELECT count(*) FROM records) AS records,
               (SELECT count(*) FROM evidence) AS entries,
               (SELECT count(*) FROM records WHERE answer IS NOT NULL) AS answers,
               (SELECT count(*) FROM prov_records) AS provenance,
               (SELECT count(*) FROM files) AS files,
               (SELECT count(*) FROM quarantine) AS rejected,
               (SELECT count(*) FROM quarantine WHERE line_no IS NULL) AS refused,
               (SELECT count(*) FROM ingest_warnings) AS warnings,
               (SELECT count(*) FROM ingest_warnings WHERE kind = 'note') AS notes""",
    ).iloc[0]
    return {k: int(v) for k, v in row.items()}


def missing_data_message(con: duckdb.DuckDBPyConnection, *, min_runs: int = 1) -> str | None:
    """Why a page cannot show anything yet (and what to do), or None when it can."""
    n = overview(con)["runs"]
    if n == 0:
        return "No logs are loaded yet. Open the home page to upload evidence logs or to open the bundled sample logs."
    if n < min_runs:
        return (
            f"This view compares runs and needs at least {min_runs}; {n} {'is' if n == 1 else 'are'} loaded. Load "
            "the logs of another retrieval configuration on the home page."
        )
    return None


def missing_provenance_message(con: duckdb.DuckDBPyConnection) -> str | None:
    """Why the citation-fidelity view is empty (and what to do), or None."""
    n = int(_q(con, "SELECT count(*) AS n FROM prov_records")["n"][0])
    if n == 0:
        return (
            'No provenance logs are loaded. Upload provenance records (JSONL with a "nodes" list per query; '
            "see docs/provenance-contract.md) on the home page, or open the bundled sample logs, which "
            "include provenance for two configurations."
        )
    return None


@derived.at_ingest("catalog.runs_with_texts")
@derived.memoized("catalog.runs_with_texts/1", derived.JSON)
def runs_with_texts(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs whose logs carry document texts and query texts (what attributions need)."""
    return _q(
        con,
        """SELECT DISTINCT e.run_id FROM evidence e JOIN records r USING (run_id, query_id)
                      WHERE e.text IS NOT NULL AND r.query IS NOT NULL ORDER BY e.run_id""",
    )["run_id"].tolist()


def missing_text_message(con: duckdb.DuckDBPyConnection) -> str | None:
    """Why attributions cannot be computed on the loaded logs (and what to do), or None."""
    if overview(con)["runs"] == 0:
        return "No logs are loaded yet. Open the home page to upload evidence logs or to open the bundled sample logs."
    if not runs_with_texts(con):
        return (
            "The loaded logs carry no document texts (or no query texts): attributions re-run the retriever "
            'and the generator on them. Load logs whose evidence entries have a "text" and whose records '
            'have a "query", such as the bundled sample logs.'
        )
    return None


def runs_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per run, the latest load's first and each load's in natural order (k5 < k10 < k20):
    its configuration parameters, what it holds and its files' names."""
    return _q(
        con,
        """
        WITH rec AS (
          SELECT run_id, count(*) AS queries, sum(n_evidence) AS entries,
                 avg(n_evidence) AS mean_entries, count(answer) AS answers,
                 list(DISTINCT file_id) AS file_ids
          FROM records GROUP BY run_id)
        SELECT r.run_id, r.top_k, r.chunk_size, r.chunk_overlap, r.embedder,
               coalesce(rec.queries, 0) AS queries, coalesce(rec.entries, 0)::BIGINT AS entries,
               rec.mean_entries, coalesce(rec.answers, 0) AS answers,
               (SELECT list(f.path ORDER BY f.path) FROM files f
                WHERE list_contains(rec.file_ids, f.file_id)) AS files,
               (SELECT max(f.ingested_at) FROM files f WHERE list_contains(rec.file_ids, f.file_id)) AS _loaded,
               r.config
        FROM runs r LEFT JOIN rec USING (run_id)""",
    ).pipe(_newest_load_first)


def _newest_load_first(d: pd.DataFrame) -> pd.DataFrame:
    """Runs of the latest load first (an upload is seen without scrolling), each load's runs in
    natural order; file names without their folders."""
    d = d.sort_values("run_id", key=lambda ids: ids.map(natural_key), kind="stable", ignore_index=True)
    d = d.sort_values("_loaded", ascending=False, kind="stable", na_position="last", ignore_index=True)
    d["files"] = [", ".join(Path(p).name for p in fs) if fs is not None else None for fs in d["files"]]
    return d.drop(columns=["_loaded"])


def provenance_runs_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per provenance run: queries, queries with ground truth, and its logged configuration."""
    return _q(
        con,
        """
        SELECT run_id, count(*) AS queries,
               count(*) FILTER (WHERE ground_truth IS NOT NULL AND ground_truth NOT IN ('[]', 'null'))
                   AS with_ground_truth,
               any_value(config) AS config
        FROM prov_records GROUP BY run_id ORDER BY run_id""",
    )


def all_run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every run id the database knows: evidence runs and provenance runs."""
    return [
        r
        for (r,) in _q(
            con,
            """SELECT run_id FROM runs UNION SELECT DISTINCT run_id FROM prov_records
                                      ORDER BY run_id""",
        ).itertuples(index=False)
    ]


def evidence_run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs with evidence logs, in id order."""
    return [r for (r,) in _q(con, "SELECT run_id FROM runs ORDER BY run_id").itertuples(index=False)]


def answered_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs whose evidence logs carry at least one answer, in id order."""
    return [
        r
        for (r,) in _q(con, "SELECT DISTINCT run_id FROM records WHERE answer IS NOT NULL ORDER BY run_id").itertuples(
            index=False
        )
    ]


def query_ids(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The query ids a run logged evidence for, in id order (empty for an unknown run)."""
    return [
        q
        for (q,) in _q(
            con, "SELECT DISTINCT query_id FROM records WHERE run_id = ? ORDER BY query_id", [run_id]
        ).itertuples(index=False)
    ]


def query_text(con: duckdb.DuckDBPyConnection, query_id: str, runs: list[str]) -> str | None:
    """The query's text as one of ``runs`` logged it (None when none did)."""
    cur = con.cursor()
    try:
        return cur.execute(
            "SELECT any_value(query) FROM records WHERE query_id = ? AND list_contains(?, run_id)",
            [query_id, list(runs)],
        ).fetchall()[0][0]
    finally:
        cur.close()


def distinct_query_count(con: duckdb.DuckDBPyConnection) -> int:
    """Distinct query ids over evidence and provenance records."""
    cur = con.cursor()
    try:
        return int(
            cur.execute("""SELECT count(*) FROM (SELECT query_id FROM records UNION
                                                        SELECT query_id FROM prov_records)""").fetchall()[0][0]
        )
    finally:
        cur.close()


def files_ledger(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per loaded file, newest first: the format(s) it was read as, what it holds
    (evidence, provenance or both), its runs, records and provenance records, rejected lines and
    warnings (its notes left out) — counts from the stored rows, so they agree with the rest of the
    page. Columns: file_id, file (the name as uploaded), read_as, kind, runs, records, provenance,
    rejected, warnings, ingested_at."""
    return _q(
        con,
        """
        WITH rec AS (SELECT file_id, run_id, count(*) AS n FROM records GROUP BY ALL),
        prov AS (SELECT file_id, run_id, count(*) AS n FROM prov_records GROUP BY ALL),
        runs_of AS (
            SELECT file_id, string_agg(DISTINCT run_id, ', ' ORDER BY run_id) AS runs
            FROM (SELECT file_id, run_id FROM rec UNION SELECT file_id, run_id FROM prov) GROUP BY file_id),
        warn AS (SELECT file_id, count(*) AS n FROM ingest_warnings
                 WHERE kind IS DISTINCT FROM 'note' GROUP BY file_id),
        quar AS (SELECT file_id, count(*) AS n FROM quarantine GROUP BY file_id)
        SELECT f.file_id, f.path AS file, coalesce(f.formats, '') AS read_as, f.kind, coalesce(r.runs, '') AS runs,
               coalesce((SELECT sum(n) FROM rec WHERE rec.file_id = f.file_id), 0)::BIGINT AS records,
               coalesce((SELECT sum(n) FROM prov WHERE prov.file_id = f.file_id), 0)::BIGINT AS provenance,
               coalesce(q.n, 0)::BIGINT AS rejected, coalesce(w.n, 0)::BIGINT AS warnings, f.ingested_at
        FROM files f LEFT JOIN runs_of r USING (file_id) LEFT JOIN warn w USING (file_id)
             LEFT JOIN quar q USING (file_id)
        ORDER BY f.file_id DESC""",
    ).assign(file=lambda d: d["file"].map(lambda p: Path(p).name))


def files_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return _q(
        con,
        """SELECT path, sha256, bytes, n_lines, n_loaded, n_rejected, ingested_at
                      FROM files ORDER BY file_id""",
    )


def quarantine_table(con: duckdb.DuckDBPyConnection, limit: int | None = None) -> pd.DataFrame:
    """Every rejected line: file, line number, reason, and the line verbatim (as text); a file
    refused as a whole has a row without line number or line.

    Lines that were not valid UTF-8 are kept as bytes; they are shown decoded with
    replacement characters.
    """
    df = _q(
        con,
        "SELECT path, line_no, reason, raw, raw_bytes FROM quarantine ORDER BY path, line_no"
        + (f" LIMIT {int(limit)}" if limit else ""),
    )
    if len(df):
        df["raw"] = [_raw_text(r, b) for r, b in zip(df["raw"], df["raw_bytes"])]
    return df.drop(columns=["raw_bytes"])


def _raw_text(raw: object, raw_bytes: object) -> str | None:
    """A rejected line as text: as kept, or its bytes decoded with replacement characters; None
    for a whole file refused (no line: both are missing, which pandas reads as ``NA``)."""
    if isinstance(raw, str):
        return raw
    if isinstance(raw_bytes, (bytes, bytearray, memoryview)):
        return bytes(raw_bytes).decode("utf-8", "replace")
    return None


def warnings_table(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every sentence the loads kept: its kind (``warning``: something to look into; ``note``: what
    was done as asked — a row kept before the kind was stored reads as a warning), the file and line
    it is about (none: the database), its code and message."""
    return _q(
        con,
        "SELECT coalesce(kind, 'warning') AS kind, path, line_no, code, message FROM ingest_warnings "
        "ORDER BY path NULLS LAST, line_no",
    )


def list_queries(
    con: duckdb.DuckDBPyConnection, search: str = "", limit: int = 500, *, run: str | None = None
) -> pd.DataFrame:
    """Queries whose id equals, or whose id or text contains, ``search`` (case-insensitive);
    with ``run``, only that run's queries (a picker never offers a query its run lacks).

    Exact id matches come first; then by id. Columns: query_id, query, runs (how many
    runs logged it).
    """
    pattern = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return _q(
        con,
        """
        SELECT query_id, any_value(query) FILTER (WHERE query IS NOT NULL) AS query, count(*) AS runs
        FROM records
        WHERE (? = '' OR query_id ILIKE ? ESCAPE '\\' OR query ILIKE ? ESCAPE '\\')
          AND (?::VARCHAR IS NULL OR query_id IN (SELECT query_id FROM records WHERE run_id = ?))
        GROUP BY query_id
        ORDER BY (query_id = ?) DESC, query_id
        LIMIT ?""",
        [search, pattern, pattern, run, run, search, int(limit)],
    )


_PAIR: derived.Codec[tuple[str, str] | None] = derived.Codec(
    lambda p: json.dumps(p).encode(), lambda b: (lambda v: None if v is None else (v[0], v[1]))(json.loads(b))
)


@derived.memoized("catalog.default_pair/2", _PAIR)  # 2: never a pair mixing text ids with real ones
def default_pair(con: duckdb.DuckDBPyConnection, runs: list[str]) -> tuple[str, str] | None:
    """The pair of ``runs`` a comparison opens on: among pairs sharing at least half as many
    queries as the best-sharing pair, the one whose runs carry the most of answers and provenance
    (each present on each side counts 1: fidelity rules and the answer probe then apply), then the
    one sharing the most queries, then natural run order. The baseline is the sample's base run
    when it is one of the two. Never a pair of a run that logged no document ids (:func:`text_id_runs`)
    and one that did: J is 0 there by how they were logged. None when no other two runs share a query."""
    if len(runs) < 2:
        return None
    order = _pair_candidates(con, natural_sorted(runs))
    rows = con.execute(  # chosen in the database: a run per record makes millions of sharing pairs
        """
        WITH o AS (SELECT unnest(?::VARCHAR[]) AS run_id, generate_subscripts(?::VARCHAR[], 1) AS pos),
        r AS (SELECT run_id, query_id FROM records WHERE run_id IN (SELECT run_id FROM o)),
        shared AS (
            SELECT a.run_id AS a, b.run_id AS b, count(*) AS n
            FROM r a JOIN r b ON a.query_id = b.query_id AND a.run_id < b.run_id
            WHERE list_contains(?::VARCHAR[], a.run_id) = list_contains(?::VARCHAR[], b.run_id)
            GROUP BY ALL),
        rich AS (
            SELECT run_id, (count(answer) > 0)::INT
                + (run_id IN (SELECT run_id FROM prov_records))::INT AS richness
            FROM records WHERE run_id IN (SELECT run_id FROM o) GROUP BY run_id),
        cand AS (
            SELECT s.a, s.b, s.n, ra.richness + rb.richness AS richness, max(s.n) OVER () AS most
            FROM shared s JOIN rich ra ON ra.run_id = s.a JOIN rich rb ON rb.run_id = s.b)
        SELECT c.a, c.b FROM cand c JOIN o oa ON oa.run_id = c.a JOIN o ob ON ob.run_id = c.b
        WHERE 2 * c.n >= c.most
        ORDER BY c.richness DESC, c.n DESC, least(oa.pos, ob.pos), greatest(oa.pos, ob.pos)
        LIMIT 1""",
        [order, order, *[text_id_runs(con)] * 2],
    ).fetchall()
    if not rows:
        return None
    (a, b), pos = rows[0], {r: i for i, r in enumerate(order)}
    a, b = sorted((a, b), key=pos.__getitem__)
    return (b, a) if b == SAMPLE_BASE_RUN else (a, b)


PAIR_CANDIDATES = 300
"""Runs :func:`default_pair` looks among, at most: the pairs are a self-join of the runs' queries,
quadratic in runs — a log naming a run per record (10,000 runs asking one question) made 50M pairs,
and the join grew past 10 GB. Past it, the runs logging the most records are kept (ties in natural
order), where the pair sharing the most queries is."""


def _pair_candidates(con: duckdb.DuckDBPyConnection, order: list[str]) -> list[str]:
    """``order`` (natural order), or its :data:`PAIR_CANDIDATES` runs logging the most records."""
    if len(order) <= PAIR_CANDIDATES:
        return order
    sizes = dict(
        con.execute(
            "SELECT run_id, count(*) FROM records WHERE run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY run_id",
            [order],
        ).fetchall()
    )
    pos = {r: i for i, r in enumerate(order)}
    kept = set(sorted(order, key=lambda r: (-sizes.get(r, 0), pos[r]))[:PAIR_CANDIDATES])
    return [r for r in order if r in kept]


def uploads_dir(db_path: str | Path) -> Path:
    """Where uploaded files are kept: beside the database file (``<db>.uploads/``)."""
    p = Path(db_path)
    return p.with_name(p.name + ".uploads")


_COLLIDING = """
SELECT doc_id, list(DISTINCT doc_id_raw ORDER BY doc_id_raw) AS raws FROM evidence
WHERE {where} AND doc_id IN (SELECT doc_id FROM evidence WHERE doc_id_raw <> doc_id AND {where})
GROUP BY doc_id HAVING count(DISTINCT doc_id_raw) > 1 ORDER BY doc_id LIMIT $n
"""
"""The (canonical) document ids several different raw ids map to, with those raw ids. Only an id
that some entry logged differently can be one (of two different raw ids at most one is the
canonical id itself), so only the entries of those ids are grouped (every entry of such an id):
logs whose ids are already canonical are scanned once and not grouped (1M entries: 0.07 s →
0.02 s); logs whose ids mostly differ from their canonical form gain nothing."""


def workspace_warnings(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """The warnings about the whole database as it stands (stored with no file), as (code, message):
    canonical-id collisions and query coverage. A load and a removal word them again, after
    :func:`~ragaudit_core.logs.writer.drop_workspace_warnings`."""
    return [("collision", m) for m in collisions(con)] + [("coverage", m) for m in coverage_warnings(con)]


def collisions(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[str]:
    """Canonicalisation collisions: canonical ids that several different raw ids map to
    (:data:`_COLLIDING`)."""
    rows = con.execute(_COLLIDING.format(where="TRUE"), {"n": limit + 1}).fetchall()
    if not rows:
        return []
    shown = rows[:limit]
    msgs = [f"{len(r[1])} raw ids map to the canonical id {r[0]!r}: " + ", ".join(repr(x) for x in r[1]) for r in shown]
    if len(rows) > limit:
        msgs.append("more canonical-id collisions exist; query the evidence table for the full list")
    return msgs


@derived.at_ingest("catalog.span_capable_runs")
@derived.memoized("catalog.span_capable_runs/1", derived.JSON)
def span_capable_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs none of whose entries lacks a span hash (span-level metrics apply), in id order."""
    rows = con.execute(
        """SELECT r.run_id FROM runs r
           LEFT JOIN (SELECT run_id, count(*) - count(span_hash) AS n FROM evidence GROUP BY run_id) e USING (run_id)
           WHERE coalesce(e.n, 0) = 0 ORDER BY r.run_id"""
    ).fetchall()
    return [r for (r,) in rows]


@derived.memoized("catalog.text_id_runs/1", derived.JSON)
def text_id_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Runs whose logs named no document: every stored document id is ``text:`` and the hash of
    its passage (:func:`~ragaudit_core.logs.formats.base.evidence_entries`: a Ragas row or a trace
    without ids), in id order. Their documents are no other run's documents by id. Stored per data
    version: callers asking about a few runs intersect it (one stored row, not one per question)."""
    rows = con.execute(
        "SELECT run_id FROM evidence GROUP BY run_id HAVING bool_and(starts_with(doc_id, 'text:')) ORDER BY run_id"
    ).fetchall()
    return [r for (r,) in rows]


def hash_keys_unique(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether no two distinct stored document ids, and no two distinct span hashes, share a value
    of DuckDB's 64-bit ``hash`` — so metrics may compare items by those keys instead of ranking the
    ids (:data:`ragaudit_core.stability.sql.KEYED_CELLS_SQL`). Checked over every entry (a
    collision shows as fewer distinct hashes than ids), once per data version and DuckDB version
    (the hash function may change between versions); computed at ingest."""
    return _hash_keys_unique(con, duckdb.__version__)


@derived.memoized("catalog.hash_keys_unique/1", derived.JSON)
def _hash_keys_unique(con: duckdb.DuckDBPyConnection, engine: str) -> bool:
    row = con.execute(  # each id hashed once, not once per entry (0.19 -> 0.08 s at 1M entries)
        """WITH d AS (SELECT DISTINCT doc_id AS v FROM evidence), s AS (SELECT DISTINCT span_hash AS v FROM evidence
                WHERE span_hash IS NOT NULL) SELECT (SELECT count(v) = count(DISTINCT hash(v)) FROM d)
              AND (SELECT count(v) = count(DISTINCT hash(v)) FROM s)"""
    ).fetchall()
    return bool(row[0][0])


derived.at_ingest("catalog.hash_keys_unique")(hash_keys_unique)


@derived.memoized("catalog.raw_id_collisions/1", derived.JSON)
def raw_id_collisions(con: duckdb.DuckDBPyConnection, runs: list[str], limit: int = 20) -> list[list]:
    """Among ``runs``' entries, the stored (canonical) document ids that several different raw ids
    map to, as ``[canonical, [raw, …]]`` in id order, at most ``limit`` (:data:`_COLLIDING`, once
    per data version and run set)."""
    rows = con.execute(
        _COLLIDING.format(where="list_contains($runs::VARCHAR[], run_id)"), {"runs": list(runs), "n": int(limit)}
    ).fetchall()
    return [[c, list(raws)] for c, raws in rows]

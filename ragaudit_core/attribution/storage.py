"""Where attributions are kept: the ``attributions`` table, keyed by what defines a result.

A result's key is a hash of (run, query, retriever, generator, method, parameters, condition) —
not of the device it ran on — so a repeated request is served from here. Also: the query and
documents a job reads from the logs, and the paper's section-5 tables over a run's results.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import duckdb
import pandas as pd

from ragaudit_core.attribution.result import AttributionResult
from ragaudit_core.attribution.uncertainty import figure_intervals
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store

__all__ = [
    "ATTRIBUTIONS_SCHEMA",
    "AttributionError",
    "batch_state",
    "batch_tables",
    "query_documents",
    "result_key",
    "store_payloads",
    "stored_attribution",
    "stored_payloads",
    "stored_results",
]

ATTRIBUTIONS_SCHEMA = """
CREATE TABLE IF NOT EXISTS attributions (
    key        VARCHAR PRIMARY KEY,
    run_id     VARCHAR NOT NULL,
    query_id   VARCHAR NOT NULL,
    retriever  VARCHAR NOT NULL,
    generator  VARCHAR NOT NULL,
    method     VARCHAR NOT NULL,
    params     VARCHAR NOT NULL,
    condition  VARCHAR NOT NULL,
    wasted_retrieval  BOOLEAN,
    noise_distraction BOOLEAN,
    spearman   DOUBLE,
    payload    VARCHAR NOT NULL,
    created_at TIMESTAMP
)
"""


class AttributionError(RagAuditError, ValueError):
    """The request cannot be served (the message says why)."""


def _ensure(con: duckdb.DuckDBPyConnection) -> bool:
    """The table made when missing; False on a read-only database that never stored an attribution."""
    return store.made_on_first_use(con, ATTRIBUTIONS_SCHEMA, "attributions")


def query_documents(
    con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, max_docs: int
) -> tuple[str, list[tuple[str, str]]]:
    """(query text, [(doc_id, text)]) in logged order; entries without text are skipped."""
    cur = con.cursor()
    try:
        rec = cur.execute("SELECT query FROM records WHERE run_id = ? AND query_id = ?", [run_id, query_id]).fetchall()
        if not rec:
            raise AttributionError(f"run {run_id!r} has no query {query_id!r}")
        if not rec[0][0]:
            raise AttributionError(f"run {run_id!r}, query {query_id!r}: the log has no query text to explain")
        docs = cur.execute(
            """SELECT doc_id, text FROM evidence WHERE run_id = ? AND query_id = ? AND text IS NOT NULL
               ORDER BY position LIMIT ?""",
            [run_id, query_id, max_docs],
        ).fetchall()
    finally:
        cur.close()
    if not docs:
        raise AttributionError(
            f"run {run_id!r}, query {query_id!r}: no evidence entry carries text; attributions "
            "need the document texts in the log"
        )
    return rec[0][0], [(d, t) for d, t in docs]


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def stored_attribution(con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, **filters: object) -> list[dict]:
    """Stored results for a query (each: the key columns and the decoded payload)."""
    if not _ensure(con):
        return []
    cur = con.cursor()
    try:
        rows = cur.execute(
            """SELECT retriever, generator, method, params, condition, payload FROM attributions
               WHERE run_id = ? AND query_id = ? ORDER BY created_at""",
            [run_id, query_id],
        ).fetchall()
    finally:
        cur.close()
    out = []
    for retr, gen, method, params, cond, payload in rows:
        rec = {
            "retriever": retr,
            "generator": gen,
            "method": method,
            "params": json.loads(params),
            "condition": cond,
            **json.loads(payload),
        }
        if all(rec.get(k) == v for k, v in filters.items()):
            out.append(rec)
    return out


def result_key(
    run_id: str, query_id: str, retriever: str, generator: str, method: str, params: dict, condition: str
) -> str:
    """The stored result's key: a hash of what defines it (not the device it ran on)."""
    return _key(
        {
            "run": run_id,
            "query": query_id,
            "retriever": retriever,
            "generator": generator,
            "method": method,
            "params": params,
            "condition": condition,
        }
    )


def stored_payloads(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> dict[str, dict]:
    """The stored payloads among ``keys`` (key → payload)."""
    if not _ensure(con):
        return {}
    cur = con.cursor()
    try:
        return {
            k: json.loads(p)
            for k, p in cur.execute(
                "SELECT key, payload FROM attributions WHERE list_contains(?, key)", [list(keys)]
            ).fetchall()
        }
    finally:
        cur.close()


def store_payloads(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple[str, dict, dict]]) -> None:
    """Store results: (key, description {run_id, query_id, retriever, generator, method, params,
    condition}, payload) each; a key stored before is replaced."""
    _ensure(con)
    cur = con.cursor()
    try:
        for key, d, payload in rows:
            cur.execute(
                "INSERT OR REPLACE INTO attributions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                [
                    key,
                    d["run_id"],
                    d["query_id"],
                    d["retriever"],
                    d["generator"],
                    d["method"],
                    json.dumps(d["params"], sort_keys=True),
                    d["condition"],
                    payload["wasted_retrieval"],
                    payload["noise_distraction"],
                    payload["spearman"],
                    json.dumps(payload),
                ],
            )
    finally:
        cur.close()


def stored_results(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> dict[str, AttributionResult]:
    """The stored results among ``keys`` (key → :class:`AttributionResult`)."""
    return {k: AttributionResult.from_json(p) for k, p in stored_payloads(con, keys).items()}


def batch_state(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    """A token that changes whenever a run's stored results change — one stored (or stored again:
    a new ``created_at``) by a worker, which does not bump the data version: with
    :func:`store.data_version` (clears, removals), what a page keys its cached
    :func:`batch_tables` on. ``""`` where no result was ever stored."""
    if not _ensure(con):
        return ""
    cur = con.cursor()
    try:
        n, last = cur.execute(
            "SELECT count(*), max(created_at) FROM attributions WHERE run_id = ?", [run_id]
        ).fetchone() or (0, None)
    finally:
        cur.close()
    return f"{n}:{last}"


def batch_tables(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, pd.DataFrame]:
    """The paper's section-5 tables for a run's stored results, per condition: ``failure`` (the
    failure rates of Table 2 and the mean Spearman), ``warg`` (mean WARG by p, Table 3) and
    ``intervals``, every figure of both with its 95 % interval, one row per (condition, metric)
    (:func:`.uncertainty.figure_intervals`).

    One result per (condition, query): the latest stored — a query explained again with another
    method or other parameters counts once, with its latest explanation, as the deploy gate reads
    it (§5's tables are over queries, not over explanations)."""
    if not _ensure(con):
        return {}
    cur = con.cursor()
    try:
        rows = cur.execute(
            """SELECT condition, method, wasted_retrieval, noise_distraction, spearman, payload FROM attributions
               WHERE run_id = ?
               QUALIFY row_number() OVER (PARTITION BY condition, query_id ORDER BY created_at DESC, rowid DESC) = 1""",
            [run_id],
        ).fetchall()
    finally:
        cur.close()
    if not rows:
        return {}
    recs = []
    for cond, method, wr, nd, sp, payload in rows:
        p = json.loads(payload)
        recs.append(
            {
                "condition": cond,
                "method": method,
                "wasted_retrieval": wr,
                "noise_distraction": nd,
                "spearman": sp,
                **{f"warg_{k}": v for k, v in p["warg"].items()},
            }
        )
    df = pd.DataFrame(recs)
    failure = (
        df.groupby("condition")
        .agg(
            queries=("wasted_retrieval", "size"),
            wasted_retrieval=("wasted_retrieval", "mean"),
            noise_distraction=("noise_distraction", "mean"),
            spearman=("spearman", "mean"),
        )
        .reset_index()
    )
    warg_cols = [c for c in df.columns if c.startswith("warg_")]
    warg = df.groupby("condition")[warg_cols].mean().reset_index()
    return {"failure": failure, "warg": warg, "intervals": figure_intervals(df)}

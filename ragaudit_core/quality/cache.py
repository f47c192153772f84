"""Ranking quality computed once per data version and kept in the database (``derived_results``),
like the stability overview: a page opens on it without scanning the records, a restarted
dashboard or the CLI reads it back. Stored as JSON (never pickle)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import duckdb

from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import store
from ragaudit_core.quality.ranking import DEFAULT_CUTOFFS
from ragaudit_core.quality.summary import QualityResult, compute_quality

__all__ = ["has_labels", "quality_cached"]


def has_labels(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether any relevance label is loaded."""
    cur = con.cursor()
    try:
        return bool(cur.execute("SELECT count(*) FROM qrels").fetchall()[0][0])
    finally:
        cur.close()


def quality_cached(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    *,
    pairs: Sequence[tuple[str, str]] | None = (),
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    resamples: int = DEFAULT_RESAMPLES,
) -> QualityResult:
    """:func:`compute_quality` (runs, and ``pairs`` — none by default), read from the database
    when stored for this data version. The per-query table is not stored (empty on a read)."""
    version = store.data_version(con)
    blob = json.dumps(
        {"v": version, "runs": list(runs), "pairs": [list(p) for p in pairs or ()], "k": list(cutoffs),
         "b": resamples, "kind": "quality/1"},
        sort_keys=True,
    )  # fmt: skip
    key = hashlib.sha256(blob.encode()).hexdigest()
    cur = con.cursor()
    try:
        rows = cur.execute("SELECT payload FROM derived_results WHERE key = ?", [key]).fetchall()
        if rows:
            return QualityResult.from_json(json.loads(bytes(rows[0][0])))
        res = compute_quality(cur, list(runs), cutoffs=cutoffs, pairs=list(pairs or []), resamples=resamples)
        cur.execute("DELETE FROM derived_results WHERE data_version <> ?", [version])
        cur.execute(
            "INSERT OR REPLACE INTO derived_results VALUES (?, ?, 'quality', ?, now())",
            [key, version, json.dumps(res.to_json()).encode()],
        )
        return res
    finally:
        cur.close()

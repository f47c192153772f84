"""Ranking quality computed once per data version and kept in the database (``derived_results``),
like the stability overview: a page opens on it without scanning the records, a restarted
dashboard or the CLI reads it back. Stored as JSON (never pickle)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import duckdb

from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import derived
from ragaudit_core.quality.ranking import DEFAULT_CUTOFFS
from ragaudit_core.quality.summary import QualityResult, compute_quality
from ragaudit_core.stability.cache import precompute as stability_precompute
from ragaudit_core.stability.cache import precompute_default_pair as stability_default_pair

__all__ = ["has_labels", "precompute", "precompute_default_pair", "quality_cached"]


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
    docid_map: dict[str, str] | None = None,
) -> QualityResult:
    """:func:`compute_quality` (runs, and ``pairs`` — none by default; document ids through
    ``docid_map`` when given), read from the database when stored for this data version. The
    per-query table is not stored (empty on a read)."""
    params: dict = {"runs": list(runs), "pairs": [list(p) for p in pairs or ()], "k": list(cutoffs), "b": resamples}
    if docid_map:  # (a key without a map stays what it was: results stored before are still read)
        params["map"] = sorted(docid_map.items())
    return derived.stored(
        con,
        "quality/2",
        params,
        lambda: compute_quality(
            con, list(runs), cutoffs=cutoffs, pairs=list(pairs or []), resamples=resamples, docid_map=docid_map
        ),
        _QUALITY,
    )


_QUALITY: derived.Codec[QualityResult] = derived.Codec(
    lambda r: json.dumps(r.to_json()).encode(), lambda b: QualityResult.from_json(json.loads(b))
)


@derived.at_ingest("quality.overview")
def precompute(con: duckdb.DuckDBPyConnection) -> QualityResult | None:
    """Store the stability page's quality table: the runs of the stored stability overview."""
    if not has_labels(con):
        return None
    overview = stability_precompute(con)
    return None if overview is None else quality_cached(con, overview.summary.runs)


@derived.at_ingest("quality.default_pair")
def precompute_default_pair(con: duckdb.DuckDBPyConnection) -> QualityResult | None:
    """Store the compare page's quality table for the pair it opens on
    (:func:`ragaudit_core.stability.cache.precompute_default_pair`)."""
    if not has_labels(con):
        return None
    cmp = stability_default_pair(con)
    return (
        None
        if cmp is None
        else quality_cached(con, [cmp.baseline, cmp.candidate], pairs=[(cmp.baseline, cmp.candidate)])
    )

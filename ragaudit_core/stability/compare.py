"""Baseline vs candidate: what a configuration change does to the evidence.

Pair metrics (seed 000, §3) between the two runs at document and span level — ``J_avg``,
flip rate (``J < τ``), collapse rate (``J_span = 0`` with both lists non-empty), null
loss and gain — beside each run's own statistics (null rate, evidence size, distinct
documents) and their deltas; and the per-query list of what flipped or collapsed.
All numbers come from :func:`stability.compute_stability` on the one pair, over the queries
both runs have: they equal the stability page's row for it when the page's runs all have the same
queries, and otherwise differ by the queries only some of them have (the page says so beside the
pair's query list).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pandas as pd

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs.catalog import text_id_runs
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from ragaudit_core.stability.uncertainty import StabilityIntervals

__all__ = [
    "OVERLAP_METRICS",
    "PAIR_METRIC_LABELS",
    "RUN_METRIC_LABELS",
    "CompareResult",
    "CompareSummary",
    "compare_runs",
]

PAIR_METRIC_LABELS = {
    "j_avg": "J_avg",
    "flip_rate": "flip rate (J < τ)",
    "collapse_rate": "collapse rate",
    "null_loss": "null loss (A non-empty → B empty)",
    "null_gain": "null gain (A empty → B non-empty)",
}
"""Pair metrics between the two runs, by key (the ``metric`` column of :attr:`CompareResult.pair`),
with the label a page or report draws for each."""

OVERLAP_METRICS = frozenset({"j_avg", "flip_rate", "collapse_rate"})
"""The pair metrics that read Jaccard between the runs' evidence, so need ids whose meaning the two
runs share (null loss and gain need none: a list is empty or not whatever its ids)."""

RUN_METRIC_LABELS = {
    "null_rate": "null rate",
    "citation_rate": "citation rate (queries with evidence)",
    "mean_evidence": "mean evidence entries",
    "median_evidence": "median evidence entries",
    "mean_docs": "mean distinct documents",
}
"""Each run's own statistics, by key (the ``metric`` column of :attr:`CompareResult.runs`)."""


@dataclass(frozen=True)
class CompareSummary:
    baseline: str
    candidate: str
    tau: float
    level: str  # "span" when both runs carry spans, else "doc": the level flips are read at
    n_queries: int
    n_flipped: int
    n_collapsed: int | None  # None without spans: collapse is defined on spans only
    n_null_changes: int
    n_answered: int  # queries both runs answered
    warnings: list[str]
    # False when one run logged document ids and the other only passage hashes (text:…): J, flips and
    # collapses are 0 / every query by how the two were logged, so a page shows them as n/a
    ids_meet: bool = True


@dataclass
class CompareResult:
    baseline: str
    candidate: str
    pair: pd.DataFrame  # metric (a key of PAIR_METRIC_LABELS), doc, span
    runs: pd.DataFrame  # metric (a key of RUN_METRIC_LABELS), baseline, candidate, delta
    queries: pd.DataFrame  # query_id, query, j_doc, j_span, n_a, n_b, flipped, collapsed, null_change
    summary: CompareSummary
    intervals: StabilityIntervals | None = None  # 95 % bootstrap intervals of the pair's figures

    def pair_value(self, metric: str, level: str) -> float | None:
        """A pair metric at ``doc`` or ``span`` level; None when it is unavailable (no spans)."""
        v = self.pair.set_index("metric").loc[metric, level]
        return None if v is None or v != v else float(v)


def compare_runs(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    candidate: str,
    *,
    tau: float = FLIP_THRESHOLD,
    topk: int | None = None,
    allow_missing: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    docid_map: dict[str, str] | None = None,
) -> CompareResult:
    """Compare ``candidate`` with ``baseline`` over the queries both logged (document ids through
    the alias map ``docid_map``, raw → canonical, when given).

    ``flipped`` marks queries with ``J < τ`` at span level (document level when the
    runs carry no spans); ``collapsed`` marks ``J_span = 0`` with both lists non-empty.
    """
    res = compute_stability(
        con,
        StabilityOptions(
            pairs=[(baseline, candidate)],
            flip_threshold=tau,
            topk=topk,
            allow_missing=allow_missing,
            resamples=resamples,
            docid_map=docid_map or {},
        ),
        keep_cells=True,
    )
    p = res.pairs.set_index("level")
    pair = pd.DataFrame(
        {
            "metric": list(PAIR_METRIC_LABELS),
            "doc": [p.loc["doc", c] if "doc" in p.index else None for c in PAIR_METRIC_LABELS],
            "span": [p.loc["span", c] if "span" in p.index else None for c in PAIR_METRIC_LABELS],
        }
    )
    r = res.runs.set_index("run_id")
    runs = pd.DataFrame(
        {
            "metric": list(RUN_METRIC_LABELS),
            "baseline": [float(r.loc[baseline, c]) for c in RUN_METRIC_LABELS],
            "candidate": [float(r.loc[candidate, c]) for c in RUN_METRIC_LABELS],
        }
    )
    runs["delta"] = runs["candidate"] - runs["baseline"]

    assert res.cells is not None  # keep_cells=True
    cells = res.cells.pivot_table(index="query_id", columns="level", values=["j", "n_a", "n_b", "n_inter"])
    cells.columns = [f"{v}_{lvl}" for v, lvl in cells.columns]
    q = cells.reset_index()
    has_span = "j_span" in q
    level = "span" if has_span else "doc"
    q["j_doc"] = q["j_doc"]
    if not has_span:
        q["j_span"] = pd.NA
    q["n_a"], q["n_b"] = q[f"n_a_{level}"].astype(int), q[f"n_b_{level}"].astype(int)
    q["flipped"] = q[f"j_{level}"] < tau
    q["collapsed"] = (q["n_a"] > 0) & (q["n_b"] > 0) & (q[f"n_inter_{level}"] == 0) if has_span else False
    q["null_change"] = ""
    q.loc[(q["n_a"] > 0) & (q["n_b"] == 0), "null_change"] = "lost all evidence"
    q.loc[(q["n_a"] == 0) & (q["n_b"] > 0), "null_change"] = "gained evidence"
    cur = con.cursor()
    try:
        texts = cur.execute(
            """SELECT a.query_id, coalesce(a.query, b.query) AS query,
                      a.answer IS NOT NULL AND b.answer IS NOT NULL AS both_answered
               FROM records a JOIN records b ON a.query_id = b.query_id
               WHERE a.run_id = ? AND b.run_id = ?""",
            [baseline, candidate],
        ).df()
    finally:
        cur.close()
    q = q.merge(texts, on="query_id", how="left")
    q = q[
        ["query_id", "query", "j_doc", "j_span", "n_a", "n_b", "flipped", "collapsed", "null_change", "both_answered"]
    ]
    q = q.sort_values([f"j_{level}", "j_doc", "query_id"], kind="stable").reset_index(drop=True)
    summary = CompareSummary(
        baseline=baseline,
        candidate=candidate,
        tau=tau,
        level=level,
        n_queries=len(q),
        n_flipped=int(q["flipped"].sum()),
        n_collapsed=int(q["collapsed"].sum()) if has_span else None,
        n_null_changes=int((q["null_change"] != "").sum()),
        n_answered=int(q["both_answered"].sum()),
        warnings=list(res.summary.warnings),
        ids_meet=len({baseline, candidate} & set(text_id_runs(con))) != 1,
    )
    return CompareResult(baseline, candidate, pair, runs, q, summary, res.intervals)

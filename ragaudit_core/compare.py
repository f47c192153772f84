"""Baseline vs candidate: what a configuration change does to the evidence.

Pair metrics (seed 000, §3) between the two runs at document and span level — ``J_avg``,
flip rate (``J < τ``), collapse rate (``J_span = 0`` with both lists non-empty), null
loss and gain — beside each run's own statistics (null rate, evidence size, distinct
documents) and their deltas; and the per-query list of what flipped or collapsed.
All numbers come from :func:`stability.compute_stability` on the one pair, so they
equal the stability page's row for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pandas as pd

from .stability import StabilityOptions, compute_stability

__all__ = ["CompareResult", "compare_runs"]


@dataclass
class CompareResult:
    baseline: str
    candidate: str
    pair: pd.DataFrame        # metric, doc, span
    runs: pd.DataFrame        # metric, baseline, candidate, delta
    queries: pd.DataFrame     # query_id, query, j_doc, j_span, n_a, n_b, flipped, collapsed, null_change
    summary: dict


_PAIR_METRICS = [("J_avg", "j_avg"), ("flip rate (J < τ)", "flip_rate"), ("collapse rate", "collapse_rate"),
                 ("null loss (A non-empty → B empty)", "null_loss"), ("null gain (A empty → B non-empty)", "null_gain")]
_RUN_METRICS = [("null rate", "null_rate"), ("citation rate", "citation_rate"),
                ("mean evidence entries", "mean_evidence"), ("median evidence entries", "median_evidence"),
                ("mean distinct documents", "mean_docs")]


def compare_runs(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str, *, tau: float = 0.5,
                 topk: int | None = None, allow_missing: bool = True) -> CompareResult:
    """Compare ``candidate`` with ``baseline`` over the queries both logged.

    ``flipped`` marks queries with ``J < τ`` at span level (document level when the
    runs carry no spans); ``collapsed`` marks ``J_span = 0`` with both lists non-empty.
    """
    res = compute_stability(con, StabilityOptions(pairs=[(baseline, candidate)], flip_threshold=tau, topk=topk,
                                                  allow_missing=allow_missing), keep_cells=True)
    p = res.pairs.set_index("level")
    pair = pd.DataFrame({
        "metric": [m for m, _ in _PAIR_METRICS],
        "doc": [p.loc["doc", c] if "doc" in p.index else None for _, c in _PAIR_METRICS],
        "span": [p.loc["span", c] if "span" in p.index else None for _, c in _PAIR_METRICS],
    })
    r = res.runs.set_index("run_id")
    runs = pd.DataFrame({
        "metric": [m for m, _ in _RUN_METRICS],
        "baseline": [float(r.loc[baseline, c]) for _, c in _RUN_METRICS],
        "candidate": [float(r.loc[candidate, c]) for _, c in _RUN_METRICS],
    })
    runs["delta"] = runs["candidate"] - runs["baseline"]

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
               WHERE a.run_id = ? AND b.run_id = ?""", [baseline, candidate]).df()
    finally:
        cur.close()
    q = q.merge(texts, on="query_id", how="left")
    q = q[["query_id", "query", "j_doc", "j_span", "n_a", "n_b", "flipped", "collapsed", "null_change",
           "both_answered"]]
    q = q.sort_values([f"j_{level}", "j_doc", "query_id"], kind="stable").reset_index(drop=True)
    summary = {
        "baseline": baseline, "candidate": candidate, "tau": tau, "level": level,
        "n_queries": int(len(q)), "n_flipped": int(q["flipped"].sum()),
        "n_collapsed": int(q["collapsed"].sum()) if has_span else None,
        "n_null_changes": int((q["null_change"] != "").sum()),
        "n_answered": int(q["both_answered"].sum()),
        "warnings": res.summary["warnings"],
    }
    return CompareResult(baseline, candidate, pair, runs, q, summary)

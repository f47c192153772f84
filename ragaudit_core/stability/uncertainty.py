"""95 % bootstrap intervals of the stability figures, over queries (seed 000's metrics;
:mod:`ragaudit_core.intervals` for the method).

Every figure is a mean over queries of a per-query value, so resampling queries resamples it:

* headline (all compared pairs): per query, the mean ``J`` over its pairs at each level
  (``mean_j_doc``, ``mean_j_span``), the share of its pairs with ``J < τ`` (``flip_rate_doc``,
  ``flip_rate_span``), whether some pair collapsed (``collapse_rate``: ``J_span = 0`` with both
  sides non-empty) and the share of its cells where one side is empty and the other is not
  (``null_transition_rate``). With every query compared on every pair (the default), these means
  over queries equal the summary's figures.
* per pair and level: ``j_avg``, ``flip_rate``, ``collapse_rate``, ``null_loss``, ``null_gain`` —
  each the mean of a per-query value or indicator.

All columns share one resampling of the queries (:func:`ragaudit_core.intervals.bootstrap_replicates`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ragaudit_core.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    bootstrap_replicates,
    percentile_intervals,
)

__all__ = [
    "PAIR_INTERVAL_METRICS",
    "SUMMARY_INTERVAL_METRICS",
    "StabilityIntervals",
    "intervals_from_cells",
    "stability_intervals",
]

SUMMARY_INTERVAL_METRICS = (
    "mean_j_doc",
    "mean_j_span",
    "flip_rate_doc",
    "flip_rate_span",
    "collapse_rate",
    "null_transition_rate",
)
PAIR_INTERVAL_METRICS = ("j_avg", "flip_rate", "collapse_rate", "null_loss", "null_gain")


@dataclass
class StabilityIntervals:
    """Headline figures by key, and per (level, run_a, run_b, metric) rows with ``value``, ``lo``,
    ``hi``; ``n_queries`` resampled, ``resamples`` and ``seed`` as used."""

    summary: dict[str, Estimate] = field(default_factory=dict)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_queries: int = 0
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    def pair(self, run_a: str, run_b: str, level: str, metric: str) -> Estimate | None:
        """The interval of one pair metric (either orientation of the pair), or None."""
        p = self.pairs
        if p.empty:
            return None
        m = p[
            (p.level == level)
            & (p.metric == metric)
            & (((p.run_a == run_a) & (p.run_b == run_b)) | ((p.run_a == run_b) & (p.run_b == run_a)))
        ]
        if m.empty:
            return None
        r = m.iloc[0]
        return Estimate(float(r.value), float(r.lo), float(r.hi), self.n_queries)

    @classmethod
    def from_json(cls, d: dict) -> StabilityIntervals:
        return _from_json(d)

    def to_json(self) -> dict[str, object]:
        def num(v: float) -> float | None:
            return None if v != v else float(v)

        return {
            "resamples": self.resamples,
            "seed": self.seed,
            "n_queries": self.n_queries,
            "summary": {k: {"value": num(e.value), "ci": [num(e.lo), num(e.hi)]} for k, e in self.summary.items()},
            "pairs": [
                {
                    "level": r.level,
                    "run_a": r.run_a,
                    "run_b": r.run_b,
                    "metric": r.metric,
                    "value": num(r.value),
                    "ci": [num(r.lo), num(r.hi)],
                }
                for r in self.pairs.itertuples()
            ],
        }


def _from_json(d: dict) -> StabilityIntervals:
    def est(x: dict) -> Estimate:
        lo, hi = (np.nan if v is None else v for v in x["ci"])
        return Estimate(np.nan if x["value"] is None else x["value"], lo, hi, d["n_queries"])

    rows = [
        (p["level"], p["run_a"], p["run_b"], p["metric"], *(np.nan if v is None else v for v in (p["value"], *p["ci"])))
        for p in d["pairs"]
    ]
    return StabilityIntervals(
        summary={k: est(v) for k, v in d["summary"].items()},
        pairs=pd.DataFrame(rows, columns=["level", "run_a", "run_b", "metric", "value", "lo", "hi"]),
        n_queries=d["n_queries"],
        resamples=d["resamples"],
        seed=d["seed"],
    )


def _per_query(q: np.ndarray, weights: np.ndarray, n_q: int) -> np.ndarray:
    """Mean of ``weights`` per query index (NaN for a query without cells)."""
    cnt = np.bincount(q, minlength=n_q).astype(float)
    tot = np.bincount(q, weights=weights, minlength=n_q)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / cnt, np.nan)


def stability_intervals(
    cells: pd.DataFrame,
    tau: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> StabilityIntervals:
    """Intervals from the per-(level, pair, query) cells (``level, run_a, run_b, query_id, n_a,
    n_b, n_inter, j``, as :func:`ragaudit_core.stability.compute_stability` keeps them)."""
    if cells is None or cells.empty:
        return StabilityIntervals(resamples=resamples, seed=seed)
    qcodes, qnames = pd.factorize(cells["query_id"], sort=True)
    runs = sorted(set(cells["run_a"]) | set(cells["run_b"]))
    ri = {r: i for i, r in enumerate(runs)}
    return intervals_from_cells(
        (cells["level"] == "span").to_numpy().astype(np.int8),
        cells["run_a"].map(ri).to_numpy(),
        cells["run_b"].map(ri).to_numpy(),
        qcodes,
        cells["n_a"].to_numpy(float),
        cells["n_b"].to_numpy(float),
        cells["n_inter"].to_numpy(float),
        cells["j"].to_numpy(float),
        n_queries=len(qnames),
        runs=runs,
        tau=tau,
        resamples=resamples,
        seed=seed,
    )


def intervals_from_cells(
    span: np.ndarray,
    ra: np.ndarray,
    rb: np.ndarray,
    qi: np.ndarray,
    n_a: np.ndarray,
    n_b: np.ndarray,
    n_inter: np.ndarray,
    j: np.ndarray,
    *,
    n_queries: int,
    runs: list[str],
    tau: float,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> StabilityIntervals:
    """The same from the cells as arrays (``span`` 1 for the span level, 0 for doc; runs and
    queries as integer codes): what the metric computation hands over without building a frame."""
    out = StabilityIntervals(resamples=resamples, seed=seed, n_queries=n_queries)
    if len(j) == 0:
        return out
    n_q = n_queries
    flip = (j < tau).astype(float)
    collapse = ((n_a > 0) & (n_b > 0) & (n_inter == 0)).astype(float)
    null_tr = ((n_a > 0) != (n_b > 0)).astype(float)
    loss, gain = ((n_a > 0) & (n_b == 0)).astype(float), ((n_a == 0) & (n_b > 0)).astype(float)
    cols: list[np.ndarray] = []
    names: list[str] = []
    for code, lvl in ((0, "doc"), (1, "span")):
        m = span == code
        if not m.any():
            continue
        cols += [_per_query(qi[m], j[m], n_q), _per_query(qi[m], flip[m], n_q)]
        names += [f"mean_j_{lvl}", f"flip_rate_{lvl}"]
        if lvl == "span":
            cols.append((_per_query(qi[m], collapse[m], n_q) > 0).astype(float))
            names.append("collapse_rate")
    doc = span == 0
    cols.append(_per_query(qi[doc], null_tr[doc], n_q) if doc.any() else np.full(n_q, np.nan))
    names.append("null_transition_rate")
    n_r = len(runs)
    pkey = (span.astype(np.int64) * n_r + ra) * n_r + rb
    pcodes, pvals = pd.factorize(pkey, sort=True)
    n_p = len(pvals)
    flat = pcodes * n_q + qi
    cnt = np.bincount(flat, minlength=n_p * n_q).reshape(n_p, n_q).astype(float)
    labels = [("span" if v // (n_r * n_r) else "doc", runs[(v // n_r) % n_r], runs[v % n_r]) for v in pvals]
    pair_rows: list[tuple[str, str, str, str]] = []
    for metric, v in zip(PAIR_INTERVAL_METRICS, (j, flip, collapse, loss, gain)):
        tot = np.bincount(flat, weights=v, minlength=n_p * n_q).reshape(n_p, n_q)
        with np.errstate(invalid="ignore", divide="ignore"):
            per = np.where(cnt > 0, tot / cnt, np.nan)
        for i, (lvl, a, b) in enumerate(labels):
            if metric == "collapse_rate" and lvl == "doc":
                continue  # collapse is a span-level event
            cols.append(per[i])
            pair_rows.append((lvl, a, b, metric))
    means, counts, reps = bootstrap_replicates(np.column_stack(cols), resamples=resamples, seed=seed)
    lo, hi = percentile_intervals(reps)
    k = len(names)
    out.summary = {
        name: Estimate(float(means[i]), float(lo[i]), float(hi[i]), int(counts[i])) for i, name in enumerate(names)
    }
    out.pairs = pd.DataFrame(
        [(*r, float(means[k + i]), float(lo[k + i]), float(hi[k + i])) for i, r in enumerate(pair_rows)],
        columns=["level", "run_a", "run_b", "metric", "value", "lo", "hi"],
    )
    return out

"""Ranking quality per run and per run pair, with bootstrap intervals and paired tests.

Per run: the mean of each metric over the run's labelled queries (:mod:`.ranking`) with its
percentile bootstrap interval over queries (:func:`ragaudit_core.intervals.bootstrap_means`).
Per pair ``(a, b)``: the mean change ``b − a`` over the labelled queries both runs have, its
bootstrap interval, and a paired test's p-value (t-test by default, or the randomisation test),
Holm-corrected over the pair's metrics (the family is one pair's metrics; state it when you
read several pairs). All runs and pairs share one resampling of the labelled queries (same seed,
same rows), so their intervals are comparable.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    bootstrap_replicates,
    holm,
    paired_t_pvalues,
    paired_test,
    percentile_intervals,
)
from ragaudit_core.quality.ranking import DEFAULT_CUTOFFS, label_coverage, metric_names, per_query_quality
from ragaudit_core.wording import bracket

__all__ = ["PairChange", "QualityResult", "RunQuality", "compute_quality"]


@dataclass(frozen=True)
class RunQuality:
    run_id: str
    n_queries: int  # labelled queries scored
    n_unlabelled: int  # queries of the run left out: no relevant label
    metrics: dict[str, Estimate]


@dataclass(frozen=True)
class PairChange:
    """``b − a`` for one metric over the ``n`` labelled queries both runs have."""

    delta: float
    lo: float
    hi: float
    p: float
    p_holm: float
    n: int

    def as_dict(self) -> dict[str, Any]:
        return {"delta": self.delta, "ci": [self.lo, self.hi], "p": self.p, "p_holm": self.p_holm, "n": self.n}


@dataclass
class QualityResult:
    cutoffs: tuple[int, ...]
    metrics: list[str]
    per_query: pd.DataFrame
    runs: list[RunQuality] = field(default_factory=list)
    pairs: dict[tuple[str, str], dict[str, PairChange]] = field(default_factory=dict)
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    test: str = "t"

    @property
    def labelled(self) -> bool:
        """Whether some run has a labelled query."""
        return any(r.n_queries for r in self.runs)

    def run_table(self, metrics: Sequence[str] = ("ndcg@10", "recall@10", "mrr")) -> pd.DataFrame:
        """One row per run (natural order): its labelled and left-out queries, then each metric's
        value and its 95 % interval as text."""
        from ragaudit_core.logs.selection import natural_key

        rows = []
        for r in sorted(self.runs, key=lambda r: natural_key(r.run_id)):
            row: dict[str, object] = {"run": r.run_id, "labelled queries": r.n_queries, "left out": r.n_unlabelled}
            for m in metrics:
                e = r.metrics.get(m)
                ok = e is not None and e.n > 0
                row[m] = e.value if ok and e is not None else None
                row[f"{m} 95 % interval"] = (bracket(e.lo, e.hi) or None) if ok and e is not None else None
            rows.append(row)
        return pd.DataFrame(rows)

    def run(self, run_id: str) -> RunQuality | None:
        return next((r for r in self.runs if r.run_id == run_id), None)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> QualityResult:
        """A result from its :meth:`to_json` document (without the per-query table)."""

        def est(v: float | None, ci: list[float | None], n: int) -> Estimate:
            lo, hi = (np.nan if x is None else x for x in ci)
            return Estimate(np.nan if v is None else v, lo, hi, n)

        res = cls(tuple(d["cutoffs"]), metric_names(d["cutoffs"]), pd.DataFrame(), resamples=d["resamples"],
                  seed=d["seed"], test=d["test"])  # fmt: skip
        for r in d["runs"]:
            ms = {k: est(v, r["intervals"][k], r["n_queries"] if v is not None else 0) for k, v in r["metrics"].items()}
            res.runs.append(RunQuality(r["run_id"], r["n_queries"], r["n_unlabelled"], ms))

        def num(x: float | None) -> float:
            return np.nan if x is None else float(x)

        for p in d["pairs"]:
            res.pairs[(p["run_a"], p["run_b"])] = {
                k: PairChange(num(c["delta"]), num(c["ci"][0]), num(c["ci"][1]), num(c["p"]), num(c["p_holm"]), c["n"])
                for k, c in p["metrics"].items()
            }
        return res

    def to_json(self) -> dict[str, Any]:
        """The ``ragaudit quality --json`` document."""
        return {
            "cutoffs": list(self.cutoffs),
            "resamples": self.resamples,
            "seed": self.seed,
            "test": self.test,
            "correction": "holm over each pair's metrics",
            "runs": [
                {
                    "run_id": r.run_id,
                    "n_queries": r.n_queries,
                    "n_unlabelled": r.n_unlabelled,
                    "metrics": {k: _num(e.value) for k, e in r.metrics.items()},
                    "intervals": {k: [_num(e.lo), _num(e.hi)] for k, e in r.metrics.items()},
                }
                for r in self.runs
            ],
            "pairs": [
                {"run_a": a, "run_b": b, "metrics": {k: _clean(c.as_dict()) for k, c in ms.items()}}
                for (a, b), ms in self.pairs.items()
            ],
        }


def _num(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ([_num(x) for x in v] if isinstance(v, list) else (_num(v) if isinstance(v, float) else v))
        for k, v in d.items()
    }


def compute_quality(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    *,
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    pairs: Sequence[tuple[str, str]] | None = None,
    docid_map: Mapping[str, str] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    test: Literal["t", "randomization"] = "t",
) -> QualityResult:
    """Quality of ``runs`` (and of ``pairs``: default every pair of ``runs``, in the given order)."""
    runs = list(dict.fromkeys(runs))  # a run named twice is one run (its columns would collide)
    cut = tuple(sorted({int(k) for k in cutoffs}))
    names = metric_names(cut)
    pq = per_query_quality(con, runs, cut, docid_map)
    res = QualityResult(cut, names, pq, resamples=resamples, seed=seed, test=test)
    cov = label_coverage(con, runs).set_index("run_id")
    if pq.empty:
        res.runs = [
            RunQuality(r, 0, int(cov["queries"].get(r, 0)), {m: Estimate(np.nan, np.nan, np.nan, 0) for m in names})
            for r in runs
        ]
        return res
    wide = pq.pivot(index="query_id", columns="run_id", values=names)  # columns (metric, run)
    col = {c: i for i, c in enumerate((m, r) for r in runs for m in names)}
    x = np.column_stack([wide[c].to_numpy(dtype=float) if c in wide else np.full(len(wide), np.nan) for c in col])
    means, counts, reps = bootstrap_replicates(x, resamples=resamples, seed=seed)
    lo, hi = percentile_intervals(reps, points=means)
    for r in runs:
        ix = [col[(m, r)] for m in names]
        ests = {m: Estimate(float(means[i]), float(lo[i]), float(hi[i]), int(counts[i])) for m, i in zip(names, ix)}
        n = int(counts[ix].max()) if ix else 0
        res.runs.append(RunQuality(r, n, int(cov["unlabelled"].get(r, 0)), ests))
    chosen = list(pairs) if pairs is not None else list(itertools.combinations(runs, 2))
    for a, b in chosen:
        res.pairs[(a, b)] = _pair(x, reps, col, names, a, b, resamples, seed, test)
    return res


def _pair(
    x: np.ndarray,
    reps: np.ndarray,
    col: dict[tuple[str, str], int],
    names: list[str],
    a: str,
    b: str,
    resamples: int,
    seed: int,
    test: str,
) -> dict[str, PairChange]:
    """The change ``b − a`` of every metric. When both runs have the same labelled queries (the
    usual case) a resample's change is the difference of the runs' resample means; otherwise the
    differences are resampled on their own (same seed, same rows)."""
    ia, ib = [col[(m, a)] for m in names], [col[(m, b)] for m in names]
    d = x[:, ib] - x[:, ia]
    same_rows = bool(np.array_equal(np.isnan(x[:, ia]), np.isnan(x[:, ib])))
    if same_rows:
        drep = reps[:, ib] - reps[:, ia]
        with np.errstate(invalid="ignore"):
            dmean = np.nanmean(d, axis=0) if len(d) else np.full(len(names), np.nan)
        dn = (~np.isnan(d)).sum(axis=0)
    else:
        dmean, dn, drep = bootstrap_replicates(d, resamples=resamples, seed=seed)
    lo, hi = percentile_intervals(drep, points=dmean)
    if test == "t":
        ps = paired_t_pvalues(d)
    else:
        ps = np.array([paired_test(x[:, i], x[:, j], method="randomization", seed=seed) for i, j in zip(ia, ib)])
    adj = holm(ps)
    return {
        m: PairChange(float(dmean[k]), float(lo[k]), float(hi[k]), float(ps[k]), float(adj[k]), int(dn[k]))
        for k, m in enumerate(names)
    }

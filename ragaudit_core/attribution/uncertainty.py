"""95 % intervals for a run's attribution figures (seed 001, §5: Table 2's failure rates, Table 3's
mean WARG, the mean Spearman correlation) and for their change between two runs.

Attribution batches are small — a query costs about 30 s on two CPU cores, so a batch is a few to a
few dozen queries — and the figures are read as if they were the run's. Each gets an interval over
the explained queries (:data:`FIGURES` names them):

* **Rates** (``wasted_retrieval``, ``noise_distraction``: the share of queries in that failure mode):
  Wilson's score interval for ``k`` of ``n`` (:func:`ragaudit_core.intervals.wilson`). On few queries
  a percentile bootstrap of a rate of 0 of 8 is [0, 0]; Wilson's is [0, 0.32].
* **Means** (``spearman``, ``warg_<p>``): the percentile bootstrap over the queries
  (:func:`ragaudit_core.intervals.bootstrap_means`, 1,000 seeded resamples, the same ones for every
  column). A query whose value is missing (Spearman is undefined for a constant ranking) is left
  out of that figure's mean, not counted as 0.
* **A change** candidate − baseline (:func:`paired_change`): over the queries both runs explained,
  the mean of the per-query differences (for a rate, the difference of two 0/1 indicators) with a
  paired percentile bootstrap of those differences — the two runs' queries are resampled together.

Conventions: a figure over no query has value, ``lo`` and ``hi`` NaN; a bootstrap over one query
gives no interval (NaN bounds: one value has no spread to resample), while Wilson's interval is
defined from one query on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ragaudit_core.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate, bootstrap_means, wilson

__all__ = ["FIGURES", "RATES", "figure_intervals", "paired_change"]

RATES = ("wasted_retrieval", "noise_distraction")
"""The failure-mode shares (0/1 per query): Wilson intervals."""

FIGURES = (*RATES, "spearman")
"""The figures of a run's failure table, besides its WARG columns (``warg_<p>``)."""

_COLUMNS = ["condition", "metric", "value", "lo", "hi", "n", "method"]


def _rate(values: pd.Series) -> tuple[float, float, float, int]:
    x = values.dropna().astype(bool)
    n, k = len(x), int(x.sum())
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    lo, hi = wilson(k, n) or (np.nan, np.nan)
    return k / n, lo, hi, n


def figure_intervals(
    per_query: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """One row per (``condition``, ``metric``): ``value`` (the mean over the condition's explained
    queries, as :func:`.storage.batch_tables` reports it), ``lo``, ``hi``, ``n`` (queries with a
    value) and ``method`` (``wilson`` or ``bootstrap``). ``per_query`` holds one row per explained
    query: ``condition``, the :data:`FIGURES` and the ``warg_<p>`` columns."""
    rows: list[list] = []
    for cond, g in per_query.groupby("condition", sort=True):
        for m in RATES:
            if m in g:
                v, lo, hi, n = _rate(g[m])
                rows.append([cond, m, v, lo, hi, n, "wilson"])
        means = [c for c in g.columns if c == "spearman" or c.startswith("warg_")]
        if not means:
            continue
        values = g[means].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        for m, e in zip(means, bootstrap_means(values, resamples=resamples, seed=seed), strict=True):
            one = e.n < 2  # one value: no spread to resample
            rows.append([cond, m, e.value, np.nan if one else e.lo, np.nan if one else e.hi, e.n, "bootstrap"])
    return pd.DataFrame(rows, columns=_COLUMNS)


def paired_change(
    baseline: Mapping[str, Mapping[str, float | None]],
    candidate: Mapping[str, Mapping[str, float | None]],
    metrics: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Estimate]:
    """The change candidate − baseline of each of ``metrics`` over the queries both runs explained
    (``run[query_id][metric]``; rates as 0/1 or bools): the mean per-query difference with its paired
    percentile bootstrap interval (the same resamples for every metric), and ``n`` the queries with
    a value on both sides. A metric with fewer than two such queries has NaN bounds; with none it is
    left out."""
    shared = sorted(set(baseline) & set(candidate))
    if not shared:
        return {}

    def value(run: Mapping[str, Mapping[str, float | None]], q: str, m: str) -> float:
        v = run[q].get(m)
        return np.nan if v is None else float(v)

    d = np.array([[value(candidate, q, m) - value(baseline, q, m) for m in metrics] for q in shared])
    out = {}
    for m, e in zip(metrics, bootstrap_means(d, resamples=resamples, seed=seed), strict=True):
        if e.n == 0:
            continue
        out[m] = e if e.n >= 2 else Estimate(e.value, np.nan, np.nan, e.n, e.level)
    return out

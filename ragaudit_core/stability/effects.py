"""Effects by what changed between two runs (seed 000, sec. 4 "Configuration effects"): the pair
figures averaged over the pairs that changed one setting, with 95 % intervals over queries."""

from __future__ import annotations

import pandas as pd

from ragaudit_core.stability.uncertainty import EFFECT_INTERVAL_METRICS, StabilityIntervals

__all__ = ["EFFECT_COLUMNS", "effects_by_change"]

EFFECT_COLUMNS = [
    "changed",
    "level",
    "n_pairs",
    *EFFECT_INTERVAL_METRICS,
    *(f"{m}_{bound}" for m in EFFECT_INTERVAL_METRICS for bound in ("lo", "hi")),
]
"""The table's columns: the group, its pairs, the three figures, then each figure's bounds."""


def effects_by_change(pairs: pd.DataFrame, intervals: StabilityIntervals | None = None) -> pd.DataFrame:
    """Mean pair-level metrics grouped by what changed between the runs, with 95 % intervals.

    One row per (``changed``, ``level``): ``changed`` is :func:`.metrics.change_label` of the pair
    (``top_k``, ``chunk_size``, ``chunk_overlap``, ``several``, ``none``, ``unknown``), ``level``
    doc or span; ``n_pairs``; ``j_avg``, ``flip_rate``, ``collapse_rate`` — the mean of the pairs'
    figures over the group's ``n`` pairs, pairs weighing equally as in the paper's per-parameter
    comparison (a pair without the figure left out); and ``<metric>_lo`` / ``<metric>_hi``.

    The interval (``intervals``: the :class:`StabilityIntervals` of the same result, i.e.
    ``StabilityResult.intervals``) is the percentile bootstrap over queries of
    :mod:`ragaudit_core.intervals`, on the very resamples that give the pairs' intervals (one
    resampling of the query set for every column, seeded): in resample ``b`` each pair's figure is
    ``m_p(b)``, the mean of its per-query values over the resampled queries, and the group's is

        G(b) = (1/n) Σ_p m_p(b),   interval = [2.5th, 97.5th percentile of G(b) over b]

    — a paired resampling: the pairs share their queries, so a query that unsettles every pair of
    the group moves them together, and the group's interval is not an average of its pairs'
    intervals (two pairs that disagree query by query make a narrower one). As every pair is
    evaluated on the same queries, ``G(b)`` is the resample's mean of the per-query column "mean
    over the group's pairs", which is how :mod:`.uncertainty` computes it.

    Edge cases: a group of one pair has that pair's interval exactly; a level without span
    information has no span rows (and no span intervals); the doc level's collapse rate has an
    interval here though the pair intervals leave it out; without intervals (``intervals`` None:
    ``resamples=0``), or for a group the intervals do not hold with the same number of pairs (a
    result stored before groups had intervals, or another set of pairs), the bounds are NaN: no
    interval is written. With one query the interval is the point.
    """
    if pairs.empty:
        return pd.DataFrame(columns=EFFECT_COLUMNS)
    g = pairs.groupby(["changed", "level"], sort=True)
    out = g.agg(
        n_pairs=("j_avg", "size"),
        j_avg=("j_avg", "mean"),
        flip_rate=("flip_rate", "mean"),
        collapse_rate=("collapse_rate", "mean"),
    ).reset_index()
    iv = intervals.effects if intervals is not None else None
    for metric in EFFECT_INTERVAL_METRICS:
        bounds = pd.DataFrame(index=out.index, columns=["lo", "hi"], dtype=float)
        if iv is not None and not iv.empty:
            rows = iv[iv.metric == metric].set_index(["changed", "level", "n_pairs"])[["lo", "hi"]]
            key = pd.MultiIndex.from_frame(out[["changed", "level", "n_pairs"]])
            bounds = rows.reindex(key).set_axis(out.index)
        out[f"{metric}_lo"], out[f"{metric}_hi"] = bounds["lo"].astype(float), bounds["hi"].astype(float)
    return out[EFFECT_COLUMNS]

"""The change of per-stage survival between two runs, with its 95 % bootstrap interval.

A stage's survival rate (seed 002, §4: the share of the queries that reached the stage with
their ground-truth source that still hold it after the stage) is a mean of a per-query indicator
over the queries that reached it — ``survived_<stage>`` of :func:`~.score.fidelity_runs`'s query
table, NaN where the query did not reach the stage. The change candidate − baseline is resampled
as a pair (:func:`ragaudit_core.intervals.bootstrap_replicates`): one resampling of the union of
both runs' query ids serves both runs and every stage, each run's rate in a resample being its
mean over the resampled queries it reached, so a query the two runs share moves in both at once.

Edge cases: a stage neither run's queries reached, or one run never reached, has no change (it is
left out); a resample that drew no reaching query for a run gives no replicate (NaN, ignored by
the percentile interval); ``n`` is the thinner side's count of reaching queries — what the
gate's ``min_queries`` reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ragaudit_core.fidelity.graph import FIDELITY_STAGES
from ragaudit_core.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    bootstrap_replicates,
    percentile_intervals,
)

__all__ = ["stage_survival_change", "stage_survival_intervals"]


def stage_survival_intervals(
    queries: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, Estimate]:
    """Per stage name: one run's conditional survival rate (the mean of ``survived_<stage>`` over
    the queries that reached the stage) with its 95 % bootstrap interval over those queries; a stage
    no query reached is left out."""
    stages = [s for s in FIDELITY_STAGES.values() if f"survived_{s}" in queries]
    if not stages:
        return {}
    x = queries[[f"survived_{s}" for s in stages]].to_numpy(dtype=float)
    means, counts, reps = bootstrap_replicates(x, resamples=resamples, seed=seed)
    lo, hi = percentile_intervals(reps, points=means)
    return {
        s: Estimate(float(means[i]), float(lo[i]), float(hi[i]), int(counts[i]))
        for i, s in enumerate(stages)
        if counts[i]
    }


def stage_survival_change(
    baseline: pd.DataFrame,
    candidate: pd.DataFrame,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Estimate]:
    """Per stage name: the survival rate of ``candidate`` minus ``baseline`` (each a query table
    with ``query_id`` and ``survived_<stage>`` columns), with its paired 95 % bootstrap interval."""
    stages = [s for s in FIDELITY_STAGES.values() if f"survived_{s}" in baseline and f"survived_{s}" in candidate]
    if not stages:
        return {}
    ids = pd.Index(pd.unique(pd.concat([baseline["query_id"], candidate["query_id"]]).astype(str)))

    def aligned(t: pd.DataFrame) -> np.ndarray:
        cols = t.assign(query_id=t["query_id"].astype(str)).drop_duplicates("query_id").set_index("query_id")
        return cols.reindex(ids)[[f"survived_{s}" for s in stages]].to_numpy(dtype=float)

    x = np.hstack([aligned(baseline), aligned(candidate)])  # baseline's stages, then the candidate's
    means, counts, reps = bootstrap_replicates(x, resamples=resamples, seed=seed)
    k = len(stages)
    lo, hi = percentile_intervals(reps[:, k:] - reps[:, :k], points=means[k:] - means[:k])
    out = {}
    for i, stage in enumerate(stages):
        n = int(min(counts[i], counts[k + i]))
        if n:
            out[stage] = Estimate(float(means[k + i] - means[i]), float(lo[i]), float(hi[i]), n)
    return out

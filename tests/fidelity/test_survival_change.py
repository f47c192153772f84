"""The change of per-stage survival between two runs and its paired bootstrap interval, on
three-query tables worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ragaudit_core.fidelity.survival_change import stage_survival_change

NAN = float("nan")


def _table(ids, **stages):
    return pd.DataFrame({"query_id": ids, **{f"survived_{s}": v for s, v in stages.items()}})


def test_each_run_s_rate_is_over_the_queries_it_reached_and_n_is_the_thinner_side():
    """Retrieval: base keeps q1, q2, q3 (3/3 = 1), cand keeps q1, q2 but loses q3 (2/3): −1/3 over 3.
    Generation: base reached q1, q2 (1, 0: 1/2), cand reached q1, q3 (1, 0: 1/2): a change of 0,
    over 2 queries on each side."""
    base = _table(["q1", "q2", "q3"], retrieval=[1, 1, 1], generation=[1, 0, NAN])
    cand = _table(["q1", "q2", "q3"], retrieval=[1, 1, 0], generation=[1, NAN, 0])
    got = stage_survival_change(base, cand, resamples=200)
    assert set(got) == {"retrieval", "generation"}
    r, g = got["retrieval"], got["generation"]
    assert math.isclose(r.value, -1 / 3) and r.n == 3
    assert math.isclose(g.value, 0.0) and g.n == 2
    for e in (r, g):
        assert -1.0 <= e.lo <= e.value <= e.hi <= 1.0
    # a resample of q1..q3 with replacement: base's retrieval is always 1, cand's is 1 − (share of q3
    # drawn), so the change lies in [−1, 0] and is 0 only when q3 is not drawn
    assert r.hi <= 0.0 and r.lo >= -1.0


def test_the_same_table_twice_changes_by_exactly_zero_with_no_width():
    base = _table(["a", "b", "c"], reranking=[1, 0, 1], compression=[1, NAN, 0])
    got = stage_survival_change(base, base.copy(), resamples=100)
    for e in got.values():
        assert (e.value, e.lo, e.hi) == (0.0, 0.0, 0.0)


def test_every_query_lost_is_a_change_of_minus_one_whatever_the_resample():
    base = _table(["a", "b"], generation=[1, 1])
    cand = _table(["a", "b"], generation=[0, 0])
    (e,) = stage_survival_change(base, cand, resamples=100).values()
    assert (e.value, e.lo, e.hi, e.n) == (-1.0, -1.0, -1.0, 2)


def test_queries_only_one_run_logged_count_for_that_run_and_a_stage_one_run_never_reached_is_left_out():
    """base logged q1, q2; cand q2, q3 (ids compared as text: 2 and "2" are one query)."""
    base = _table([1, 2], retrieval=[1, 0], generation=[NAN, NAN])
    cand = _table(["2", "3"], retrieval=[1, 1], generation=[1, 1])
    got = stage_survival_change(base, cand, resamples=100)
    assert set(got) == {"retrieval"}  # base never reached generation: no change to read
    assert math.isclose(got["retrieval"].value, 0.5) and got["retrieval"].n == 2


def test_seeded_and_batch_invariant():
    """The same seed gives the same interval; a stage's interval does not depend on the other stages
    in the table (one resampling of the queries serves every column)."""
    rng = np.random.default_rng(1)
    ids = [f"q{i}" for i in range(40)]
    base = _table(ids, retrieval=rng.integers(0, 2, 40).astype(float), generation=rng.integers(0, 2, 40).astype(float))
    cand = _table(ids, retrieval=rng.integers(0, 2, 40).astype(float), generation=rng.integers(0, 2, 40).astype(float))
    one = stage_survival_change(base, cand, seed=3)
    assert one == stage_survival_change(base, cand, seed=3)
    alone = stage_survival_change(
        base.drop(columns="survived_generation"), cand.drop(columns="survived_generation"), seed=3
    )
    assert alone["retrieval"] == one["retrieval"]


def test_one_run_s_rate_and_interval_are_over_the_queries_that_reached_the_stage():
    """Generation reached by q1, q2 (kept 1 of 2: 0.5); q3 never reached it. Every query lost at
    reranking: 0 with no width. A stage no query reached is left out."""
    from ragaudit_core.fidelity.survival_change import stage_survival_intervals

    t = _table(["q1", "q2", "q3"], reranking=[0, 0, 0], generation=[1, 0, NAN], compression=[NAN, NAN, NAN])
    got = stage_survival_intervals(t, resamples=200)
    assert set(got) == {"reranking", "generation"}
    assert (got["reranking"].value, got["reranking"].lo, got["reranking"].hi, got["reranking"].n) == (0.0, 0.0, 0.0, 3)
    g = got["generation"]
    assert g.value == 0.5 and g.n == 2 and 0.0 <= g.lo <= 0.5 <= g.hi <= 1.0

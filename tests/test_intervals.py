"""Bootstrap intervals, paired tests and Holm's correction: reproducible, with hand-checked
values, and covering the true mean at close to the nominal rate on synthetic data."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ragaudit_core.intervals import bootstrap_means, holm, paired_t_pvalues, paired_test, percentile_intervals


def test_reproducible_under_a_seed_and_the_same_for_every_column():
    x = np.random.default_rng(3).random((50, 2))
    a, b = bootstrap_means(x, seed=7), bootstrap_means(x, seed=7)
    assert a == b
    assert bootstrap_means(x, seed=8) != a
    # one resampling serves every column: a column repeated gives the same interval
    c = bootstrap_means(np.column_stack([x[:, 0], x[:, 0]]), seed=7)
    assert (c[0].lo, c[0].hi) == (c[1].lo, c[1].hi) == (a[0].lo, a[0].hi)


def test_each_replicate_is_the_mean_of_one_draw_of_the_queries():
    """Replicate i is the mean of the rows drawn by the i-th row of ``integers(0, n, (B, n))``
    under the seed (in blocks: here one), in every column and with a gap (NaN rows left out)."""
    from ragaudit_core.intervals import bootstrap_replicates

    x = np.array([[0.0, 1.0], [1.0, np.nan], [3.0, 2.0], [7.0, 5.0]])
    _, counts, reps = bootstrap_replicates(x, resamples=6, seed=11)
    idx = np.random.default_rng(11).integers(0, 4, size=(6, 4))
    assert counts.tolist() == [4, 3]
    assert np.allclose(reps[:, 0], x[idx, 0].mean(axis=1))
    assert np.allclose(reps[:, 1], [np.nanmean(x[row, 1]) for row in idx], equal_nan=True)


def test_missing_values_are_left_out_not_zero():
    x = np.array([[1.0, np.nan], [1.0, 1.0], [1.0, np.nan]])
    e = bootstrap_means(x, resamples=200)
    assert (e[0].value, e[0].lo, e[0].hi, e[0].n) == (1.0, 1.0, 1.0, 3)
    assert (e[1].value, e[1].n) == (1.0, 1) and e[1].lo == e[1].hi == 1.0
    empty = bootstrap_means(np.full((3, 1), np.nan))[0]
    assert empty.n == 0 and np.isnan(empty.value) and np.isnan(empty.lo)


@pytest.mark.parametrize("draw", ["bernoulli", "beta"])
def test_coverage_close_to_nominal(draw):
    """1,000 synthetic samples of 100 queries: the 95 % interval holds the true mean in 0.950
    (a rate, Bernoulli 0.3) and 0.937 (a skewed score, Beta(2, 5)) of them — the percentile
    bootstrap runs a little narrow on skewed data at n = 100 (0.946 at n = 300, 0.923 at n = 30;
    docs/benchmarks.md). The bounds allow the trials' own noise (±0.014 at two standard errors)."""
    rng = np.random.default_rng(2026)
    trials, n = 1000, 100
    if draw == "bernoulli":
        data, truth = (rng.random((trials, n)) < 0.3).astype(float), 0.3
    else:
        data, truth = rng.beta(2, 5, size=(trials, n)), 2 / 7
    ests = bootstrap_means(data.T, resamples=1000, seed=1)  # one column per trial
    covered = np.mean([e.lo <= truth <= e.hi for e in ests])
    assert 0.925 <= covered <= 0.965, covered


def test_paired_tests_by_hand():
    a = [0.0, 1.0, 0.0, 1.0, 1.0]
    b = [1.0, 1.0, 1.0, 1.0, 0.0]
    # differences 1, 0, 1, 0, -1: mean 0.2, sd 0.83666, t = 0.2 / (0.83666 / √5) = 0.53452, 4 df
    assert paired_test(a, b) == pytest.approx(0.621308, abs=1e-6)
    # randomisation: every sign pattern of (1, 1, -1) gives |mean| >= 0.2, so p = 1
    assert paired_test(a, b, method="randomization") == 1.0
    assert paired_test([1, 2, 3], [1, 2, 3]) == 1.0  # no change at all
    assert paired_t_pvalues(np.array([[0.1], [0.1], [0.1]]))[0] < 1e-12  # constant non-zero change
    big = np.random.default_rng(0).normal(0.5, 1, 400)
    assert paired_test(np.zeros(400), big, method="randomization") < 0.001
    assert paired_test([np.nan, 1, 2], [5, 1, 2]) == 1.0  # only the queries both have


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 → 0.03, 0.06, 0.04 → monotone 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]  # 0.5 × 2 = 1, then monotone


def test_percentile_intervals_with_and_without_gaps_agree_with_nanquantile():
    rng = np.random.default_rng(3)
    reps = rng.normal(size=(200, 5))
    reps[::7, 1] = np.nan  # one column with missing replicates
    reps[:, 4] = np.nan  # one with none
    lo, hi = percentile_intervals(reps)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want_lo, want_hi = np.nanquantile(reps, [0.025, 0.975], axis=0)
    np.testing.assert_allclose(lo[:4], want_lo[:4], rtol=1e-12)  # the same interpolation, another summation order
    np.testing.assert_allclose(hi[:4], want_hi[:4], rtol=1e-12)
    assert np.isnan(lo[4]) and np.isnan(hi[4])


@pytest.mark.parametrize(("n", "m", "resamples"), [(2_000, 4_801, 70), (50_000, 301, 170)])
@pytest.mark.parametrize("block_cells", [0, 3 << 21, 1 << 30])
def test_replicates_read_a_block_of_columns_at_a_time_are_the_same_numbers(block_cells, n, m, resamples):
    """The resampling reads a large matrix a block of columns at a time, the resamples drawn once
    and kept: every replicate and count the same, bit for bit, as the whole matrix at once (the
    BLAS sums each entry of a large product in the same order whatever rows are beside it)."""
    from ragaudit_core.intervals import bootstrap_replicates, bootstrap_row_replicates

    rng = np.random.default_rng(5)
    # 9.6M and 15M cells: blocks of at least 2²¹; the second drawn 80 resamples at a time (80, 80, 10)
    x = np.where(rng.random((n, m)) < 0.5, rng.integers(0, 7, (n, m)) / 7, rng.integers(0, 2, (n, m)))
    x = x.astype(np.float32)
    x[rng.random((n, m)) < 0.01] = np.nan  # gaps in some columns only
    x[:, : m // 2] = np.nan_to_num(x[:, : m // 2])
    xt = np.ascontiguousarray(x.T)
    asked = []

    def rows(lo, hi):
        asked.append(hi - lo)
        return xt[lo:hi]

    _, counts, reps = bootstrap_replicates(x, resamples=resamples, seed=3)
    bcounts, breps = bootstrap_row_replicates(rows, m, n, resamples=resamples, seed=3, block_cells=block_cells)
    assert sum(asked) == m and len(asked) == (1 if block_cells > m * n else m * n // max(block_cells, 1 << 22))
    assert np.array_equal(bcounts, counts)
    assert np.array_equal(breps, reps, equal_nan=True)


def test_a_column_of_equal_values_has_its_value_as_interval_and_every_interval_holds_its_mean():
    """Six queries of precision 0.1: float32 products of the values themselves gave replicates of
    0.10000000397 — an interval wholly above the mean 0.0999…9, which a gate rule "≤ 0.1, significant"
    read as a failure. Differences from the column's least value are resampled instead (equal
    values: none), and an interval is widened to its mean where rounding leaves it an ulp beside it.
    A resample of the least value alone is that value (0 stays 0)."""
    from ragaudit_core.intervals import bootstrap_means

    (e,) = bootstrap_means(np.full(6, 0.1))
    assert e.lo <= e.value <= e.hi and abs(e.hi - 0.1) < 1e-15 and abs(e.lo - 0.1) < 1e-15
    (t,) = bootstrap_means(np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5]))
    assert t.lo == 0.0 and t.lo <= t.value <= t.hi
    rng = np.random.default_rng(0)
    x = rng.random((40, 30)) ** 4
    x[rng.random((40, 30)) < 0.3] = np.nan
    for e in bootstrap_means(x):
        assert e.lo <= e.value <= e.hi

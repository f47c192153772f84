"""Uncertainty over queries: bootstrap intervals, paired tests and the correction for several.

Every headline figure of RagAudit is a mean over queries (a per-query value, or a per-query
indicator for a rate). Its 95 % interval here is the **percentile bootstrap over queries**
(Efron & Tibshirani 1993, ch. 13): ``B`` resamples of the queries with replacement (default
1,000, seeded), the mean of each, and the 2.5th and 97.5th percentiles of those means. One
resampling of the query set serves every run and metric at once, so the intervals of two runs
are computed on the same resampled query sets and a pair's change is resampled as a pair.

Missing values (a run that lacks a query, a query without labels) are NaN: a resample's mean is
taken over the resampled queries that have a value, so an interval never counts them as 0.

Paired tests for a change between two runs over the same queries (as ranx and ir-measures
offer): Student's paired t-test (default; ``scipy.stats.ttest_rel``), or Fisher's paired
randomisation test (sign flips of the per-query differences, ``permutations`` draws, seeded;
p = (1 + #{|mean of flipped| ≥ |observed|}) / (1 + permutations)). Several metrics of one pair
are corrected with Holm's step-down method (Holm 1979), which controls the family-wise error
rate without assuming independence.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

QuantileMethod = Literal["linear", "inverted_cdf"]
"""The numpy quantile methods the figures use (:func:`bootstrap_quantiles`)."""

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Estimate",
    "QuantileMethod",
    "bootstrap_means",
    "bootstrap_quantiles",
    "bootstrap_replicates",
    "bootstrap_row_replicates",
    "column_least",
    "holm",
    "paired_t_pvalues",
    "paired_test",
    "percentile_intervals",
    "wilson",
]

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples: 1,000 puts the 2.5th/97.5th percentiles within about ±0.01 of their
limit for rates on a few hundred queries (Efron & Tibshirani recommend 1,000 for percentile
intervals); ``--resamples`` changes it."""
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Estimate:
    """A mean over ``n`` queries with its bootstrap interval ``[lo, hi]`` at ``level``."""

    value: float
    lo: float
    hi: float
    n: int
    level: float = DEFAULT_LEVEL

    def as_dict(self) -> dict[str, object]:
        return {"value": self.value, "ci": [self.lo, self.hi], "n": self.n}


def _counts(rng: np.random.Generator, b: int, n: int) -> NDArray[np.float32]:
    """``b`` bootstrap resamples of ``n`` items as a (b × n) matrix of how often each was drawn
    (float32: exact for counts, and half the memory traffic of the products that follow)."""
    idx = rng.integers(0, n, size=(b, n))
    out = np.empty((b, n), dtype=np.float32)
    for i, row in enumerate(idx):  # row by row: each count stays in cache (37 → 18 ms for 384 × 10,416)
        out[i] = np.bincount(row, minlength=n)
    return out


def _small_counts(rng: np.random.Generator, b: int, n: int) -> NDArray[np.unsignedinteger]:
    """:func:`_counts`' draws (the same generator calls) as the smallest unsigned integers that hold
    them: a quarter of float32's memory when every resample is kept (a count over 255 widens)."""
    idx = rng.integers(0, n, size=(b, n))
    out: NDArray[np.unsignedinteger] = np.empty((b, n), dtype=np.uint8)
    for i, row in enumerate(idx):
        c = np.bincount(row, minlength=n)
        top = int(c.max()) if n else 0
        if top > np.iinfo(out.dtype).max:
            out = out.astype(np.uint16 if top <= 0xFFFF else np.uint32)
        out[i] = c
    return out


BLOCK_CELLS = 1 << 24
"""Cells (columns × queries) of the matrix :func:`bootstrap_row_replicates` multiplies at once
(64 MB of float32): a larger one is read a block of columns at a time."""

_MIN_BLOCK_CELLS = 1 << 22
"""The smallest block of columns :func:`bootstrap_row_replicates` multiplies (a block holds at
least half of this): OpenBLAS sums a product of under 100³ multiply-adds with another kernel, in
another order, so blocks stay far above it (with two resamples or more: 2²¹ × 2 ≫ 10⁶)."""


def _row_blocks(m: int, n: int, block_cells: int, sizes: list[int]) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of about equal size covering ``m`` rows of ``n`` cells, each of at least
    half of ``block_cells`` (floored at :data:`_MIN_BLOCK_CELLS`) — one block when the matrix is
    no larger, or when some draw has a single resample (a matrix-vector product, whose sums may
    depend on the rows beside)."""
    cells = max(block_cells, _MIN_BLOCK_CELLS)
    k = 1 if min(sizes, default=2) < 2 else max(1, min(m // 2, (m * n) // cells))
    cuts = [round(i * m / k) for i in range(k + 1)]
    return list(itertools.pairwise(cuts))


def bootstrap_row_replicates(
    rows: Callable[[int, int], NDArray[np.floating]],
    m: int,
    n: int,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    block_cells: int = BLOCK_CELLS,
    base: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """:func:`bootstrap_replicates`' counts and replicates for ``m`` columns of ``n`` queries
    handed over by ``rows(lo, hi)``: columns ``lo`` … ``hi − 1`` as a float32 (hi − lo) × n array
    (NaN = no value), asked for a block of about ``block_cells`` cells at a time, so the whole
    matrix is never held. The same numbers as :func:`bootstrap_replicates` on the whole matrix:
    the same resamples (drawn once and kept as small integers when there are several blocks), and
    each column's sums from the same float32 products — a product's entry is summed by the BLAS in
    an order that does not depend on the other rows multiplied with it, once the product is large
    (:data:`_MIN_BLOCK_CELLS`; ``tests/test_intervals.py`` checks it, bit for bit).

    The products are of each value's difference from its column's least value (multiplied in
    float32), a replicate that least value plus the resampled mean difference — the same mean, exact
    where the values are: a column of equal values gives its value (products of the values
    themselves gave 0.10000000397 for six values of 0.1: an interval beside its own point estimate,
    read by the gate as "wholly beyond 0.1"), a column of 0/1 rates its fractions as before (its
    least value is 0), and a resample of its least value alone that value. ``base``: each column's
    least value (float64), when ``rows`` hands over the differences from it already, taken before
    the values were rounded to float32 (see :func:`column_least`); without it they are taken here,
    from the values ``rows`` gives."""
    counts_n = np.zeros(m, dtype=np.int64)
    reps = np.full((max(resamples, 0), m), np.nan)
    draw = max(1, min(resamples, 4_000_000 // max(n, 1)))  # resamples drawn at once
    sizes = [min(draw, resamples - done) for done in range(0, max(resamples, 0), draw)] if n else []
    blocks = _row_blocks(m, n, block_cells, sizes) if m else []
    kept = None
    if len(blocks) > 1 and sizes:
        rng = np.random.default_rng(seed)
        kept = [_small_counts(rng, b, n) for b in sizes]
    for lo, hi in blocks:
        given: NDArray[np.floating] = np.asarray(rows(lo, hi))
        if base is not None:
            least = base[lo:hi]
        else:
            least = column_least(given, axis=1)
            if least.any():  # (a new array: the caller's is not touched; most columns' least value is 0)
                given = given - least[:, None]
        x = given.astype(np.float32, copy=False)
        have = ~np.isnan(x)
        counts_n[lo:hi] = have.sum(axis=1)
        if not sizes:
            continue
        full = bool(have.all())
        xt = x if full else np.where(have, x, np.float32(0.0))
        ht = None if full else have.astype(np.float32)
        del have, x
        rng = np.random.default_rng(seed)
        done = 0
        for i, b in enumerate(sizes):
            c = _counts(rng, b, n) if kept is None else kept[i].astype(np.float32)
            sums = (xt @ c.T).T.astype(np.float64)
            cnt = np.full_like(sums, n) if ht is None else (ht @ c.T).T.astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[done : done + b, lo:hi] = np.where(cnt > 0, sums / cnt, np.nan) + least
            done += b
    return counts_n, reps


def column_least(x: NDArray[np.floating], axis: int = 0) -> NDArray[np.float64]:
    """Each column's (``axis=0``) or row's least value, NaN left out, as float64; 0 where there is
    none or it is not finite — what :func:`bootstrap_row_replicates` takes the values' differences from."""
    if x.size == 0:
        return np.zeros(x.shape[1 - axis] if x.ndim == 2 else 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        least = np.fmin.reduce(x, axis=axis).astype(np.float64)
    return np.where(np.isfinite(least), least, 0.0)


def bootstrap_replicates(
    values: ArrayLike, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Column means of ``values`` (queries × columns; NaN = no value), how many values each
    has, and the (resamples × columns) means of the bootstrap resamples of the rows — the same
    resamples for every column (a resample's mean counts only the rows with a value; NaN when it
    drew none). Memory stays bounded: resamples are drawn in blocks of about four million cells."""
    x = np.asarray(values)
    if x.dtype != np.float32:  # float32 input is used as given (no copy): the products are float32 anyway
        x = x.astype(np.float64, copy=False)
    if x.ndim == 1:
        x = x[:, None]
    n, m = x.shape
    have = ~np.isnan(x)
    counts_n = have.sum(axis=0)
    with np.errstate(invalid="ignore"):
        means = np.where(counts_n > 0, np.nansum(x, axis=0, dtype=np.float64) / np.maximum(counts_n, 1), np.nan)
    del have
    if n == 0 or resamples < 1:
        return means, counts_n, np.full((max(resamples, 0), m), np.nan)
    # float32 products (a resample's sum of ≤ n values of order 1 keeps ~7 significant digits,
    # far below the interval's own sampling error); means and quantiles in float64.
    # Columns as contiguous rows (m × n): OpenBLAS multiplies (m × n) @ (n × b) 20× faster than
    # (b × n) @ (n × m) when n is large (0.08 s against 1.9 s for 38 resamples of 104k queries ×
    # 600 columns); a column-major input (``matrix.T`` of an m × n array) is used without a copy
    least = column_least(x)
    if least.any():
        rows = lambda lo, hi: np.ascontiguousarray((x[:, lo:hi] - least[lo:hi]).T, dtype=np.float32)  # noqa: E731
    else:  # (the common case: no shift, the float32 copy of a block as before)
        rows = lambda lo, hi: np.ascontiguousarray(x[:, lo:hi].T, dtype=np.float32)  # noqa: E731
    _, reps = bootstrap_row_replicates(rows, m, n, resamples=resamples, seed=seed, base=least)
    return means, counts_n, reps


def percentile_intervals(
    reps: NDArray[np.float64], level: float = DEFAULT_LEVEL, points: ArrayLike | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The (lo, hi) percentile interval of each column of bootstrap replicates (NaN replicates
    ignored; NaN when a column has none). ``points``: each column's point estimate, a **mean** (or
    a difference of means): an interval that rounding puts a hair beside it (the replicates of a
    column of equal values, one unit in the last place off) is widened to hold it — a mean's
    percentile interval holds its mean but for rounding, and a gate reading "wholly beyond the
    threshold" off a bound one ulp past an equal value would decide on rounding."""
    lo, hi = _percentiles(reps, level)
    if points is not None:
        p = np.asarray(points, dtype=np.float64)
        ok = ~np.isnan(p) & ~np.isnan(lo)
        lo, hi = np.where(ok, np.minimum(lo, p), lo), np.where(ok, np.maximum(hi, p), hi)
    return lo, hi


def _percentiles(reps: NDArray[np.float64], level: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    alpha = (1.0 - level) / 2.0
    if reps.shape[0] == 0:
        nan = np.full(reps.shape[1], np.nan)
        return nan, nan.copy()
    gaps = np.isnan(reps).any(axis=0)
    if not gaps.any():  # the common case: one vectorised quantile (nanquantile loops over columns)
        lo, hi = np.quantile(reps, [alpha, 1.0 - alpha], axis=0)
        return lo, hi
    if not gaps.all():
        lo, hi = np.quantile(reps[:, ~gaps], [alpha, 1.0 - alpha], axis=0)
        glo, ghi = _percentiles(reps[:, gaps], level)
        out_lo, out_hi = np.empty(reps.shape[1]), np.empty(reps.shape[1])
        out_lo[~gaps], out_hi[~gaps], out_lo[gaps], out_hi[gaps] = lo, hi, glo, ghi
        return out_lo, out_hi
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: NaN, said by the caller
        lo, hi = np.nanquantile(reps, [alpha, 1.0 - alpha], axis=0)
    return lo, hi


def bootstrap_means(
    values: ArrayLike,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> list[Estimate]:
    """Column means of ``values`` (queries × columns; NaN = no value) with percentile bootstrap
    intervals over the rows, the same resamples for every column (:func:`bootstrap_replicates`).

    A column with no value gives NaN everywhere and ``n = 0``; a column with one value gives the
    value as its own interval."""
    means, counts, reps = bootstrap_replicates(values, resamples=resamples, seed=seed)
    lo, hi = percentile_intervals(reps, level, means)
    return [
        Estimate(
            float(means[j]),
            float(lo[j]) if counts[j] else np.nan,
            float(hi[j]) if counts[j] else np.nan,
            int(counts[j]),
            level,
        )
        for j in range(means.size)
    ]


def paired_t_pvalues(diffs: ArrayLike) -> NDArray[np.float64]:
    """Two-sided paired t-test p-values, one per column of per-query differences (NaN = the
    query is not in both runs): ``t = mean(d) / (sd(d) / √n)`` with ``n − 1`` degrees of freedom.
    Fewer than two differences, or all zero, give 1; a constant non-zero difference gives 0."""
    from scipy.special import stdtr  # Student's t CDF; scipy.stats would add 2 s of imports

    d = np.asarray(diffs, dtype=np.float64)
    if d.ndim == 1:
        d = d[:, None]
    n = (~np.isnan(d)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(d, axis=0)
        sd = np.nanstd(d, axis=0, ddof=1)
        t = mean / (sd / np.sqrt(n))
        p = 2.0 * stdtr(np.maximum(n - 1, 1), -np.abs(t))
    p = np.where(np.isnan(p) | (n < 2), 1.0, p)
    p = np.where((n >= 2) & (sd == 0) & (mean != 0), 0.0, p)
    return np.where((n >= 2) & (sd == 0) & (mean == 0), 1.0, p)


def paired_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    method: Literal["t", "randomization"] = "t",
    permutations: int = 10_000,
    seed: int = DEFAULT_SEED,
) -> float:
    """Two-sided p-value for "mean(b − a) = 0" over the queries where both have a value.

    Fewer than two pairs, or all differences zero, give p = 1 (no evidence of a change)."""
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ok = ~(np.isnan(x) | np.isnan(y))
    d = (y - x)[ok]
    if d.size < 2 or not np.any(d != 0):
        return 1.0
    if method == "t":
        return float(paired_t_pvalues(d)[0])
    if method != "randomization":
        raise ValueError(f"unknown paired test {method!r}; use 't' or 'randomization'")
    rng = np.random.default_rng(seed)
    observed = abs(d.mean())
    hits, done = 0, 0
    block = max(1, 2_000_000 // d.size)
    while done < permutations:
        k = min(block, permutations - done)
        signs = rng.integers(0, 2, size=(k, d.size), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ d) / d.size
        hits += int(np.sum(flipped >= observed - 1e-12))
        done += k
    return (1 + hits) / (1 + permutations)


def holm(pvalues: ArrayLike) -> NDArray[np.float64]:
    """Holm's step-down adjusted p-values (same order as given): the i-th smallest p is
    multiplied by (m − i + 1), made monotone, capped at 1."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adj
    return out


def bootstrap_quantiles(
    values: ArrayLike,
    qs: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
    method: QuantileMethod = "linear",
) -> list[Estimate]:
    """Quantiles ``qs`` (in [0, 1]) of ``values`` (NaN left out) with percentile bootstrap
    intervals: each resample's quantile, the 2.5th and 97.5th percentiles of those (the same
    resamples for every quantile, and for every call with the same seed). ``method``: numpy's
    quantile method (``"inverted_cdf"``: a value of the data, the smallest at or above the share).
    Fewer than one value gives NaN."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    n = x.size
    if n == 0:
        return [Estimate(np.nan, np.nan, np.nan, 0, level) for _ in qs]
    point = np.quantile(x, list(qs), method=method)
    if resamples < 1:
        return [Estimate(float(v), np.nan, np.nan, n, level) for v in point]
    rng = np.random.default_rng(seed)
    reps = np.empty((resamples, len(qs)))
    block = max(1, min(resamples, 4_000_000 // n))
    done = 0
    while done < resamples:
        b = min(block, resamples - done)
        reps[done : done + b] = np.quantile(x[rng.integers(0, n, size=(b, n))], list(qs), axis=1, method=method).T
        done += b
    lo, hi = percentile_intervals(reps, level)
    return [Estimate(float(point[i]), float(lo[i]), float(hi[i]), n, level) for i in range(len(qs))]


def wilson(k: int, n: int, level: float = DEFAULT_LEVEL) -> tuple[float, float] | None:
    """Wilson's score interval for a proportion ``k / n`` (Wilson 1927; Agresti & Coull 1998 show
    it keeps close to its level at small ``n``, where the normal interval does not):

        centre ± z·sqrt(p(1−p)/n + z²/(4n²)) / (1 + z²/n),  centre = (p + z²/(2n)) / (1 + z²/n)

    None for ``n = 0``. Used where a rate rests on a few items (judge agreement over citations)."""
    if n <= 0:
        return None
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    lo = 0.0 if k == 0 else max(0.0, float(centre - half))  # exactly 0 (1) at the edge, not 3e-17 of rounding
    return lo, 1.0 if k == n else min(1.0, float(centre + half))

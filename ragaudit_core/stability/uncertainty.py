"""95 % bootstrap intervals of the stability figures, over queries (seed 000's metrics;
:mod:`ragaudit_core.intervals` for the method).

Every figure is a mean over queries of a per-query value, so resampling queries resamples it:

* headline (all compared pairs): per query, the mean ``J`` over its pairs at each level
  (``mean_j_doc``, ``mean_j_span``; their ratio ``gap_ratio`` in each resample), the share of its
  pairs with ``J < τ`` (``flip_rate_doc``, ``flip_rate_span``), whether some pair collapsed
  (``collapse_rate``: ``J_span = 0`` with both sides non-empty) and the share of its cells where
  one side is empty and the other is not (``null_transition_rate``). With every query compared on
  every pair (the default), these means over queries equal the summary's figures.
* per pair and level: ``j_avg``, ``flip_rate``, ``collapse_rate``, ``null_loss``, ``null_gain`` —
  each the mean of a per-query value or indicator.
* per group of pairs (what changed between the runs, :func:`.effects.effects_by_change`) and level:
  ``j_avg``, ``flip_rate``, ``collapse_rate`` as the mean over the group's pairs, pairs weighing
  equally. A resample's group figure is the mean of its pairs' figures on that same resample; as
  every pair is evaluated on the same queries, that is the resample's mean of the per-query column
  "mean over the group's pairs", which is what is resampled (one column per group, not kept per
  pair). The doc-level collapse, which has no pair interval, has a group one.

All columns share one resampling of the queries (:func:`ragaudit_core.intervals.bootstrap_replicates`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ragaudit_core.intervals import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    bootstrap_row_replicates,
    percentile_intervals,
)

__all__ = [
    "EFFECT_INTERVAL_METRICS",
    "PAIR_INTERVAL_METRICS",
    "SUMMARY_INTERVAL_METRICS",
    "StabilityIntervals",
    "intervals_from_batches",
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
EFFECT_INTERVAL_METRICS = ("j_avg", "flip_rate", "collapse_rate")
_EFFECT_COLUMNS = ["changed", "level", "metric", "n_pairs", "value", "lo", "hi"]


def _effects_frame(rows: list[tuple]) -> pd.DataFrame:
    """Group intervals as rows (changed, level, metric, n_pairs, value, lo, hi), typed alike when
    computed and when read back from JSON."""
    df = pd.DataFrame(rows, columns=_EFFECT_COLUMNS)
    return df.astype({"n_pairs": "int64", "value": "float64", "lo": "float64", "hi": "float64"})


@dataclass
class StabilityIntervals:
    """Headline figures by key, per (level, run_a, run_b, metric) rows with ``value``, ``lo``,
    ``hi``, and per group of pairs (``changed``, ``level``, ``metric``, ``n_pairs``, ``value``,
    ``lo``, ``hi``; empty unless the groups were given); ``n_queries`` resampled, ``resamples`` and
    ``seed`` as used."""

    summary: dict[str, Estimate] = field(default_factory=dict)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    effects: pd.DataFrame = field(default_factory=lambda: _effects_frame([]))
    n_queries: int = 0
    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED

    _by_pair: tuple[int, dict[tuple[str, str, str, str], tuple[float, float, float]]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def pair(self, run_a: str, run_b: str, level: str, metric: str) -> Estimate | None:
        """The interval of one pair metric (either orientation of the pair), or None. The pairs'
        rows are indexed once per ``pairs`` frame (a table of every pair asks once per cell: a
        filter of the frame per call was 2 × 7 × 5,000 scans at the pair limit)."""
        if self._by_pair is None or self._by_pair[0] != id(self.pairs):
            index: dict[tuple[str, str, str, str], tuple[float, float, float]] = {}
            p = self.pairs
            if not p.empty:
                cols = (p.level, p.run_a, p.run_b, p.metric, p.value, p.lo, p.hi)
                for lv, a, b, m, v, lo, hi in zip(*cols, strict=True):
                    for key in ((lv, m, a, b), (lv, m, b, a)):
                        index.setdefault(key, (float(v), float(lo), float(hi)))  # the first row wins
            self._by_pair = (id(p), index)
        hit = self._by_pair[1].get((level, metric, run_a, run_b))
        return None if hit is None else Estimate(*hit, self.n_queries)

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
            "effects": [
                {
                    "changed": r.changed,
                    "level": r.level,
                    "metric": r.metric,
                    "n_pairs": int(r.n_pairs),
                    "value": num(r.value),
                    "ci": [num(r.lo), num(r.hi)],
                }
                for r in self.effects.itertuples()
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
    effects = [
        (
            e["changed"],
            e["level"],
            e["metric"],
            e["n_pairs"],
            *(np.nan if v is None else v for v in (e["value"], *e["ci"])),
        )
        for e in d.get("effects", [])  # none in results stored before the groups had intervals
    ]
    return StabilityIntervals(
        summary={k: est(v) for k, v in d["summary"].items()},
        pairs=pd.DataFrame(rows, columns=["level", "run_a", "run_b", "metric", "value", "lo", "hi"]),
        effects=_effects_frame(effects),
        n_queries=d["n_queries"],
        resamples=d["resamples"],
        seed=d["seed"],
    )


def stability_intervals(
    cells: pd.DataFrame,
    tau: float,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    groups: Mapping[tuple[str, str], str] | None = None,
) -> StabilityIntervals:
    """Intervals from the per-(level, pair, query) cells (``level, run_a, run_b, query_id, n_a,
    n_b, n_inter, j``, as :func:`ragaudit_core.stability.compute_stability` keeps them); with
    ``groups`` ((run_a, run_b) → what changed), each group's too."""
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
        groups=groups,
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
    groups: Mapping[tuple[str, str], str] | None = None,
) -> StabilityIntervals:
    """The same from the cells as arrays (``span`` 1 for the span level, 0 for doc; runs and
    queries as integer codes): what the metric computation hands over without building a frame."""
    order = np.lexsort((qi, rb, ra, span))
    cells = {"span": span, "ra": ra, "rb": rb, "qi": qi, "n_a": n_a, "n_b": n_b, "n_inter": n_inter, "j": j}
    batch = {k: np.asarray(v)[order] for k, v in cells.items()}
    return intervals_from_batches(
        [batch], n_queries=n_queries, runs=runs, tau=tau, resamples=resamples, seed=seed, groups=groups
    )


def intervals_from_batches(
    batches: Iterable[Mapping[str, np.ndarray]],
    *,
    n_queries: int,
    runs: list[str],
    tau: float,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    groups: Mapping[tuple[str, str], str] | None = None,
) -> StabilityIntervals:
    """The same from batches of cells (arrays named as :func:`intervals_from_cells`' arguments)
    **ordered by level, pair and query**, so that a pair's cells are contiguous: one pair's
    per-query columns are built at a time and the cells are never all in memory. Memory: every
    column kept compact (a pair's rates as bits, its J as float32) and a block of the (queries ×
    columns) float32 matrix the resampling multiplies (:func:`bootstrap_row_replicates`).

    ``groups`` maps a pair (run_a, run_b) to its group (what changed between the two runs); each
    group's figures get intervals too (:attr:`StabilityIntervals.effects`), their replicates drawn
    on the same query resamples as the pairs'. A pair not in ``groups`` is in no group."""
    ri = {r: i for i, r in enumerate(runs)}
    codes = {(ri[a], ri[b]): g for (a, b), g in (groups or {}).items() if a in ri and b in ri}
    acc = _Columns(n_queries, len(runs), tau, codes)
    for b in batches:
        acc.add(b)
    acc.flush()
    out = StabilityIntervals(resamples=resamples, seed=seed, n_queries=n_queries)
    if not acc.pairs:
        return out
    names, means, rows = acc.columns()
    counts, reps = bootstrap_row_replicates(rows, len(means), n_queries, resamples=resamples, seed=seed)
    del rows
    lo, hi = percentile_intervals(reps, points=means)
    k = len(names)
    out.summary = {
        name: Estimate(float(means[i]), float(lo[i]), float(hi[i]), int(counts[i])) for i, name in enumerate(names)
    }
    if "mean_j_doc" in names and "mean_j_span" in names:
        # J_doc over the pairs compared at span level too, as the summary's gap ratio takes it
        d = names.index(_SPANNED if _SPANNED in names else "mean_j_doc")
        sp = names.index("mean_j_span")
        out.summary["gap_ratio"] = _ratio(means[d], means[sp], reps[:, d], reps[:, sp], int(counts[sp]))
    out.summary.pop(_SPANNED, None)
    pair_rows = acc.pair_rows(runs)
    out.pairs = pd.DataFrame(
        [(*r, float(means[k + i]), float(lo[k + i]), float(hi[k + i])) for i, r in enumerate(pair_rows)],
        columns=["level", "run_a", "run_b", "metric", "value", "lo", "hi"],
    )
    k += len(pair_rows)
    out.effects = _effects_frame(
        [(*r, float(means[k + i]), float(lo[k + i]), float(hi[k + i])) for i, r in enumerate(acc.effect_rows())]
    )
    return out


_SPANNED = "mean_j_doc (pairs compared at span level)"
"""A headline column of the gap ratio alone: mean J_doc over the pairs compared at both levels
(present when some pair has no span level, e.g. a run of bare document ids beside runs with text)."""


def _ratio(num: float, den: float, num_reps: np.ndarray, den_reps: np.ndarray, n: int) -> Estimate:
    """The gap ratio mean J_doc / mean J_span (seed 000's Stability Gap) with its percentile
    interval: the ratio of the two means in each resample (the same resamples for both), a resample
    whose mean J_span is 0 giving no replicate; NaN throughout when the mean J_span is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = np.where(den_reps > 0, num_reps / den_reps, np.nan)
    lo, hi = percentile_intervals(reps[:, None])
    value = num / den if den > 0 else float("nan")
    return Estimate(float(value), float(lo[0]), float(hi[0]), n)


def _mean_per_query(q: np.ndarray, weights: np.ndarray, cnt: np.ndarray, n_q: int) -> np.ndarray:
    tot = np.bincount(q, weights=weights, minlength=n_q)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, tot / cnt, np.nan)


class _Columns:
    """Per-query columns built from cells ordered by pair: the headline sums per level, and each
    pair's five per-query values (:func:`_compact`, with their float64 means) once its last cell is seen."""

    def __init__(self, n_q: int, n_r: int, tau: float, groups: Mapping[tuple[int, int], str] | None = None) -> None:
        self.n_q, self.n_r, self.tau = n_q, n_r, tau
        self.groups = dict(groups or {})  # (ra, rb) codes → group
        self.effects: dict[tuple[int, str, str], _Group] = {}  # (level, group, metric) → its sums
        z = lambda: np.zeros(n_q)  # noqa: E731
        self.head = {lvl: {"cnt": z(), "j": z(), "flip": z(), "collapse": z(), "null": z()} for lvl in (0, 1)}
        self.seen = {0: False, 1: False}
        self.pairs: dict[int, dict[str, tuple[float, np.ndarray | _Bits]]] = {}
        self.cur: int | None = None
        self.buf: list[dict[str, np.ndarray]] = []

    def add(self, b: Mapping[str, np.ndarray]) -> None:
        span = np.asarray(b["span"], dtype=np.int64)
        if len(span) == 0:
            return
        n_a, n_b = np.asarray(b["n_a"], dtype=float), np.asarray(b["n_b"], dtype=float)
        v = {
            "qi": np.asarray(b["qi"], dtype=np.int64),
            "j": np.asarray(b["j"], dtype=float),
            "collapse": ((n_a > 0) & (n_b > 0) & (np.asarray(b["n_inter"], dtype=float) == 0)).astype(float),
            "loss": ((n_a > 0) & (n_b == 0)).astype(float),
            "gain": ((n_a == 0) & (n_b > 0)).astype(float),
        }
        v["flip"] = (v["j"] < self.tau).astype(float)
        v["null"] = v["loss"] + v["gain"]
        for lvl in (0, 1):
            m = span == lvl
            if m.all():  # the cells come by level: a batch is mostly of one, used without a copy
                self._headline(lvl, v)
            elif m.any():
                self._headline(lvl, {k: x[m] for k, x in v.items()})
        pkey = (span * self.n_r + np.asarray(b["ra"], dtype=np.int64)) * self.n_r + np.asarray(b["rb"], dtype=np.int64)
        cuts = np.flatnonzero(np.diff(pkey)) + 1
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(pkey)]):
            key = int(pkey[lo])
            if key != self.cur:
                self.flush()
                if key in self.pairs:
                    raise ValueError("stability cells must come ordered by level and pair")
                self.cur = key
            self.buf.append({k: x[lo:hi] for k, x in v.items()})

    def _headline(self, lvl: int, v: dict[str, np.ndarray]) -> None:
        h, q, n = self.head[lvl], v["qi"], self.n_q
        self.seen[lvl] = True
        h["cnt"] += np.bincount(q, minlength=n)
        for name in ("j", "flip", "null"):
            h[name] += np.bincount(q, weights=v[name], minlength=n)
        h["collapse"] += np.bincount(q, weights=v["collapse"], minlength=n)

    def flush(self) -> None:
        """Close the current pair: its per-query means of each metric as float32 columns."""
        if self.cur is None:
            return
        cells = {k: np.concatenate([b[k] for b in self.buf]) for k in self.buf[0]}
        q = cells["qi"]
        # one cell per query, in order (a pair's cells as _cells holds them): each mean over one
        # value is 0.0 + that value, as the sums below make it, without a bincount per metric
        one_each = len(q) == self.n_q and bool(np.array_equal(q, np.arange(self.n_q)))
        cnt = np.bincount(q, minlength=self.n_q).astype(float) if not one_each else None
        cols = {}
        level, ra, rb = self.cur // (self.n_r * self.n_r), (self.cur // self.n_r) % self.n_r, self.cur % self.n_r
        group = self.groups.get((ra, rb))
        for metric, name in zip(PAIR_INTERVAL_METRICS, ("j", "flip", "collapse", "loss", "gain")):
            per = cells[name] + 0.0 if cnt is None else _mean_per_query(q, cells[name], cnt, self.n_q)
            if group is not None and metric in EFFECT_INTERVAL_METRICS:
                self.effects.setdefault((level, group, metric), _Group(self.n_q)).add(per)
            if metric == "collapse_rate" and level == 0:
                continue  # collapse is a span-level event (the pair intervals leave out the doc level's)
            cols[metric] = (_nanmean(per), _compact(per))
        self.pairs[self.cur] = cols
        self.cur, self.buf = None, []

    def _headline_columns(self) -> list[tuple[str, np.ndarray]]:
        out = []
        for lvl, name in ((0, "doc"), (1, "span")):
            if not self.seen[lvl]:
                continue
            h = self.head[lvl]
            with np.errstate(invalid="ignore", divide="ignore"):
                out += [
                    (f"mean_j_{name}", np.where(h["cnt"] > 0, h["j"] / h["cnt"], np.nan)),
                    (f"flip_rate_{name}", np.where(h["cnt"] > 0, h["flip"] / h["cnt"], np.nan)),
                ]
                if name == "span":
                    collapsed = np.where(h["cnt"] > 0, h["collapse"] / h["cnt"], np.nan) > 0
                    out.append(("collapse_rate", collapsed.astype(float)))
        doc = self.head[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            null = np.where(doc["cnt"] > 0, doc["null"] / doc["cnt"], np.nan) if self.seen[0] else None
        out.append(("null_transition_rate", null if null is not None else np.full(self.n_q, np.nan)))
        return out

    def columns(self) -> tuple[list[str], np.ndarray, Callable[[int, int], np.ndarray]]:
        """Headline names, every column's mean (float64), and the (queries × columns) float32 matrix
        as rows of its transpose, a block at a time (``rows(lo, hi)``: columns lo … hi − 1): headline
        columns, then per metric every pair in (level, run_a, run_b) order, then every group (level,
        group, metric) in that order."""
        head = self._headline_columns()
        spanned = self._spanned_doc_column()
        if spanned is not None:
            head.append((_SPANNED, spanned))
        order = [(metric, key) for metric in PAIR_INTERVAL_METRICS for key in sorted(self.pairs)]
        order = [(m, key) for m, key in order if m in self.pairs[key]]
        self._effect_order = sorted(self.effects)
        cols: list[np.ndarray | _Bits] = []
        means = np.empty(len(head) + len(order) + len(self._effect_order))
        for i, (_name, col) in enumerate(head):
            means[i] = _nanmean(col)
            cols.append(col)
        for i, (metric, key) in enumerate(order, start=len(head)):
            means[i], kept = self.pairs[key].pop(metric)
            cols.append(kept)
        for i, gkey in enumerate(self._effect_order, start=len(head) + len(order)):
            means[i], group_col = self.effects[gkey].column()
            cols.append(group_col)
        self._order = order
        n_q = self.n_q

        def rows(lo: int, hi: int) -> np.ndarray:
            out = np.empty((hi - lo, n_q), dtype=np.float32)
            for i in range(lo, hi):
                col = cols[i]
                out[i - lo] = col.unpack(n_q) if isinstance(col, _Bits) else col
            return out

        return [n for n, _c in head], means, rows

    def _spanned_doc_column(self) -> np.ndarray | None:
        """Per query, mean J_doc over the pairs also compared at span level — None when every
        doc pair is (mean_j_doc is that already) or none is (no gap ratio)."""
        per_level = self.n_r * self.n_r
        spanned = {k - per_level for k in self.pairs if k >= per_level}
        doc = {k for k in self.pairs if k < per_level}
        if not spanned or doc <= spanned:
            return None
        sums, cnt = np.zeros(self.n_q), np.zeros(self.n_q)
        for key in sorted(doc & spanned):
            col = self.pairs[key]["j_avg"][1]
            per = col.unpack(self.n_q) if isinstance(col, _Bits) else np.asarray(col, dtype=float)
            have = ~np.isnan(per)
            sums += np.where(have, per, 0.0)
            cnt += have
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(cnt > 0, sums / cnt, np.nan)

    def pair_rows(self, runs: list[str]) -> list[tuple[str, str, str, str]]:
        n_r = self.n_r
        return [
            ("span" if key // (n_r * n_r) else "doc", runs[(key // n_r) % n_r], runs[key % n_r], metric)
            for metric, key in self._order
        ]

    def effect_rows(self) -> list[tuple[str, str, str, int]]:
        """The groups' (changed, level, metric, n_pairs), in the order of :meth:`columns`."""
        return [
            (group, "span" if level else "doc", metric, self.effects[(level, group, metric)].n_pairs)
            for level, group, metric in self._effect_order
        ]


class _Group:
    """One group of pairs' figure: per query, the sum and count of its pairs' values (the column
    resampled is their mean); the sum and count of its pairs' means (the figure: pairs weigh equally,
    a pair without a value left out, as pandas' mean leaves out NaN)."""

    def __init__(self, n_q: int) -> None:
        self.sums, self.counts = np.zeros(n_q), np.zeros(n_q, dtype=np.int32)
        self.mean_sum, self.n_means, self.n_pairs = 0.0, 0, 0

    def add(self, per_query: np.ndarray) -> None:
        have = ~np.isnan(per_query)
        self.sums += np.where(have, per_query, 0.0)
        self.counts += have
        self.n_pairs += 1
        if have.any():
            self.mean_sum += _nanmean(per_query)
            self.n_means += 1

    def column(self) -> tuple[float, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            col = np.where(self.counts > 0, self.sums / self.counts, np.nan)
        return (self.mean_sum / self.n_means if self.n_means else float("nan")), col


class _Bits:
    """A per-query column of 0 and 1 only (a pair's rate over one cell per query) as bits: an
    eighth of a byte a query until the resampling reads it back as float32."""

    __slots__ = ("bits",)

    def __init__(self, col: np.ndarray) -> None:
        self.bits = np.packbits(col.astype(bool))

    def unpack(self, n: int) -> np.ndarray:
        return np.unpackbits(self.bits, count=n)


def _compact(per_query: np.ndarray) -> np.ndarray | _Bits:
    """A pair's per-query column as kept until the resampling: bits when it holds only 0 and 1,
    else float32 (what the resampling multiplies; NaN where the pair has no cell)."""
    if bool(np.all((per_query == 0.0) | (per_query == 1.0))):
        return _Bits(per_query)
    return per_query.astype(np.float32)


def _nanmean(col: np.ndarray) -> float:
    """The mean of a column's values (NaN left out; NaN when none): ``np.nansum`` sums a copy with
    NaN replaced by 0, so a column without NaN is summed as it is, the same sum without the copy
    (4,000 columns of 41,666 queries: 1.5 → 0.1 s)."""
    n = col.size - int(np.count_nonzero(np.isnan(col)))
    if not n:
        return float("nan")
    return float((np.sum(col) if n == col.size else np.nansum(col)) / n)

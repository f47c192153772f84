"""Effects by what changed, with their 95 % intervals: hand-worked numbers on two queries, and the
invariants that tie a group's interval to its pairs' (the same query resamples for every pair)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from ragaudit_core.intervals import bootstrap_replicates, percentile_intervals
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from ragaudit_core.stability.uncertainty import StabilityIntervals
from tests.helpers import ev, write_jsonl

# Four runs on a 2 × 2 grid (top-k 2/1 × chunk size 256/128), two queries; spans named after
# their documents, so J_span = J_doc. Evidence:
#        q1      q2
#   A    d1      d1 d4        A k2 c256 · B k2 c128 · C k1 c256 · D k1 c128
#   B    d1      d2
#   C    d2      d1
#   D    d3      d1
# Per-query J (both levels), and the group of each pair:
#   A–B chunk size  q1 1  q2 0        A–C top-k  q1 0  q2 1/2        A–D several  q1 0  q2 1/2
#   C–D chunk size  q1 0  q2 1        B–D top-k  q1 0  q2 0          B–C several  q1 0  q2 0
_CONFIGS = {
    "A": {"top_k": 2, "chunk_size": 256, "chunk_overlap": 0},
    "B": {"top_k": 2, "chunk_size": 128, "chunk_overlap": 0},
    "C": {"top_k": 1, "chunk_size": 256, "chunk_overlap": 0},
    "D": {"top_k": 1, "chunk_size": 128, "chunk_overlap": 0},
}
_EVIDENCE = {
    "A": (["d1"], ["d1", "d4"]),
    "B": (["d1"], ["d2"]),
    "C": (["d2"], ["d1"]),
    "D": (["d3"], ["d1"]),
}


@pytest.fixture
def grid(tmp_path):
    for run, lists in _EVIDENCE.items():
        write_jsonl(
            tmp_path / f"{run}.jsonl",
            [
                {"run_id": run, "query_id": q, "config": _CONFIGS[run], "evidence": [ev(d, f"s-{d}") for d in docs]}
                for q, docs in zip(("q1", "q2"), lists)
            ],
        )
    return tmp_path


@pytest.fixture
def three_runs_with_configs(tmp_path):
    """conftest's three-run fixture (3 queries) with configurations: A–B top-k, A–C chunk size,
    B–C several."""
    lists = {
        "A": ([("d1", "s1"), ("d2", "s2")], [], [("d3", "s3")]),
        "B": ([("d1", "s1"), ("d2", "s2b")], [], []),
        "C": ([("d1", "s1b"), ("d4", "s4")], [("d5", "s5")], [("d3", "s3")]),
    }
    configs = {"A": (2, 256), "B": (1, 256), "C": (2, 128)}
    for run, per_query in lists.items():
        k, size = configs[run]
        write_jsonl(
            tmp_path / f"{run}.jsonl",
            [
                {
                    "run_id": run,
                    "query_id": q,
                    "config": {"top_k": k, "chunk_size": size},
                    "evidence": [ev(d, s) for d, s in entries],
                }
                for q, entries in zip(("q1", "q2", "q3"), per_query)
            ],
        )
    return tmp_path


def _row(eff, changed, level):
    row = eff[(eff.changed == changed) & (eff.level == level)]
    assert len(row) == 1
    return row.iloc[0]


def test_effects_intervals_by_hand(con, grid):
    """With two queries a resample holds q1 twice, each once, or q2 twice (1/4, 1/2, 1/4), so the
    2.5th and 97.5th percentiles of 1,000 resamples are the lowest and highest of the three. A group's
    replicate is the mean of its pairs' replicates on the same resample: the group's per-query mean
    over its pairs, resampled — so its interval runs between that mean's values on q1 and on q2."""
    ingest_paths(con, [grid])
    res = compute_stability(con, StabilityOptions(resamples=1000))
    eff = effects_by_change(res.pairs, res.intervals)
    for level in ("doc", "span"):
        cs = _row(eff, "chunk_size", level)
        # A–B (1, 0) and C–D (0, 1): the mean over the two pairs is 1/2 on q1 and on q2, so on every
        # resample: the interval is the point. Each pair alone ranges over [0, 1] — averaging the two
        # pairs' intervals, or resampling each pair on its own queries, would say [0, 1] or about it.
        assert (cs.n_pairs, cs.j_avg, cs.j_avg_lo, cs.j_avg_hi) == (2, 0.5, 0.5, 0.5)
        for a, b in (("A", "B"), ("C", "D")):
            e = res.intervals.pair(a, b, level, "j_avg")
            assert (e.lo, e.hi) == (0.0, 1.0)
        # flips (J < 0.5): A–B (0, 1), C–D (1, 0); collapses likewise (every list is non-empty)
        assert (cs.flip_rate, cs.flip_rate_lo, cs.flip_rate_hi) == (0.5, 0.5, 0.5)
        assert (cs.collapse_rate, cs.collapse_rate_lo, cs.collapse_rate_hi) == (0.5, 0.5, 0.5)
        tk = _row(eff, "top_k", level)
        # A–C (0, 1/2), B–D (0, 0): J_avg (1/4 + 0) / 2 = 1/8; per query 0 on q1, 1/4 on q2
        assert (tk.j_avg, tk.j_avg_lo, tk.j_avg_hi) == (0.125, 0.0, 0.25)
        # flips: A–C (1, 0), B–D (1, 1): rate (1/2 + 1) / 2 = 3/4; per query 1 on q1, 1/2 on q2
        assert (tk.flip_rate, tk.flip_rate_lo, tk.flip_rate_hi) == (0.75, 0.5, 1.0)
        assert (tk.collapse_rate, tk.collapse_rate_lo, tk.collapse_rate_hi) == (0.75, 0.5, 1.0)
        sv = _row(eff, "several", level)  # A–D (0, 1/2), B–C (0, 0): as top-k
        assert (sv.j_avg, sv.j_avg_lo, sv.j_avg_hi) == (0.125, 0.0, 0.25)


def test_a_group_is_the_mean_of_its_pairs_replicates(con, grid):
    """The definition, checked from the cells: each pair's per-query J resampled on the same query
    resamples (:func:`bootstrap_replicates`, same seed), the group's replicate the mean of its pairs'."""
    ingest_paths(con, [grid])
    res = compute_stability(con, StabilityOptions(resamples=500), keep_cells=True)
    cells = res.cells[res.cells.level == "span"]
    per_query = cells.pivot_table(index="query_id", columns=["run_a", "run_b"], values="j")
    _, _, reps = bootstrap_replicates(per_query.to_numpy(), resamples=500, seed=res.intervals.seed)
    groups = dict(zip(zip(res.pairs.run_a, res.pairs.run_b), res.pairs.changed))
    eff = effects_by_change(res.pairs, res.intervals)
    for changed in ("chunk_size", "top_k", "several"):
        cols = [i for i, p in enumerate(per_query.columns) if groups[p] == changed]
        lo, hi = percentile_intervals(reps[:, cols].mean(axis=1)[:, None])
        row = _row(eff, changed, "span")
        assert (row.j_avg_lo, row.j_avg_hi) == pytest.approx((lo[0], hi[0]), abs=1e-6)


def test_a_group_of_one_pair_has_that_pairs_interval(con, three_runs_with_configs):
    """Invariants on the three-run fixture (every group one pair): a one-pair group's interval is its
    pair's interval, exactly; every interval holds its point estimate; without spans there is no
    span row; without resamples no interval."""
    ingest_paths(con, [three_runs_with_configs])
    res = compute_stability(con, StabilityOptions(resamples=300))
    eff = effects_by_change(res.pairs, res.intervals)
    assert len(eff) == 6 and set(eff.n_pairs) == {1}
    for r in eff.itertuples():
        pair = res.pairs[(res.pairs.changed == r.changed) & (res.pairs.level == r.level)].iloc[0]
        for metric in ("j_avg", "flip_rate", "collapse_rate"):
            lo, hi = getattr(r, f"{metric}_lo"), getattr(r, f"{metric}_hi")
            e = res.intervals.pair(pair.run_a, pair.run_b, r.level, metric)
            if e is not None:  # the pair intervals leave out the doc-level collapse
                assert (lo, hi) == (e.lo, e.hi), (r.changed, r.level, metric)
            value = getattr(r, metric)
            assert lo <= value <= hi, (r.changed, r.level, metric)
    # no resamples: the same table, every bound NaN
    bare = effects_by_change(res.pairs, compute_stability(con).intervals)
    assert list(bare[["j_avg", "flip_rate"]].to_numpy().ravel()) == list(eff[["j_avg", "flip_rate"]].to_numpy().ravel())
    assert bare.filter(like="_lo").isna().all().all() and bare.filter(like="_hi").isna().all().all()


def test_a_level_without_spans_has_no_span_effects(con, tmp_path):
    for run, k in (("a", 1), ("b", 2)):
        write_jsonl(
            tmp_path / f"{run}.jsonl",
            [{"run_id": run, "query_id": q, "config": {"top_k": k}, "cited": ["x", q][:k]} for q in ("q1", "q2", "q3")],
        )
    ingest_paths(con, [tmp_path])
    res = compute_stability(con, StabilityOptions(resamples=200))
    eff = effects_by_change(res.pairs, res.intervals)
    assert list(eff.level) == ["doc"]
    assert set(res.intervals.effects.level) == {"doc"}
    assert eff.j_avg_lo.iloc[0] <= eff.j_avg.iloc[0] <= eff.j_avg_hi.iloc[0]


def test_effect_intervals_survive_json(con, grid):
    """The intervals travel with the stored result and the CLI's JSON: metric keys, not labels."""
    ingest_paths(con, [grid])
    res = compute_stability(con, StabilityOptions(resamples=200))
    js = json.loads(json.dumps(res.to_json()))
    top = {(e["changed"], e["level"]): e for e in js["effects"]}
    assert top[("top_k", "doc")] == {
        "changed": "top_k",
        "level": "doc",
        "n_pairs": 2,
        "j_avg": 0.125,
        "flip_rate": 0.75,
        "collapse_rate": 0.75,
    }
    ivs = {(e["changed"], e["level"], e["metric"]): e for e in js["intervals"]["effects"]}
    assert ivs[("top_k", "doc", "j_avg")] == {
        "changed": "top_k",
        "level": "doc",
        "metric": "j_avg",
        "n_pairs": 2,
        "value": 0.125,
        "ci": [0.0, 0.25],
    }
    back = StabilityIntervals.from_json(js["intervals"])
    assert back.effects.equals(res.intervals.effects)
    old = {k: v for k, v in js["intervals"].items() if k != "effects"}  # stored before effects had intervals
    assert StabilityIntervals.from_json(old).effects.empty
    eff = effects_by_change(res.pairs, StabilityIntervals.from_json(old))
    assert math.isnan(eff.j_avg_lo.iloc[0]) and not np.isnan(eff.j_avg.iloc[0])

"""Cells from each item's set of runs as a bitmask (up to 64 runs) equal the cells of the items'
self-join (the path beyond 64 runs), keyed or ranked, in one chunk or many; past 64 runs the join
is used."""

from __future__ import annotations

import pandas as pd
import pytest

from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability import cells, metrics
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from tests.helpers import ev, write_jsonl


def _both(con, monkeypatch, opts):
    masked = compute_stability(con, opts, keep_cells=True, density_bins=10)
    with monkeypatch.context() as m:
        m.setattr(cells, "MASK_MAX_RUNS", 0)  # every run count takes the self-join
        joined = compute_stability(con, opts, keep_cells=True, density_bins=10)
    return masked, joined


def _assert_same(a, b):
    for name in ("pairs", "queries", "runs", "density", "cells"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), rtol=1e-12)
    assert a.summary == b.summary


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("topk", [None, 3])
def test_mask_and_join_cells_agree_on_the_sample_logs(sample_con, monkeypatch, keyed, topk):
    if not keyed:
        monkeypatch.setattr(metrics.catalog, "hash_keys_unique", lambda con: False)
    _assert_same(*_both(sample_con, monkeypatch, StabilityOptions(allow_missing=True, resamples=0, topk=topk)))


def test_mask_and_join_cells_agree_on_duplicates_missing_texts_and_a_map(con, tmp_path, monkeypatch):
    """A document twice in one list (two spans, or the same span twice), entries without text in a
    span-capable run, empty lists, a query one run lacks, and a document-id map merging two ids."""
    rows = {
        "A": {"q1": [ev("d1", "s1"), ev("d1", "s1"), ev("d2", "s2")], "q2": [], "q3": [ev("d3", "s3"), ev("d4")]},
        "B": {"q1": [ev("d1", "s1"), ev("d1", "s1x")], "q2": [ev("d9", "s9")], "q3": [ev("d4"), ev("d3", "s3")]},
        "C": {"q1": [ev("d2", "s2"), ev("d7", "s7")], "q2": [], "q3": []},
        "D": {"q1": [ev("d1", "s1")], "q3": [ev("d3", "s3b")]},
    }
    for run, queries in rows.items():
        write_jsonl(
            tmp_path / f"{run}.jsonl",
            [{"run_id": run, "query_id": q, "evidence": e} for q, e in queries.items()],
        )
    ingest_paths(con, [tmp_path])
    for opts in (
        StabilityOptions(allow_missing=True, resamples=0),
        StabilityOptions(allow_missing=True, resamples=0, docid_map={"d7": "d1", "d9": "d2"}),
    ):
        _assert_same(*_both(con, monkeypatch, opts))


def test_past_64_runs_the_self_join_gives_the_cells(con, tmp_path, monkeypatch):
    """66 runs of one query: run r retrieves d0 and d{r+1} (spans s0, s{r+1}), so any two runs share
    d0 and s0 alone: J = 1 / 3 at both levels for each of the 2,145 pairs (a mask would need 66
    bits)."""
    write_jsonl(
        tmp_path / "runs.jsonl",
        [
            {"run_id": f"r{r:02d}", "query_id": "q", "evidence": [ev("d0", "s0"), ev(f"d{r + 1}", f"s{r + 1}")]}
            for r in range(66)
        ],
    )
    ingest_paths(con, [tmp_path])
    masked = []
    monkeypatch.setattr(cells, "_mask_cells", lambda *a: masked.append(1))  # must not be reached
    res = compute_stability(con, StabilityOptions(allow_missing=True, resamples=0))
    assert masked == []
    assert res.pairs.groupby("level").size().to_dict() == {"doc": 2145, "span": 2145}
    assert res.pairs["j_avg"].tolist() == pytest.approx([1 / 3] * 4290)


@pytest.mark.parametrize(
    ("chunk_entries", "chunk_cells", "part_cells"),
    [(5_000, 4_000_000, 1 << 20), (40, 4_000_000, 1 << 20), (10**9, 5_000, 1 << 20), (10**9, 4_000_000, 1_000)],
)
def test_mask_cells_in_chunks_equal_one_pass(sample_con, monkeypatch, chunk_entries, chunk_cells, part_cells):
    """The sample's 42,000 entries in chunks of about 34 queries, or of one query each; or chunks
    bounded by cells (132 pair-levels × 37 queries ≤ 5,000); or one chunk handed to DuckDB in parts
    of 3 pairs (1,000 cells of 300 queries)."""
    opts = StabilityOptions(allow_missing=True, resamples=50, topk=7)
    whole = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    monkeypatch.setattr(cells, "CHUNK_ENTRIES", chunk_entries)
    monkeypatch.setattr(cells, "CHUNK_CELLS", chunk_cells)
    monkeypatch.setattr(cells, "PART_CELLS", part_cells)
    chunked = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    for name in ("pairs", "queries", "runs", "density", "cells"):
        pd.testing.assert_frame_equal(getattr(whole, name), getattr(chunked, name), rtol=1e-12)
    for level in ("doc", "span"):  # means summed in another order: equal to rounding
        assert getattr(chunked.summary, level).mean_j == pytest.approx(getattr(whole.summary, level).mean_j, rel=1e-12)
    assert chunked.intervals.summary == whole.intervals.summary

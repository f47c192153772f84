"""Items keyed by 64-bit hashes give the metrics of items ranked by their ids (the exact path),
and are used only where the stored ids are verified collision-free."""

from __future__ import annotations

import pandas as pd
import pytest

from ragaudit_core.logs import catalog
from ragaudit_core.stability import cells, metrics
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability


@pytest.mark.parametrize(
    "opts",
    [
        StabilityOptions(allow_missing=True, resamples=0),
        StabilityOptions(allow_missing=True, resamples=0, topk=3, flip_threshold=0.3),
        StabilityOptions(pairs=[("k10-c256-o32", "k10-c128-o32")], allow_missing=True, resamples=200),
    ],
)
def test_keyed_and_ranked_items_give_the_same_metrics(sample_con, monkeypatch, opts):
    assert catalog.hash_keys_unique(sample_con)  # the sample's ids: no two share a hash
    keyed = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    monkeypatch.setattr(metrics.catalog, "hash_keys_unique", lambda con: False)  # as if two ids collided
    ranked = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    for name in ("pairs", "queries", "runs", "density", "cells"):
        pd.testing.assert_frame_equal(getattr(keyed, name), getattr(ranked, name), rtol=1e-12)
    assert keyed.summary.mean_j_span == pytest.approx(ranked.summary.mean_j_span, rel=1e-12)
    assert keyed.summary.collapse_rate == ranked.summary.collapse_rate
    if opts.resamples:
        assert keyed.intervals.summary == ranked.intervals.summary


def test_a_document_id_map_takes_the_ranked_path(sample_con, monkeypatch):
    calls = []
    monkeypatch.setattr(metrics.catalog, "hash_keys_unique", lambda con: calls.append(1) or True)
    compute_stability(sample_con, StabilityOptions(docid_map={"4983": "x"}, allow_missing=True, resamples=0))
    assert calls == []  # mapped ids are not the stored ones: their hashes were never checked


def test_cells_built_in_chunks_of_queries_equal_one_pass(sample_con, monkeypatch):
    opts = StabilityOptions(allow_missing=True, resamples=100)
    whole = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    monkeypatch.setattr(cells, "CHUNK_ENTRIES", 5_000)  # 42,000 entries: 9 chunks of about 34 queries
    chunked = compute_stability(sample_con, opts, keep_cells=True, density_bins=10)
    for name in ("pairs", "queries", "runs", "density", "cells"):
        pd.testing.assert_frame_equal(getattr(whole, name), getattr(chunked, name), rtol=1e-12)
    assert chunked.intervals.summary == whole.intervals.summary

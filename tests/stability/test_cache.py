"""Stored stability results: identical to a fresh computation, invalidated by new data."""

from __future__ import annotations

import pandas as pd
import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.stability import cache as derived
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from tests.helpers import ev, write_jsonl


def test_stored_result_equals_a_fresh_computation(con, three_runs):
    ingest_paths(con, [three_runs])
    opts = StabilityOptions(flip_threshold=0.4)
    first = derived.stability_cached(con, opts)
    assert _stored(con) == 1
    again = derived.stability_cached(con, opts)  # read back from the database
    fresh = compute_stability(con, opts, density_bins=derived.DEFAULT_DENSITY_BINS)
    for name in ("runs", "pairs", "queries", "density"):
        pd.testing.assert_frame_equal(getattr(again, name), getattr(fresh, name), check_dtype=False)
        pd.testing.assert_frame_equal(getattr(first, name), getattr(fresh, name), check_dtype=False)
    assert again.summary == fresh.summary
    # other options are another entry
    derived.stability_cached(con, StabilityOptions(flip_threshold=0.6))
    assert _stored(con) == 2


def _stored(con) -> int:
    return con.execute("SELECT count(*) FROM derived_results WHERE kind LIKE 'stability/%'").fetchall()[0][0]


def test_new_data_invalidates_stored_results(con, three_runs, tmp_path):
    ingest_paths(con, [three_runs])
    before = derived.stability_cached(con)
    ingest_paths(
        con,
        [
            write_jsonl(
                tmp_path / "D.jsonl",
                [{"run_id": "D", "query_id": q, "evidence": [ev("d1", "s1")]} for q in ("q1", "q2", "q3")],
            )
        ],
    )
    after = derived.stability_cached(con)
    assert "D" in set(after.pairs.run_a) | set(after.pairs.run_b)
    assert "D" not in set(before.pairs.run_a) | set(before.pairs.run_b)
    versions = con.execute("SELECT DISTINCT data_version FROM derived_results").fetchall()
    assert versions == [(store.data_version(con),)]  # stale entries dropped


def test_clear_data_drops_stored_results(con, three_runs):
    ingest_paths(con, [three_runs])
    derived.precompute(con)
    store.clear_data(con)
    assert con.execute("SELECT count(*) FROM derived_results").fetchall()[0][0] == 0
    assert derived.precompute(con) is None  # nothing to compare


def test_the_overview_stored_at_ingest_leaves_out_pairs_whose_ids_cannot_meet(con, tmp_path):
    """The overview the pages open on, stored at ingest: a Ragas export without ids ('ragas', 'ragas2':
    passage hashes) beside one with ('ids') is compared only where ids can meet — (ragas, ragas2),
    {A, B} vs {A, C} → J 1/3 —, and the pages' opening pair is that pair; one run of each kind
    stores no overview (the page says why when opened)."""
    from ragaudit_core.workspace import load_paths as ingest  # stores what the pages open on

    def ragas(name: str, passages: list[str], ids: bool = False) -> object:
        row = {"user_input": "Q?", "retrieved_contexts": [f"{p} passage." for p in passages]}
        return write_jsonl(tmp_path / f"{name}.jsonl", [row | ({"retrieved_context_ids": passages} if ids else {})])

    ingest(con, [ragas("ids", ["A", "B"], ids=True), ragas("ragas", ["A", "B"])])
    assert _stored(con) == 0 and derived.precompute(con) is None
    assert derived.opening_pair(con) is None
    # (without stored passages: its passage A would take the id 'ids' logs for it, logs.stored_passages)
    ingest(con, [ragas("ragas2", ["A", "C"])], IngestOptions(stored_passages=False))
    assert _stored(con) == 1
    res = derived.stability_cached(con, derived.default_options(con))  # read back, as the page opens
    assert res.summary.n_pairs == 1 and res.summary.mean_j_doc == pytest.approx(1 / 3)
    assert any(w.startswith("Left out 2 pairs between runs 'ragas', 'ragas2'") for w in res.summary.warnings)
    assert derived.opening_pair(con) == ("ragas", "ragas2")

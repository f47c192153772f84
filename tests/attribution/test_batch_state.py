"""The token a page keys its cached attribution tables on changes whenever a run's stored results
change (a worker's store does not bump the data version), and only then. A real DuckDB file."""

from __future__ import annotations

import time

from ragaudit_core.attribution.storage import batch_state, batch_tables, store_payloads
from ragaudit_core.logs import store


def _row(key: str, query: str, spearman: float) -> tuple[str, dict, dict]:
    d = {
        "run_id": "r",
        "query_id": query,
        "retriever": "ret",
        "generator": "gen",
        "method": "exact",
        "params": {},
        "condition": "original",
    }
    payload = {"warg": {"0.5": 0.2}, "wasted_retrieval": False, "noise_distraction": True, "spearman": spearman}
    return key, d, payload


def test_the_state_changes_with_each_stored_result_and_only_then(tmp_path):
    con = store.connect(tmp_path / "a.duckdb")
    empty = batch_state(con, "r")
    assert batch_state(con, "r") == empty and batch_tables(con, "r") == {}
    store_payloads(con, [_row("k1", "q1", 0.5)])
    one = batch_state(con, "r")
    assert one != empty and batch_state(con, "r") == one  # reading leaves it
    assert batch_tables(con, "r")["failure"]["queries"].tolist() == [1]
    store_payloads(con, [_row("k2", "q2", 0.1)])
    two = batch_state(con, "r")
    assert two not in (empty, one)
    assert batch_tables(con, "r")["failure"]["queries"].tolist() == [2]
    time.sleep(0.01)
    store_payloads(con, [_row("k2", "q2", 0.9)])  # the same key stored again, with another figure
    assert batch_state(con, "r") not in (empty, one, two)
    assert batch_state(con, "other") == empty  # another run's results left as they were


def test_a_query_explained_again_with_other_settings_counts_once_with_its_latest_result(tmp_path):
    """q1 explained by exact (Spearman 0.5, noise-distracted), then by PMC with another seed (0.9,
    not distracted); q2 once (0.1, distracted). Table 2 is over queries: 2 of them, noise
    distraction 1/2 (q1's latest says no), mean Spearman (0.9 + 0.1) / 2 = 0.5 — not 3 rows."""
    con = store.connect(tmp_path / "a.duckdb")
    store_payloads(con, [_row("k1", "q1", 0.5), _row("k2", "q2", 0.1)])
    time.sleep(0.01)
    key, d, payload = _row("k3", "q1", 0.9)
    store_payloads(con, [(key, {**d, "method": "pmc", "params": {"seed": 7}}, {**payload, "noise_distraction": False})])
    failure = batch_tables(con, "r")["failure"].set_index("condition").loc["original"]
    assert failure["queries"] == 2
    assert failure["noise_distraction"] == 0.5 and failure["spearman"] == 0.5

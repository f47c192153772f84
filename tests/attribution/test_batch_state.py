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

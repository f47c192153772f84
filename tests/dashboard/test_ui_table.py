"""Table cells as a reader expects them: counts and positions without decimals, ranks from 1."""

from __future__ import annotations

import pandas as pd

from pages.ui import _whole
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability.drilldown import evidence_side_by_side
from tests.helpers import write_jsonl


def test_counts_and_positions_lose_their_decimals_rates_keep_them():
    assert _whole(pd.Series([2.0, None, 14.0]), "page")  # NULLs made the column float: still pages
    assert _whole(pd.Series([3.0, 7.0]), "n_entries")
    assert not _whole(pd.Series([2.5, 1.0]), "page")
    assert not _whole(pd.Series([1.0, 0.0]), "citation_rate")  # a rate of exactly 1 keeps "1.000"
    assert not _whole(pd.Series([None, None], dtype=float), "page")


def test_drilldown_ranks_count_from_one_and_keep_the_logged_rank(tmp_path):
    con = store.connect(":memory:")
    rec = {"run_id": "a", "query_id": "q", "evidence": [{"doc_id": "d1", "rank": 0}, {"doc_id": "d2", "rank": 1}]}
    ingest_paths(con, [write_jsonl(tmp_path / "l.jsonl", [rec, {**rec, "run_id": "b"}])])
    a, _b = evidence_side_by_side(con, "q", "a", "b")
    assert a["rank"].tolist() == [1, 2] and a["logged_rank"].tolist() == [0, 1]

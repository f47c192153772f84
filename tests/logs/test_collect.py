"""The collector's thresholds during a load: raised while it runs, restored after, also when two
loads overlap."""

from __future__ import annotations

import gc

from ragaudit_core.logs import store
from ragaudit_core.logs.collect import LOAD_THRESHOLDS, fewer_collections
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl


def test_a_load_raises_the_thresholds_and_restores_them(tmp_path):
    before = gc.get_threshold()
    seen = []
    path = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["d"]}])
    ingest_paths(store.connect(":memory:"), [path], progress=lambda _p, _n, _u: seen.append(gc.get_threshold()))
    assert seen and all(t == LOAD_THRESHOLDS for t in seen)
    assert gc.get_threshold() == before


def test_overlapping_loads_restore_once_the_last_ends():
    before = gc.get_threshold()
    with fewer_collections():
        with fewer_collections():
            assert gc.get_threshold() == LOAD_THRESHOLDS
        assert gc.get_threshold() == LOAD_THRESHOLDS
    assert gc.get_threshold() == before

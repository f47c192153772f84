"""Display words: counts read in the singular for one and in the plural otherwise."""

from __future__ import annotations

from ragaudit_core.review.labels import counted


def test_counts_read_as_a_reader_writes_them():
    assert counted(1, "query") == "1 query"
    assert counted(0, "query") == "0 queries"
    assert counted(1204, "query") == "1,204 queries"
    assert counted(1, "run") == "1 run" and counted(2, "run") == "2 runs"
    assert counted(1, "run pair") == "1 run pair" and counted(66, "run pair") == "66 run pairs"
    assert counted(3, "similarity", "similarities") == "3 similarities"
    assert counted(1, "similarity", "similarities") == "1 similarity"

"""Display words: counts read in the singular for one and in the plural otherwise."""

from __future__ import annotations

from ragaudit_core.wording import counted


def test_counts_read_as_a_reader_writes_them():
    assert counted(1, "query") == "1 query"
    assert counted(0, "query") == "0 queries"
    assert counted(1204, "query") == "1,204 queries"
    assert counted(1, "run") == "1 run" and counted(2, "run") == "2 runs"
    assert counted(1, "run pair") == "1 run pair" and counted(66, "run pair") == "66 run pairs"
    assert counted(3, "similarity", "similarities") == "3 similarities"
    assert counted(1, "similarity", "similarities") == "1 similarity"


def test_the_ingest_report_counts_in_words():
    from ragaudit_core.logs.report import FileReport, IngestReport

    one = IngestReport(
        files=[FileReport(path="a.jsonl", sha256="0" * 64, status="loaded")], runs=["r"], n_records=1, n_entries=1
    )
    assert one.summary() == "loaded 1 record (1 evidence entry) from 1 file into 1 run; rejected 0 lines"

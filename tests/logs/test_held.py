"""The rows of held spans: the same rows back whether they stayed in memory or went to the
temporary file, which is deleted when they are read back or dropped."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from ragaudit_core.logs.held import HeldRows

_SCHEMA = pa.schema([("text", pa.string()), ("rec_idx", pa.int32())])


def _table(lo: int, n: int) -> pa.Table:
    rows = {"text": [f"passage {i}" * 20 for i in range(lo, lo + n)], "rec_idx": list(range(n))}
    return pa.table(rows, schema=_SCHEMA)


def test_spilled_rows_come_back_as_they_went_and_the_file_goes():
    tables = [_table(0, 3), _table(3, 0), _table(3, 5), _table(8, 2)]
    held = HeldRows(spill_bytes=600)
    slots = [held.add(t, t.num_rows) for t in tables[:3]]
    path = held.path
    assert path is not None and Path(path).exists()  # past 600 bytes: spilled
    slots.append(held.add(tables[3], 2))  # in memory again until the next spill
    held.keep(slots[0], 1)
    held.keep(slots[2], 4)
    got = list(held.rows())
    assert [t.equals(want) for (t, _, _), want in zip(got, tables, strict=True)] == [True] * 4
    assert [k for _, k, _ in got] == [[1], [], [4], []] and [n for _, _, n in got] == [3, 0, 5, 2]
    assert not Path(path).exists() and held.path is None


def test_dropping_held_rows_deletes_the_file():
    held = HeldRows(spill_bytes=10)
    held.add(_table(0, 4), 4)
    path = held.path
    assert path is not None and Path(path).exists()
    held.close()
    assert not Path(path).exists() and held.slots == []
    held.close()  # twice: nothing left to do


def test_a_full_temporary_folder_refuses_that_file_in_one_sentence_and_keeps_the_others(tmp_path, monkeypatch):
    """Spans that must wait in a temporary file when TMPDIR is full: that file is refused with a
    sentence naming the folder and what to do; the call's other file loads."""
    import errno

    from ragaudit_core.logs import held, store
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl
    from tests.logs.test_fast_dialects import _oi_file

    spans = tmp_path / "spans.jsonl"
    _oi_file(spans)
    native = write_jsonl(tmp_path / "native.jsonl", [{"run_id": "r", "query_id": "q", "cited": ["d"]}])

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    monkeypatch.setattr(held, "PREMAP_BYTES", 0)
    monkeypatch.setattr(held.tempfile, "mkstemp", full)
    con = store.connect(":memory:")
    report = ingest_paths(con, [spans, native])
    refused = [i for i in report.rejected if i.path == str(spans)]
    assert len(refused) == 1 and "temporary file under" in refused[0].message and "TMPDIR" in refused[0].message
    assert con.execute("SELECT run_id FROM records").fetchall() == [("r",)]

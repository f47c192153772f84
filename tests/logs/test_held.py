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
    assert [t.equals(want) for (t, _, _, _), want in zip(got, tables, strict=True)] == [True] * 4
    assert [k for _, k, _, _ in got] == [[1], [], [4], []] and [n for _, _, n, _ in got] == [3, 0, 5, 2]
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


def test_a_spill_queue_gives_its_items_back_in_order_and_its_file_goes():
    """Past ``limit`` spillable items the spillable ones wait packed in a temporary file, the others
    stay as objects; iterating gives every item back unpacked, in insertion order, once."""
    from ragaudit_core.logs.held import SpillQueue

    packed: list = []
    q = SpillQueue(lambda it: packed.append(it) or ("p", it), lambda p: ("u", p[1]), limit=2)
    items = [("s", 0), ("o", 1), ("s", 2), ("s", 3), ("s", 4), ("o", 5), ("s", 6)]
    for it in items:
        q.append(it, spillable=it[0] == "s")
    assert len(q) == 7 and q.spilled == 3 and packed == [("s", 3), ("s", 4), ("s", 6)]
    f = q._file
    assert f is not None
    got = list(q)
    assert got == [("s", 0), ("o", 1), ("s", 2), ("u", ("s", 3)), ("u", ("s", 4)), ("o", 5), ("u", ("s", 6))]
    assert f.closed and q._file is None


def test_a_full_temporary_folder_while_spans_wait_refuses_that_file(tmp_path, monkeypatch):
    """The waiting spans' file cannot be made (TMPDIR full): that file is refused in one sentence."""
    import errno

    from ragaudit_core.logs import held, store
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.logs.test_fast_dialects import _oi_file

    spans = tmp_path / "spans.jsonl"
    _oi_file(spans)

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    monkeypatch.setattr(held, "PREMAP_BYTES", 0)
    monkeypatch.setattr(held, "HELD_SPANS", 1)
    monkeypatch.setattr(held.tempfile, "TemporaryFile", full)
    report = ingest_paths(store.connect(":memory:"), [spans])
    assert [i.code for i in report.rejected] == ["unreadable"] and "TMPDIR" in report.rejected[0].message

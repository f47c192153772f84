"""Streaming ingest: batches inside the one transaction store exactly what one batch stores; the
span-hash fast path gives the documented identity (NFKC, whitespace collapse, SHA-256)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import unicodedata
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragaudit_core.logs.ingest as ing
from ragaudit_core.logs import handover, parallel, rows, store
from ragaudit_core.logs.identity import normalise_span_text, span_hash
from ragaudit_core.logs.rows import RowOptions
from tests.helpers import write_jsonl


def _documented(text: str, casefold: bool = False) -> str:
    s = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()
    return s.casefold() if casefold else s


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("aB .\t\n\r\x0b\x0c\x1c\x1f\x01\x7f\xa0\u2003ﬁé")), max_size=30),
    st.booleans(),
)
def test_the_fast_path_equals_the_documented_normalisation(text, casefold):
    assert normalise_span_text(text, casefold=casefold) == _documented(text, casefold)
    assert span_hash(text, casefold=casefold) == hashlib.sha256(_documented(text, casefold).encode()).hexdigest()


def _dump(con):
    return (
        con.execute("SELECT * EXCLUDE (metadata) FROM evidence ORDER BY run_id, query_id, position").fetchall(),
        con.execute("SELECT * FROM records ORDER BY run_id, query_id").fetchall(),
    )


def test_small_batches_store_what_one_batch_stores(tmp_path, monkeypatch):
    recs = [
        {
            "run_id": r,
            "query_id": f"q{i}",
            "evidence": [
                {"doc_id": f"d{i % 5}", "text": f"text {i % 7} of {r}"},
                {"doc_id": "d9", "text": f"shared {i % 3}"},
            ],
        }
        for r in ("A", "B")
        for i in range(40)
    ]
    path = write_jsonl(tmp_path / "logs.jsonl", recs)
    one = store.connect(":memory:")
    ing.ingest_paths(one, [path])
    monkeypatch.setattr(ing, "FLUSH_ENTRIES", 3)  # a flush every other record
    monkeypatch.setattr(rows, "HASH_CACHE", 2)  # and the caches emptied all the time
    monkeypatch.setattr(rows, "HASH_CACHE_CHARS", 20)
    many = store.connect(":memory:")
    report = ing.ingest_paths(many, [path])
    assert report.n_records == 80 and report.n_entries == 160
    assert _dump(many) == _dump(one)


def _everything(con, report):
    return (
        _dump(con),
        con.execute("SELECT file_id, line_no, reason, raw FROM quarantine ORDER BY file_id, line_no").fetchall(),
        con.execute("SELECT line_no, code, message FROM ingest_warnings ORDER BY all").fetchall(),
        con.execute("SELECT run_id, config FROM runs ORDER BY run_id").fetchall(),
        [str(i) for i in report.rejected],
        report.n_records,
        report.n_entries,
    )


def force_pool(monkeypatch, chunk_bytes: int, counts=lambda _it: True) -> list[int]:
    """Send every file to two worker processes in ranges of ``chunk_bytes`` (batches of 5
    entries); returns a list filled, as the ingest runs, with how many decoded lines of each range
    ``counts`` accepts (every decoded line by default)."""
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "2")
    monkeypatch.setattr(parallel, "MIN_FILE_BYTES", 0)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(ing, "FLUSH_ENTRIES", 5)
    seen: list[int] = []
    decode = parallel.LinePool.decode

    def counted(self, path, mapping=None, then=None):
        for n_lines, items, table in decode(self, path, mapping, then):
            seen.append(sum(isinstance(it, parallel.DecodedLine) and counts(it) for it in items))
            yield n_lines, items, table

    monkeypatch.setattr(parallel.LinePool, "decode", counted)
    return seen


def after_stored_run(monkeypatch, stored, path, chunk_bytes: int):
    """``path`` ingested after the log ``stored``, once by the process alone and once by worker
    processes (:func:`force_pool`, ranges of ``chunk_bytes``), each into a fresh database: the
    process's connection, what each stored and said (:func:`_everything`), and how many lines the
    workers decoded."""
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    serial = store.connect(":memory:")
    ing.ingest_paths(serial, [stored])
    expected = _everything(serial, ing.ingest_paths(serial, [path]))
    worked = force_pool(monkeypatch, chunk_bytes)
    pooled = store.connect(":memory:")
    ing.ingest_paths(pooled, [stored])
    worked.clear()
    got = _everything(pooled, ing.ingest_paths(pooled, [path]))
    return serial, expected, got, sum(worked)


def test_worker_processes_store_and_report_what_the_process_does(tmp_path, monkeypatch):
    """A large file's lines go to worker processes (here: every file, ranges of ~300 bytes, 2
    workers); fast lines, lines the workers leave (aliases, bad lines, a BOM), duplicates of a
    (run, query) inside and across chunks and duplicate entries give the same database and report."""
    lines = []
    for i in range(30):
        ev = [
            {"doc_id": f"D{i % 4}", "text": f"passage  {i % 5}"},
            {"doc_id": f"d{i % 4}", "text": f"passage {i % 5}"},
            {"doc_id": "x", "span_hash": "H"},
        ]
        lines.append(
            json.dumps({"run_id": "A", "query_id": f"q{i % 25}", "config": {"top_k": 3 + i % 2}, "evidence": ev})
        )
        if i % 7 == 0:
            lines.append(json.dumps({"runId": "B", "qid": i, "contexts": [f" d{i} "]}))
        if i % 9 == 0:
            lines.append('{"run_id": "A", "query_id": "broken", "evidence": [}')
    lines.insert(3, "\ufeff" + json.dumps({"run_id": "C", "query_id": "q0", "evidence": ["d1"]}))
    lines.insert(8, "")  # blank lines count
    lines.insert(12, "   ")
    lines.insert(15, json.dumps({"run_id": "L", "query_id": "long", "evidence": ["d" * 600]}))  # over the limit
    path = tmp_path / "logs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    serial = store.connect(":memory:")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    opts = ing.IngestOptions(max_line_bytes=500)
    expected = _everything(serial, ing.ingest_paths(serial, [path], opts))
    chunks = force_pool(monkeypatch, 300)
    pooled = store.connect(":memory:")
    got = _everything(pooled, ing.ingest_paths(pooled, [path], opts))
    assert len(chunks) > 5 and sum(chunks) == 30  # every A line decoded by a worker, in several ranges
    assert got == expected
    assert expected[5] == 25 + 5 + 1 and any("duplicate record" in r for r in expected[4])
    assert any(code == "duplicate-evidence" for _, code, _ in expected[2])
    assert any("500-byte limit" in r for r in expected[4])


def test_many_medium_files_go_to_the_pool_together(tmp_path, monkeypatch):
    """The pool is started once per call, so a call of many files each below the single-file
    threshold (twelve 33 MB runs of a sweep) still sends them to the workers; a small call does not."""
    paths = []
    for run in ("A", "B", "C"):
        lines = [
            json.dumps({"run_id": run, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{i + 1}"]}) for i in range(20)
        ]
        path = tmp_path / f"{run}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    size = paths[0].stat().st_size
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "2")
    monkeypatch.setattr(parallel, "MIN_FILE_BYTES", 2 * size)  # no file alone is large enough; all three are
    monkeypatch.setattr(parallel, "CHUNK_BYTES", size // 2)
    seen: list[str] = []
    decode = parallel.LinePool.decode

    def spied(self, path, mapping=None, then=None):
        seen.append(Path(path).name)
        yield from decode(self, path, mapping, then)

    monkeypatch.setattr(parallel.LinePool, "decode", spied)
    con = store.connect(":memory:")
    report = ing.ingest_paths(con, paths)
    assert seen == ["A.jsonl", "B.jsonl", "C.jsonl"] and report.n_records == 60 and report.n_entries == 120
    seen.clear()
    ing.ingest_paths(store.connect(":memory:"), paths[:1])  # one file, below the call threshold: in the process
    assert seen == []
    gz = tmp_path / "D.jsonl.gz"  # as large, but gzip: read in the process, so it does not count
    gz.write_bytes(gzip.compress(paths[1].read_bytes().replace(b'"B"', b'"D"'), compresslevel=0))
    assert gz.stat().st_size > size
    ing.ingest_paths(store.connect(":memory:"), [paths[0], gz])
    assert seen == []


def _sweep(tmp_path, runs=("A", "B", "C"), n=24):
    paths = []
    for run in runs:
        lines = [
            json.dumps({"run_id": run, "query_id": f"q{i % 20}", "evidence": [{"doc_id": f"d{i}", "text": f"t {i}"}]})
            for i in range(n)
        ]
        (path := tmp_path / f"{run}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _read_ahead_spy(monkeypatch) -> list[tuple[str, str, int]]:
    """Record, for each range a decode yields, (file, where its future came from: "ahead" when
    it was submitted while the file before was read, else "own"), and every cancelled read-ahead."""
    events: list[tuple[str, str, int]] = []
    decode, cancel = parallel.LinePool.decode, parallel._Ahead.cancel

    def spied(self, path, mapping=None, then=None):
        ahead = self._ahead
        from_ahead = len(ahead.pending) if ahead is not None and ahead.serves(path, mapping) else 0
        for i, got in enumerate(decode(self, path, mapping, then)):
            events.append((Path(path).name, "ahead" if i < from_ahead else "own", i))
            yield got

    def cancelled(self):
        events.append((Path(self.key[0]).name, "cancelled", len(self.pending)))
        cancel(self)

    monkeypatch.setattr(parallel.LinePool, "decode", spied)
    monkeypatch.setattr(parallel._Ahead, "cancel", cancelled)
    return events


def test_the_next_file_is_read_ahead_while_one_ends_and_stores_what_the_process_does(tmp_path, monkeypatch):
    """While a file's last ranges are merged (and its held spans joined), the workers already
    decode the call's next file: its first ranges come from that read-ahead, at most the window
    in flight, and the database and report are those of one process. A duplicate of a loaded
    file is skipped, and its read-ahead cancelled (the file after it reads its own ranges)."""
    paths = _sweep(tmp_path)
    (dup := tmp_path / "B again.jsonl").write_bytes(paths[1].read_bytes())
    files = [paths[0], paths[1], dup, paths[2]]
    serial = store.connect(":memory:")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = _everything(serial, ing.ingest_paths(serial, files))
    force_pool(monkeypatch, 200)
    events = _read_ahead_spy(monkeypatch)
    pooled = store.connect(":memory:")
    got = _everything(pooled, ing.ingest_paths(pooled, files))
    assert got == expected and expected[5] == 60
    per_file = {name: [how for f, how, _ in events if f == name] for name in ("A.jsonl", "B.jsonl", "C.jsonl")}
    assert set(per_file["A.jsonl"]) == {"own"}  # the first file: nothing before it
    hows = per_file["B.jsonl"]  # B starts from what was read ahead while A ended, then goes on
    assert hows[0] == "ahead" and "own" in hows and hows.index("own") < parallel.WINDOW
    assert hows == sorted(hows)  # the read-ahead's ranges first, in order
    assert ("B again.jsonl", "cancelled") in [(f, h) for f, h, _ in events]  # skipped: never decoded
    assert set(per_file["C.jsonl"]) == {"own"}  # what was read ahead was for the skipped file


def test_a_read_ahead_of_a_file_read_otherwise_is_cancelled(tmp_path, monkeypatch):
    """The next file turns out to be read in the process (not in a shape the workers decode):
    what was read ahead is dropped and the file is read as without it. A next file that cannot
    be opened leaves nothing read ahead, and the file before is decoded whole."""
    a, b = _sweep(tmp_path, ("A", "B"))
    doc = tmp_path / "doc.jsonl"  # a JSON document of records, pretty-printed: the process reads it
    doc.write_text(json.dumps([json.loads(x) for x in b.read_text().splitlines()], indent=1), encoding="utf-8")
    serial = store.connect(":memory:")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = _everything(serial, ing.ingest_paths(serial, [a, doc]))
    force_pool(monkeypatch, 200)
    events = _read_ahead_spy(monkeypatch)
    pooled = store.connect(":memory:")
    assert _everything(pooled, ing.ingest_paths(pooled, [a, doc])) == expected
    assert [f for f, how, _ in events if how != "cancelled"] == ["A.jsonl"] * sum(f == "A.jsonl" for f, *_ in events)
    assert ("doc.jsonl", "cancelled") in [(f, how) for f, how, _ in events]  # read ahead, then dropped

    pool = parallel.LinePool(RowOptions(), 2, 1 << 20)  # a next file that cannot be read: nothing kept
    try:
        ranges = list(pool.decode(a, ("A", None), then=(tmp_path / "gone.jsonl", ("gone", None))))
    finally:
        pool.close()
    assert sum(n for n, _items, _table in ranges) == 24 and pool._ahead is None


def test_a_file_that_changes_after_it_was_read_ahead_is_read_again(tmp_path, monkeypatch):
    """A log still being written can grow, be replaced or be cut between the read-ahead (while
    the file before it ended) and its own turn: the ranges read ahead are then dropped and the
    file is read as it is when hashed, so its rows match its SHA-256 (stored as without the
    read-ahead, where the file was appended to 10 lines were lost and a later ingest skipped it)."""
    a, b = _sweep(tmp_path, ("A", "B"))
    extra = "".join(
        json.dumps({"run_id": "B", "query_id": f"late{i}", "evidence": [{"doc_id": "d", "text": "t"}]}) + "\n"
        for i in range(10)
    )
    original = b.read_bytes()
    changes = {
        "appended": lambda: b.write_bytes(original + extra.encode()),
        "replaced": lambda: b.write_bytes(original.replace(b'"B"', b'"C"')),
        "truncated": lambda: b.write_bytes(original[: len(original) // 3].rsplit(b"\n", 1)[0] + b"\n"),
    }
    hash_file = ing.file_sha256
    for name, change in changes.items():
        b.write_bytes(original)

        def changing(path, change=change):  # the change lands after the read-ahead, before the hash
            if Path(path) == b and not getattr(changing, "done", False):
                changing.done = True
                change()
            return hash_file(path)

        monkeypatch.setattr(ing, "file_sha256", changing)
        monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
        serial = store.connect(":memory:")
        expected = _everything(serial, ing.ingest_paths(serial, [a, b]))
        b.write_bytes(original)
        changing.done = False
        force_pool(monkeypatch, 200)
        events = _read_ahead_spy(monkeypatch)
        pooled = store.connect(":memory:")
        assert _everything(pooled, ing.ingest_paths(pooled, [a, b])) == expected, name
        assert ("B.jsonl", "cancelled") in [(f, how) for f, how, _ in events], name  # read ahead, then dropped
        assert "ahead" not in [how for f, how, _ in events if f == "B.jsonl"], name  # its ranges cut again
        monkeypatch.undo()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.sampled_from([b"{}", b"", b"  ", b"\r", b"x\r", b"\xef\xbb\xbf{}", b"\xef\xbb\xbf", b"\t\n"]), max_size=12
    ),
    st.booleans(),
    st.integers(1, 40),
)
def test_a_range_read_in_one_call_gives_the_lines_a_readline_per_line_gives(tmp_path, parts, lf_end, chunk):
    """range_lines (the workers' reader: the whole range at once) and read_lines (a readline per
    line) give the same lines, numbers, notes and offsets over every range byte_ranges cuts."""
    from ragaudit_core.logs.jsonl import range_lines, read_lines
    from ragaudit_core.logs.parallel import byte_ranges

    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join(parts) + (b"\n" if lf_end else b""))
    for start, length in byte_ranges(path, chunk):
        got, want = [0], [0]
        with open(path, "rb") as f:
            f.seek(start)
            fast = list(range_lines(f, length, start, max_line_bytes=1 << 20, counted=got))
            f.seek(start)
            slow = list(read_lines(f, max_line_bytes=1 << 20, end=length, offset=start, counted=want))
        assert fast == slow and got == want


def test_workers_hand_their_rows_over_in_files_that_are_gone_once_taken(tmp_path, monkeypatch):
    """A range's rows cross as an Arrow file in the call's folder, mapped and removed as each range
    is taken, the folder removed on close; where the folder cannot be made (a full TMPDIR) they
    cross the pipe — the same tables either way."""
    (a,) = _sweep(tmp_path, ("A",), n=40)
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 300)

    def decoded(pool: parallel.LinePool) -> tuple[list[pa.Table], list[Path], list[int]]:
        tables, folders, left = [], [], []
        try:
            for _n, _items, table in pool.decode(a, ("A", None)):
                tables.append(table)
                if pool.out_dir is not None:
                    folders.append(Path(pool.out_dir))
                    left.append(len(list(folders[-1].iterdir())))
        finally:
            pool.close()
        return tables, folders, left

    via_files, folders, left = decoded(parallel.LinePool(RowOptions(), 2, 1 << 20))
    assert len(via_files) > 5 and len(folders) == len(via_files)
    assert max(left) <= parallel.WINDOW and left[-1] == 0  # each range's file removed once taken
    assert not folders[0].exists()  # and the folder on close

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(handover.tempfile, "mkdtemp", full)
    via_pipe, folders, _ = decoded(parallel.LinePool(RowOptions(), 2, 1 << 20))
    assert folders == [] and sum(t.num_rows for t in via_pipe) == 40
    assert [t.equals(u) for t, u in zip(via_files, via_pipe, strict=True)] == [True] * len(via_pipe)


def test_rows_that_cannot_be_read_back_refuse_that_file_in_one_sentence(tmp_path, monkeypatch):
    """A handed-over file that cannot be read back (removed by a cleaner, say): that file is refused
    in one sentence naming TMPDIR, and the call's other file loads."""
    a, b = _sweep(tmp_path, ("A", "B"))
    force_pool(monkeypatch, 200)
    real, mapped = parallel.pa.memory_map, []

    def first_gone(path, *args):
        mapped.append(path)
        if len(mapped) == 1:  # the first range of the first file, removed by a cleaner
            os.unlink(path)
        return real(path, *args)

    monkeypatch.setattr(parallel.pa, "memory_map", first_gone)
    con = store.connect(":memory:")
    report = ing.ingest_paths(con, [a, b])
    refused = [i for i in report.rejected if i.path == str(a)]
    assert len(refused) == 1 and "TMPDIR" in refused[0].message and "read back" in refused[0].message
    assert con.execute("SELECT DISTINCT run_id FROM records").fetchall() == [("B",)]
    assert "ragaudit-rows-" in str(mapped[0])


def test_a_killed_ingests_folder_of_rows_is_removed_by_the_next_call(tmp_path, monkeypatch):
    """A folder of handed-over rows whose ingest no longer runs (killed: its files stay), untouched
    for ten minutes, is removed when the next ingest call starts, even one that reads in the
    process. Stay: a running process's folder, a dead one's touched just now (another container's
    live ingest may look dead from here), an id no process can have, and other names."""
    import subprocess
    import sys
    import time

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(handover.tempfile, "tempdir", None)  # TMPDIR read again
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    old = time.time() - handover.STALE_AFTER_S - 5

    def folder(name: str, age: float | None = None) -> Path:
        (path := tmp_path / name).mkdir()
        (path / "1-1.arrow").write_bytes(b"rows")
        if age is not None:
            os.utime(path, (age, age))
        return path

    stale = folder(f"{handover.OUT_PREFIX}{dead}-abc", old)
    recent = folder(f"{handover.OUT_PREFIX}{dead}-def")
    alive = folder(f"{handover.OUT_PREFIX}{os.getppid()}-xyz", old)
    huge = folder(f"{handover.OUT_PREFIX}99999999999999999999999-x", old)  # os.kill: OverflowError
    other = folder("ragaudit-rows-notes", old)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    (tmp_path / "logs").mkdir()
    ing.ingest_paths(store.connect(":memory:"), _sweep(tmp_path / "logs", ("A",)))
    assert not stale.exists() and all(p.exists() for p in (recent, alive, huge, other))
    assert handover.remove_stale_folders(now=time.time() + handover.STALE_AFTER_S + 5) == [recent.name]
    made = handover.new_folder()
    assert made is not None and Path(made).parent == tmp_path
    assert Path(made).name.startswith(f"{handover.OUT_PREFIX}{os.getpid()}-")
    handover.remove_folder(made)
    assert not Path(made).exists()


def test_an_ingest_needs_no_usable_temporary_folder(tmp_path, monkeypatch):
    """No usable TMPDIR (a read-only container): the ingest loads as before, its rows through the
    pipe, and no folder is swept or made."""

    def none(*_a, **_k):
        raise FileNotFoundError(2, "No usable temporary directory found")

    monkeypatch.setattr(handover.tempfile, "gettempdir", none)
    monkeypatch.setattr(handover.tempfile, "mkdtemp", none)
    serial = store.connect(":memory:")
    a, b = _sweep(tmp_path, ("A", "B"))
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = _everything(serial, ing.ingest_paths(serial, [a, b]))
    force_pool(monkeypatch, 200)
    pooled = store.connect(":memory:")
    assert _everything(pooled, ing.ingest_paths(pooled, [a, b])) == expected


def test_ranges_read_ahead_for_a_file_not_read_give_their_files_back(tmp_path, monkeypatch):
    """B is read ahead while A ends, then skipped (loaded before); ranges that were running or done
    when they were dropped give their files back as they end, not when the call ends: the folder
    holds none of them when it is removed."""
    a, b, c = _sweep(tmp_path, ("A", "B", "C"), n=60)
    con = store.connect(":memory:")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    ing.ingest_paths(con, [b])
    force_pool(monkeypatch, 200)
    events = _read_ahead_spy(monkeypatch)
    left: list[list[str]] = []
    remove = handover.remove_folder

    def counted(folder: str) -> None:
        left.append(sorted(p.name for p in Path(folder).iterdir()))
        remove(folder)

    monkeypatch.setattr(parallel, "remove_folder", counted)
    report = ing.ingest_paths(con, [a, b, c])
    assert ("B.jsonl", "cancelled") in [(f, how) for f, how, _ in events]  # read ahead, then dropped
    assert report.n_records == 40 and left == [[]]


def test_rows_that_cannot_be_written_to_the_folder_cross_as_they_are(tmp_path):
    """A worker that cannot write its range's file (the folder gone, TMPDIR full) hands the table
    itself over and leaves nothing behind; an empty range is never written."""
    table = pa.table({"run_id": ["A", "B"], "rec_idx": pa.array([0, 1], pa.int32())})
    gone = tmp_path / "gone"
    assert handover.hand_over(table, str(gone), "1-1") is table and not gone.exists()
    assert handover.hand_over(table.slice(0, 0), str(tmp_path), "1-2").num_rows == 0
    path = handover.hand_over(table, str(tmp_path), "1-3")
    assert isinstance(path, str) and Path(path).exists()
    assert handover.take(path).equals(table) and not Path(path).exists()
    assert list(tmp_path.iterdir()) == []


def test_rows_are_read_where_the_file_system_cannot_map_files(tmp_path, monkeypatch):
    """Where mapping fails (a file system without mmap), the handed-over file is read instead."""
    table = pa.table({"text": ["passage one", "passage two"]})
    path = handover.hand_over(table, str(tmp_path), "1-1")

    def no_mmap(*_a, **_k):
        raise OSError(19, "No such device")

    monkeypatch.setattr(handover.pa, "memory_map", no_mmap)
    assert handover.take(path).equals(table) and not Path(path).exists()

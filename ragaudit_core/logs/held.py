"""The evidence rows of spans held until their file is read, in bounded memory.

A tracing format's retriever spans are mapped by the worker pool, but admitted only when their
file is read (their answers come from other spans, anywhere in the file: :mod:`records`). Their
rows — texts included — wait meanwhile: in memory up to :data:`SPILL_BYTES`, then in a temporary
Arrow IPC stream (under ``TMPDIR``, deleted when the file is done or refused), read back one
worker range at a time. So a single 640 MB OpenInference export no longer holds its 1M entries'
texts in memory until its last line (measured in ``docs/benchmarks.md``).

Spans read in the ingesting process (a compressed export, a machine with one core) are held as
they are until their file's held lines pass :data:`PREMAP_BYTES`; from then on they are mapped
when they are read and held the same way (:meth:`HeldRows.hold_line`): their rows in slots of
:data:`BUFFER_ROWS`, their line's bytes — needed again only when a reranker of their trace asks
for their documents — in a second temporary file. (One 640 MB export of 1M passages read in one
process: 2.0 GB → 0.82 GB, 13.8 → 18.1 s.)

The held spans themselves (their ids, query, line and where their rows wait: about 0.8 KB each
as objects) wait past :data:`HELD_SPANS` in a third, anonymous temporary file
(:class:`SpillQueue`), read back in file order when the file ends: what a file holds in memory
until then no longer grows with its spans, only with its traces' answers.
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pyarrow as pa

from ragaudit_core.logs.formats import MapContext, Span
from ragaudit_core.logs.jsonl import TemporaryFileError
from ragaudit_core.logs.parallel import DecodedLine, FileLine, map_span, with_query_ids
from ragaudit_core.logs.rows import RowCaches, RowOptions, evidence_rows
from ragaudit_core.logs.writer import EVIDENCE_SCHEMA, rows_table

__all__ = [
    "BUFFER_ROWS",
    "HELD_SPANS",
    "PREMAP_BYTES",
    "SPILL_BYTES",
    "HeldRows",
    "SpillMap",
    "SpillQueue",
    "TemporaryFileError",
]

SPILL_BYTES = 64 << 20
"""Bytes of held rows kept in memory before they go to the temporary file."""
PREMAP_BYTES = 16 << 20
"""Bytes of span lines a file holds in the ingesting process before the next ones are mapped as
they are read (below it, a file's spans are read when it ends, as they always were)."""
BUFFER_ROWS = 16_384
"""Rows of lines read in the process gathered into one slot."""
HELD_SPANS = 16_384
"""Mapped spans a file holds as objects (about 0.8 KB each) before the next ones wait in a
temporary file (:class:`SpillQueue`)."""


@contextmanager
def _temporary_files() -> Iterator[None]:
    try:
        yield
    except OSError as e:  # (pyarrow's IO errors are OSErrors too)
        raise TemporaryFileError(
            f"its spans could not wait in a temporary file under {tempfile.gettempdir()} ({e}); nothing of it "
            "was loaded: free space there, or set TMPDIR to a folder on a disk with room, and load it again"
        ) from e


def _remove(path: str | None) -> None:
    if path is not None:
        try:
            os.unlink(path)
        except OSError:
            pass


@dataclass
class _Slot:
    table: pa.Table | None  # None: in the temporary file, as ``batches`` record batches
    n_lines: int  # the held lines whose rows the slot has
    kept: list[int] = field(default_factory=list)  # the lines (``rec_idx``) admitted
    renamed: dict[int, str] = field(default_factory=dict)  # lines admitted under another query id
    made: list[int] = field(default_factory=list)  # lines admitted whose mapping made a text: document id
    batches: int = 0


class HeldRows:
    """The held rows of one file, one slot per worker range (its rows carry ``rec_idx``)."""

    def __init__(self, spill_bytes: int | None = None) -> None:
        self.spill_bytes = SPILL_BYTES if spill_bytes is None else spill_bytes
        self.slots: list[_Slot] = []
        self.in_memory = 0
        self.path: str | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._sink: pa.NativeFile | None = None
        self._buffer: list[tuple] = []  # rows of lines read in the process
        self._buffer_idx: list[int] = []  # and each row's line (its index in the slot)
        self._buffered_lines = 0
        self.lines_path: str | None = None  # those lines' bytes
        self._lines: BinaryIO | None = None

    @property
    def next_slot(self) -> int:
        """The slot the next :meth:`add` fills."""
        return len(self.slots)

    def add(self, table: pa.Table, n_lines: int) -> int:
        """Hold the rows of ``n_lines`` lines; returns their slot."""
        self._flush_buffer()
        return self._add(table, n_lines)

    def hold_line(self, rows: list[tuple], data: bytes) -> tuple[tuple[int, int], str, int]:
        """Hold the rows (evidence tuples) of one line read in this process and its bytes; returns
        its key (slot, index in the slot) and where its bytes are kept (path, offset)."""
        key = (len(self.slots), self._buffered_lines)
        self._buffer += rows
        self._buffer_idx += [key[1]] * len(rows)
        self._buffered_lines += 1
        with _temporary_files():
            if self._lines is None:
                fd, self.lines_path = tempfile.mkstemp(prefix="ragaudit-held-lines-", suffix=".jsonl")
                self._lines = os.fdopen(fd, "w+b", buffering=0)  # read back by path: written through
            offset = self._lines.seek(0, os.SEEK_END)
            self._lines.write(data)
        if len(self._buffer) >= BUFFER_ROWS:
            self._flush_buffer()
        assert self.lines_path is not None
        return key, self.lines_path, offset

    def hold_span(
        self,
        line_no: int,
        data: bytes,
        label: str,
        span: Span,
        ctx: MapContext,
        row_opts: RowOptions,
        caches: RowCaches,
    ) -> tuple[FileLine, DecodedLine, tuple[int, int]] | None:
        """A retriever span read in the ingesting process, mapped now as the workers map theirs
        and held by its rows and its bytes ``data`` (:meth:`hold_line`): its line (read back from
        the temporary file), its :class:`DecodedLine` and key; None where the general path must
        map it when the file ends (:func:`~ragaudit_core.logs.parallel.map_span` declines)."""
        made = ctx.made
        got = map_span(span, label, ctx)
        if got is None:
            return None
        rec, notes, retrieval = got
        rows: list[tuple] = []
        n_kept, dropped = evidence_rows(rec, row_opts, caches, rows.append)
        key, path, offset = self.hold_line(rows, data)
        d = DecodedLine(
            *(line_no, offset, len(data), rec.run_id, rec.query_id, rec.config, rec.query, None, n_kept, dropped),
            *(True, notes, label, True, span.trace_id, ctx.made > made),  # mapped, warnings, label, held, trace, made
            retrieval,
        )
        return FileLine(line_no, path, offset, len(data)), d, key

    def _flush_buffer(self) -> None:
        if self._buffered_lines:
            rows, idx, n = self._buffer, self._buffer_idx, self._buffered_lines
            self._buffer, self._buffer_idx, self._buffered_lines = [], [], 0
            table = rows_table(rows, EVIDENCE_SCHEMA).append_column("rec_idx", pa.array(idx, type=pa.int32()))
            self._add(table, n)

    def _add(self, table: pa.Table, n_lines: int) -> int:
        self.slots.append(_Slot(table, n_lines))
        self.in_memory += table.nbytes
        if self.in_memory > self.spill_bytes:
            self._spill(table.schema)
        return len(self.slots) - 1

    def keep(self, slot: int, line: int, query_id: str | None = None, made: bool = False) -> None:
        """Mark a held line of a slot as admitted (its rows are written), under ``query_id`` when
        given (a repeated question, numbered when admitted); ``made``: its mapping made a ``text:``
        document id (:mod:`.stored_passages`)."""
        if slot == len(self.slots):  # the slot still being gathered
            self._flush_buffer()
        self.slots[slot].kept.append(line)
        if made:
            self.slots[slot].made.append(line)
        if query_id is not None:
            self.slots[slot].renamed[line] = query_id

    def _spill(self, schema: pa.Schema) -> None:
        with _temporary_files():
            self._write_slots(schema)

    def _write_slots(self, schema: pa.Schema) -> None:
        if self._writer is None:
            fd, self.path = tempfile.mkstemp(prefix="ragaudit-held-", suffix=".arrows")
            os.close(fd)
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_stream(self._sink, schema)
        for s in self.slots:
            if s.table is not None:
                batches = s.table.to_batches()
                for b in batches:
                    self._writer.write_batch(b)
                s.table, s.batches = None, len(batches)
        self.in_memory = 0

    def rows(self) -> Iterator[tuple[pa.Table, list[int], int, list[int]]]:
        """Each slot's (rows, admitted lines, held lines, admitted lines that made a ``text:`` id), in
        order; spilled slots read back; the rows of a line admitted under another query id carry that id."""
        self._flush_buffer()
        reader = None
        with _temporary_files():
            if self._writer is not None:
                self._writer.close()
                assert self._sink is not None and self.path is not None
                self._sink.close()
                self._writer = None
                reader = pa.ipc.open_stream(pa.OSFile(self.path, "rb"))
        for s in self.slots:
            table = s.table
            if table is None:
                assert reader is not None
                with _temporary_files():
                    table = pa.Table.from_batches([reader.read_next_batch() for _ in range(s.batches)], reader.schema)
            yield with_query_ids(table, s.renamed), s.kept, s.n_lines, s.made
        self.close()

    def close(self) -> None:
        """Drop everything held and delete the temporary files."""
        self.slots, self.in_memory = [], 0
        self._buffer, self._buffer_idx, self._buffered_lines = [], [], 0
        if self._lines is not None:
            self._lines.close()
            self._lines = None
        _remove(self.lines_path)
        self.lines_path = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        _remove(self.path)
        self.path = None


class _Spilled:
    """A run of consecutive queue items waiting in the temporary file."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class SpillQueue:
    """Items in insertion order, read once: the first ``limit`` spillable ones (and every other)
    as objects, the spillable ones after them written — through ``pack`` — to an anonymous
    temporary file (under ``TMPDIR``; it has no name, and goes when closed or when the process
    ends) and read back through ``unpack`` in their place. What waits there is this process's own
    pickle of plain values (ids, counts, offsets) from this call: nothing read from a log is
    unpickled. A full ``TMPDIR`` raises :class:`TemporaryFileError`."""

    def __init__(
        self,
        pack: Callable[[Any], Any] = lambda item: item,
        unpack: Callable[[Any], Any] = lambda item: item,
        limit: int | None = None,
    ) -> None:
        self.pack, self.unpack = pack, unpack
        self.limit = HELD_SPANS if limit is None else limit
        self.items: list[Any] = []
        self.kept = 0  # spillable items kept as objects
        self.spilled = 0
        self._file: BinaryIO | None = None

    def __len__(self) -> int:
        return sum(it.count if isinstance(it, _Spilled) else 1 for it in self.items)

    def append(self, item: Any, *, spillable: bool = False) -> None:
        if not spillable or self.kept < self.limit:
            self.items.append(item)
            self.kept += spillable
            return
        with _temporary_files():
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="ragaudit-held-spans-")  # noqa: SIM115 — open until read
            pickle.dump(self.pack(item), self._file, protocol=pickle.HIGHEST_PROTOCOL)
        run = self.items[-1] if self.items else None
        if not isinstance(run, _Spilled):
            run = _Spilled()
            self.items.append(run)
        run.count += 1
        self.spilled += 1

    def __iter__(self) -> Iterator[Any]:
        f = self._file
        if f is not None:
            with _temporary_files():
                f.seek(0)
        for it in self.items:
            if not isinstance(it, _Spilled):
                yield it
                continue
            assert f is not None
            for _ in range(it.count):
                with _temporary_files():
                    packed = pickle.load(f)
                yield self.unpack(packed)
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class SpillMap:
    """Values by key, the first ``limit`` keys' as objects, later keys' values pickled to an
    anonymous temporary file (as :class:`SpillQueue`'s: this process's own pickle, under
    ``TMPDIR``, gone when closed) and read back when asked for. A trace export's first reranker and
    answer per trace wait here until the file is read (:class:`~ragaudit_core.logs.traces.TraceJoiner`),
    so what it holds in memory grows with its traces' keys, not with their documents' texts (one
    0.94 GB OpenInference export of 125,000 traces with rerankers: 1.36 → 0.91 GB at its peak).
    A value set again replaces the one before (its bytes stay in the file, unread)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = HELD_SPANS if limit is None else limit
        self._mem: dict[Any, Any] = {}
        self._at: dict[Any, tuple[int, int]] = {}  # key → (offset, length) in the file
        self._file: BinaryIO | None = None
        self._end = 0

    def __len__(self) -> int:
        return len(self._mem) + len(self._at)

    def __contains__(self, key: Any) -> bool:
        return key in self._mem or key in self._at

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self._mem or len(self._mem) < self.limit:
            self._at.pop(key, None)
            self._mem[key] = value
            return
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        with _temporary_files():
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="ragaudit-held-traces-")  # noqa: SIM115 — open until closed
            self._file.seek(self._end)
            self._file.write(data)
        self._at[key] = (self._end, len(data))
        self._end += len(data)

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self._mem:
            return self._mem[key]
        at = self._at.get(key)
        if at is None:
            return default
        assert self._file is not None
        with _temporary_files():
            self._file.seek(at[0])
            data = self._file.read(at[1])
        return pickle.loads(data)

    def pop(self, key: Any, default: Any = None) -> Any:
        value = self.get(key, default)
        self._mem.pop(key, None)
        self._at.pop(key, None)
        return value

    def close(self) -> None:
        self._mem.clear()
        self._at.clear()
        if self._file is not None:
            self._file.close()
            self._file = None

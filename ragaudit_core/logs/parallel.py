"""Native evidence lines decoded by worker processes, returned in order, in bounded memory.

The per-line work of a large native log — reading, decoding (:mod:`decode`), canonical ids and
span hashes (:mod:`rows`), building the Arrow rows — is pure, so it runs in a pool of worker
processes (one per core, started with ``spawn``), each reading a byte range of the file itself
(ranges end after a LF; only uncompressed LF files are split). Everything that depends on order stays
in the ingesting process: which record of a (run, query) is first, warnings, quarantine, the
transaction. Lines of a record format's common shape (Ragas rows: ``LogFormat.decode_fast``) are
mapped in the workers too, with the file's run id and as if no question had been asked before;
when the ingesting process finds such a line's (run, query) already taken (a repeated question)
it numbers the query id by occurrence and writes it into the line's rows (:func:`with_query_ids`),
and it replays the mapping's warnings in file order. A tracing format's retriever span
(OpenInference's common shape by ``LogFormat.read_span_fast``; any other span its format's own
reader takes, LangSmith runs and Langfuse observations among them: :func:`_general_span`) is
read, mapped and hashed in the workers as well, without its answer: only its record (ids, query,
trace id, its own run settings) and its rows cross back, and the ingesting process holds them
(:mod:`held`) until the file is read, to join the trace's answer and run settings and admit the
spans in file order (:meth:`records.FileReader.finish`). A line the workers do not take comes back
as it is and the ingest reads it on its general path, so a file gives the same stored rows and the
same report either way (tested).

A range's rows cross back as an Arrow file in a temporary folder of the call, which the ingesting
process maps and removes (:mod:`.handover`): through the pipe they were pickled, copied in
64 KB pieces and unpickled (1.0–1.4 CPU-s of a 1M-entry ingest with texts; docs/benchmarks.md).

At most ``WINDOW`` chunks are in flight, so memory does not grow with the input. As a file's last
ranges are taken, the call's next file's first ones are submitted in their place (:class:`_Ahead`),
so the workers decode it while the ingesting process ends the file before (joins and writes its
held spans, hashes and peeks the next): 0.1–0.8 s of 10–15 s for 1M entries in 12 files
(docs/benchmarks.md, measured in alternating rounds).
They serve only that file unchanged (same inode, size and mtime as when they were cut).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import types
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from ragaudit_core.logs.decode import decode_native, fast_record
from ragaudit_core.logs.documents import unwrap
from ragaudit_core.logs.formats import (
    FAST_FORMATS,
    FAST_TRACE_FORMATS,
    FormatError,
    LogFormat,
    MapContext,
    Span,
    build_record,
    detect,
    native,
    retrieval_key,
    run_id_for,
)
from ragaudit_core.logs.handover import discard, hand_over, new_folder, remove_folder, remove_stale_folders, take
from ragaudit_core.logs.jsonl import plain_lf_file, range_lines
from ragaudit_core.logs.lines import decode_json
from ragaudit_core.logs.rows import RowCaches, RowOptions, evidence_rows
from ragaudit_core.logs.writer import EVIDENCE_SCHEMA, rows_table

__all__ = [
    "CHUNK_BYTES",
    "MIN_FILE_BYTES",
    "POOL_PEEK",
    "WINDOW",
    "DecodedLine",
    "FileLine",
    "LinePool",
    "SpanLine",
    "byte_ranges",
    "default_workers",
    "fast_shape",
    "following",
    "map_span",
    "pool_bytes",
    "pool_worth",
    "rows_of",
    "with_query_ids",
]

CHUNK_BYTES = 4 << 20
"""Bytes of a file per task: a worker reads its range of the file itself, so only decoded
results (and the rows as Arrow) cross between processes."""
WINDOW = 6
"""Tasks in flight at most (decoded results waiting to be merged included)."""
MIN_FILE_BYTES = 32 << 20
"""Calls reading less than this in all are read in the process: starting workers would cost more.
A call reading more sends each of its files of at least :data:`CHUNK_BYTES` to the workers (the
pool is started once per call: twelve 33 MB RagCiteCheck files, 1M entries, took 18.3 s read in
the process, 11.0 s in the pool)."""


POOL_PEEK = 16
"""Lines read at the start of a large file to decide whether its lines go to the pool: worth it
when one of them is in a shape the workers decode (a trace may open with other spans)."""


def pool_bytes(path: Path) -> int:
    """What a file adds to its call's bytes for :data:`MIN_FILE_BYTES`: its size when the pool can
    read it (:func:`~ragaudit_core.logs.jsonl.plain_lf_file`: not gzip, not UTF-16, LF line ends),
    else 0 — it is read in the process — as when it cannot be read at all."""
    try:
        return path.stat().st_size if plain_lf_file(path) else 0
    except OSError:
        return 0  # reported when the file is read


def pool_worth(path: Path, call_bytes: int) -> bool:
    """Whether a file of a call reading ``call_bytes`` in all may be read by the pool: the call
    is large enough to pay for starting workers, the file holds at least one range, and its
    bytes are plain LF-ended lines (not compressed: a range must start at a line)."""
    return (
        call_bytes >= MIN_FILE_BYTES and path.stat().st_size >= min(CHUNK_BYTES, MIN_FILE_BYTES) and plain_lf_file(path)
    )


def default_workers() -> int:
    """Worker processes for a large file: the cores this process may use, at most 4; 0 (read in
    the process) on one core. ``RAGAUDIT_INGEST_WORKERS`` overrides (0 turns the pool off)."""
    env = os.environ.get("RAGAUDIT_INGEST_WORKERS")
    if env is not None and env.strip().isdecimal():
        return int(env)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 0 if cores < 2 else min(cores, 4)


class DecodedLine(NamedTuple):
    """What a worker made of one line it could take on the fast path (``line_no`` counts from the
    start of its range; ``offset``/``length`` locate the line's bytes in the file). A named tuple:
    it crosses between processes as a plain tuple."""

    line_no: int
    offset: int
    length: int
    run_id: str
    query_id: str
    config: dict | None  # (a held span: its own run settings; its trace's join it when its file is read)
    query: str | None
    answer: str | None
    n_kept: int
    dropped: list[str]
    mapped: bool = False  # by a record format's fast path (its query id a hash, unnumbered)
    notes: tuple[str, ...] = ()  # the mapping's warnings this line raised first in its range
    label: str = "native"  # the format it was read as (the file ledger's count)
    held: bool = False  # a tracing format's retriever span: admitted when its file is read, with its trace's answer
    trace_id: str | None = None  # (held) the span's trace
    made: bool = False  # its mapping made a text: document id from a passage (logs.stored_passages)
    retrieval: str | None = None  # (held) the span's retrieval_key: one retrieval reported twice in a trace


@dataclass(frozen=True, slots=True)
class FileLine:
    """A decoded line as the ingest sees it: its number, and its bytes read back from the file
    only when they are needed (to quarantine a rejected duplicate)."""

    line_no: int
    path: str
    offset: int
    length: int
    error: None = None
    note: None = None

    @property
    def data(self) -> bytes:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            return f.read(self.length)


class SpanLine(NamedTuple):
    """A tracing format's span without evidence that a worker read (an answer, a reranker, or
    another kind: ``kind_of`` words it as the format does): the ingesting process holds its
    answer or its reranked documents for its trace, or counts it, as it does a span it reads
    itself (:meth:`records.FileReader.held_span`)."""

    line_no: int
    offset: int
    length: int
    label: str
    trace_id: str | None
    kind: str  # "answer" or "other"
    answer: str | None
    root: bool
    kind_of: str
    held: bool = False  # (not a retriever span's DecodedLine)
    reranked: list[dict] | None = None  # a reranker's output documents, as its format reads them
    settings: dict | None = None  # a root span's run settings, for its trace's retriever spans
    embedder: str | None = None  # an embedding span's model, for its trace's retriever spans


class _OtherSpan(NamedTuple):
    label: str
    span: Span
    kind_of: str


def byte_ranges(path: Path, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """(start, length) ranges covering ``path``, each ending after a LF (or at the end)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        start = 0
        while start < size:
            f.seek(min(start + chunk_bytes, size))
            piece = b""
            while True:  # to the end of the line (in bounded pieces)
                piece = f.readline(1 << 20)
                if not piece or piece.endswith(b"\n"):
                    break
            end = f.tell()
            yield start, end - start
            start = end


_WORKER: dict[str, Any] = {}  # the worker process's options, caches and line limit


def _init_worker(opts: RowOptions, max_line_bytes: int, out_dir: str | None = None) -> None:
    _WORKER["opts"], _WORKER["caches"], _WORKER["max_line_bytes"] = opts, RowCaches(), max_line_bytes
    _WORKER["out_dir"], _WORKER["written"] = out_dir, 0
    # The cyclic GC re-scanned every imported module's objects while a range allocated its row
    # tuples (measured: 7.5 -> 5.8 us per entry with these two lines); a range makes no cycles.
    gc.freeze()
    gc.set_threshold(100_000, 50, 1000)


def _mapped(data: bytes, ctx: MapContext) -> tuple[Any, tuple[str, ...], str, str | None, bool, str | None] | None:
    """The one record a record format's fast path (or a tracing format's fast retriever span,
    without its answer) maps ``data`` to, the new warnings, the format's label, the span's trace
    id and whether it is a held span."""
    before = len(ctx.warnings)
    for fmt in FAST_FORMATS:
        assert fmt.decode_fast is not None
        recs = fmt.decode_fast(data, ctx)
        if recs is not None:
            return (recs[0], tuple(ctx.warnings[before:]), fmt.label, None, False, None) if len(recs) == 1 else None
    for fmt in FAST_TRACE_FORMATS:
        assert fmt.read_span_fast is not None
        span = fmt.read_span_fast(data)
        if span is not None:
            got = map_span(span, fmt.label, ctx)
            return None if got is None else (got[0], got[1], fmt.label, span.trace_id, True, got[2])
    return None


def _general_span(
    data: bytes, ctx: MapContext
) -> tuple[Any, tuple[str, ...], str, str | None, bool, str | None] | _OtherSpan | None:
    """A tracing format's retriever span in any shape its own reader takes (a LangSmith run, a
    Langfuse observation, an OpenInference span the fast reader leaves): the line decoded, seen as
    the ingest's reader sees it (:meth:`~ragaudit_core.logs.records.FileReader.value`, ``record``:
    not a native record, a container or a provenance record; detected as a tracing format), read
    by the format's ``read_span`` and mapped as :func:`map_span` maps it; an answer, a reranker or
    a span of another kind as :class:`_OtherSpan`. None for anything else — a line that is not
    JSON, that holds NaN or Infinity (warned about by name), a span the reader words a note
    about: the ingest reads those lines itself."""
    reason, obj, non_finite = decode_json(data)
    if reason is not None or non_finite or type(obj) is not dict:
        return None
    if "nodes" not in obj and "schema" not in obj and native.detect(obj):
        return None  # a native record (the reader's first test)
    if unwrap(obj) is not None or native.is_provenance(obj):
        return None
    fmt = detect(obj)
    if fmt.kind != "trace" or fmt.read_span is None:
        return None
    try:
        span = fmt.read_span(obj)
    except FormatError:
        return None  # rejected by the reader, with its reason
    if span.kind in ("answer", "other", "reranker") and not span.notes:
        return _OtherSpan(fmt.label, span, fmt.kind_of(obj) if fmt.kind_of is not None else span.kind)
    got = map_span(span, fmt.label, ctx)
    return None if got is None else (got[0], got[1], fmt.label, span.trace_id, True, got[2])


def map_span(span: Span, label: str, ctx: MapContext) -> tuple[Any, tuple[str, ...], str] | None:
    """A retriever span's record, mapped without its answer as if no question had been asked
    before, with its own run settings as its ``config`` (its trace's join them when the file is
    read), the mapping's new warnings and the span's :func:`retrieval_key`; None where the general
    path must word something (a span with notes, a mapping error, an id the contract trims)."""
    if span.kind != "retriever" or span.notes:
        return None
    before = len(ctx.warnings)
    try:
        built = build_record(
            *(label, ctx, span.query or "", None, span.texts, span.ids, span.metadata, span.scores),
            config=span.settings,
        )
    except FormatError:
        return None
    rec = fast_record(built)
    return None if rec is None else (rec, tuple(ctx.warnings[before:]), retrieval_key(span))


def _decoded(
    data: bytes, ctx: MapContext | None, mapped_first: bool
) -> tuple[Any, tuple[str, ...], str, str | None, bool, str | None] | _OtherSpan | None:
    """A line as :func:`_mapped` gives it (a native record: label ``native``), else as
    :func:`_general_span` does, else None. The fast decoders accept disjoint shapes (a native
    record has a run id, which the others decline), so the order they are tried in changes only
    the time: the last line's format first; the general span reader, which decodes the whole
    line, last."""
    if ctx is not None and mapped_first:
        got = _mapped(data, ctx)
        if got is not None:
            return got
    rec = decode_native(data)
    if rec is not None:
        return rec, (), "native", None, False, None
    if ctx is None:
        return None
    return (None if mapped_first else _mapped(data, ctx)) or _general_span(data, ctx)


def _decode_range(
    path: str, start: int, length: int, mapping: tuple[str, str | None] | None = None
) -> tuple[int, list, pa.Table]:
    """Worker task: the physical lines in the range, each non-blank line decoded
    (:class:`DecodedLine`) or left as it is (a :class:`~ragaudit_core.logs.jsonl.Line`), and the
    kept entries' rows with ``rec_idx``, the index of their line in that list. ``mapping``: the
    file's (run id, metadata key of document ids) to map record formats' lines with, or None."""
    opts, caches = _WORKER["opts"], _WORKER["caches"]
    items: list = []
    rows: list[tuple] = []
    rec_idx: list[int] = []
    counted = [0]
    ctx = None if mapping is None else MapContext(mapping[0], mapping[1])
    mapped_first = False  # the last line was another format's: try those first
    with open(path, "rb") as f:
        f.seek(start)
        for ln in range_lines(f, length, start, max_line_bytes=_WORKER["max_line_bytes"], counted=counted):
            made = ctx.made if ctx is not None else 0
            got = _decoded(ln.data, ctx, mapped_first) if ln.error is None and ln.note is None else None
            if got is None:
                items.append(ln)
                continue
            if isinstance(got, _OtherSpan):
                sp = got.span
                items.append(
                    SpanLine(
                        *(ln.line_no, ln.offset or 0, len(ln.data), got.label, sp.trace_id, sp.kind, sp.answer),
                        *(sp.root, got.kind_of, False, sp.reranked if sp.kind == "reranker" else None, sp.settings),
                        sp.embedder,
                    )
                )
                continue
            rec, notes, label, trace, held, key = got
            mapped = mapped_first = label != "native"
            n_kept, dropped = evidence_rows(rec, opts, caches, rows.append)
            rec_idx.extend([len(items)] * n_kept)
            items.append(
                DecodedLine(
                    ln.line_no,
                    ln.offset or 0,  # read_lines with offset= sets it
                    len(ln.data),
                    rec.run_id,
                    rec.query_id,
                    rec.config,
                    rec.query,
                    rec.answer,
                    n_kept,
                    dropped,
                    mapped,
                    notes,
                    label,
                    held,
                    trace,
                    ctx is not None and ctx.made > made,
                    key,
                )
            )
    table = rows_table(rows, EVIDENCE_SCHEMA).append_column("rec_idx", pa.array(rec_idx, type=pa.int32()))
    _WORKER["written"] += 1
    return counted[0], items, hand_over(table, _WORKER.get("out_dir"), f"{os.getpid()}-{_WORKER['written']}")


def _taken(result: tuple[int, list, pa.Table | str]) -> tuple[int, list, pa.Table]:
    n_lines, items, rows = result
    return n_lines, items, take(rows)


@contextmanager
def _bare_main() -> Iterator[None]:
    """Hide the caller's ``__main__`` while workers may be started: a spawned worker re-imports
    the parent's main script (or fails when it is ``<stdin>``, a notebook, a Streamlit page);
    ours need nothing from it. Submitting can start a worker, so each submit is wrapped."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


Mapping = tuple[str, str | None] | None
"""What the workers map a file's record-format lines with: (run id, document-id metadata key), or None."""


def _stamp(path: Path) -> tuple[int, int, int, int] | None:
    """The identity and state of a file (device, inode, size, modification time), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class _Ahead:
    """The next file's first ranges, submitted while the current file's last ones drain: the
    workers decode them while the ingesting process finishes that file (its held spans joined
    and written, the next file hashed and peeked) instead of waiting for it."""

    def __init__(self, path: Path, mapping: Mapping) -> None:
        self.key = (str(path), mapping)
        self.stamp = _stamp(path)  # the file as its ranges were cut (None: it cannot be read)
        self.ranges = byte_ranges(path, CHUNK_BYTES)
        self.pending: deque[Future] = deque()

    def serves(self, path: Path, mapping: Mapping) -> bool:
        """Whether these ranges are ``path``'s as it is now: the same file and mapping, and the
        file unchanged since they were cut (a log still being written may grow, or be replaced,
        between the read-ahead and its own turn: its ranges are then cut again)."""
        return self.key == (str(path), mapping) and self.stamp is not None and self.stamp == _stamp(path)

    def cancel(self) -> None:
        _drop(self.pending)
        self.ranges.close()  # type: ignore[attr-defined]  # byte_ranges is a generator


def _drop(pending: deque[Future]) -> None:
    """Cancel ranges that will not be taken; those already running or done give their rows'
    files back as they end (:func:`.handover.discard`), not when the call ends."""
    for fut in pending:
        if not fut.cancel():
            fut.add_done_callback(_discard_result)
    pending.clear()


def _discard_result(fut: Future) -> None:
    if not fut.cancelled() and fut.exception() is None:
        discard(fut.result()[2])


class LinePool:
    """The worker pool of one ingest call (started on first use, stopped by :meth:`close`)."""

    def __init__(self, opts: RowOptions, workers: int, max_line_bytes: int) -> None:
        self.opts, self.workers, self.max_line_bytes = opts, workers, max_line_bytes
        self._pool: ProcessPoolExecutor | None = None
        self._ahead: _Ahead | None = None
        remove_stale_folders()  # those of ingests that were killed
        self.out_dir: str | None = None
        """The folder the workers hand their rows over in (:mod:`.handover`), made with the
        pool and removed by :meth:`close`; None where it could not be made (rows then cross the
        pipe)."""

    def _submit(self, pending: deque[Future], path: Path, start: int, length: int, mapping: Mapping) -> None:
        if self._pool is None:
            self.out_dir = new_folder()
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(self.opts, self.max_line_bytes, self.out_dir),
            )
        with _bare_main():
            pending.append(self._pool.submit(_decode_range, str(path), start, length, mapping))

    def decode(
        self, path: Path, mapping: Mapping = None, then: tuple[Path, Mapping] | None = None
    ) -> Iterator[tuple[int, list, pa.Table]]:
        """For each range of ``path`` in file order: its physical line count, its lines (decoded
        or not, line numbers from the start of the range) and its rows; ``mapping`` as for
        :func:`_decode_range`. ``then``: the file (and mapping) the caller reads next, if the
        pool may read it: its first ranges are submitted as this file's last ones are taken (so
        no more than :data:`WINDOW` are in flight), and a ``decode`` of it starts from them; a
        ``decode`` of anything else cancels them."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead.serves(path, mapping):
            pending, ranges = ahead.pending, ahead.ranges
        else:
            if ahead is not None:
                ahead.cancel()
            pending, ranges = deque(), byte_ranges(path, CHUNK_BYTES)
        nxt: _Ahead | None = None
        try:
            for start, length in ranges:
                self._submit(pending, path, start, length, mapping)
                if len(pending) >= WINDOW:
                    yield _taken(pending.popleft().result())
            nxt = None if then is None else _Ahead(*then)
            while pending:
                if nxt is not None and not self._read_ahead(nxt):
                    nxt = None
                yield _taken(pending.popleft().result())
        except BaseException:  # a refused file (or a reader that stops): its ranges are not taken
            _drop(pending)
            if nxt is not None:
                nxt.cancel()
            raise
        self._ahead = nxt

    def _read_ahead(self, nxt: _Ahead) -> bool:
        """Submit the next file's next range, if any; False (and nothing kept) where that file
        cannot be read: its own decode says so."""
        try:
            rng = next(nxt.ranges, None)
        except OSError:
            nxt.cancel()
            return False
        if rng is not None:
            self._submit(nxt.pending, Path(nxt.key[0]), *rng, nxt.key[1])
        return True

    def drop_ahead(self) -> None:
        """Cancel what was read ahead (the file it was for is read otherwise)."""
        if self._ahead is not None:
            self._ahead.cancel()
            self._ahead = None

    def close(self) -> None:
        self.drop_ahead()
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
        if self.out_dir is not None:  # the files of ranges decoded but not taken (a refused file's)
            remove_folder(self.out_dir)
            self.out_dir = None


def following(
    path: Path | None, call_bytes: int, forced: bool, run_id: str | None, doc_id_key: str | None
) -> tuple[Path, Mapping] | None:
    """The call's next file and the mapping its decode would ask for (:meth:`LinePool.decode`'s
    ``then``), where the pool may read it (:func:`pool_worth`); None otherwise. ``forced``: the
    call names a format (the workers then map nothing: mapping None)."""
    try:
        if path is None or not pool_worth(path, call_bytes):
            return None
    except OSError:
        return None
    return path, None if forced else (run_id_for(path, run_id), doc_id_key)


def with_query_ids(table: pa.Table, renamed: dict[int, str]) -> pa.Table:
    """The rows with the query id of each line in ``renamed`` (its index, ``rec_idx``) replaced: a
    repeated question's rows, numbered by the ingesting process, are otherwise the rows the
    workers made (the query id is in no other column)."""
    if not renamed:
        return table
    ids = [renamed.get(i, q) for i, q in zip(table["rec_idx"].to_pylist(), table["query_id"].to_pylist(), strict=True)]
    return table.set_column(table.schema.get_field_index("query_id"), "query_id", pa.array(ids, pa.string()))


def rows_of(table: pa.Table, lines: list[int]) -> pa.Table:
    """The rows of a worker's range that belong to the lines (indices, ``rec_idx``) given."""
    return table.filter(pc.is_in(table["rec_idx"], pa.array(lines, type=pa.int32())))


def fast_shape(data: bytes, run_id: str, doc_id_key: str | None, forced: LogFormat | None) -> bool:
    """Whether a line is in a shape the workers decode (native, a record format's fast path, or a
    tracing format's fast retriever span)."""
    if decode_native(data) is not None:
        return True
    if forced is not None:
        return False
    scratch = MapContext(run_id, doc_id_key)
    if any(f.decode_fast is not None and f.decode_fast(data, scratch) is not None for f in FAST_FORMATS):
        return True
    if any(f.read_span_fast is not None and f.read_span_fast(data) is not None for f in FAST_TRACE_FORMATS):
        return True
    return _general_span(data, scratch) is not None

"""Ingestion of evidence logs into the DuckDB store.

Guarantees (issue #2):

* every good line is loaded; every bad line is reported with file, line number and a
  reason a person understands, and kept verbatim in ``quarantine``;
* a file is identified by the SHA-256 of its bytes: loading the same content twice
  loads it once;
* all files of one call are loaded in **one transaction**: an exception, a crash or a
  kill leaves the database exactly as it was before;
* canonical-id collisions (two raw ids → one canonical id) and query-coverage
  differences between runs are reported as warnings.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from ragaudit_core.logs import formats, store
from ragaudit_core.logs import held as held_module
from ragaudit_core.logs.catalog import workspace_warnings
from ragaudit_core.logs.collect import fewer_collections
from ragaudit_core.logs.containers import iter_rows
from ragaudit_core.logs.contracts import EvidenceRecord
from ragaudit_core.logs.held import HeldRows
from ragaudit_core.logs.jsonl import InputFileError, Line, file_sha256, iter_lines
from ragaudit_core.logs.lines import buffer_provenance
from ragaudit_core.logs.listing import list_paths, unopened
from ragaudit_core.logs.options import IngestError, IngestOptions, check_options
from ragaudit_core.logs.parallel import (
    POOL_PEEK,
    DecodedLine,
    FileLine,
    LinePool,
    SpanLine,
    default_workers,
    fast_shape,
    following,
    pool_bytes,
    pool_worth,
    rows_of,
    with_query_ids,
)
from ragaudit_core.logs.qrels import store_reference_labels
from ragaudit_core.logs.questions import QuestionIds, read_questions
from ragaudit_core.logs.records import FileReader
from ragaudit_core.logs.report import NOTE, WARNING, FileReport, IngestReport, Issue, Kind
from ragaudit_core.logs.rows import RowCaches, RowOptions, duplicate_message, evidence_rows
from ragaudit_core.logs.runs import RunConfigs, new_run_rows
from ragaudit_core.logs.seen import SeenPairs, one_ingest_at_a_time
from ragaudit_core.logs.seenfiles import SeenFiles, already_loaded
from ragaudit_core.logs.stored_passages import stored_passages
from ragaudit_core.logs.stored_questions import settle_shared, stored_questions
from ragaudit_core.logs.writer import (
    NO_SPACE,
    QUARANTINE_SCHEMA,
    RUN_SCHEMA,
    WARNING_SCHEMA,
    BatchWriter,
    delete_file_rows,
    drop_workspace_warnings,
    insert_files,
    insert_rows,
    no_space_message,
)

__all__ = [
    "FileReport",
    "IngestError",
    "IngestOptions",
    "IngestReport",
    "Issue",
    "ingest_paths",
]


def ingest_paths(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | Path],
    options: IngestOptions = IngestOptions(),
    *,
    progress: Callable[[str, int, str], None] | None = None,
) -> IngestReport:
    """Validate and load evidence logs into ``con`` in one transaction.

    ``paths`` are files or folders (see :func:`listing.list_paths`: a path that cannot be used is
    refused in the report, the others read). ``progress`` is called as ``progress(path, n_read, unit)``
    every 10,000 lines and at the end of each file. Raises :class:`IngestError` before writing anything
    when no path can be used or the options are unusable; bad lines never raise."""
    try:
        listing = list_paths(list(paths))
    except InputFileError as e:
        raise IngestError(str(e)) from None
    if options.format not in (None, "auto", *formats.NAMES):
        raise IngestError(f"unknown log format {options.format!r}; formats are: auto, {', '.join(formats.NAMES)}")
    questions = read_questions(options.queries) if options.queries else None
    with one_ingest_at_a_time(con), fewer_collections():
        check_options(con, options)  # it records the options in meta: inside too
        settle_shared(con, options, questions)  # (a text several of a file's ids share: the one stored runs ask)
        questions = questions or stored_questions(con, options)  # (no file: the stored runs' questions)
        return _load(con, listing.files, options, progress, questions).listed(listing.refused, listing.warnings)


def _load(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    options: IngestOptions,
    progress: Callable[[str, int, str], None] | None,
    questions: QuestionIds | None = None,
) -> IngestReport:
    batch = _Batch(con, options, progress)
    batch.questions = questions  # (--queries, or the stored runs' questions) the ids hashed query ids take
    batch.call_bytes = sum(pool_bytes(p) for p in files)
    con.execute("BEGIN TRANSACTION")
    try:
        for i, path in enumerate(files):
            batch.next_file = files[i + 1] if i + 1 < len(files) else None
            batch.add_file(path)
        batch.finish()
        con.execute("COMMIT")
    except BaseException as e:
        batch.pool.close()
        batch.held.close()
        batch.out.abandon()
        try:
            con.execute("ROLLBACK")
        except duckdb.TransactionException:
            pass  # a failed COMMIT has already rolled the transaction back
        if isinstance(e, (duckdb.Error, OSError)) and NO_SPACE in str(e):
            raise IngestError(no_space_message(e)) from None
        raise
    return batch.report


_AnyLine = Line | FileLine
"""A line as read (:class:`~ragaudit_core.logs.jsonl.Line`) or decoded by a worker (:class:`FileLine`)."""

FLUSH_ENTRIES = 50_000
"""Evidence entries buffered before they are inserted (inside the call's one transaction):
the bound on what one ingest holds in Python, whatever the size of its input."""


class _Batch:
    """What one ingest call loads, streamed into its single transaction in bounded batches.

    One method per kind of input: a file (:meth:`add_file`), a native line, a foreign line,
    a tracing export; rows go to a :class:`~ragaudit_core.logs.writer.BatchWriter` in batches,
    :meth:`finish` writes the rest and the per-file tables. The caller opens the transaction and
    commits or rolls it back.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, options: IngestOptions, progress: Callable[[str, int, str], None] | None
    ) -> None:
        self.con, self.options, self.progress = con, options, progress
        self.report = IngestReport()
        self.seen = SeenPairs.from_table(con, "records")  # "first record wins", across ingests
        self.seen_prov = SeenPairs.from_table(con, "prov_records")
        self.seen_sha = SeenFiles(
            con.execute("SELECT sha256, path FROM files WHERE n_loaded > 0 OR n_rejected = 0").fetchall()
        )
        # files of an earlier ingest whose every line was rejected: read again, and replace that attempt
        self.failed_sha = dict(
            con.execute("SELECT sha256, file_id FROM files WHERE n_loaded = 0 AND n_rejected > 0").fetchall()
        )
        self.replaced_file_ids: list[int] = []
        self.next_file_id = con.execute("SELECT coalesce(max(file_id), 0) + 1 FROM files").fetchall()[0][0]
        self.run_configs = RunConfigs()
        self.passages = stored_passages(con, options)  # the document ids text: ids take (before any write)
        self.out = BatchWriter(con, self.passages.rename_rows)
        self.quarantine: list[tuple] = []
        self.warn_rows: list[tuple] = []
        self.file_rows: list[tuple] = []
        self.row_opts = RowOptions(options.canon, options.casefold_spans, options.recompute_span_hash)
        self.caches = RowCaches()
        self.workers = default_workers()
        self.pool = LinePool(self.row_opts, self.workers, options.max_line_bytes)
        self.held = HeldRows()  # rows of the spans held until their file is read
        self.held_span_bytes = 0
        self.call_bytes = 0  # the bytes of every file of the call (set by the caller)
        self.next_file: Path | None = None  # the call's file after the one read (set by the caller)
        self.n_records = self.n_entries = self.n_provenance = 0
        self.log_labels: list[tuple[str, str, str, str]] = []  # (query_id, kind, reference, file)
        self.questions: QuestionIds | None = None

    # ------------------------------------------------------------------ reporting

    def warn(
        self, path: str | None, line_no: int | None, code: str, message: str, file_id: int | None, kind: Kind = WARNING
    ) -> None:
        """A sentence about the load (a warning, or a note: ``kind``), said and kept in ``ingest_warnings``."""
        self.report.warnings.append(Issue(path, line_no, message, code, kind))
        if code != "already-loaded":  # about this call, not the database: said, not kept for later pages
            self.warn_rows.append((file_id, path, line_no, code, message, kind))

    def reject(self, fr: FileReport, file_id: int, ln: _AnyLine, reason: str) -> None:
        """Report a bad line (file, line, reason) and keep it verbatim in quarantine."""
        fr.n_rejected += 1
        self.report.rejected.append(Issue(fr.path, ln.line_no, reason))
        self.quarantine.append(
            (file_id, fr.path, ln.line_no, reason, ln.data.decode("utf-8", errors="replace"), ln.data)
        )

    def admit(
        self,
        fr: FileReport,
        file_id: int,
        ln: _AnyLine,
        reason: str | None,
        rec: Any,
        what: str,
        seen: SeenPairs,
    ) -> Any:
        """The parsed record of a line, or None after rejecting it (bad line, or a (run, query)
        already loaded: only the first record is kept, across files and earlier ingests)."""
        if reason is None and seen.taken(rec.run_id, rec.query_id):
            where = seen.first_place(rec.run_id, rec.query_id)
            src = f"{where[0]} line {where[1]}" if where else "an earlier ingest"
            reason = (
                f"duplicate {what} for run {rec.run_id!r}, query {rec.query_id!r}: "
                f"already loaded from {src}; only the first is kept"
            )
        if reason is not None:
            self.reject(fr, file_id, ln, reason)
            return None
        seen.add(rec.run_id, rec.query_id, fr.path, ln.line_no)
        fr.n_loaded += 1
        return rec

    # ------------------------------------------------------------------ files

    def add_file(self, path: Path) -> None:
        """Read one file: skipped when its content is already loaded, else every record admitted
        or rejected (:class:`~ragaudit_core.logs.records.FileReader`). A file whose every line
        was rejected is not marked loaded: the next ingest of it reads it again and replaces that
        attempt. Each file is its own unit: a file refused while it is read (past a limit, nothing
        to audit, unreadable) gives back what it had loaded, and the other files stay."""
        spath = str(path)
        try:
            sha = file_sha256(path)
        except OSError as e:  # unreadable, or gone since the listing: refused, the other files load
            return self.report.refuse(spath, unopened(e))
        if sha in self.failed_sha:
            self.replaced_file_ids.append(self.failed_sha.pop(sha))
        same = self.seen_sha.same_content(path, sha)
        if same is not None:
            self.report.files.append(FileReport(spath, sha, "already-loaded"))
            self.warn(spath, None, "already-loaded", already_loaded(same, self.options.format), None, NOTE)
            return
        self.seen_sha[sha] = spath
        file_id = self.next_file_id
        self.next_file_id += 1
        fr = FileReport(spath, sha, "loaded")
        self.report.files.append(fr)
        mark = self._mark()
        n_ev, n_prov = self.n_records, self.n_provenance
        try:
            self._read_file(path, fr, file_id)
        except Exception as e:
            if isinstance(e, duckdb.Error) or (isinstance(e, OSError) and NO_SPACE in str(e)):
                raise  # the database failed: the whole call is rolled back
            self._refuse(path, fr, file_id, sha, mark, e)
            return
        if fr.n_loaded == 0 and fr.n_rejected > 0:
            fr.status = "rejected"
            del self.seen_sha[sha]
        has_ev, has_prov = self.n_records > n_ev, self.n_provenance > n_prov
        kind = "mixed" if has_ev and has_prov else "provenance" if has_prov else "evidence"
        kind = kind if has_ev or has_prov else "nothing loaded"
        row = (file_id, spath, sha, kind, path.stat().st_size, fr.n_lines, fr.n_loaded, fr.n_rejected)
        self.file_rows.append((*row, fr.formats_read() or None))

    def _read_file(self, path: Path, fr: FileReport, file_id: int) -> None:
        spath, opts = str(path), self.options
        self.passages.path = spath  # (the entries it renames are counted under their file)
        self.held.close()  # (a refused file's held rows are dropped with it)
        self.held_span_bytes = 0  # bytes of the span lines this file holds in the process
        notes: list[str] = []
        fr.unit = "line" if (rows := iter_rows(path, opts.limits, notes)) is None else "record"
        gen: Iterator[Line] = rows or iter_lines(
            path, max_line_bytes=opts.max_line_bytes, warn=notes, limits=opts.limits
        )
        first = next(gen, None)
        second = next(gen, None) if first is not None else None  # none: the first value is the whole file
        for note in notes:
            code = "not-gzip" if "gzip" in note else "document"
            self.warn(spath, None, code, note.removeprefix(f"{spath}: "), file_id)
        if first is None:
            self.warn(spath, None, "empty-file", "file holds no records (it is empty or blank)", file_id)
        reader = FileReader(self, fr, file_id, path, forced=opts.format, run_id=opts.run_id, doc_id_key=opts.doc_id_key)
        reader.whole_first = second is None
        pooled = (
            rows is None
            and first is not None
            and reader.native_ok
            and self.workers
            and pool_worth(path, self.call_bytes)
        )
        head: list[Line] = [ln for ln in (first, second) if ln is not None]
        head += itertools.islice(gen, POOL_PEEK - len(head)) if pooled and second is not None else []
        lines = itertools.chain(head, gen)  # (gen is exhausted when it gave no first line)
        if pooled and any(  # a log in a fast shape (a trace may open with other spans): worth the workers
            not ln.error and fast_shape(ln.data, reader.ctx.run_id, reader.ctx.doc_id_key, reader.forced) for ln in head
        ):
            gen.close()  # type: ignore[attr-defined]  # rows is None: gen is iter_lines's generator
            self.native_lines_in_workers(reader, path)
        else:
            self.pool.drop_ahead()  # what the workers read ahead of this file is not needed
            for i, ln in enumerate(lines, 1):
                if self.progress is not None and i % 10000 == 0:
                    self.progress(spath, i, fr.unit)
                reader.line(ln)
        reader.finish()
        self.add_held()
        self.log_labels += [(*lab, spath) for lab in reader.ctx.labels]
        if self.progress is not None:
            self.progress(spath, fr.n_lines, fr.unit)

    def _mark(self) -> tuple[int, ...]:
        """Where the call's lists and counts stand before a file (to give the file back)."""
        r = self.report
        return (
            len(r.rejected),
            len(r.warnings),
            len(self.quarantine),
            len(self.warn_rows),
            self.n_records,
            self.n_entries,
            self.n_provenance,
        )

    def _refuse(self, path: Path, fr: FileReport, file_id: int, sha: str, mark: tuple[int, ...], e: Exception) -> None:
        """A file refused as a whole: what it loaded is deleted (inside the call's transaction),
        its rejections and warnings are replaced by one sentence, the other files stay."""
        spath = str(path)
        self.held.close()
        self.out.flush()
        self.out.drain()
        delete_file_rows(self.con, file_id)
        self.passages.forget_file(spath)  # (its entries renamed at the flush above are not counted)
        n_rej, n_warn, n_q, n_w, self.n_records, self.n_entries, self.n_provenance = mark
        del self.report.rejected[n_rej:], self.report.warnings[n_warn:], self.quarantine[n_q:], self.warn_rows[n_w:]
        self.seen.forget_file(spath)
        self.seen_prov.forget_file(spath)
        self.run_configs.forget_file(spath)
        if isinstance(e, InputFileError):
            reason = str(e).removeprefix(f"{spath}: ")
        elif isinstance(e, (MemoryError, RecursionError)):
            reason = f"the file could not be read within the limits ({type(e).__name__}); nothing of it was loaded"
        else:
            reason = f"the file could not be read ({type(e).__name__}: {e}); nothing of it was loaded"
        fr.status, fr.n_loaded, fr.n_rejected, fr.n_skipped = "unreadable", 0, 1, 0
        self.report.rejected.append(Issue(spath, None, reason, "unreadable"))
        self.quarantine.append((file_id, spath, None, reason, None, None))
        self.file_rows.append(
            (file_id, spath, sha, "refused", path.stat().st_size, fr.n_lines, 0, 1, fr.formats_read() or None)
        )
        self.seen_sha.pop(sha, None)

    # ------------------------------------------------------------------ what a FileReader hands over

    def taken(self, run_id: str, query_id: str) -> bool:
        """Whether (run, query) is loaded already (by an earlier ingest or this call)."""
        return self.seen.taken(run_id, query_id)

    def admit_record(self, fr: FileReport, file_id: int, ln: _AnyLine, rec: EvidenceRecord, made: bool = False) -> bool:
        if self.admit(fr, file_id, ln, None, rec, "record", self.seen) is None:
            return False
        self._add_record(fr, file_id, ln, rec, made)
        return True

    def native_lines_in_workers(self, reader: FileReader, path: Path) -> None:
        """A large file read and decoded by the worker pool (:mod:`parallel`) range by range, its
        records admitted here in file order (tracing spans held by the reader until the file is
        read, retriever spans' rows in ``held``); a line the workers leave is read by the file's
        reader. Same stored rows and report as reading every line here (tested)."""
        fr, file_id = reader.fr, reader.file_id
        base = 0
        mapping = (reader.ctx.run_id, reader.ctx.doc_id_key) if reader.forced is None else None
        then = following(self.next_file, self.call_bytes, mapping is None, self.options.run_id, reader.ctx.doc_id_key)
        for n_lines, items, table in self.pool.decode(path, mapping, then):
            admitted: list[int] = []
            renamed: dict[int, str] = {}  # repeated questions' lines, numbered here
            slot = self._hold_range(items, table)
            for i, it in enumerate(items):
                if not isinstance(it, (DecodedLine, SpanLine)):
                    reader.line(dataclasses.replace(it, line_no=base + it.line_no))
                    continue
                ln = FileLine(base + it.line_no, fr.path, it.offset, it.length)
                fr.n_lines += 1
                fr.formats[it.label] += 1
                if isinstance(it, SpanLine) or it.held:
                    reader.held_span(ln, it, (slot, i))
                    continue
                for note in it.notes:
                    reader.ctx.warn_once(note)
                repeats = self._numbered(reader, it, i, renamed) if it.mapped else []
                if i in renamed:
                    it = it._replace(query_id=renamed[i])
                if self._admit_decoded_line(fr, file_id, ln, it, it.answer):
                    admitted.append(i)
                for msg in repeats:
                    self.warn(fr.path, ln.line_no, "repeated-question", msg, file_id)
            base += n_lines
            n_decoded, made = sum(isinstance(it, DecodedLine) for it in items), [i for i in admitted if items[i].made]
            self._add_rows(with_query_ids(table, renamed), admitted, n_decoded, made)  # (made: text: ids to rename)
            if self.progress is not None:
                self.progress(fr.path, fr.n_lines, fr.unit)
        if self.next_file is None:  # the workers' memory is given back before the held spans are joined and written
            self.pool.close()

    def _hold_range(self, items: list, table: pa.Table) -> int | None:
        """The rows of a range's held spans, in their slot before any line of the range is read
        here: a line the workers left may be mapped as it is read (:meth:`premap`) and wait in the
        slot after it, so the keys of both stay apart. Returns the slot (None: nothing held)."""
        decoded = [i for i, it in enumerate(items) if isinstance(it, DecodedLine)]
        held = [i for i in decoded if items[i].held]
        if not held:
            return None
        return self.held.add(rows_of(table, held) if len(held) < len(decoded) else table, len(held))

    def _numbered(self, reader: FileReader, it: DecodedLine, i: int, renamed: dict[int, str]) -> list[str]:
        """A mapped line's query id numbered by occurrence when the workers' one is taken (a
        repeated question: its line index ``i`` → the new id in ``renamed``); its warnings."""
        if (self.questions is None or not self.questions.gives_ids()) and not self.taken(it.run_id, it.query_id):
            return []  # (with questions, every hashed id may take its question's)
        reader.ctx.repeats.clear()
        renamed[i] = reader.ctx.occurrence_id(it.run_id, it.query_id)
        return list(reader.ctx.repeats)

    def _add_rows(self, table: pa.Table, kept: list[int], n_lines: int, made: list[int]) -> None:
        """The rows of ``n_lines`` decoded lines whose line index (``rec_idx``) is in ``kept`` (those of
        ``made`` with the stored passages' document ids)."""
        if kept:
            rows = self.passages.rename_table(rows_of(table, kept) if len(kept) < n_lines else table, made)
            self.out.add_table(rows.drop_columns(["rec_idx"]))
        if self.out.n_entries >= FLUSH_ENTRIES:
            self.out.flush()

    def _admit_decoded_line(
        self, fr: FileReport, file_id: int, ln: FileLine, it: DecodedLine, answer: str | None
    ) -> bool:
        """Admit a record the workers decoded (its rows are the caller's): False when rejected."""
        if self.admit(fr, file_id, ln, None, it, "record", self.seen) is None:
            return False
        self._run_config(it, fr.path, file_id, ln.line_no)
        if it.dropped:
            self.warn(
                fr.path,
                ln.line_no,
                "duplicate-evidence",
                duplicate_message(it.run_id, it.query_id, it.dropped),
                file_id,
            )
        self.out.rec_rows.append((it.run_id, it.query_id, file_id, ln.line_no, it.query, answer, it.n_kept))
        self.n_records += 1
        self.n_entries += it.n_kept
        return True

    def admit_decoded(
        self,
        fr: FileReport,
        file_id: int,
        ln: FileLine,
        decoded: DecodedLine,
        answer: str | None,
        key: tuple[int, int],
        renamed: str | None,
    ) -> None:
        """Admit a held retriever span the workers mapped, with its trace's answer (rows added by
        :meth:`add_held`, under the ``renamed`` query id when it was numbered as a repeat; the
        records go to the writer as they gather, not all at the file's end)."""
        if self._admit_decoded_line(fr, file_id, ln, decoded, answer):
            self.held.keep(*key, renamed, decoded.made)
            if len(self.out.rec_rows) >= FLUSH_ENTRIES:
                self.out.flush()

    def premap(
        self,
        ln: Line,
        label: str,
        span: formats.Span,
        ctx: formats.MapContext,
        own_bytes: Callable[[], bytes | None] | None = None,
    ) -> tuple | None:
        """A retriever span read in this process, mapped now and held by its rows and bytes
        (:meth:`HeldRows.hold_span`), or None when the general path must read it when the file
        ends (every span until the file's held lines pass ``held.PREMAP_BYTES``: small files pay
        nothing). ``own_bytes``: a container's record's own JSON, made only past that point."""
        self.held_span_bytes += len(ln.data) if own_bytes is None else sum(map(len, span.texts))
        if self.held_span_bytes <= held_module.PREMAP_BYTES:
            return None
        if (data := ln.data if own_bytes is None else own_bytes()) is None:
            return None
        return self.held.hold_span(ln.line_no, data, label, span, ctx, self.row_opts, self.caches)

    def add_held(self) -> None:
        """The rows of the held spans admitted when their file was read."""
        for table, kept, n_lines, made in self.held.rows():
            self._add_rows(table, kept, n_lines, made)

    def provenance(self, fr: FileReport, file_id: int, ln: _AnyLine, reason: str | None, prec: Any) -> None:
        if self.admit(fr, file_id, ln, reason, prec, "provenance record", self.seen_prov) is not None:
            buffer_provenance(
                prec,
                file_id,
                ln.line_no,
                self.options.canon,
                self.caches.canon,
                self.out.prov_rec_rows,
                self.out.prov_node_rows,
            )
            self.n_provenance += 1
            if len(self.out.prov_node_rows) >= FLUSH_ENTRIES:
                self.out.flush()

    def evidence(self, fr: FileReport, file_id: int, ln: _AnyLine, reason: str | None, rec: Any) -> None:
        if self.admit(fr, file_id, ln, reason, rec, "record", self.seen) is not None:
            self._add_record(fr, file_id, ln, rec)

    def _add_record(self, fr: FileReport, file_id: int, ln: _AnyLine, rec: EvidenceRecord, made: bool = False) -> None:
        self._run_config(rec, fr.path, file_id, ln.line_no)
        start = len(self.out.ev_rows)
        n_kept = self._entries(rec, fr.path, file_id, ln.line_no)
        if made:  # its mapping made text: ids: they may take the stored passages' (renamed as the writer flushes)
            self.passages.made_rows(start, len(self.out.ev_rows))
        self.out.rec_rows.append((rec.run_id, rec.query_id, file_id, ln.line_no, rec.query, rec.answer, n_kept))
        self.n_records += 1
        self.n_entries += n_kept
        if self.out.n_entries >= FLUSH_ENTRIES:
            self.out.flush()

    def _run_config(self, rec: EvidenceRecord | DecodedLine, spath: str, file_id: int, line_no: int) -> None:
        """The first config logged for a run is kept (records logging none before it do not count);
        a different one later is a warning."""
        if first := self.run_configs.note(rec.run_id, rec.config, spath, line_no):
            self.warn(
                spath,
                line_no,
                "config-mismatch",
                f"run {rec.run_id!r} has a different config here than at {first[1]} line {first[2]}; "
                "the first one is kept",
                file_id,
            )

    def _entries(self, rec: EvidenceRecord, spath: str, file_id: int, line_no: int) -> int:
        """Buffer a record's evidence entries (:func:`rows.evidence_rows`: canonical ids, span
        hashes, duplicates dropped and warned about); returns how many were kept."""
        n_kept, dropped = evidence_rows(rec, self.row_opts, self.caches, self.out.ev_rows.append)
        if dropped:
            self.warn(
                spath, line_no, "duplicate-evidence", duplicate_message(rec.run_id, rec.query_id, dropped), file_id
            )
        return n_kept

    # ------------------------------------------------------------------ the transaction

    def finish(self) -> None:
        """The last batch, then the per-file tables, runs, quarantine, warnings and the data version
        (inside the caller's transaction)."""
        con, report = self.con, self.report
        self.pool.close()
        self.out.close()
        report.n_records, report.n_entries, report.n_provenance = self.n_records, self.n_entries, self.n_provenance
        for table in ("quarantine", "ingest_warnings", "files"):
            con.execute(f"DELETE FROM {table} WHERE list_contains(?, file_id)", [self.replaced_file_ids])
        insert_files(con, self.file_rows, self.options.fingerprint())
        new_runs = new_run_rows(con, self.run_configs)
        if new_runs:
            insert_rows(con, "runs", new_runs, RUN_SCHEMA)  # a log may hold a run per record
        if self.quarantine:
            insert_rows(con, "quarantine", self.quarantine, QUARANTINE_SCHEMA)
        if report.n_records or report.n_provenance:  # the database's state now: earlier loads' words are stale
            drop_workspace_warnings(con)
            for code, msg in workspace_warnings(con):
                self.warn(None, None, code, msg, None)
        if self.log_labels:
            labels = store_reference_labels(con, self.log_labels, self.options.casefold_spans, self.passages.doc_id_of)
            what = "relevance labels from the logs' references: " + labels.summary()
            self.warn(None, None, "labels", what, None, NOTE)
        loaded = bool(report.n_records)
        for said in self.questions.sentences(self.seen.first_place, loaded=loaded) if self.questions else ():
            self.warn(None, None, "query-ids", said.text, None, said.kind)
        for said in self.passages.sentences(con):
            self.warn(None, None, "doc-ids", said.text, None, said.kind)
        self.passages.drop_answered(self.report.warnings, self.warn_rows)  # (every passage took a stored id)
        if self.warn_rows:
            insert_rows(con, "ingest_warnings", self.warn_rows, WARNING_SCHEMA)
        if self.file_rows:
            store.bump_data_version(con)
        report.runs = sorted(self.run_configs)

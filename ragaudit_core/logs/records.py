"""One file's lines read record by record: each record is read as what it is.

For every line (or row, or value of a JSON document) :class:`FileReader`:

1. takes the fast path for a canonical native line (:mod:`decode`);
2. else decodes it (``NaN``/``Infinity`` read as null, the fields named in one warning);
3. unwraps a container (a JSON array, a Langfuse trace export, a LangSmith batch or run tree,
   ``{"data": [...]}``, ``{"results": [...]}`` — :func:`shapes.unwrap`), each record it holds
   counted as a row read (a Langfuse trace export's own run settings, in ``trace.metadata``, kept
   for its trace: :meth:`FileReader.trace_settings`);
4. **detects the format of each record** (:func:`formats.detect`; provenance first), unless
   ``--format`` forces one — never from the first record of the file, so a file may mix formats
   and a cut first line, a scalar first element or a NaN changes nothing for the others;
5. reads it: a native record by the contract (keys of other formats on it are ignored and named
   in one warning), a record format by its mapper, a tracing span held by a
   :class:`~ragaudit_core.logs.traces.TraceJoiner` until the file is read — past the premap
   threshold (:data:`~ragaudit_core.logs.held.PREMAP_BYTES`) a retriever span of any tracing
   format is mapped as it is read and held by its rows and its own bytes instead of its texts.

At the end of the file (:meth:`FileReader.finish`) the held retriever spans are joined with their
trace's answer and run settings (under the span's own: its record's ``config``) — a retriever span
the worker pool already mapped (:class:`~ragaudit_core.logs.traces.DecodedSpan`) is admitted as it
is (a repeated question numbered here, its trace's settings joined to its own), unless its trace
has a reranker (whose provenance needs the span's documents): then its line is read again here —
and a file that held records but no retrieval at all (only LLM/chain spans, a Ragas test set) is
refused with one sentence saying what it found.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import orjson
from pydantic import ValidationError

from ragaudit_core.logs import formats
from ragaudit_core.logs.contracts import EvidenceRecord, describe_validation_error, json_type, nothing_of_a_log
from ragaudit_core.logs.decode import decode_native, fast_record
from ragaudit_core.logs.formats import native
from ragaudit_core.logs.formats.settings import merged
from ragaudit_core.logs.jsonl import FileRefused, Line
from ragaudit_core.logs.jsontext import lone_surrogate
from ragaudit_core.logs.lines import decode_json, parse_evidence_object, parse_provenance_object
from ragaudit_core.logs.questions import QuestionIds
from ragaudit_core.logs.report import FileReport
from ragaudit_core.logs.shapes import (
    EMPTY,
    IDS_ONLY,
    LANGFUSE_TRACE,
    RECORD_OF,
    SAID_EMPTY,
    TRACE_SETTINGS,
    empty_words,
    langfuse_trace,
    unwrap,
)
from ragaudit_core.logs.traces import REPORTED_AGAIN, DecodedSpan, TraceJoiner, provenance_record
from ragaudit_core.wording import counted, listed

__all__ = ["FileReader", "RecordSink"]


_MAX_UNWRAP = 3  # containers inside containers (an array of trace exports) read this deep
NO_CONTEXTS = "without retrieved contexts"  # a record-format row that retrieved nothing (a test set's)


class RecordSink(Protocol):
    """What a :class:`FileReader` hands its results to (the ingest's batch)."""

    def warn(self, path: str | None, line_no: int | None, code: str, message: str, file_id: int | None) -> None: ...

    def reject(self, fr: FileReport, file_id: int, ln: Any, reason: str) -> None: ...

    def evidence(self, fr: FileReport, file_id: int, ln: Any, reason: str | None, rec: Any) -> None: ...

    def provenance(self, fr: FileReport, file_id: int, ln: Any, reason: str | None, prec: Any) -> None: ...

    def admit_record(self, fr: FileReport, file_id: int, ln: Any, rec: EvidenceRecord, made: bool = False) -> bool: ...

    questions: QuestionIds | None  # (--queries, or the stored runs' questions) the ids hashed query ids take

    def taken(self, run_id: str, query_id: str) -> bool: ...

    def premap(
        self,
        ln: Line,
        label: str,
        span: formats.Span,
        ctx: formats.MapContext,
        own_bytes: Callable[[], bytes | None] | None = None,
    ) -> tuple | None: ...

    def admit_decoded(
        self, fr: FileReport, file_id: int, ln: Any, decoded: Any, answer: str | None, key: Any, renamed: str | None
    ) -> None: ...


def json_bytes(obj: Any) -> bytes | None:
    """A decoded record's JSON again (a container's record, held by its own bytes); None when it
    cannot be written (nested deeper than Python recurses, a lone surrogate): it is then held as
    it is, as before."""
    try:
        return orjson.dumps(obj)
    except TypeError:  # an integer beyond 64 bits, or nested past orjson's 255 levels
        pass
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except (RecursionError, ValueError, TypeError):
        return None


def read_span_again(fmt: formats.LogFormat, data: bytes) -> formats.Span | None:
    """A held span read again from its bytes (its trace has a reranker): the fast reader when it
    accepts them, else decoded and read as any span; None when they no longer read as one."""
    span = fmt.read_span_fast(data) if fmt.read_span_fast is not None else None
    if span is not None or fmt.read_span is None:
        return span
    reason, obj, _ = decode_json(data)
    if reason is not None or not isinstance(obj, dict):
        return None
    try:
        return fmt.read_span(obj)
    except formats.FormatError:
        return None


def _not_a_log(obj: dict) -> str:
    """Why a file whose only value is ``obj`` (a JSON object holding no key of a record) is refused."""
    keys = sorted(obj)
    shown = [*keys[:12], f"{len(keys) - 12} more"] if len(keys) > 12 else keys
    what = f"a JSON object with no records in it ({listed('key', shown)})" if keys else "an empty JSON object"
    return f"{what}: not a log; nothing of it was loaded"


class FileReader:
    """The records of one file (see the module's docstring)."""

    def __init__(
        self,
        sink: RecordSink,
        fr: FileReport,
        file_id: int,
        path: Path,
        *,
        forced: str | None,
        run_id: str | None,
        doc_id_key: str | None,
    ) -> None:
        self.sink, self.fr, self.file_id = sink, fr, file_id
        self.forced = None if forced in (None, "auto") else formats.get(forced)
        self.native_ok = self.forced is None or self.forced.kind == "native"
        self.fast_formats = (
            formats.FAST_FORMATS
            if self.forced is None
            else (self.forced,)
            if self.forced.decode_fast is not None
            else ()
        )
        self.fast_traces = (
            formats.FAST_TRACE_FORMATS
            if self.forced is None
            else (self.forced,)
            if self.forced.read_span_fast is not None
            else ()
        )
        if sink.questions is not None:
            sink.questions.path = str(path)  # the file whose records are given ids
        self.ctx = formats.MapContext(
            formats.run_id_for(path, run_id), doc_id_key, taken=sink.taken, questions=sink.questions
        )
        self.joiner = TraceJoiner()
        self.scratch = formats.MapContext(self.ctx.run_id, doc_id_key)  # spans mapped as they are read
        self.trace_labels: dict[str, formats.LogFormat] = {}  # (spans the workers read) label -> format
        self.ignored: Counter[str] = Counter()  # other formats' keys on native records
        self.non_finite: Counter[str] = Counter()  # fields that held NaN/Infinity
        self.non_finite_first: int | None = None
        self.without: Counter[tuple[str, str, str]] = Counter()  # (label, unit, kind) of records without retrieval
        self.containers: Counter[str] = Counter()
        self.spans_without = 0  # tracing spans among the records without retrieval
        self.array_hint: int | None = None
        self.empty: str | None = None  # the first container with no record in it
        self.left_out = 0  # containers whose export left their records out (SAID_EMPTY), beside records
        self.left_out_what: str | None = None
        self.whole_first = True  # the file's first value is its only one (the ingest peeks)

    # ------------------------------------------------------------------ per line

    def line(self, ln: Line) -> None:
        """One line (or row, or document value): loaded, rejected, or held."""
        if ln.note == TRACE_SETTINGS:  # (a streamed trace export's trace, no record: not counted)
            self.trace_settings(json.loads(ln.data))  # (read with json once already: it reads)
            return
        fr = self.fr
        fr.n_lines += 1
        if ln.note and self.noted(ln):
            return
        if ln.error:
            self.sink.reject(fr, self.file_id, ln, ln.error)
            return
        if self.native_ok:
            fast = decode_native(ln.data)
            if fast is not None:
                fr.formats["native"] += 1
                self.sink.evidence(fr, self.file_id, ln, None, fast)
                return
        for fmt in self.fast_formats:  # another format's common shape (Ragas rows)
            self.ctx.repeats.clear()
            self.ctx.made = 0  # (text: ids made by the mapping: admit_mapped)
            assert fmt.decode_fast is not None
            recs = fmt.decode_fast(ln.data, self.ctx)
            if recs is not None:
                fr.formats[fmt.label] += 1
                self.admit_mapped(ln, fmt, recs)
                return
        for fmt in self.fast_traces:  # a tracing format's common span (OpenInference RETRIEVER spans)
            assert fmt.read_span_fast is not None
            span = fmt.read_span_fast(ln.data)
            if span is not None:
                fr.formats[fmt.label] += 1
                if not self.premapped(ln, fmt, span):
                    self.hold(ln, fmt, span, None)
                return
        reason, obj, non_finite = decode_json(ln.data)
        if reason is not None:
            self.sink.reject(fr, self.file_id, ln, reason)
            return
        if non_finite:
            self.non_finite.update(p.split(".")[-1] if not p.split(".")[-1].isdigit() else p for p in non_finite)
            self.non_finite_first = self.non_finite_first or ln.line_no
        self.value(ln, obj, 0)

    def noted(self, ln: Line) -> bool:
        """A line's note: a byte-order mark stripped (warned), a record of a container past the limit
        (read as its container's), or the line standing for such a container with no record in it
        (read: True, nothing more to do)."""
        note = ln.note
        assert note is not None
        if note.startswith(RECORD_OF):
            self.containers.setdefault(note[len(RECORD_OF) :], 1)
        elif note.startswith(EMPTY):
            self.empty_container(note[len(EMPTY) :])
            return True
        elif not ln.error and note.startswith("a UTF-8 byte-order mark"):
            at = 1 if note.endswith("start of the file was ignored") else ln.line_no  # (a CSV's first row)
            self.sink.warn(self.fr.path, at, "bom", note, self.file_id)
        return False

    def empty_container(self, what: str) -> None:
        """A container with no record in it: read, nothing loaded (the line already counted)."""
        self.containers.setdefault(what, 1)
        self.fr.n_skipped += 1
        self.empty = self.empty or what
        if what in SAID_EMPTY:
            self.left_out += 1
            self.left_out_what = self.left_out_what or what

    def value(self, ln: Line, obj: Any, level: int) -> None:
        if (
            type(obj) is dict
            and self.forced is None
            and "nodes" not in obj
            and "schema" not in obj
            and native.detect(obj)
        ):  # the common case first: a native record (no container, no provenance, no other format)
            self.native_record(ln, obj)
            return
        box = unwrap(obj) if level < _MAX_UNWRAP else None
        if box is None:
            self.record(ln, obj, own=level == 0)
            return
        what, items = box
        # a container that is the whole file (its only value, on its first line): its records are
        # numbered by position (RAGChecker's results[i] is row i + 1); a container followed by
        # other lines or values keeps its line's number, which theirs would otherwise repeat
        by_position = self.whole_first and level == 0 and ln.line_no == 1 and self.fr.n_lines == 1
        if not items:
            self.empty_container(what)
            return
        if what == LANGFUSE_TRACE:
            if all(isinstance(o, str) for o in items):
                self.sink.reject(self.fr, self.file_id, ln, IDS_ONLY)  # one reason for the trace, not one per id
                return
            self.trace_settings(obj)
        self.containers[what] += 1
        if isinstance(obj, list) and level == 0 and self.array_hint is None:
            self.array_hint = ln.line_no
        self.fr.n_lines += len(items) - 1  # each record of the container is a row read
        for i, item in enumerate(items, 1):
            self.value(dataclasses.replace(ln, line_no=i) if by_position else ln, item, level + 1)

    def trace_settings(self, obj: Any) -> None:
        """The run settings a Langfuse trace export's trace names, for its observations, and its
        output, their answer where no root observation gives one."""
        found = langfuse_trace(obj)
        bad = None if found is None else lone_surrogate([found[1], found[2]])
        if bad is not None:  # (a line's decoder rejects these; a streamed export's trace member comes here)
            why = f"the Langfuse trace's output or metadata holds {bad}, half of a character: neither is read"
            self.sink.warn(self.fr.path, None, "langfuse-mapping", why, self.file_id)
            return
        if found is not None and found[1] is not None:
            self.joiner.trace_settings("langfuse", found[0], found[1])
        if found is not None and found[2] is not None:
            self.joiner.trace_answer("langfuse", found[0], found[2])

    def record(self, ln: Line, obj: Any, *, own: bool = True) -> None:
        """One decoded record; ``own``: ``ln``'s bytes are this record's (not a container's)."""
        fr, sink = self.fr, self.sink
        if not isinstance(obj, dict):
            sink.reject(fr, self.file_id, ln, f"expected a JSON object per line, got {json_type(obj)}")
            return
        if self.native_ok and native.is_provenance(obj):
            fr.formats["provenance"] += 1
            sink.provenance(fr, self.file_id, ln, *parse_provenance_object(obj))
            return
        fmt = self.forced or formats.detect(obj)
        if fmt.kind == "native" and own and self.whole_document(ln) and nothing_of_a_log(obj):
            raise FileRefused(f"{fr.path}: {_not_a_log(obj)}")  # a configuration beside the logs, say
        if fmt.kind != "native":
            fr.formats[fmt.label] += 1
        if fmt.kind == "native":
            self.native_record(ln, obj)
        elif fmt.kind == "record":
            self.mapped(ln, fmt, obj)
        else:
            self.span(ln, fmt, obj, own)

    def whole_document(self, ln: Line) -> bool:
        """Whether ``ln`` is the file's only value, a JSON one (not a CSV or Parquet row)."""
        return self.whole_first and ln.line_no == 1 and self.fr.n_lines == 1 and not ln.cells

    def native_record(self, ln: Line, obj: dict) -> None:
        """A record of our contract; keys of other formats on it are noted (one warning per file). A CSV
        or Parquet row's list and object fields written as text are parsed (:func:`native.read_cells`)."""
        self.fr.formats["native"] += 1
        keys = formats.foreign_keys(obj)
        if keys:
            self.ignored.update(keys)
        if ln.cells:  # a CSV or Parquet row: its lists may be written as text
            try:
                obj = native.read_cells(obj)
            except formats.FormatError as e:
                self.sink.reject(self.fr, self.file_id, ln, str(e))
                return
        self.sink.evidence(self.fr, self.file_id, ln, *parse_evidence_object(obj))

    def mapped(self, ln: Line, fmt: formats.LogFormat, obj: dict) -> None:
        """A record of a record format: its native records admitted one by one."""
        fr, sink = self.fr, self.sink
        self.ctx.repeats.clear()
        self.ctx.made = 0
        recs: list[EvidenceRecord] = []
        reason = None
        try:
            recs = [EvidenceRecord.model_validate(r) for r in formats.map_record(fmt.name, obj, self.ctx)]
        except formats.FormatError as e:
            reason = f"{fmt.label} {fmt.unit}: {e}"  # (a record of the format: what in it cannot be read)
            if self.forced is not None:  # read so because it was asked: say so (it may be another format's)
                reason += f" (read as {fmt.label} as asked: --format, or 'Read the files as')"
        except ValidationError as e:
            reason = f"{fmt.label} record maps to an invalid record: {describe_validation_error(e)}"
        if reason is not None:
            sink.reject(fr, self.file_id, ln, reason)
            return
        self.admit_mapped(ln, fmt, recs)

    def admit_mapped(self, ln: Line, fmt: formats.LogFormat, recs: list[Any]) -> None:
        """The native records one record of a record format mapped to (none: a row without retrieval),
        with whether the mapping made a ``text:`` document id (:attr:`formats.MapContext.made`)."""
        fr, sink = self.fr, self.sink
        if not recs:
            fr.n_skipped += 1
            self.without[(fmt.label, fmt.unit, NO_CONTEXTS)] += 1
            return
        for rec in recs:
            sink.admit_record(fr, self.file_id, ln, rec, self.ctx.made > 0)
        for msg in self.ctx.repeats:
            sink.warn(fr.path, ln.line_no, "repeated-question", msg, self.file_id)

    def span(self, ln: Line, fmt: formats.LogFormat, obj: dict, own: bool = True) -> None:
        """A span of a tracing format: held until the file is read (retriever, reranker) or counted.
        A retriever span is mapped now once the file's span bytes pass the premap threshold (as
        the fast path's are), held by its rows and its own bytes (a container's record: its JSON
        written again), not by the span with its texts."""
        assert fmt.read_span is not None
        try:
            span = fmt.read_span(obj)
        except formats.FormatError as e:
            self.sink.reject(self.fr, self.file_id, ln, f"{fmt.label} {fmt.unit}: {e}")
            return
        retriever = span.kind == "retriever" and not span.notes
        if not (retriever and self.premapped(ln, fmt, span, None if own else lambda: json_bytes(obj))):
            self.hold(ln, fmt, span, obj)

    def premapped(
        self, ln: Line, fmt: formats.LogFormat, span: formats.Span, own_bytes: Callable[[], bytes | None] | None = None
    ) -> bool:
        """Whether the sink mapped the span now (past the premap threshold) — it is then held by
        its rows and bytes (:class:`~ragaudit_core.logs.traces.DecodedSpan`), not by its texts."""
        held = self.sink.premap(ln, fmt.label, span, self.scratch, own_bytes)
        if held is not None:
            self.joiner.hold(held[0], fmt, DecodedSpan(span.trace_id, held[1], held[2]))
        return held is not None

    def hold(
        self, ln: Any, fmt: formats.LogFormat, span: formats.Span, obj: dict | None = None, kind_of: str | None = None
    ) -> None:
        """Hold a span until the file is read, or count it as carrying no retrieval (as its
        format words its kind: ``kind_of``, or from its record ``obj``)."""
        if self.joiner.add(ln, fmt, span):
            self.fr.n_skipped += 1
            kind = kind_of or (fmt.kind_of(obj) if fmt.kind_of is not None and obj is not None else span.kind)
            self.without[(fmt.label, fmt.unit, kind)] += 1
            self.spans_without += 1

    # ------------------------------------------------------------------ end of file

    def finish(self) -> None:
        """Join the held spans, word the file's warnings, refuse a file with nothing to audit."""
        fr, sink, fid = self.fr, self.sink, self.file_id
        for ln, fmt, held, answer, settings in self.joiner.records():
            if (first := self.joiner.reported_on(fmt, held, ln.line_no)) is not None:  # one retrieval, reported twice
                fr.n_skipped += 1  # loaded once: not a second sample of its question
                where = f"line {first}" if first != ln.line_no else "an earlier span of this line"
                sink.warn(fr.path, ln.line_no, "repeated-retrieval", REPORTED_AGAIN.format(fmt.label, where), fid)
                continue
            span = held if isinstance(held, formats.Span) else self.decoded_span(ln, fmt, held, answer, settings)
            if span is None:
                continue
            for note in span.notes:
                sink.warn(fr.path, ln.line_no, f"{fmt.name}-mapping", note, fid)
            rec = self.trace_record(ln, fmt, span, answer, settings)
            rr = self.joiner.take_reranker(fmt, span) if rec is not None else None
            if rr is not None and rec is not None:
                ids = [e if isinstance(e, str) else e.doc_id for e in rec.evidence]  # as the evidence stores them
                ids_known = len(ids) == len(span.texts)
                prov = provenance_record(rec.run_id, rec.query_id, span, rr[1], answer, ids if ids_known else None)
                sink.provenance(fr, fid, rr[0], *parse_provenance_object(prov))
        fr.n_skipped += self.joiner.close()  # rerankers of traces without a loaded retrieval
        for w in self.ctx.warnings:
            sink.warn(fr.path, None, "mapping", w, fid)
        if self.ignored:
            sink.warn(fr.path, None, "ignored-keys", formats.ignored_keys_message(set(self.ignored)), fid)
        if self.non_finite:
            fields = ", ".join(sorted(self.non_finite))
            n = sum(self.non_finite.values())
            sink.warn(
                fr.path,
                self.non_finite_first,
                "non-finite",
                f"{counted(n, 'value')} {'was' if n == 1 else 'were'} NaN or Infinity (not JSON; pandas writes them "
                f"for missing numbers), in {fields}: read as null",
                fid,
            )
        if self.array_hint is not None and self.fr.path.lower().endswith((".jsonl", ".jsonl.gz", ".ndjson")):
            sink.warn(
                fr.path,
                self.array_hint,
                "json-array",
                "a JSON array where JSON Lines has one object per line: its elements were read as records",
                fid,
            )
        if fr.n_loaded == 0 and fr.n_rejected == 0 and self.without:
            raise FileRefused(f"{fr.path}: {self.nothing_to_audit()}")
        if fr.n_loaded == 0 and fr.n_rejected == 0 and self.empty is not None:  # as an empty file is
            sink.warn(fr.path, None, "empty-file", f"file holds no records ({empty_words(self.empty)})", fid)
        elif self.left_out:  # beside records: traces the export left out (an empty array says nothing)
            n, what = self.left_out, empty_words(self.left_out_what or "")
            why = f"{counted(n, 'row')} of the file held no records and {'was' if n == 1 else 'were'} skipped"
            sink.warn(fr.path, None, "empty-container", f"{why} ({what})", fid)

    def held_span(self, ln: Any, it: Any, key: Any) -> None:
        """A span the workers read (its line counted by the caller): a retriever span they mapped
        (a held :class:`~ragaudit_core.logs.parallel.DecodedLine`, its rows at ``key``) is held;
        a span without evidence (a :class:`~ragaudit_core.logs.parallel.SpanLine`) is taken as
        :meth:`span` takes one read here: an answer or a reranker held for its trace, or counted."""
        fmt = self._labelled(it.label)
        if it.held:
            self.joiner.hold(ln, fmt, DecodedSpan(it.trace_id, it, key))
        else:
            span = formats.Span(
                *(it.trace_id, it.kind),
                answer=it.answer,
                root=it.root,
                reranked=it.reranked or [],
                settings=it.settings,
                embedder=it.embedder,
            )
            self.hold(ln, fmt, span, kind_of=it.kind_of)

    def _labelled(self, label: str) -> formats.LogFormat:
        fmt = self.trace_labels.get(label) or next(f for f in formats.FORMATS if f.label == label)
        self.trace_labels[label] = fmt
        return fmt

    def decoded_span(
        self,
        ln: Any,
        fmt: formats.LogFormat,
        held: DecodedSpan,
        answer: str | None,
        settings: dict[str, Any] | None = None,
    ) -> formats.Span | None:
        """Admit a span the workers mapped (None), or its span read again from its line when its
        trace has a reranker (whose provenance needs the documents: the general path). A repeated
        question is numbered here, its warning where :meth:`trace_record` words it; the span's
        own settings (its ``config``) go over its trace's ``settings``."""
        d = held.decoded
        if settings is not None:
            d = d._replace(config=merged(settings, d.config))
        if self.joiner.has_reranker(fmt, held):
            span = read_span_again(fmt, ln.data)
            if span is None:  # these bytes were read once: only a file changed meanwhile differs
                self.sink.reject(self.fr, self.file_id, ln, "the line changed while the file was read; load it again")
            return span
        for note in d.notes:
            self.ctx.warn_once(note)
        self.ctx.repeats.clear()
        query_id = self.ctx.occurrence_id(d.run_id, d.query_id)
        for msg in self.ctx.repeats:
            self.sink.warn(self.fr.path, ln.line_no, "repeated-question", msg, self.file_id)
        renamed = None if query_id == d.query_id else query_id
        if renamed is not None:
            d = d._replace(query_id=renamed)
        self.sink.admit_decoded(self.fr, self.file_id, ln, d, answer, held.key, renamed)
        return None

    def nothing_to_audit(self) -> str:
        """One sentence saying what a file without retrieval holds."""
        groups: dict[tuple[str, str], Counter[str]] = {}
        for (label, unit, kind), n in self.without.items():
            groups.setdefault((label, unit), Counter())[kind] += n
        parts = []
        for (label, unit), kinds in groups.items():
            n = sum(kinds.values())
            detail = ", ".join(f"{k} {c}" for k, c in sorted(kinds.items()))
            if set(kinds) == {NO_CONTEXTS}:  # "3 Ragas rows without retrieved contexts", not "(… contexts 3)"
                parts.append(f"{n} {label} {unit}{'s' if n != 1 else ''} {NO_CONTEXTS}")
            else:
                parts.append(f"{n} {label} {unit}{'s' if n != 1 else ''} ({detail})")
        what = " and ".join(parts)
        if len(self.containers) == 1 and len(groups) == 1:
            container = next(iter(self.containers))
            if container != "a JSON array":
                what = f"{container} with {parts[0].replace(next(iter(groups))[0] + ' ', '', 1)}"
        tracing = bool(self.spans_without)
        if tracing:
            return f"{what} and no retriever: nothing to audit"
        return f"{what} (a test set?): nothing to audit"

    def trace_record(
        self,
        ln: Line,
        fmt: formats.LogFormat,
        span: formats.Span,
        answer: str | None,
        settings: dict[str, Any] | None = None,
    ) -> EvidenceRecord | None:
        """A retriever span's record, with its trace's answer and settings (its own over them)."""
        try:
            self.ctx.repeats.clear()
            self.ctx.made = 0
            built = formats.build_record(
                *(fmt.label, self.ctx, span.query or "", answer, span.texts, span.ids, span.metadata, span.scores),
                config=merged(settings, span.settings),
            )
            rec: Any = fast_record(built) or EvidenceRecord.model_validate(built)  # same record either way
        except formats.FormatError as e:
            self.sink.reject(self.fr, self.file_id, ln, f"{fmt.label} {fmt.unit}: {e}")
            return None
        except ValidationError as e:
            self.sink.reject(
                self.fr, self.file_id, ln, f"{fmt.label} span maps to an invalid record: {describe_validation_error(e)}"
            )
            return None
        for msg in self.ctx.repeats:
            self.sink.warn(self.fr.path, ln.line_no, "repeated-question", msg, self.file_id)
        return rec if self.sink.admit_record(self.fr, self.file_id, ln, rec, self.ctx.made > 0) else None

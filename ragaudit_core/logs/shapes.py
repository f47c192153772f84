"""What a container holds: the records of a decoded container (:func:`unwrap`), and the records of a
container too long for the per-value limit, handed over member by member as the document is
streamed (:class:`Streamed`).

* :func:`unwrap` — the records a decoded container holds: a JSON array (an empty one included); a
  Langfuse trace export ``{"trace": {...}, "observations": [...]}`` (each observation gets the
  trace's id when it has none); a LangSmith batch ``{"post": [...], "patch": [...]}`` (a patch
  completes the run posted with its id) and run trees (``child_runs``, flattened; children get the
  root's trace id and their parent's id); an OTLP JSON trace export ``{"resourceSpans": [...]}``
  (its spans read as OpenInference spans: :mod:`ragaudit_core.logs.formats.otlp`);
  ``{"data": [...]}``, ``{"results": [...]}``, DeepEval's ``{"testCases": [...]}`` and
  ``{"goldens": [...]}``, and ``mlflow traces search --output json``'s ``{"traces": [...],
  "next_page_token": …}`` (each trace a container of its spans), and a row of
  ``mlflow.search_traces()``' DataFrame (:func:`~ragaudit_core.logs.formats.mlflow.search_traces_spans`).
  A record (a native record, a provenance record, a span …) is not a container.
* :class:`Streamed` — the same records for a top-level object longer than ``--max-line-bytes``
  (:func:`documents.iter_values` reads it member by member): the elements of its record arrays
  come one by one, each under the per-value limit, and what the shape needs of them is done in
  bounded memory — a Langfuse observation without a ``traceId`` gets the trace's id (observations
  before the ``trace`` member wait for it, up to the per-value limit in bytes, else the file is
  refused in one sentence); LangSmith runs wait in an anonymous temporary file, only their ids and
  places in memory, so that the patches (read after the posts, as :func:`unwrap` reads them)
  complete them; an OTLP export's ``resourceSpans`` come one resource at a time (each read as an
  export of its own: a resource past the limit is rejected with the reason). The first record
  array of the object decides what it holds; an object that shows a record's keys first (an
  evidence key, ``nodes``, a provenance ``schema``) or is a run tree is not a container, and stays
  one value past the limit.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from typing import Any

from ragaudit_core.logs import formats
from ragaudit_core.logs.formats import mlflow, native, otlp
from ragaudit_core.logs.formats.base import FormatError
from ragaudit_core.logs.formats.settings import read_observation_settings
from ragaudit_core.logs.formats.spans import json_maybe, text_of
from ragaudit_core.logs.jsonl import OTLP_ADVICE, FileRefused, Line, TemporaryFileError, value_too_long

__all__ = [
    "EMPTY",
    "IDS_ONLY",
    "KEPT",
    "LANGFUSE_TRACE",
    "RECORD_KEYS",
    "RECORD_OF",
    "SAID_EMPTY",
    "TRACE_SETTINGS",
    "Streamed",
    "empty_words",
    "langfuse_trace",
    "langfuse_trace_settings",
    "unwrap",
]

RECORD_OF = "a record of "
"""``Line.note`` of a record streamed out of a container too long for the limit (+ what it is)."""
EMPTY = "an empty container: "
"""``Line.note`` of the line standing for such a container that held no record (+ what it is)."""
IDS_ONLY = (
    "a Langfuse trace whose observations are ids, not observations (as the trace list gives them): "
    "export each trace by its id (GET /api/public/traces/{traceId}) or its observations "
    "(GET /api/public/observations?traceId=…)"
)
"""Why a Langfuse trace whose ``observations`` are all strings is rejected (once, not per id)."""
TRACE_SETTINGS = "the run settings or output of a Langfuse trace"
"""``Line.note`` of a line holding a streamed Langfuse trace export's ``trace`` member whose
metadata names run settings or that has an output (:func:`langfuse_trace`): no record, read for its trace."""
LANGFUSE_TRACE = "a Langfuse trace"
"""What :func:`unwrap` calls a Langfuse trace export."""
MLFLOW_TRACE = "an MLflow trace"
"""What :func:`unwrap` calls an MLflow trace (``{"info", "data": {"spans"}}``)."""
SAID_EMPTY = frozenset({mlflow.SEARCH_TRACES_ROW, MLFLOW_TRACE})
"""Containers whose emptiness means the export left their records out (rows of
``mlflow.search_traces(include_spans=False)``, a trace of ``mlflow traces search`` without its
spans): skipped with a warning even beside records, where
an empty array or page says nothing (nothing of it is lost)."""
RECORD_KEYS = ("observations", "post", "patch", "data", "results", "testCases", "goldens", "traces", "resourceSpans")
"""Members of a top-level object whose array elements are records."""
KEPT = ("trace", "schema")
"""Other members a container past the limit is read for (each under the per-value limit)."""
_KEYS_OF = {
    "observations": ("observations",),
    "runs": ("post", "patch"),
    "data": ("data",),
    "results": ("results",),
    "testCases": ("testCases",),
    "goldens": ("goldens",),
    "traces": ("traces",),
    "resourceSpans": ("resourceSpans",),
}
_WHAT = {
    "observations": LANGFUSE_TRACE,
    "runs": "a LangSmith batch",
    "data": "a JSON object holding 'data'",
    "results": "a JSON object holding 'results'",
    "testCases": "a DeepEval test run",
    "goldens": "a DeepEval dataset",
    "traces": "an MLflow trace search",
    "resourceSpans": "an OTLP trace export",
}
_LISTS = ("data", "results", "testCases", "goldens", "traces")
"""Members that are a list of records and nothing else (a DeepEval test run's ``testCases``, a
pulled DeepEval dataset's ``goldens``, the traces ``mlflow traces search --output json`` prints —
each an MLflow trace document, itself a container of its spans)."""
_SEARCH_KEYS = frozenset({"traces", "next_page_token"})
"""All an MLflow trace search holds: a ``traces`` list beside other keys is a record's (a LangSmith
run's, say), not a container."""
_MARKS = frozenset(
    {*native._STRONG, *native._IDS, "contexts", "nodes", "schema", "child_runs", "run_type", "id", "resourceSpans"}
)


def empty_words(what: str) -> str:
    """``what`` (as :func:`unwrap` words a container) said of one that holds no record."""
    return {
        "a JSON array": "an empty JSON array",
        "a Langfuse trace": "a Langfuse trace with no observations",
        "a LangSmith batch": "a LangSmith batch with no runs",
        "an OTLP trace export": "an OTLP trace export with no spans",
        "a DeepEval test run": "a DeepEval test run with no test cases",
        MLFLOW_TRACE: "an MLflow trace with no spans: search with its spans, without --extract-fields",
        mlflow.SEARCH_TRACES_ROW: "mlflow.search_traces() rows without their spans: search with include_spans=True",
        "a DeepEval dataset": "a DeepEval dataset with no goldens",
        "an MLflow trace search": "an MLflow trace search that found no traces",
    }.get(what, what.replace(" holding ", " with an empty "))


def _merge_runs(post: list, patch: list) -> list[dict]:
    """LangSmith runs: each posted run completed by the patches with its id (fields not None)."""
    runs: dict[Any, dict] = {}
    order: list[dict] = []
    for r in [*post, *patch]:
        if not isinstance(r, dict):
            order.append(r)
            continue
        key = r.get("id")
        if isinstance(key, (str, int)) and key in runs:
            runs[key].update({k: v for k, v in r.items() if v is not None})
            continue
        run = dict(r)
        if isinstance(key, (str, int)):
            runs[key] = run
        order.append(run)
    return order


def _flatten_runs(roots: list) -> list:
    """Run trees (``child_runs``) as a flat list, parents before children (iterative)."""
    out: list = []
    stack: list[tuple[Any, Any, Any]] = [(r, None, None) for r in reversed(roots)]
    while stack:
        run, parent, trace = stack.pop()
        if not isinstance(run, dict):
            out.append(run)
            continue
        children = run.get("child_runs")
        flat = {k: v for k, v in run.items() if k != "child_runs"}
        if parent is not None and not flat.get("parent_run_id"):
            flat["parent_run_id"] = parent
        if trace is not None and not flat.get("trace_id"):
            flat["trace_id"] = trace
        elif trace is None and not flat.get("trace_id") and isinstance(children, list):
            flat["trace_id"] = flat.get("id")  # a root run is its tree's trace
        out.append(flat)
        if isinstance(children, list):
            tid = flat.get("trace_id") or flat.get("id")
            tid = tid if isinstance(tid, (str, int)) else None
            pid = flat.get("id") if isinstance(flat.get("id"), (str, int)) else None
            stack.extend((c, pid, tid) for c in reversed(children))
    return out


def unwrap(obj: Any) -> tuple[str, list] | None:
    """(what the container is, the records it holds) for a container; None for a record."""
    if isinstance(obj, list):  # an array holding records (one of scalars is no container: rejected whole)
        holds = not obj or any(isinstance(x, dict) for x in obj) or all(isinstance(x, list) for x in obj)
        return ("a JSON array", obj) if holds else None
    if not isinstance(obj, dict) or native.detect(obj) or native.is_provenance(obj):
        return None
    obs = obj.get("observations")
    if isinstance(obs, list):
        trace = obj.get("trace")
        tid = trace.get("id") if isinstance(trace, dict) else None
        if isinstance(tid, (str, int)):
            obs = [{**o, "traceId": tid} if isinstance(o, dict) and "traceId" not in o else o for o in obs]
        return (LANGFUSE_TRACE, obs)
    if isinstance(obj.get("post"), list) or isinstance(obj.get("patch"), list):
        post, patch = obj.get("post"), obj.get("patch")
        post = post if isinstance(post, list) else []
        patch = patch if isinstance(patch, list) else []
        return ("a LangSmith batch", _flatten_runs(_merge_runs(post, patch)))
    if isinstance(obj.get("child_runs"), list) and ("run_type" in obj or "id" in obj):
        return ("a LangSmith run tree", _flatten_runs([obj]))
    if otlp.is_export(obj):  # its spans read as OpenInference spans (:mod:`.formats.otlp`)
        return ("an OTLP trace export", otlp.spans(obj))
    if isinstance(obj.get("data"), dict) and isinstance(obj["data"].get("spans"), list):
        return (MLFLOW_TRACE, obj["data"]["spans"])  # ``mlflow traces get``, ``Trace.to_json``
    info = obj.get("info")
    if isinstance(info, dict) and set(obj) <= {"info", "data"} and ("trace_id" in info or "request_id" in info):
        return (MLFLOW_TRACE, [])  # its info alone (``mlflow traces search --extract-fields info.…``): no spans
    try:  # (a record another format reads by its own keys is that format's; the spans' nested keys do not count)
        own = {k: v for k, v in obj.items() if k not in ("spans", "trace")} if mlflow.is_row(obj) else None
        spans = mlflow.search_traces_spans(obj) if own is not None and formats.detect(own) is native.FORMAT else None
    except FormatError:
        spans = None  # (rejected with its reason as a record: ``mlflow.read_span``)
    if spans is not None:
        return (mlflow.SEARCH_TRACES_ROW, spans)
    if isinstance(obj.get("testCases"), list) and isinstance(obj.get("hyperparameters"), dict):
        return (_WHAT["testCases"], [_with_hyperparameters(tc, obj["hyperparameters"]) for tc in obj["testCases"]])
    for key in _LISTS:
        if isinstance(obj.get(key), list) and (key != "traces" or set(obj) <= _SEARCH_KEYS):
            return (_WHAT[key], obj[key])
    return _column_table(obj)


def _with_hyperparameters(case: Any, hyper: dict) -> Any:
    """A DeepEval test case with its test run's ``hyperparameters`` (where ``evaluate(hyperparameters=…)``
    keeps a run's settings: top-k, chunk size, embedder) under its own ``additional_metadata``, whose
    keys win; a test case whose metadata is not an object is left as it is."""
    if not isinstance(case, dict):
        return case
    key = next((k for k in ("additional_metadata", "additionalMetadata") if case.get(k) is not None), None)
    own = json_maybe(case[key]) if key else {}
    if not isinstance(own, dict):
        return case
    return {**case, (key or "additional_metadata"): {**hyper, **own}}


def langfuse_trace_settings(obj: Any) -> tuple[str, dict[str, Any]] | None:
    """(trace id, run settings) of a Langfuse trace export — the trace is its ``trace`` member, or
    the object itself where it has none (``GET /api/public/traces/{id}`` gives the trace with its
    observations) — when its ``metadata`` names settings (:mod:`.formats.settings`); else None."""
    got = langfuse_trace(obj)
    return None if got is None or got[1] is None else (got[0], got[1])


def langfuse_trace(obj: Any) -> tuple[str, dict[str, Any] | None, str | None] | None:
    """(trace id, the run settings its ``metadata`` names, its ``output`` as a text) of a Langfuse
    trace export's trace (as :func:`langfuse_trace_settings` finds it), when it has either; else None."""
    if not isinstance(obj, dict):
        return None
    trace = obj["trace"] if isinstance(obj.get("trace"), dict) else obj
    tid = trace.get("id")
    if not isinstance(tid, (str, int)) or isinstance(tid, bool) or tid == "":
        return None
    found = read_observation_settings(trace["metadata"]) if "metadata" in trace else None
    output = text_of(json_maybe(trace.get("output")))
    return None if found is None and output is None else (str(tid), found, output)


def _column_table(obj: dict) -> tuple[str, list] | None:
    """A table written column by column — pandas' ``DataFrame.to_json()`` default (``{column:
    {index: value}}``, every column with the same index) or ``to_dict("list")`` and a Hugging Face
    ``Dataset.to_dict()`` (``{column: [values]}``, every list as long) — as its rows, when its
    first row is a record some format reads; None otherwise (a record whose values are lists)."""
    cols = list(obj.values())
    if len(cols) < 2:
        return None
    if all(isinstance(c, dict) for c in cols):
        index: list = list(cols[0])
        if not index or any(list(c) != index for c in cols[1:]):
            return None
        rows = [{k: c[i] for k, c in obj.items()} for i in index]
    elif all(isinstance(c, list) for c in cols):
        n = len(cols[0])
        if not n or any(len(c) != n for c in cols[1:]):
            return None
        rows = [{k: c[i] for k, c in obj.items()} for i in range(n)]
    else:
        return None
    first = rows[0]
    if formats.detect(first).kind == "native":
        return None
    return ("a table written column by column (pandas' to_json default, or a dict of lists)", rows)


# --------------------------------------------------------------------------- a container past the limit


def _loads(data: bytes) -> Any:
    """A streamed record decoded exactly (integers beyond 64 bits, NaN kept); None when it is not
    JSON (the record is then handed over as it is, and rejected with its reason)."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _dumps(obj: Any) -> bytes | None:
    try:
        return json.dumps(obj, allow_nan=True).encode("ascii")  # (ASCII: a lone surrogate stays escaped)
    except (ValueError, RecursionError, TypeError):
        return None


class Streamed:
    """The records of one top-level object too long for the limit, as its members are read (see
    the module's docstring). :meth:`streams` says whether a member's array is streamed; its
    elements go through :meth:`element`, the other members it needs through :meth:`member`, and
    :meth:`end` gives what waited. Each record comes out as a line noted :data:`RECORD_OF` + what
    the container is, numbered by position when the container opens the file (as a whole-file
    container is), else by the container's line."""

    def __init__(self, line_no: int, by_position: bool, max_bytes: int) -> None:
        self.line_no, self.by_position, self.max_bytes = line_no, by_position, max_bytes
        self.kind: str | None = None
        self.marks: dict[str, Any] = {}  # a record's keys seen before the first record array
        self.other_keys = False  # a key seen before it that an MLflow trace search does not hold
        self.n = 0  # records handed over
        self.trace_id: Any = None
        self.trace_seen = False
        self.trace_long = False  # the 'trace' member was past the limit
        self.waiting: list[Line] = []  # observations waiting for the trace
        self.waiting_bytes = 0
        self.runs: _Runs | None = None
        self.tag: str | None = None  # the note on each record

    # ------------------------------------------------------------------ what the object is

    def note(self, key: str, first: bytes) -> None:
        """A member seen before the first record array: its key, the first byte of its value."""
        if key in _MARKS and key != "schema":
            self.marks[key] = first
        if key not in _SEARCH_KEYS:
            self.other_keys = True

    def is_record(self) -> bool:
        m = self.marks
        return (
            any(k in m for k in native._STRONG)
            or ("contexts" in m and any(k in m for k in native._IDS))
            or m.get("nodes") == b"["
            or str(m.get("schema", "")).startswith("ragaudit.provenance/")
        )

    def run_tree(self) -> bool:
        return self.marks.get("child_runs") == b"[" and ("run_type" in self.marks or "id" in self.marks)

    def streams(self, key: str | None) -> bool:
        """Whether the array of member ``key`` is streamed record by record (the first record array
        of an object that is not a record decides which arrays are)."""
        if key not in RECORD_KEYS:
            return False
        if self.kind is None and key == "traces" and self.other_keys:
            return False  # (a record with a 'traces' list: not an MLflow trace search)
        if self.kind is None:
            if self.is_record() or (key in _LISTS and self.run_tree()):
                return False
            self.kind = {"post": "runs", "patch": "runs"}.get(key, key)
            if self.kind == "runs":
                self.runs = _Runs()
        return key in _KEYS_OF[self.kind]

    def what(self) -> str:
        return _WHAT[self.kind] if self.kind is not None else "a JSON value"

    def too_long(self) -> str:
        """Why the object, read to its end without a record array streamed, is rejected."""
        if self.run_tree():
            return (
                f"a LangSmith run tree longer than the {self.max_bytes:,}-byte limit is read whole; "
                "raise --max-line-bytes"
            )
        if self.marks.get("resourceSpans") == b"[":  # (not split into records: its spans are one export's)
            return f"an OTLP trace export longer than the {self.max_bytes:,}-byte limit is read whole; {OTLP_ADVICE}"
        return f"{value_too_long(self.max_bytes)}; split the record or raise --max-line-bytes"

    # ------------------------------------------------------------------ records

    def _out(self, ln: Line) -> Line:
        self.n += 1
        if self.tag is None:
            self.tag = RECORD_OF + self.what()
        return Line(self.n if self.by_position else self.line_no, ln.data, ln.error, self.tag)

    def member(self, key: str | None, data: bytes | None) -> Iterator[Line]:
        """A member the object is read for (:data:`KEPT`; ``data`` None: longer than the limit)."""
        if key == "schema" and self.kind is None:
            self.marks["schema"] = _loads(data) if data is not None else None
        if key != "trace" or self.kind not in (None, "observations") or self.trace_seen:
            return
        self.trace_seen = True
        if data is None:  # (said at the end, when the object turned out to be a Langfuse trace)
            self.trace_long = True
            return
        trace = _loads(data)
        tid = trace.get("id") if isinstance(trace, dict) else None
        self.trace_id = tid if isinstance(tid, (str, int)) else None
        if langfuse_trace({"trace": trace}) is not None:
            yield Line(self.line_no, data, note=TRACE_SETTINGS)
        waiting, self.waiting, self.waiting_bytes = self.waiting, [], 0
        for ln in waiting:
            yield self._out(self._with_trace(ln))

    def element(self, key: str, ln: Line) -> Iterator[Line]:
        """One element of a streamed array (an error line when it is past a limit)."""
        if self.kind == "runs":
            assert self.runs is not None
            self.runs.add(ln, later=key == "patch")
            return
        if self.kind == "resourceSpans":  # one resource's spans: an export of its own (never split further)
            if ln.error is None:
                ln = Line(ln.line_no, b'{"resourceSpans":[' + ln.data + b"]}", None, ln.note)
            elif ln.error.startswith(value_too_long(self.max_bytes)):
                why = f"an OTLP resource (one service's spans) longer than the {self.max_bytes:,}-byte limit"
                ln = Line(ln.line_no, ln.data, f"{why} is read whole; {OTLP_ADVICE}", ln.note)
        if self.kind != "observations":
            yield self._out(ln)
            return
        if self.trace_seen:
            yield self._out(self._with_trace(ln))
        elif self.waiting or (ln.error is None and _lacks_trace_id(ln.data)):
            self.waiting.append(ln)  # (in file order: once one waits, the ones after it wait too)
            self.waiting_bytes += len(ln.data)
            if self.waiting_bytes > self.max_bytes:
                raise FileRefused(
                    f"a Langfuse trace export longer than the {self.max_bytes:,}-byte limit lists more than "
                    f"{self.max_bytes:,} bytes of observations before its trace, some without a traceId; "
                    "raise --max-line-bytes to read it whole"
                )
        else:
            yield self._out(ln)

    def _with_trace(self, ln: Line) -> Line:
        if self.trace_id is None or ln.error is not None or not _lacks_trace_id(ln.data):
            return ln
        tid = json.dumps(self.trace_id).encode()
        rest = ln.data[1:]
        sep = b"" if rest.lstrip().startswith(b"}") else b","
        return Line(ln.line_no, b'{"traceId":' + tid + sep + rest)

    def end(self) -> Iterator[Line]:
        """The object has ended: what waited, and a line standing for a container with no record."""
        if self.trace_long and self.kind == "observations":
            yield Line(
                self.line_no,
                b"",
                error=f"the Langfuse trace's 'trace' member is longer than the {self.max_bytes:,}-byte limit, so "
                "its observations without a traceId have none; raise --max-line-bytes",
            )
        for ln in self.waiting:
            yield self._out(ln)
        self.waiting = []
        if self.runs is not None:
            for ln in self.runs.merged():
                yield self._out(ln)
        if self.n == 0:
            yield Line(self.line_no, b"", note=EMPTY + self.what())


def _lacks_trace_id(data: bytes) -> bool:
    """Whether a streamed observation is an object without a ``traceId`` of its own."""
    if not data.startswith(b"{"):
        return False
    if b'"traceId"' not in data:
        return True
    obj = _loads(data)
    return isinstance(obj, dict) and "traceId" not in obj


class _Runs:
    """LangSmith runs of a streamed batch, waiting in an anonymous temporary file until the object
    ends: posts as they come, each patch then completing the run posted with its id (as
    :func:`_merge_runs`); in memory only each run's place and the ids."""

    def __init__(self) -> None:
        self.file: Any = None
        self.places: list[tuple[int, int, int, str | None]] = []  # (offset, length, line, error)
        self.by_id: dict[Any, int] = {}
        self.patches: list[tuple[int, int, int]] = []

    def _write(self, data: bytes) -> tuple[int, int]:
        try:
            if self.file is None:
                self.file = tempfile.TemporaryFile(prefix="ragaudit-batch-")  # noqa: SIM115 - closed by merged()
            offset = self.file.seek(0, 2)
            self.file.write(data)
        except OSError as e:
            raise TemporaryFileError(_no_room(e)) from e
        return offset, len(data)

    def _read(self, offset: int, length: int) -> bytes:
        try:
            self.file.seek(offset)
            return bytes(self.file.read(length))
        except OSError as e:
            raise TemporaryFileError(_no_room(e)) from e

    def add(self, ln: Line, later: bool) -> None:
        if ln.error is not None:
            self.places.append((0, 0, ln.line_no, ln.error))
        elif later:
            self.patches.append((*self._write(ln.data), ln.line_no))
        else:
            self._run(ln.data, ln.line_no)

    def _run(self, data: bytes, line_no: int) -> None:
        obj = _loads(data) if data.startswith(b"{") else None
        key = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(key, (str, int)) and key in self.by_id:
            i = self.by_id[key]
            offset, length, line, _ = self.places[i]
            run = _loads(self._read(offset, length))
            assert isinstance(run, dict)  # (it was read as one when it was placed)
            run.update({k: v for k, v in obj.items() if v is not None})  # type: ignore[union-attr]
            merged = _dumps(run)
            if merged is not None:
                self.places[i] = (*self._write(merged), line, None)
            return
        if isinstance(key, (str, int)):
            self.by_id[key] = len(self.places)
        self.places.append((*self._write(data), line_no, None))

    def merged(self) -> Iterator[Line]:
        """The runs in order, completed, run trees flattened; the temporary file then closed."""
        for offset, length, line_no in self.patches:
            self._run(self._read(offset, length), line_no)
        self.patches = []
        for offset, length, line_no, error in self.places:
            if error is not None:
                yield Line(line_no, b"", error=error)
                continue
            data = self._read(offset, length)
            obj = _loads(data) if b'"child_runs"' in data else None
            if not isinstance(obj, dict):
                yield Line(line_no, data)
                continue
            for run in _flatten_runs([obj]):
                flat = _dumps(run)
                yield Line(line_no, flat) if flat is not None else Line(line_no, b"", error="the run cannot be written")
        if self.file is not None:
            self.file.close()
            self.file = None


def _no_room(e: OSError) -> str:
    return (
        f"its LangSmith runs could not wait in a temporary file under {tempfile.gettempdir()} ({e}); nothing of it "
        "was loaded: free space there, or set TMPDIR to a folder on a disk with room, and load it again"
    )

"""JSON documents of any shape, recognised by content: what a file holds and the records in it.

* :func:`sniff` — whether a file's first MiB reads as JSON Lines or as a JSON document
  (pretty-printed, one value over many lines, or several such values back to back, as
  OpenTelemetry's console exporter prints spans). A document when its first non-blank line is a
  lone ``[`` or ``{`` (never a JSON Lines record: an array written one element per line starts so),
  or when the head is the whole file and parses as one JSON value over several lines; else JSON
  Lines when at least one in ten of its first 200 non-blank lines is a JSON object or array on its
  own — a pretty-printed document has almost none, and JSON Lines with many broken lines stays
  JSON Lines, where a broken line costs only itself.
* :func:`iter_values` — a JSON document streamed value by value in bounded memory: each
  top-level value, and each element of a top-level array, comes out as one
  :class:`~ragaudit_core.logs.jsonl.Line` (``line_no``: the file line it starts on). A value
  longer than ``max_value_bytes`` or nested deeper than ``max_depth`` comes out as an error line
  (its bytes are never held or parsed: no MemoryError, no RecursionError); so does text between
  values that is not JSON, and a value the file ends inside.
* :func:`unwrap` — the records a decoded container holds: a JSON array (an empty one included); a Langfuse trace export
  ``{"trace": {...}, "observations": [...]}`` (each observation gets the trace's id when it has
  none); a LangSmith batch ``{"post": [...], "patch": [...]}`` (a patch completes the run posted
  with its id) and run trees (``child_runs``, flattened; children get the root's trace id and
  their parent's id); ``{"data": [...]}``, ``{"results": [...]}``. A record (a native record, a
  provenance record, a span …) is not a container.

The scanner looks only at ``"``, ``\\``, brackets and commas (found by a regular expression, so
Python runs once per structural byte, not per byte) and never validates: each value is then
decoded on its own, and a bad one costs only itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from ragaudit_core.logs.formats import native
from ragaudit_core.logs.jsonl import Line

__all__ = ["DEFAULT_MAX_DEPTH", "empty_words", "iter_values", "sniff", "unwrap"]

DEFAULT_MAX_DEPTH = 64
"""Nesting depth of a JSON value beyond which it is rejected unread (``--max-depth``)."""
_BLOCK = 1 << 16
_HEAD = 1 << 20  # the bytes of a file sniff reads
_OUT = re.compile(rb'["{}\[\],]')  # structural bytes outside strings
_IN = re.compile(rb'["\\]')  # inside a string: its end or an escape
_LEAD = re.compile(rb"[ \t\r\n]*")
_END = re.compile(rb"[}\]](?=[ \t\r\n]*[,\]])")  # a closing bracket an array element may end on
_FAST_TRIES = 32


def sniff(head: bytes) -> str:
    """``"lines"`` or ``"document"`` for a file's first bytes (see the module's docstring)."""
    body = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if body[:1] not in (b"{", b"["):
        return "lines"
    whole_file = len(head) < _HEAD
    lines = [ln.strip() for ln in body.splitlines()]
    if not whole_file and len(lines) > 1:
        lines = lines[:-1]  # the last line may be cut
    lines = [ln for ln in lines if ln][:200]
    if not lines or lines[0] in (b"[", b"{"):
        return "document"  # a lone bracket opens a document: it is never a JSON Lines record
    if whole_file and len(lines) > 1:
        try:
            orjson.loads(body)
            return "document"  # the whole file is one value spread over several lines
        except orjson.JSONDecodeError:
            pass
    whole = 0
    for ln in lines:
        try:
            whole += isinstance(orjson.loads(ln), (dict, list))
        except orjson.JSONDecodeError:
            pass
    return "lines" if whole and whole * 10 >= len(lines) else "document"


class _Scanner:
    """The state of :func:`iter_values` between blocks: the bytes kept (from absolute offset
    ``base``, on line ``base_line``), the nesting depth, and where the current value starts."""

    def __init__(self, max_value_bytes: int, max_depth: int) -> None:
        self.max_value, self.max_depth = max_value_bytes, max_depth
        self.buf = bytearray()
        self.base = 0
        self.base_line = 1
        self.depth = 0
        self.in_str = self.esc = False
        self.top_array = False
        self.start: int | None = None  # absolute offset where the current value (or element) starts
        self.start_line: int | None = None  # its line, once its bytes are no longer kept (too long)
        self.too_deep = False

    def line_at(self, off: int) -> int:
        return self.base_line + self.buf.count(b"\n", 0, max(0, off - self.base))

    def drop_to(self, off: int) -> None:
        """Forget the bytes before ``off`` (keeping line numbers right)."""
        cut = off - self.base
        if cut > 0:
            self.base_line += self.buf.count(b"\n", 0, cut)
            del self.buf[:cut]
            self.base = off

    def emit(self, end: int) -> Line | None:
        """The value from ``start`` to ``end`` as a line (or the reason it is not read)."""
        start, long_line, too_deep = self.start, self.start_line, self.too_deep
        self.start, self.start_line, self.too_deep = None, None, False
        assert start is not None
        raw = bytes(self.buf[start - self.base : end - self.base])
        stripped = raw.strip()
        line = self.line_at(start + len(raw) - len(raw.lstrip()))
        self.drop_to(end)
        if long_line is None and len(stripped) > self.max_value:
            long_line = line
        if long_line is not None:
            return Line(
                long_line,
                b"",
                error=f"JSON value is longer than the {self.max_value:,}-byte limit; "
                "split the record or raise --max-line-bytes",
            )
        if too_deep:
            return Line(
                line,
                stripped[:4096],
                error=f"JSON value is nested more than {self.max_depth} levels deep; "
                "raise --max-depth if it is a real record",
            )
        return Line(line, stripped) if stripped else None

    def check_size(self) -> Line | None:
        """After a block: a value grown past the limit is no longer kept (only its end is
        looked for); text outside values is dropped (reported when it is not blank)."""
        end = self.base + len(self.buf)
        if self.start is not None:
            if end - self.start > self.max_value:
                if self.start_line is None:
                    self.start_line = self.line_at(self.start)
                self.drop_to(end)
                self.start = end
            return None
        if self.depth == 0 and self.buf:
            junk = bytes(self.buf).strip()
            line = self.line_at(self.base)
            self.drop_to(end)
            if junk:
                return Line(line, junk[:4096], error="text between JSON values is not JSON")
        return None


def iter_values(f: Any, *, max_value_bytes: int, max_depth: int = DEFAULT_MAX_DEPTH) -> Iterator[Line]:
    """The values of an open binary JSON document (see the module's docstring)."""
    s = _Scanner(max_value_bytes, max_depth)
    first = True
    while True:
        block = f.read(_BLOCK)
        if not block:
            break
        if first and block.startswith(b"\xef\xbb\xbf"):
            block = block[3:]
            s.base = 3
        first = False
        at = s.base + len(s.buf)
        s.buf += block
        yield from _scan(s, at)
        junk = s.check_size()
        if junk is not None:
            yield junk
    if s.start is not None or s.depth > 0:
        line = s.start_line or s.line_at(s.start if s.start is not None else s.base)
        yield Line(line, bytes(s.buf[:4096]).strip(), error="the document ends inside a JSON value (truncated?)")


def _scan(s: _Scanner, at: int) -> Iterator[Line]:
    """Advance the scanner over its buffer from absolute offset ``at``."""
    buf = s.buf
    pos = at - s.base
    while True:
        if s.top_array and s.depth == 1 and s.start is not None and not s.in_str and s.start_line is None:
            fast = _fast_element(s, pos)
            if fast is not None:
                buf, pos = s.buf, 0
                yield fast
                continue
        if s.esc:  # an escape at the end of the previous block: skip the escaped byte
            s.esc = False
            pos += 1
            continue
        if s.in_str:
            m = _IN.search(buf, pos)
            if m is None:
                return
            pos = m.end()
            if m.group() == b"\\":
                if pos >= len(buf):
                    s.esc = True
                    return
                pos += 1
            else:
                s.in_str = False
            continue
        m = _OUT.search(buf, pos)
        if m is None:
            return
        c, absolute = m.group(), s.base + m.start()
        pos = m.end()
        if c == b'"':
            s.in_str = True
        elif c in (b"{", b"["):
            if s.depth == 0 and s.start is None:  # a top-level value starts
                junk = bytes(buf[: m.start()]).strip()
                if junk:
                    yield Line(s.line_at(s.base), junk[:4096], error="text between JSON values is not JSON")
                s.drop_to(absolute)
                pos = 1
                s.start = absolute + 1 if c == b"[" else absolute
                s.top_array = c == b"["
            s.depth += 1
            if s.depth > s.max_depth + s.top_array:
                s.too_deep = True
        elif c in (b"}", b"]"):
            s.depth = max(0, s.depth - 1)
            if s.depth == 0 and s.start is not None:
                line = s.emit(absolute if s.top_array else absolute + 1)
                if s.top_array:
                    s.top_array = False
                    s.drop_to(absolute + 1)
                pos = absolute + 1 - s.base
                if line is not None:
                    yield line
        elif s.top_array and s.depth == 1 and s.start is not None:  # a comma between elements
            line = s.emit(absolute)
            s.start = absolute + 1
            pos = 1
            if line is not None:
                yield line


def _fast_element(s: _Scanner, pos: int) -> Line | None:
    """The array element starting at ``pos`` when an object or array element ends at one of the
    next closing brackets followed by ``,`` or ``]`` and that prefix parses (then it is the
    element: a balanced prefix of a value that starts with a bracket is the whole value). Tried
    on at most ``_FAST_TRIES`` ends, and only when the element has no more brackets than the
    depth limit (so it cannot be nested deeper); otherwise None, and the token scanner reads it.
    Most elements of a large array are read this way: one regular-expression search and one
    parse in C instead of a Python step per structural byte."""
    buf = s.buf
    i = _LEAD.match(buf, pos).end()  # type: ignore[union-attr]  # matches the empty string
    if i >= len(buf) or buf[i] not in b"{[":
        return None
    last = _element_end(buf, i, s.max_value, s.max_depth)  # no match object outlives this: buf is resized below
    if last is None:
        return None
    piece = bytes(buf[i : last + 1])
    line = s.line_at(s.base + i)
    closer = _LEAD.match(buf, last + 1).end()  # type: ignore[union-attr]
    end = s.base + closer  # the absolute offset of the ',' or ']' after the element
    ends_array = buf[closer] != ord(",")
    s.drop_to(end + 1)
    if ends_array:  # the top-level array ends
        s.start, s.depth, s.top_array = None, 0, False
    else:
        s.start = end + 1
    return Line(line, piece)


def _element_end(buf: bytearray, i: int, max_value: int, max_depth: int) -> int | None:
    """The offset of the closing bracket that ends the element starting at ``i`` (see
    :func:`_fast_element`), or None."""
    for k, m in enumerate(_END.finditer(buf, i)):
        end = m.start()
        if k >= _FAST_TRIES or end + 1 - i > max_value:
            return None
        piece = bytes(buf[i : end + 1])
        try:
            orjson.loads(piece)
        except orjson.JSONDecodeError:
            continue
        return end if piece.count(b"{") + piece.count(b"[") <= max_depth else None
    return None


def empty_words(what: str) -> str:
    """``what`` (as :func:`unwrap` words a container) said of one that holds no record."""
    return {
        "a JSON array": "an empty JSON array",
        "a Langfuse trace": "a Langfuse trace with no observations",
        "a LangSmith batch": "a LangSmith batch with no runs",
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
        return ("a Langfuse trace", obs)
    if isinstance(obj.get("post"), list) or isinstance(obj.get("patch"), list):
        post, patch = obj.get("post"), obj.get("patch")
        post = post if isinstance(post, list) else []
        patch = patch if isinstance(patch, list) else []
        return ("a LangSmith batch", _flatten_runs(_merge_runs(post, patch)))
    if isinstance(obj.get("child_runs"), list) and ("run_type" in obj or "id" in obj):
        return ("a LangSmith run tree", _flatten_runs([obj]))
    for key in ("data", "results"):
        if isinstance(obj.get(key), list):
            return (f"a JSON object holding {key!r}", obj[key])
    return None

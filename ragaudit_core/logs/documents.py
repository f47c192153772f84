"""JSON documents of any shape, recognised by content: what a file holds and the records in it.

* :func:`sniff` — whether a file's first MiB reads as JSON Lines or as a JSON document
  (pretty-printed, one value over many lines, or several such values back to back, as
  OpenTelemetry's console exporter prints spans). A document when its first non-blank line is a
  lone ``[`` or ``{`` (never a JSON Lines record: an array written one element per line starts so),
  or when the head is the whole file and parses as one JSON value over several lines; else JSON
  Lines when at least one in ten of its first 200 non-blank lines is a JSON object or array on its
  own — a pretty-printed document has almost none, and JSON Lines with many broken lines stays
  JSON Lines, where a broken line costs only itself. (A first line longer than the MiB is judged
  whole by :mod:`.containers`, which reads on to its end.)
* :func:`iter_values` — a JSON document streamed value by value in bounded memory: each
  top-level value, and each element of a top-level array, comes out as one
  :class:`~ragaudit_core.logs.jsonl.Line` (``line_no``: the file line it starts on). A value
  longer than ``max_value_bytes`` or nested deeper than ``max_depth`` comes out as an error line
  (its bytes are never held or parsed: no MemoryError, no RecursionError); so does text between
  values that is not JSON, and a value the file ends inside. A top-level object longer than
  ``max_value_bytes`` is read again member by member: when it is a container (a Langfuse trace
  export, a LangSmith batch, ``{"data": [...]}``, ``{"results": [...]}``) the elements of its
  record arrays come out one by one, each under the limits, as :class:`~ragaudit_core.logs.shapes.Streamed`
  says (the limit applies per record, as it does to a top-level array's elements).
* :func:`unwrap` (:mod:`~ragaudit_core.logs.shapes`) — the records a decoded container holds.

The scanner looks only at ``"``, ``\\``, brackets and commas (found by a regular expression, so
Python runs once per structural byte, not per byte) and never validates: each value is then
decoded on its own, and a bad one costs only itself.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from typing import Any

import orjson

from ragaudit_core.logs.jsonl import Line, too_long_advice, value_too_long
from ragaudit_core.logs.shapes import KEPT, Streamed, unwrap

__all__ = ["DEFAULT_MAX_DEPTH", "iter_values", "sniff", "unwrap"]

DEFAULT_MAX_DEPTH = 64
"""Nesting depth of a JSON value beyond which it is rejected unread (``--max-depth``)."""
_BLOCK = 1 << 16
_HEAD = 1 << 20  # the bytes of a file sniff reads
_OUT = re.compile(rb'["{}\[\],]')  # structural bytes outside strings
_OUT_M = re.compile(rb'["{}\[\],:]')  # … and the colon, at the member level of an object read member by member
_IN = re.compile(rb'["\\]')  # inside a string: its end or an escape
_LEAD = re.compile(rb"[ \t\r\n]*")
_END = re.compile(rb"[}\]](?=[ \t\r\n]*[,\]])")  # a closing bracket an array element may end on
_FAST_TRIES = 32
_SLACK = 256  # whitespace a value past the limit may end in, kept until it ends
_KEY_BYTES = 64  # a member's key kept while it is read (longer ones name no member a container is read for)


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
        self.long_head = b""  # that value's first bytes (a container is not "split" as a record is)
        self.too_deep = False
        self.obj: _Members | None = None  # a top-level object past the limit, read member by member
        self.given = False  # a line came out already

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
            long_line, self.long_head = line, stripped[:256]
        if long_line is not None:
            advice = too_long_advice(self.long_head)
            return Line(long_line, b"", error=f"{value_too_long(self.max_value)}; {advice}")
        if too_deep:
            return Line(
                line,
                stripped[:4096],
                error=f"JSON value is nested more than {self.max_depth} levels deep; "
                "raise --max-depth if it is a real record",
            )
        return Line(line, stripped) if stripped else None

    def too_long(self, start: int) -> None:
        """The value (or element) from ``start`` has grown past the limit: its bytes are no longer
        kept, only its end is looked for."""
        if self.start_line is None:
            self.start_line = self.line_at(start)
            self.long_head = bytes(self.buf[start - self.base : start - self.base + 256])
        self.drop_to(self.base + len(self.buf))
        self.start = self.base

    def check_value(self, end: int) -> None:
        """After a block, the value (or element) being read from ``start``: its leading whitespace
        is not part of it, and past the limit (give or take the whitespace that may end it) its
        bytes are no longer kept."""
        start = self.start
        assert start is not None
        if end - start <= self.max_value:
            return
        if self.start_line is None:
            first = self.base + _LEAD.match(self.buf, start - self.base).end()  # type: ignore[union-attr]
            if first > start:
                self.start = start = first
                self.drop_to(first)
            if end - start <= self.max_value + _SLACK:
                return  # (the value may end in whitespace: whether it is past the limit is known when it ends)
        self.too_long(start)

    def past_limit_object(self) -> bool:
        """Whether the top-level value being read is an object already longer than the limit."""
        return (
            self.start is not None
            and not self.top_array
            and self.start_line is None
            and self.base + len(self.buf) - self.start > self.max_value
        )

    def check_size(self) -> Line | None:
        """After a block: a value grown past the limit is no longer kept (only its end is
        looked for); text outside values is dropped (reported when it is not blank)."""
        end = self.base + len(self.buf)
        if self.obj is not None:
            self.obj.check_size(self, end)
            return None
        if self.start is not None:
            self.check_value(end)
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
        for ln in _advance(s, at):
            s.given = True
            yield ln
        junk = s.check_size()
        if junk is not None:
            yield junk
    if s.start is not None or s.depth > 0:
        line = s.start_line or s.line_at(s.start if s.start is not None else s.base)
        yield Line(line, bytes(s.buf[:4096]).strip(), error="the document ends inside a JSON value (truncated?)")
        if s.obj is not None and s.obj.shape.kind is not None:
            yield from s.obj.shape.end()  # the records read before it


def _advance(s: _Scanner, at: int) -> Iterator[Line]:
    """Advance the scanner over its buffer from absolute offset ``at``: value by value, and a
    top-level object past the limit again from its start, member by member."""
    while True:
        if s.obj is not None:
            after = yield from _members(s, at)
            if after is None:
                return
            at = after
        yield from _scan(s, at)
        if not s.past_limit_object():
            return
        assert s.start is not None
        at = s.start
        line = s.line_at(at)
        s.obj = _Members(Streamed(line, line == 1 and not s.given, s.max_value))
        s.start, s.depth, s.in_str, s.esc, s.too_deep = None, 0, False, False, False


def _scan(s: _Scanner, at: int) -> Iterator[Line]:
    """Advance the scanner over its buffer from absolute offset ``at``."""
    buf = s.buf
    pos = at - s.base
    while True:
        if s.top_array and s.depth == 1 and s.start is not None and not s.in_str and s.start_line is None:
            fast = _fast_element(s, pos)
            if fast is not None:
                if fast[1]:  # the top-level array ends
                    s.depth, s.top_array = 0, False
                buf, pos = s.buf, 0
                yield fast[0]
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
                if not s.top_array and s.start_line is None and absolute + 1 - s.start > s.max_value:
                    return  # an object past the limit: read again member by member (_advance)
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


def _fast_element(s: _Scanner, pos: int) -> tuple[Line, bool] | None:
    """(the array element starting at ``pos``, whether the array ends after it) when an object or
    array element ends at one of the next closing brackets followed by ``,`` or ``]`` and that
    prefix parses (then it is the element: a balanced prefix of a value that starts with a bracket
    is the whole value). Tried on at most ``_FAST_TRIES`` ends, and only when the element has no
    more brackets than the depth limit (so it cannot be nested deeper); otherwise None, and the
    token scanner reads it. Most elements of a large array are read this way: one
    regular-expression search and one parse in C instead of a Python step per structural byte."""
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
    s.start = None if ends_array else end + 1
    return Line(line, piece), ends_array


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


# --------------------------------------------------------------------------- an object past the limit

_KEY, _IN_KEY, _COLON, _VALUE, _AFTER = range(5)  # where the member level of the object stands


class _Members:
    """A top-level object past the limit, read member by member (:func:`_members`): the member
    being read (its key, where its value starts when it is kept), and the record array being
    streamed (its elements are the scanner's values, at depth 2)."""

    def __init__(self, shape: Streamed) -> None:
        self.shape = shape
        self.expect = _KEY
        self.key: str | None = None
        self.kstart: int | None = None  # the opening quote of the key being read
        self.vstart: int | None = None  # where the value of a kept member starts
        self.vlong = False
        self.first = b""  # the first structural byte of the member's value (b"" for a number, true …)
        self.records: str | None = None  # the key of the record array being streamed

    def check_size(self, s: _Scanner, end: int) -> None:
        """After a block: keep only what is being read (an element, a kept member, a key), each
        up to the limit."""
        if s.start is not None:
            s.check_value(end)
            s.drop_to(s.start)
        elif self.vstart is not None:
            if end - self.vstart > s.max_value:
                self.vlong, self.vstart = True, end
                s.drop_to(end)
            else:
                s.drop_to(self.vstart)
        elif self.kstart is not None:
            if end - self.kstart > _KEY_BYTES:
                self.kstart = None  # a longer key names no member the object is read for
                s.drop_to(end)
            else:
                s.drop_to(self.kstart)
        else:
            s.drop_to(end)

    def end_key(self, s: _Scanner, end: int) -> None:
        key = None
        if self.kstart is not None:
            try:
                key = orjson.loads(bytes(s.buf[self.kstart - s.base : end - s.base]))
            except orjson.JSONDecodeError:
                pass
        self.key = key if isinstance(key, str) else None
        self.kstart, self.expect = None, _COLON

    def value_starts(self, s: _Scanner, at: int) -> None:
        """The ``:`` of a member at ``at``: its value follows."""
        self.expect, self.first, self.vlong = _VALUE, b"", False
        self.vstart = at + 1 if self.key in KEPT else None

    def finish(self, s: _Scanner, end: int) -> Iterator[Line]:
        """The member ends at ``end`` (a ``,`` or the object's ``}``)."""
        if self.key is not None and self.expect in (_VALUE, _AFTER):
            if self.shape.kind is None:
                self.shape.note(self.key, self.first)
            if self.key in KEPT and (self.vstart is not None or self.vlong):
                data = None if self.vlong else bytes(s.buf[self.vstart - s.base : end - s.base]).strip()  # type: ignore[operator]
                yield from self.shape.member(self.key, data if data is None or len(data) <= s.max_value else None)
        self.key, self.vstart, self.vlong, self.expect = None, None, False, _KEY


def _members(s: _Scanner, at: int) -> Generator[Line, None, int | None]:
    """Advance over the top-level object read member by member (``s.obj``) from absolute offset
    ``at``: the offset after its closing brace when it ends in the buffer, None when the buffer is
    spent first."""
    o = s.obj
    assert o is not None
    buf = s.buf
    pos = at - s.base
    while True:
        if o.records is not None and s.depth == 2 and s.start is not None and not s.in_str and s.start_line is None:
            fast = _fast_element(s, pos)
            if fast is not None:
                pos = 0
                key = o.records
                if fast[1]:  # the record array ends
                    s.depth, o.records, o.expect, o.first = 1, None, _AFTER, b"["
                yield from o.shape.element(key, fast[0])
                continue
        if s.esc:
            s.esc = False
            pos += 1
            continue
        if s.in_str:
            m = _IN.search(buf, pos)
            if m is None:
                return None
            pos = m.end()
            if m.group() == b"\\":
                if pos >= len(buf):
                    s.esc = True
                    return None
                pos += 1
            else:
                s.in_str = False
                if o.expect == _IN_KEY:
                    o.end_key(s, s.base + pos)
            continue
        m = (_OUT_M if s.depth <= 1 else _OUT).search(buf, pos)
        if m is None:
            return None
        c, absolute = m.group(), s.base + m.start()
        pos = m.end()
        if s.depth == 1:
            after = yield from _member_level(s, o, c, absolute)
            if after is not None:
                return after
            pos = absolute + 1 - s.base
        elif c == b'"':
            s.in_str = True
        elif c in (b"{", b"["):
            s.depth += 1
            if s.depth == 1:  # the object's own brace
                o.expect = _KEY
            elif o.records is not None and s.depth > s.max_depth + 2:
                s.too_deep = True
        elif c in (b"}", b"]"):
            s.depth -= 1
            if o.records is not None and s.depth == 1:  # the record array ends: its last element
                key, o.records, o.expect, o.first = o.records, None, _AFTER, b"["
                line = s.emit(absolute) if s.start is not None else None
                pos = absolute + 1 - s.base
                if line is not None:
                    yield from o.shape.element(key, line)
        elif c == b"," and o.records is not None and s.depth == 2:  # between elements
            line = s.emit(absolute)
            s.start = absolute + 1
            pos = absolute + 1 - s.base
            if line is not None:
                yield from o.shape.element(o.records, line)


def _member_level(s: _Scanner, o: _Members, c: bytes, absolute: int) -> Generator[Line, None, int | None]:
    """One structural byte at the object's member level; the offset after the object when it ends."""
    if c == b'"':
        s.in_str = True
        if o.expect == _KEY:
            o.kstart, o.expect = absolute, _IN_KEY
        elif o.expect == _VALUE:
            o.first, o.expect = c, _AFTER
    elif c == b":":
        if o.expect == _COLON:
            o.value_starts(s, absolute)
    elif c in (b"{", b"["):
        if o.expect == _VALUE:
            o.first, o.expect = c, _AFTER
            if c == b"[" and o.shape.streams(o.key):  # a record array: its elements are read one by one
                o.records, o.vstart = o.key, None
                s.start, s.depth, s.too_deep = absolute + 1, 2, False
                return None
        s.depth += 1
    elif c in (b"}", b"]"):  # the object ends
        yield from o.finish(s, absolute)
        s.depth, s.obj = 0, None
        if o.shape.kind is None:  # no record array in it: one value past the limit, as before
            yield Line(o.shape.line_no, b"", error=o.shape.too_long())
        else:
            yield from o.shape.end()
        s.drop_to(absolute + 1)
        return absolute + 1
    elif c == b",":
        yield from o.finish(s, absolute)
    return None

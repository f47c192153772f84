"""Counts in sentences, as a reader writes them: ``1 query``, ``2 queries`` (not ``1 queries`` or
``query(s)``), and names after their noun (``run 'a'``, ``runs 'a', 'b'``). Used wherever a count
meets a noun: the ingest's report, the CLI, the pages."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

__all__ = ["NOTE", "WARNING", "Kind", "Said", "bracket", "counted", "listed", "no_minus_zero", "one_line", "shell_word"]

Kind = Literal["note", "warning"]
NOTE: Kind = "note"
WARNING: Kind = "warning"


@dataclass(frozen=True)
class Said:
    """A sentence and its kind, decided where it is worded: a *warning* asks the reader to look into
    something (records that did not pair, a guess refused, data left out); a *note* says what was done
    as asked or as documented (ids taken from a questions file, labels loaded). The command line
    starts each with its kind (``warning:``, ``note:``); the home page shows a note as information."""

    text: str
    kind: Kind = WARNING


_PLURALS = {
    "query": "queries",
    "shared query": "shared queries",
    "collapsed query": "collapsed queries",
    "least stable query": "least stable queries",
    "entry": "entries",
    "evidence entry": "evidence entries",
    "run pair": "run pairs",
}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` as a reader writes them: ``1 query``, ``1,204 queries``, ``0 runs``
    (thousands separated; the plural is ``plural``, else a known irregular one, else ``noun + "s"``)."""
    many = plural or _PLURALS.get(noun, noun + "s")
    return f"{n:,} {noun if n == 1 else many}"


def listed(noun: str, names: list[str], plural: str | None = None) -> str:
    """``noun`` and ``names`` (already quoted as the caller wants) as a reader writes them:
    ``run 'a'``, ``runs 'a', 'b'`` (the plural as in :func:`counted`)."""
    many = plural or _PLURALS.get(noun, noun + "s")
    return f"{noun if len(names) == 1 else many} {', '.join(names)}"


def bracket(lo: float | None, hi: float | None, spec: str = ".3f") -> str:
    """An interval as ``[lo, hi]`` (each bound formatted by ``spec``: ``"+.3f"`` for changes), or
    ``""`` where there is none — a bound that is None or NaN (no resamples, a single query) is never
    written as ``[nan, nan]``."""
    if lo is None or hi is None or lo != lo or hi != hi:
        return ""
    return f"[{no_minus_zero(lo, spec)}, {no_minus_zero(hi, spec)}]"


def no_minus_zero(x: float, spec: str = ".3f") -> str:
    """``x`` formatted by ``spec``, a value that rounds to zero written without a minus sign
    (``-1e-17`` as ``0.000``, not ``-0.000``: a bound of a difference of equal figures)."""
    out = f"{x:{spec}}"
    return f"{0.0:{spec}}" if out.lstrip("+-").strip("0.") == "" and out.startswith("-") else out


def one_line(message: object) -> str:
    """``message`` with every run of whitespace (line breaks included) as one space: a library's
    error written over several lines ("…one of: \\n(1) …\\n(2) …") becomes the one sentence a
    page shows as one paragraph and the CLI as one line."""
    return " ".join(str(message).split())


_ANSI_C = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def shell_word(text: object) -> str:
    """``text`` as one word of a POSIX shell command a reader can copy: as it is when it needs no
    quoting, in single quotes otherwise (:func:`shlex.quote`), and — when it holds a control
    character (a run id with a line break or an escape sequence, read from a log) — in bash's
    ``$'…'`` quoting with each such character escaped (``\\n``, ``\\x1b``, ``\\u0085``), so the command shown
    and copied holds no raw control character and still names the same value."""
    s = str(text)
    if not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in s):
        return shlex.quote(s)
    out = []
    for c in s:
        if c in _ANSI_C:
            out.append(_ANSI_C[c])
        elif ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0:
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}")  # C1: its character, not a byte
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"

"""The one place the command line writes to a terminal: text from logs and disks shown inert.

File names, run ids, query ids and the messages that quote them come from the user's disk or from
logs. Written raw, a name holding an escape sequence (``"\\x1b]0;pwned\\x07"``, ``"\\x1b[2J"``), a
carriage return or a bidi override rewrites the auditor's terminal: it retitles or clears it, or
overwrites the start of a line ("x\\rerror: all good") so a report reads as something else.
:func:`shown` writes every such character as its escape, the way Python's ``repr`` does
(``\\x1b``, ``\\r``, ``\\n``, ``\\u202e``); :func:`say` is the only writer of the CLI's lines
(``tests/cli/test_terminal.py`` checks that no module of the CLI echoes or prints otherwise).

What is escaped: the Unicode categories Cc (C0 and C1 controls, DEL — ``\\n`` and ``\\t`` too, so one
message is one line), Cf (format characters: bidi embeddings, overrides and isolates, zero-width
space, byte-order mark, soft hyphen, tags), Cs (a lone surrogate: a file name's byte that is not
UTF-8, as Python decodes it) and Zl/Zp (line and paragraph separators). Kept: every letter, mark,
digit, symbol and space of any script, and the zero-width non-joiner and joiner (U+200C, U+200D),
which are parts of words in Persian and the Indic scripts and of emoji sequences. A backslash is
not doubled, so ordinary names print unchanged (``C:\\logs`` stays ``C:\\logs``).

JSON written to the terminal (``--json -``) stays JSON: :func:`json_shown` writes the same
characters as ``\\uXXXX`` escapes, which mean the same string to any JSON reader (they occur only
inside strings). A file written with ``--json FILE`` is left as ``json.dumps`` wrote it.
"""

from __future__ import annotations

import logging
import os
import sys
import unicodedata
from typing import Any

import typer

__all__ = ["ShownFormatter", "json_shown", "say", "shown"]

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_KEPT = frozenset("\u200c\u200d")  # ZERO WIDTH NON-JOINER / JOINER: parts of words and emoji
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _hidden(c: str) -> bool:
    return c not in _KEPT and unicodedata.category(c) in _HIDDEN


def _escape(c: str) -> str:
    o = ord(c)
    if c in _NAMED:
        return _NAMED[c]
    if o < 0x100:
        return f"\\x{o:02x}"
    return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def _one_line(s: str) -> str:
    if s.isprintable():  # the common case: no control, format or separator character at all
        return s
    return "".join(_escape(c) if _hidden(c) else c for c in s)


def shown(text: object, *, lines: bool = False) -> str:
    """``text`` safe to write to a terminal: each control or format character as its escape
    (``\\x1b``, ``\\r``, ``\\u202e``; see the module's docstring). With ``lines`` the line breaks
    are kept — for text whose lines are the tool's own (a table pandas drew, which writes a cell's
    own ``\\n`` as ``\\\\n``); a message is one line, its ``\\n`` escaped."""
    s = "" if text is None else str(text)
    if lines:
        return "\n".join(_one_line(part) for part in s.split("\n"))
    return _one_line(s)


def say(text: object = "", *, err: bool = False, lines: bool = False) -> None:
    """Write ``text`` (:func:`shown`) and a line break to stdout, or stderr with ``err``. A reader
    that stopped reading (``ragaudit gate … | head -1``) takes nothing more, and the command goes on
    to its own exit status — a passing gate piped to ``head`` exited 1 from the broken pipe, which
    CI running bash with ``-o pipefail`` reads as a failed verdict."""
    try:
        typer.echo(shown(text, lines=lines), err=err)
    except BrokenPipeError:
        _to_nowhere(sys.stderr if err else sys.stdout)


def _to_nowhere(stream: Any) -> None:
    """Point a closed pipe's descriptor at /dev/null: later writes, and the flush at exit, go nowhere."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def json_shown(text: str) -> str:
    """JSON text (``json.dumps(…, ensure_ascii=False)``) with each character :func:`shown` escapes
    written as a JSON ``\\uXXXX`` escape (a pair of them beyond the BMP): the same JSON value, inert
    on a terminal. JSON's own line breaks (``indent``) are kept; a string's are already escaped."""
    if text.isprintable():
        return text
    out = []
    for c in text:
        if c == "\n" or not _hidden(c):
            out.append(c)
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            o = ord(c) - 0x10000
            out.append(f"\\u{0xD800 + (o >> 10):04x}\\u{0xDC00 + (o & 0x3FF):04x}")
    return "".join(out)


class ShownFormatter(logging.Formatter):
    """A log formatter for a terminal: each line of the record (message, traceback) :func:`shown`."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), lines=True)

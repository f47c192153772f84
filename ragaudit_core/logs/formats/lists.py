"""Lists of passage texts as other tools write them: a JSON list, or — in CSV exports — the
string form of a list (JSON, or the Python list literal pandas writes, parsed as data with
:func:`ast.parse`, never executed). Bounded: a string longer than ``MAX_LIST_STRING`` or nested
deeper than ``MAX_LIST_DEPTH`` is refused with a reason, never a RecursionError."""

from __future__ import annotations

import ast
import json
from typing import Any

from ragaudit_core.logs.formats.base import FormatError

__all__ = ["MAX_LIST_DEPTH", "MAX_LIST_STRING", "MAX_LITERAL_STRING", "text_list"]

MAX_LIST_STRING = 10_000_000
"""Characters of a list written as a string (a CSV cell) that are parsed at most."""
MAX_LITERAL_STRING = 1_000_000
"""Characters of a Python list literal (not JSON) that are parsed at most: the parser's time and
memory grow fast with it (JSON lists are read up to ``MAX_LIST_STRING``)."""
MAX_LIST_DEPTH = 32
"""Brackets nested deeper than this in such a string: not a list of texts (refused before parsing)."""


def text_list(v: Any, what: str) -> list[str]:
    """A list of passage texts (raises :class:`FormatError` naming ``what``)."""
    if v is None:
        return []
    if isinstance(v, str):
        v = _parse_list_string(v, what)
    if hasattr(v, "tolist"):  # numpy arrays from Parquet
        v = v.tolist()
    if not isinstance(v, (list, tuple)):
        raise FormatError(f"{what} must be a list of texts, got {type(v).__name__}")
    out = []
    for i, t in enumerate(v):
        if not isinstance(t, str):
            raise FormatError(f"{what}[{i}] must be a text, got {type(t).__name__}")
        out.append(t)
    return out


def _depth(s: str) -> int:
    """Deepest bracket nesting of ``s`` outside quotes (an over-estimate is harmless)."""
    depth = best = 0
    quote = ""
    escaped = False
    for ch in s:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "[(":
            depth += 1
            best = max(best, depth)
            if best > MAX_LIST_DEPTH:
                return best
        elif ch in "])":
            depth -= 1
    return best


def _parse_list_string(s: str, what: str) -> list:
    s = s.strip()
    if not s:
        return []
    if len(s) > MAX_LIST_STRING:
        raise FormatError(f"{what} is too long to read as a list ({len(s):,} characters, limit {MAX_LIST_STRING:,})")
    if _depth(s) > MAX_LIST_DEPTH:
        raise FormatError(f"{what} is nested more than {MAX_LIST_DEPTH} levels deep: not a list of texts")
    try:
        return json.loads(s)
    except ValueError:
        pass
    except RecursionError:
        raise FormatError(f"{what} is nested too deep to be a list of texts") from None
    if len(s) > MAX_LITERAL_STRING:
        raise FormatError(
            f"{what} is not a JSON list and too long to read as a Python list literal "
            f"({len(s):,} characters, limit {MAX_LITERAL_STRING:,}); write it as JSON"
        )
    try:
        node = ast.parse(s, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise FormatError(f"{what} is neither a list nor a JSON list string") from None
    if not isinstance(node, (ast.List, ast.Tuple)) or not all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        raise FormatError(f"{what} must be a list of strings")
    return [e.value for e in node.elts if isinstance(e, ast.Constant)]

"""Lists (and objects) written as strings, as other tools' exports hold them: a JSON list, or — in
CSV exports — the string form of a list (JSON, or the Python literal pandas writes, parsed as data
with :func:`ast.parse`, never executed). Bounded: a string longer than ``MAX_LIST_STRING`` (a
Python literal: ``MAX_LITERAL_STRING``) or nested deeper than ``MAX_LIST_DEPTH`` is refused with a
reason, never a RecursionError.

:func:`text_list` reads a list of passage texts (Ragas); :func:`data_string` any list or object
(OpenInference's documents and messages, a native record's evidence read from a CSV cell)."""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
from typing import Any

from ragaudit_core.logs.formats.base import FormatError
from ragaudit_core.logs.jsontext import lone_surrogate

__all__ = ["MAX_LIST_DEPTH", "MAX_LIST_STRING", "MAX_LITERAL_STRING", "data_string", "text_list"]

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
    if isinstance(v, str):  # a CSV cell: JSON or the Python literal pandas writes, read as data
        v = data_string(v, what)
        if v is None:
            return []
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


def data_string(s: str, what: str) -> Any:
    """The list or object a string holds — JSON, or a Python literal (strings, numbers, ``None``,
    booleans, lists, tuples, dicts; ``nan``/``inf`` and JSON's ``NaN``/``Infinity`` read as null;
    numpy scalars such as ``np.float64(0.5)`` read as their number) — parsed as data, never
    executed; None for a blank string. Raises :class:`FormatError` naming ``what`` for anything else."""
    s = s.strip()
    if not s:
        return None
    _check_size(s, what, "")
    try:
        parsed = json.loads(s, parse_constant=lambda _c: None)
    except ValueError:
        pass
    except RecursionError:
        raise FormatError(f"{what} is nested too deep to read") from None
    else:
        return _whole(parsed, s, what)
    if len(s) > MAX_LITERAL_STRING:
        raise FormatError(
            f"{what} is not JSON and too long to read as a Python literal "
            f"({len(s):,} characters, limit {MAX_LITERAL_STRING:,}); write it as JSON"
        )
    try:
        value = _literal(ast.parse(s, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        value = _FAILED
    if value is _FAILED or _side_by_side(s):
        if _SIDE_BY_SIDE.search(s):
            raise FormatError(_numpy_printed(what))
        raise FormatError(
            f"{what} is text that is neither JSON nor a Python literal ({_start(s)}): write it as a JSON list or object"
        )
    return _whole(value, s, what)


def _whole(value: Any, s: str, what: str) -> Any:
    """``value`` read from ``s``, unless an escape in ``s`` wrote half of a character (a lone
    UTF-16 surrogate, which no stored text can hold)."""
    half = lone_surrogate(value) if "\\u" in s or "\\U" in s else None
    if half is not None:
        raise FormatError(
            f"{what} holds {half}, half of a character written as a UTF-16 surrogate pair (the text was cut "
            "inside the character): write the text with its characters whole"
        )
    return value


_FAILED = object()
_SIDE_BY_SIDE = re.compile(r"""[}\]'"]\s+[{\['"]""")
"""An element's end, white space and the next element's start, without a comma between: how numpy
prints an array (``str(np.array([...]))``), as ``DataFrame.to_csv`` writes a Parquet list column."""


def _numpy_printed(what: str) -> str:
    return (
        f"{what} is a numpy array printed without commas between its elements, not a list: save the "
        "dataframe with to_json or to_parquet, or turn its arrays into lists before to_csv"
    )


def _side_by_side(s: str) -> bool:
    """Whether two string literals stand side by side in ``s`` (numpy prints ``['a' 'b']`` for two
    texts, which Python would read as the one text ``'ab'``)."""
    if not _SIDE_BY_SIDE.search(s):
        return False
    prev = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(s).readline):
            if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
                continue
            if tok.type == tokenize.STRING and prev == tokenize.STRING:
                return True
            prev = tok.type
    except (tokenize.TokenError, SyntaxError):
        return False
    return False


_NUMPY_SCALARS = frozenset(
    f"{t}{n}" for t, ns in (("float", (16, 32, 64)), ("int", (8, 16, 32, 64)), ("uint", (8, 16, 32, 64))) for n in ns
) | {"str_", "bool_", "float_"}


def _start(s: str) -> str:
    return repr(s[:40] + "…") if len(s) > 40 else repr(s)


def _literal(node: ast.expr) -> Any:
    """The value of a Python literal's node (containers nested at most ``MAX_LIST_DEPTH`` deep: the
    string was checked); ValueError for anything that is not data."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float))):
        c = node.value
        return None if isinstance(c, float) and not math.isfinite(c) else c
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out = {}
        for k_node, v_node in zip(node.keys, node.values, strict=True):
            key = _literal(k_node) if k_node is not None else None  # None: a ** unpacking
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise ValueError("a key that is not a string or an integer")
            out[str(key) if isinstance(key, int) else key] = _literal(v_node)
        return out
    if isinstance(node, ast.Name) and node.id in ("nan", "inf", "NaN"):  # pandas' missing numbers
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        n = _literal(node.operand)
        if n is None or (isinstance(n, (int, float)) and not isinstance(n, bool)):
            return None if n is None else -n if isinstance(node.op, ast.USub) else n
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:  # np.float64(0.5)
        f = node.func
        module = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
        if module in ("np", "numpy") and isinstance(f, ast.Attribute) and f.attr in _NUMPY_SCALARS:
            return _literal(node.args[0])
    raise ValueError("not a literal")


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
        elif ch in "[({":
            depth += 1
            best = max(best, depth)
            if best > MAX_LIST_DEPTH:
                return best
        elif ch in "])}":
            depth -= 1
    return best


def _check_size(s: str, what: str, deep: str) -> None:
    if len(s) > MAX_LIST_STRING:
        raise FormatError(f"{what} is too long to read as a list ({len(s):,} characters, limit {MAX_LIST_STRING:,})")
    if _depth(s) > MAX_LIST_DEPTH:
        raise FormatError(f"{what} is nested more than {MAX_LIST_DEPTH} levels deep{deep}")

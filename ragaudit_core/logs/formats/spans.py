"""Helpers the tracing formats share: dotted keys, JSON held in strings, LangChain-style
documents, query and answer texts, and checked trace ids."""

from __future__ import annotations

import json
import math
from typing import Any

from ragaudit_core.logs.formats.base import check_id
from ragaudit_core.logs.jsontext import lone_surrogate

__all__ = [
    "DOC_TEXT_KEYS",
    "absent",
    "doc_fields",
    "documents",
    "flatten",
    "json_maybe",
    "number",
    "query_of",
    "text_of",
    "trace_id",
]


def flatten(obj: Any, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict[str, Any]:
    """Nested objects and lists as dotted keys (``a.b.0.c``); keys already dotted stay as they are."""
    out = {} if out is None else out
    if depth > 12:
        out[prefix.rstrip(".")] = obj
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}{k}.", out, depth + 1)
    elif isinstance(obj, list) and obj and all(isinstance(x, (dict, list)) for x in obj):
        for i, v in enumerate(obj):
            flatten(v, f"{prefix}{i}.", out, depth + 1)
    else:
        out[prefix.rstrip(".")] = obj
    return out


def json_maybe(v: Any) -> Any:
    """A string holding a JSON object or array, decoded; anything else as it is (a string whose
    JSON writes half of a character, a lone surrogate, too: the text is kept as it is written)."""
    if isinstance(v, str) and v[:1] in ("{", "["):
        try:
            out = json.loads(v)
        except (ValueError, RecursionError):
            return v
        return v if "\\u" in v and lone_surrogate(out) is not None else out
    return v


def absent(v: Any) -> bool:
    """An output that holds nothing: null, or as a table's cell writes null (empty, ``"null"``, NaN)."""
    return v is None or (isinstance(v, str) and v.strip() in ("", "null")) or (isinstance(v, float) and v != v)


def text_of(v: Any) -> str | None:
    """An answer text: a string, or an object's ``content``/``text``/``output``/``answer``/``result``."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in ("content", "text", "output", "answer", "result"):
            if isinstance(v.get(k), str):
                return v[k]
    return None


def trace_id(v: Any) -> str | None:
    """A trace id as a string (None when absent); an array, object, number with a fraction or
    boolean raises :class:`~ragaudit_core.logs.formats.base.FormatError`."""
    t = check_id(v, "trace id")
    return None if t is None else str(t)


DOC_TEXT_KEYS = ("page_content", "pageContent", "content", "text")
"""Where a LangChain-style document holds its text, first found wins: LangChain's Python
``Document.page_content``, LangChain.js's ``pageContent`` (LangSmith and Langfuse traces of JS
apps), then ``content`` and ``text``."""


def _doc_text(d: dict) -> Any:
    return next((d[k] for k in DOC_TEXT_KEYS if k in d), None)


def documents(v: Any) -> list[dict] | None:
    """A list of LangChain-style documents (each one's text under a key of :data:`DOC_TEXT_KEYS`),
    or None when ``v`` holds none."""
    v = json_maybe(v)
    if isinstance(v, dict):
        v = v.get("documents", v.get("output"))
    if not isinstance(v, list) or not all(isinstance(d, dict) for d in v):
        return None
    if not all(isinstance(_doc_text(d), str) for d in v):
        return None
    return v


def doc_fields(docs: list[dict]) -> tuple[list[str], list[Any], list[dict | None]]:
    """Texts, ids (checked) and metadata of documents accepted by :func:`documents`."""
    texts = [str(_doc_text(d)) for d in docs]
    mds = [d.get("metadata") if isinstance(d.get("metadata"), dict) else None for d in docs]
    ids = [check_id(d.get("id"), f"document {i}'s id") for i, d in enumerate(docs)]
    return texts, ids, mds


_QUERY_KEYS = ("query", "input", "question", "user_input", "query_str", "query_text", "str_or_query_bundle")
"""Where a retriever's input names its question: LangChain's ``query``/``input``, Ragas' ``question``
and ``user_input``; LlamaIndex's ``retrieve(str_or_query_bundle)`` as MLflow's autolog records it — a
string, or a ``QueryBundle`` whose ``query_str`` holds it — and ``query_str``/``query_text``."""


def query_of(v: Any) -> str | None:
    """A query text: a string, or an object's text under one of :data:`_QUERY_KEYS` (a query
    bundle's ``query_str`` under ``str_or_query_bundle``)."""
    v = json_maybe(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in _QUERY_KEYS:
            x = json_maybe(v.get(k)) if k == "str_or_query_bundle" else v.get(k)
            if isinstance(x, str):
                return x
            if isinstance(x, dict) and isinstance(x.get("query_str"), str):
                return str(x["query_str"])
    return None


def number(v: Any) -> float | None:
    """A score as a float: None for anything but a finite number (a boolean, a text, NaN, an
    integer past a float's range)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None

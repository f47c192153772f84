"""Other tools' evidence logs, recognised by their fields and mapped to the native contract.

Each foreign record becomes one or more native evidence records (``run_id``, ``query_id``,
``query``, ``answer``, ``evidence`` with ``doc_id`` and ``text``) that then go through the
same validation, identity and storage as a native line. Mappings (``docs/log-contract.md``
has one example per format):

* **Ragas** v0.2+ (``user_input``, ``retrieved_contexts``, ``retrieved_context_ids``,
  ``response``, ``reference``) and v0.1 (``question``, ``contexts``, ``answer``,
  ``ground_truth``/``ground_truths``): one row → one record; each context string is a passage
  **text** (span identity), never a document id.
* **RAGChecker** (``{"results": [{"query_id", "query", "response", "retrieved_context":
  [{"doc_id", "text"}]}]}``): one result → one record.

Identities, in order of preference:

* document id — the format's id field (``retrieved_context_ids[i]``, ``doc_id``), else the
  metadata key named by ``doc_id_key``, else ``"text:" + span_hash(text)[:16]`` — with a
  warning, because document identity then equals span identity and doc-level metrics equal
  span-level ones;
* run id — the record's (``run_id``), else the ``run_id`` option, else the file name
  without its extensions;
* query id — the record's (``query_id``), else ``"q:"`` + the first 16 hex digits of the
  SHA-256 of the normalised query text (NFKC, whitespace collapsed, case-folded), so runs
  over the same questions pair up.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.identity import span_hash

__all__ = [
    "FOREIGN_FORMATS",
    "FormatError",
    "MapContext",
    "build_record",
    "detect",
    "map_record",
    "query_id_for",
    "run_id_for",
]

FOREIGN_FORMATS = ("ragas", "ragchecker")


class FormatError(RagAuditError, ValueError):
    """A record of a foreign format that cannot be mapped (the message says what is missing)."""


@dataclass
class MapContext:
    """What a mapping needs beyond the record: the run id to use when the record has none, the
    metadata key holding document ids, and the warnings it raised (each once per file)."""

    run_id: str
    doc_id_key: str | None = None
    warnings: list[str] = field(default_factory=list)

    def warn_once(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)


def run_id_for(path: str | Path, option: str | None = None) -> str:
    """``option`` when given, else the file name without its extensions (``a.jsonl.gz`` → ``a``)."""
    if option:
        return option
    name = Path(path).name
    return name.split(".", 1)[0] or name


def query_id_for(query: str) -> str:
    """A stable id for a query text: ``q:`` + 16 hex digits of SHA-256 of its normalised form."""
    norm = " ".join(unicodedata.normalize("NFKC", query).split()).casefold()
    return "q:" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def detect(obj: Any) -> str | None:
    """The foreign format a decoded record (or whole JSON document) looks like, else None (native)."""
    if (
        isinstance(obj, dict)
        and isinstance(obj.get("results"), list)
        and (not obj["results"] or (isinstance(obj["results"][0], dict) and "retrieved_context" in obj["results"][0]))
    ):
        return "ragchecker"
    if isinstance(obj, dict) and "retrieved_context" in obj and "query" in obj:
        return "ragchecker"
    if isinstance(obj, dict) and _is_ragas(obj):
        return "ragas"
    return None


def _is_ragas(obj: dict) -> bool:
    if "user_input" in obj and any(k in obj for k in ("retrieved_contexts", "contexts", "response", "reference")):
        return True
    has_native_id = any(k in obj for k in ("run_id", "runId", "config_id", "run", "query_id", "qid"))
    return "question" in obj and "contexts" in obj and not has_native_id


def map_record(fmt: str, obj: dict, ctx: MapContext) -> list[dict]:
    """Native evidence records for one foreign record (raises :class:`FormatError`)."""
    try:
        mapper = _MAPPERS[fmt]
    except KeyError:
        raise FormatError(f"unknown format {fmt!r}; formats are: native, {', '.join(FOREIGN_FORMATS)}") from None
    if not isinstance(obj, dict):
        raise FormatError(f"a {fmt} record is a JSON object")
    return mapper(obj, ctx)


# --------------------------------------------------------------------------- shared


def _text_list(v: Any, what: str) -> list[str]:
    """A list of passage texts: a JSON list, or the string form CSV exports write (JSON, or a
    Python list literal of strings parsed as data, never executed)."""
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


def _parse_list_string(s: str, what: str) -> list:
    s = s.strip()
    if not s:
        return []
    try:
        return json.loads(s)
    except ValueError:
        pass
    import ast

    if len(s) > 10_000_000:
        raise FormatError(f"{what} is too long to read as a list")
    try:
        node = ast.parse(s, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        raise FormatError(f"{what} is neither a list nor a JSON list string") from None
    if not isinstance(node, (ast.List, ast.Tuple)) or not all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        raise FormatError(f"{what} must be a list of strings")
    return [e.value for e in node.elts if isinstance(e, ast.Constant)]


def _evidence(
    texts: list[str], ids: list[Any] | None, metadata: list[Any] | None, ctx: MapContext, fmt: str
) -> list[dict]:
    """Native evidence entries in retrieved order, with the document id chosen as documented."""
    out = []
    for i, text in enumerate(texts):
        md = metadata[i] if metadata and i < len(metadata) and isinstance(metadata[i], dict) else None
        doc = ids[i] if ids and i < len(ids) and ids[i] not in (None, "") else None
        if doc is None and ctx.doc_id_key and md is not None and md.get(ctx.doc_id_key) not in (None, ""):
            doc = md[ctx.doc_id_key]
        if doc is None:
            doc = "text:" + span_hash(text)[:16]
            ctx.warn_once(
                f"{fmt} records carry no document ids"
                + (f" (and no metadata key {ctx.doc_id_key!r})" if ctx.doc_id_key else "")
                + ": each passage's document id is the hash of its text, so document-level metrics equal "
                "span-level ones; name a metadata key with --doc-id-key to use real ids"
            )
        entry = {"doc_id": str(doc) if not isinstance(doc, str) else doc, "text": text, "rank": i}
        if md is not None:
            entry["metadata"] = md
        out.append(entry)
    return out


def _query_fields(obj: dict, keys: tuple[str, ...], fmt: str) -> str:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, str) and v.strip():
            return v
    raise FormatError(f"{fmt} record without a query ({' or '.join(keys)})")


def _native(obj: dict, ctx: MapContext, query: str, answer: Any, evidence: list[dict]) -> dict:
    qid = obj.get("query_id")
    return {
        "run_id": obj.get("run_id") or ctx.run_id,
        "query_id": qid if qid not in (None, "") else query_id_for(query),
        "query": query,
        "answer": answer if isinstance(answer, str) else None,
        "evidence": evidence,
    }


def build_record(
    fmt: str,
    ctx: MapContext,
    query: str,
    answer: str | None,
    texts: list[str],
    ids: list[Any] | None = None,
    metadata: list[Any] | None = None,
) -> dict:
    """A native record from a query, its retrieved texts (with ids and metadata when the
    format has them) and an answer, with the identities documented above."""
    return _native({}, ctx, query, answer, _evidence(texts, ids, metadata, ctx, fmt))


# --------------------------------------------------------------------------- formats


def _ragas(obj: dict, ctx: MapContext) -> list[dict]:
    query = _query_fields(obj, ("user_input", "question"), "Ragas")
    key = "retrieved_contexts" if "retrieved_contexts" in obj else "contexts"
    texts = _text_list(obj.get(key), key)
    raw_ids = obj.get("retrieved_context_ids")
    raw_ids = _text_list(raw_ids, "retrieved_context_ids") if isinstance(raw_ids, str) else raw_ids
    if raw_ids is not None and hasattr(raw_ids, "tolist"):  # numpy arrays from Parquet
        raw_ids = raw_ids.tolist()
    if raw_ids is not None and (not isinstance(raw_ids, (list, tuple)) or len(raw_ids) != len(texts)):
        raise FormatError(f"retrieved_context_ids must list one id per retrieved context ({len(texts)})")
    ids = list(raw_ids) if raw_ids is not None else None
    answer = obj.get("response", obj.get("answer"))
    return [_native(obj, ctx, query, answer, _evidence(texts, ids, None, ctx, "Ragas"))]


def _ragchecker(obj: dict, ctx: MapContext) -> list[dict]:
    results = obj["results"] if isinstance(obj.get("results"), list) else [obj]
    out = []
    for r in results:
        if not isinstance(r, dict):
            raise FormatError("every RAGChecker result is a JSON object")
        query = _query_fields(r, ("query",), "RAGChecker")
        ctxs = r.get("retrieved_context") or []
        if not isinstance(ctxs, list) or not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in ctxs):
            raise FormatError("retrieved_context must be a list of {doc_id, text} objects")
        ev = _evidence([c["text"] for c in ctxs], [c.get("doc_id") for c in ctxs], None, ctx, "RAGChecker")
        out.append(_native(r, ctx, query, r.get("response"), ev))
    return out


_MAPPERS: dict[str, Callable[[dict, MapContext], list[dict]]] = {"ragas": _ragas, "ragchecker": _ragchecker}

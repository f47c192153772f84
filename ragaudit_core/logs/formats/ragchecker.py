"""RAGChecker results: ``{"results": [{"query_id", "query", "gt_answer", "response",
"retrieved_context": [{"doc_id", "text"}]}]}``.

Detector: a result object (``retrieved_context`` with ``query``), or the whole document
(``results`` whose first element is such a result — containers usually unwrap it first,
:mod:`ragaudit_core.logs.documents`). Mapper: one result → one record (``doc_id`` and ``text``
per retrieved context).
"""

from __future__ import annotations

from ragaudit_core.logs.formats.base import (
    FormatError,
    LogFormat,
    MapContext,
    evidence_entries,
    native_record,
    query_text,
)

__all__ = ["FORMAT"]


def detect(obj: dict) -> bool:
    results = obj.get("results")
    if isinstance(results, list) and (
        not results or (isinstance(results[0], dict) and "retrieved_context" in results[0])
    ):
        return True
    return "retrieved_context" in obj and "query" in obj


def map_record(obj: dict, ctx: MapContext) -> list[dict]:
    results = obj["results"] if isinstance(obj.get("results"), list) else [obj]
    out = []
    for r in results:
        if not isinstance(r, dict):
            raise FormatError("every RAGChecker result is a JSON object")
        query = query_text(r, ("query",), "RAGChecker")
        ctxs = r.get("retrieved_context") or []
        if not isinstance(ctxs, list) or not all(isinstance(c, dict) and isinstance(c.get("text"), str) for c in ctxs):
            raise FormatError("retrieved_context must be a list of {doc_id, text} objects")
        ev = evidence_entries([c["text"] for c in ctxs], [c.get("doc_id") for c in ctxs], None, ctx, "RAGChecker")
        out.append(native_record(r, ctx, query, r.get("response"), ev))
    return out


FORMAT = LogFormat(
    name="ragchecker",
    label="RAGChecker",
    kind="record",
    detect=detect,
    keys=frozenset({"retrieved_context", "gt_answer"}),
    map_record=map_record,
    unit="result",
)

"""Tracing exports — OpenInference spans (Arize Phoenix), LangSmith runs, Langfuse observations —
read span by span and joined per trace.

A retriever span gives one evidence record: its query and its documents (texts as spans,
ids as :mod:`formats` documents). The answer comes from another span of the same trace (an
LLM span / generation, or the root chain's output), which may come before or after it in the
file, so a file's retriever spans are held until the file is read, then completed with their
trace's answer. Spans that carry no evidence (LLM, chain, embedding, tool, …) are counted as
such, neither loaded nor rejected.

Field mapping (``docs/log-contract.md`` has an example per format):

* **OpenInference**, nested (``{"attributes": {"retrieval": {"documents": [{"document":
  {...}}]}}}``) or flattened (``attributes.retrieval.documents.0.document.id``, or
  ``retrieval.documents`` as a list of ``{"document.id", …}``): kind
  ``openinference.span.kind`` or ``span_kind``; trace ``context.trace_id``; query
  ``input.value``; documents ``retrieval.documents[i].document.{id, content, score,
  metadata}`` (metadata may be a JSON string); answer: the LLM span's
  ``llm.output_messages.0.message.content``, else its ``output.value``. A RERANKER span
  (``reranker.output_documents``) makes the trace a provenance record too
  (:func:`provenance_record`): retrieval, reranking, context and generation stages.
* **LangSmith** runs: ``run_type == "retriever"``, query ``inputs.query`` (or ``inputs.input``,
  ``inputs.question``), documents ``outputs.documents[i].{page_content, metadata, id}``;
  trace ``trace_id``; answer: the root run's ``outputs.{answer, output, result}``, else the last
  LLM run's ``outputs.generations[0][0].text``.
* **Langfuse** observations: ``type`` ``RETRIEVER``, or ``SPAN`` whose ``output`` holds documents
  (a list, or ``{"documents": [...]}``; ``page_content``/``content``/``text``); query ``input``
  (a string, or ``input.{query, input, question}``); trace ``traceId``; answer: a
  ``GENERATION`` observation's ``output`` (a string or ``output.content``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ragaudit_core.logs.formats import FormatError

__all__ = ["TRACE_FORMATS", "Span", "detect_trace_format", "provenance_record", "read_span"]

TRACE_FORMATS = ("openinference", "langsmith", "langfuse")


@dataclass
class Span:
    """What one span contributes: evidence (a retriever span), an answer, or nothing."""

    trace_id: str | None
    kind: str  # "retriever", "reranker", "answer" or "other"
    query: str | None = None
    texts: list[str] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    metadata: list[dict | None] = field(default_factory=list)
    answer: str | None = None
    root: bool = False  # a root run's answer wins over an LLM call's
    reranked: list[dict] = field(default_factory=list)  # a RERANKER span's output documents (id, content)


def detect_trace_format(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    flat = _flatten(obj)
    if any(k.endswith("openinference.span.kind") for k in flat) or (
        "span_kind" in obj and any(k.startswith(("attributes.", "context.")) for k in flat)
    ):
        return "openinference"
    if "run_type" in obj and ("inputs" in obj or "outputs" in obj):
        return "langsmith"
    if "traceId" in obj and "type" in obj:
        return "langfuse"
    return None


def read_span(fmt: str, obj: Any) -> Span:
    if not isinstance(obj, dict):
        raise FormatError(f"a {fmt} span is a JSON object")
    return {"openinference": _openinference, "langsmith": _langsmith, "langfuse": _langfuse}[fmt](obj)


# --------------------------------------------------------------------------- helpers


def _flatten(obj: Any, prefix: str = "", out: dict | None = None, depth: int = 0) -> dict[str, Any]:
    """Nested objects and lists as dotted keys (``a.b.0.c``); keys already dotted stay as they are."""
    out = {} if out is None else out
    if depth > 12:
        out[prefix.rstrip(".")] = obj
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flatten(v, f"{prefix}{k}.", out, depth + 1)
    elif isinstance(obj, list) and obj and all(isinstance(x, (dict, list)) for x in obj):
        for i, v in enumerate(obj):
            _flatten(v, f"{prefix}{i}.", out, depth + 1)
    else:
        out[prefix.rstrip(".")] = obj
    return out


def _json_maybe(v: Any) -> Any:
    if isinstance(v, str) and v[:1] in ("{", "["):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def _text_of(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in ("content", "text", "output", "answer", "result"):
            if isinstance(v.get(k), str):
                return v[k]
    return None


# --------------------------------------------------------------------------- OpenInference


def _oi_get(flat: dict, key: str) -> Any:
    for k in (key, "attributes." + key):
        if k in flat:
            return flat[k]
    return None


def _openinference(obj: dict) -> Span:
    flat = _flatten(obj)
    kind = str(_oi_get(flat, "openinference.span.kind") or obj.get("span_kind") or "").upper()
    trace = _oi_get(flat, "context.trace_id") or obj.get("trace_id")
    if kind == "RETRIEVER":
        query = _oi_get(flat, "input.value")
        items = _oi_documents(flat, "retrieval.documents.")
        if not isinstance(query, str) or not query.strip():
            raise FormatError("RETRIEVER span without input.value (the query)")
        if any(not isinstance(d.get("content"), str) for d in items):
            raise FormatError("a retrieved document has no document.content text")
        md = [_metadata(d) for d in items]
        return Span(trace, "retriever", query, [d["content"] for d in items], [d.get("id") for d in items], md)
    if kind == "RERANKER":
        outs = _oi_documents(flat, "reranker.output_documents.")
        if any(not isinstance(d.get("content"), str) and d.get("id") in (None, "") for d in outs):
            raise FormatError("a reranker output document has neither document.id nor document.content")
        return Span(trace, "reranker", _oi_get(flat, "reranker.query"), reranked=outs)
    if kind == "LLM":
        answer = _oi_get(flat, "llm.output_messages.0.message.content")
        if not isinstance(answer, str):
            answer = _text_of(_json_maybe(_oi_get(flat, "output.value")))
        return Span(trace, "answer", answer=answer)
    return Span(trace, "other")


def _oi_documents(flat: dict, prefix: str) -> list[dict]:
    """The documents under ``prefix`` (``retrieval.documents.`` …) as ``{id, content, score, …}`` in order."""
    docs: dict[int, dict] = {}
    for k, v in flat.items():
        rest = k.removeprefix("attributes.")
        if rest.startswith(prefix):
            parts = rest[len(prefix) :].split(".", 1)
            if parts[0].isdigit() and len(parts) == 2:
                docs.setdefault(int(parts[0]), {})[parts[1].removeprefix("document.")] = v
    return [docs[i] for i in sorted(docs)]


def provenance_record(run_id: str, query_id: str, retriever: Span, reranker: Span, answer: str | None) -> dict:
    """A provenance record (``docs/provenance-contract.md``) for a trace with a reranker: the
    retrieved documents (stage 2), the reranker's output (stage 3, each linked to the retrieved
    document with its id, else its text), the context in that order (stage 4) and the generation
    (stage 5); retrieved documents the reranker left out are ``dropped`` at stage 3."""
    nodes, dropped = [], []
    by_key: dict[object, str] = {}
    for i, (text, doc) in enumerate(zip(retriever.texts, retriever.ids)):
        nid = f"r{i}"
        nodes.append(
            {
                "node_id": nid,
                "stage": 2,
                "artifact_type": "rank_result",
                "derived_from": [],
                "coordinates": {"doc_id": str(doc) if doc not in (None, "") else f"text:{i}"},
                "metadata": {"text": text, "rank": i},
            }
        )
        by_key.setdefault(("id", doc), nid)
        by_key.setdefault(("text", text), nid)
    kept = set()
    for j, d in enumerate(reranker.reranked):
        parent = by_key.get(("id", d.get("id"))) if d.get("id") not in (None, "") else None
        parent = parent or by_key.get(("text", d.get("content")))
        node = {
            "node_id": f"k{j}",
            "stage": 3,
            "artifact_type": "rank_result",
            "derived_from": [parent] if parent else [],
            "metadata": {"rank": j},
        }
        if d.get("id") not in (None, ""):
            node["coordinates"] = {"doc_id": str(d["id"])}
        nodes.append(node)
        nodes.append(
            {
                "node_id": f"x{j}",
                "stage": 4,
                "artifact_type": "context_element",
                "derived_from": [f"k{j}"],
                "metadata": {"context_index": j + 1},
            }
        )
        kept.add(parent)
    dropped = [
        {"node_id": n["node_id"], "stage": 3, "reason": "not among the reranker's output documents"}
        for n in nodes
        if n["stage"] == 2 and n["node_id"] not in kept
    ]
    nodes.append(
        {
            "node_id": "g",
            "stage": 5,
            "artifact_type": "generation",
            "derived_from": [f"x{j}" for j in range(len(reranker.reranked))],
        }
    )
    return {
        "run_id": run_id,
        "query_id": query_id,
        "query": retriever.query,
        "nodes": nodes,
        "dropped": dropped,
        "generated_text": answer,
    }


def _metadata(d: dict) -> dict | None:
    md = _json_maybe(d.get("metadata"))
    if isinstance(md, dict):
        return md
    sub = {k.removeprefix("metadata."): v for k, v in d.items() if k.startswith("metadata.")}
    return sub or None


# --------------------------------------------------------------------------- LangSmith


def _documents(v: Any) -> list[dict] | None:
    """A list of LangChain-style documents, or None when ``v`` holds none."""
    v = _json_maybe(v)
    if isinstance(v, dict):
        v = v.get("documents", v.get("output"))
    if not isinstance(v, list) or not all(isinstance(d, dict) for d in v):
        return None
    if not all(isinstance(d.get("page_content", d.get("content", d.get("text"))), str) for d in v):
        return None
    return v


def _doc_fields(docs: list[dict]) -> tuple[list[str], list[Any], list[dict | None]]:
    texts = [str(d.get("page_content", d.get("content", d.get("text")))) for d in docs]  # checked by _documents
    mds = [d.get("metadata") if isinstance(d.get("metadata"), dict) else None for d in docs]
    ids = [d.get("id") if d.get("id") not in (None, "") else None for d in docs]
    return texts, ids, mds


def _query_of(v: Any) -> str | None:
    v = _json_maybe(v)
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        for k in ("query", "input", "question", "user_input"):
            if isinstance(v.get(k), str):
                return v[k]
    return None


def _langsmith(obj: dict) -> Span:
    trace = obj.get("trace_id")
    rt = str(obj.get("run_type", "")).lower()
    outputs = obj.get("outputs") or {}
    if rt == "retriever":
        docs = _documents(outputs)
        query = _query_of(obj.get("inputs"))
        if docs is None or query is None:
            raise FormatError("retriever run without inputs.query or outputs.documents[].page_content")
        return Span(trace, "retriever", query, *_doc_fields(docs))
    root = not obj.get("parent_run_id") and not obj.get("parent_run_ids")
    if rt == "llm":
        gens = outputs.get("generations") if isinstance(outputs, dict) else None
        text = (
            gens[0][0].get("text")
            if gens and isinstance(gens[0], list) and gens[0] and isinstance(gens[0][0], dict)
            else _text_of(outputs)
        )
        return Span(trace, "answer", answer=text if isinstance(text, str) else None)
    if root and _text_of(outputs) is not None:
        return Span(trace, "answer", answer=_text_of(outputs), root=True)
    return Span(trace, "other")


# --------------------------------------------------------------------------- Langfuse


def _langfuse(obj: dict) -> Span:
    trace = obj.get("traceId")
    kind = str(obj.get("type", "")).upper()
    if kind in ("RETRIEVER", "SPAN"):
        docs = _documents(obj.get("output"))
        if docs is not None:
            query = _query_of(obj.get("input"))
            if query is None:
                raise FormatError("retriever observation without an input query")
            return Span(trace, "retriever", query, *_doc_fields(docs))
        if kind == "RETRIEVER":
            raise FormatError("retriever observation whose output holds no documents")
    if kind == "GENERATION":
        return Span(trace, "answer", answer=_text_of(_json_maybe(obj.get("output"))))
    return Span(trace, "other")

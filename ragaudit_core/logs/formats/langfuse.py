"""Langfuse observations: ``type`` ``RETRIEVER``, or ``SPAN`` whose ``output`` holds documents
(a list, or ``{"documents": [...]}``; ``page_content``/``pageContent``/``content``/``text``), give evidence —
query ``input`` (a string, or ``input.{query, input, question}``); trace ``traceId``; answer: the
root observation's ``output`` (no ``parentObservationId``; a ``CHAIN`` or ``AGENT``, or a ``SPAN``
whose OpenTelemetry attributes name that kind: the pipeline's output, as a LangSmith root run's —
not any parentless ``SPAN``, as the low-level SDK writes several), else the trace's own ``output`` (a trace export's
``trace.output``, read where the export is unwrapped), else a ``GENERATION`` observation's (a string or
``output.content``/``text``/``output``/``answer``/``result``). Run settings
(:mod:`.settings`): the retriever observation's ``metadata`` over its trace's root observation's
(no ``parentObservationId``) over the trace's own (a trace export's ``trace.metadata``, read by
:class:`~ragaudit_core.logs.records.FileReader` where it unwraps the export); in each, where the
observation was ingested from OpenTelemetry, its span's attributes (``metadata.attributes``) under
its own keys (:func:`~.settings.read_observation_settings`).

An observation ingested from OpenTelemetry keeps its span's attributes in ``metadata.attributes``
(each one that is not a text as its JSON: a score ``"0.91"``). Where its ``output`` holds no
documents (null, a text: an OpenInference RETRIEVER span of LlamaIndex's), a ``RETRIEVER`` or
``SPAN`` observation whose attributes hold OpenInference's flattened documents
(``retrieval.documents.{i}.document.{id, content, score, metadata}``) is a retriever, its documents
read by OpenInference's rules (:func:`~.openinference.retrieved_documents`: index order, gaps
noted, an index written twice rejected), the query its ``input``, else the ``input.value``
attribute. An ``EMBEDDING`` observation (or a ``SPAN`` whose attributes name the OpenInference kind
``EMBEDDING``) names its trace's embedder where no metadata does: its ``model``, else its
``embedding.model_name`` attribute. The observation's own keys win over its attributes. A
``RETRIEVER`` observation whose output is null (or absent) and whose attributes hold no documents
retrieved nothing (a record with no evidence, and a warning); one still open when exported
(``endTime`` null) is rejected.

Detector: ``traceId`` with ``type``. A trace export (``{"trace": {...}, "observations": [...]}``)
is unwrapped into observations by :mod:`ragaudit_core.logs.documents`.
"""

from __future__ import annotations

import json
from typing import Any

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span
from ragaudit_core.logs.formats.openinference import retrieved_documents
from ragaudit_core.logs.formats.settings import observation_attributes, read_observation_settings
from ragaudit_core.logs.formats.spans import absent, doc_fields, documents, json_maybe, query_of, text_of, trace_id

__all__ = ["FORMAT"]

_DOCUMENTS = "retrieval.documents"
_CHAINS = frozenset({"CHAIN", "AGENT"})  # a root observation of these kinds holds the pipeline's output


def detect(obj: dict) -> bool:
    return "traceId" in obj and "type" in obj


def read_span(obj: dict) -> Span:
    trace = trace_id(obj.get("traceId"))
    kind = str(obj.get("type", "")).upper()
    attrs = observation_attributes(obj.get("metadata"))
    if kind in ("RETRIEVER", "SPAN"):
        span = _retriever(obj, trace, kind, attrs)
        if span is not None:
            return span
    # a root observation's settings: its trace's retriever observations read them
    root = not obj.get("parentObservationId")
    settings = read_observation_settings(obj.get("metadata")) if root else None
    if root and _chain(kind, attrs) and text_of(json_maybe(obj.get("output"))) is not None:  # the pipeline's output
        return Span(trace, "answer", answer=text_of(json_maybe(obj.get("output"))), root=True, settings=settings)
    if kind == "GENERATION":
        return Span(trace, "answer", answer=text_of(json_maybe(obj.get("output"))), settings=settings)
    if kind == "EMBEDDING" or (kind == "SPAN" and attrs and attrs.get("openinference.span.kind") == "EMBEDDING"):
        return Span(trace, "other", settings=settings, embedder=_model(obj, attrs))
    return Span(trace, "other", settings=settings)


def _chain(kind: str, attrs: dict | None) -> bool:
    """Whether an observation is a chain or an agent: its type (Langfuse's observation types), or
    a SPAN whose OpenTelemetry attributes name OpenInference's kind CHAIN or AGENT. A plain SPAN
    is not: traces made with the low-level SDK have several parentless spans (a feedback log …)."""
    if kind in _CHAINS:
        return True
    return kind == "SPAN" and attrs is not None and str(attrs.get("openinference.span.kind", "")).upper() in _CHAINS


def _retriever(obj: dict, trace: str | None, kind: str, attrs: dict | None) -> Span | None:
    """A RETRIEVER or SPAN observation as a retriever span: its documents from its ``output``, else
    from its span's attributes; None for a SPAN holding none."""
    notes: list[str] = []
    scores: list[float | None] = []
    docs = documents(obj.get("output"))
    if docs is not None:
        texts, ids, md = doc_fields(docs)
    elif attrs is not None and any(k.startswith(_DOCUMENTS) for k in attrs):
        flat = {k: _score(v) if k.endswith(".document.score") else v for k, v in attrs.items()}
        texts, ids, md, scores = retrieved_documents(flat, notes)
    elif kind == "RETRIEVER" and absent(obj.get("output")):
        texts, ids, md = [], [], []
        notes.append(_returned_nothing(obj))
    elif kind == "RETRIEVER":
        raise FormatError(
            "retriever observation whose output and span attributes hold no documents (a list of objects "
            "with a text under page_content, pageContent, content or text; or retrieval.documents.* attributes)"
        )
    else:
        return None
    query = query_of(obj.get("input"))
    if not (query and query.strip()) and attrs is not None:
        query = query_of(attrs.get("input.value")) or query
    if query is None:
        raise FormatError("retriever observation without an input query")
    settings = read_observation_settings(obj.get("metadata"))
    return Span(trace, "retriever", query, texts, ids, md, notes=notes, scores=scores, settings=settings)


def _returned_nothing(obj: dict) -> str:
    """The warning of a RETRIEVER observation whose output is null or absent (and whose attributes
    hold no documents): a record that retrieved nothing, as an OpenInference span without
    documents is. One still open when exported (``endTime`` null, not at level ERROR) is rejected:
    its output was not yet known."""
    failed = str(obj.get("level", "")).upper() == "ERROR"
    if "endTime" in obj and obj["endTime"] is None and not failed:
        raise FormatError(
            "retriever observation that had not ended when it was exported (endTime null, no output): "
            "export the trace again once it has ended"
        )
    status = obj.get("statusMessage")
    why = f": level ERROR, {str(status)[:200]!r}" if failed and status else ": level ERROR" if failed else ""
    return f"RETRIEVER observation without output (null{why}): loaded as a record that retrieved nothing"


def _score(v: Any) -> Any:
    """A ``document.score`` attribute as Langfuse keeps it — a number written as its JSON (``"0.91"``,
    ``"null"`` for NaN) — as the number; any other value as it is (the reader notes it)."""
    if not isinstance(v, str):
        return v
    try:
        n = json.loads(v)
    except (ValueError, RecursionError):
        return v
    return n if n is None or (isinstance(n, (int, float)) and not isinstance(n, bool)) else v


def _model(obj: dict, attrs: dict | None) -> str | None:
    """An embedding observation's model: its ``model``, else its span's ``embedding.model_name``."""
    for v in (obj.get("model"), (attrs or {}).get("embedding.model_name")):
        if isinstance(v, str) and v.strip():
            return v
    return None


FORMAT = LogFormat(
    name="langfuse",
    label="Langfuse",
    kind="trace",
    detect=detect,
    keys=frozenset({"traceId", "parentObservationId", "observations"}),
    read_span=read_span,
    unit="observation",
    kind_of=lambda o: str(o.get("type") or "untyped").upper(),
)

"""Langfuse observations: ``type`` ``RETRIEVER``, or ``SPAN`` whose ``output`` holds documents
(a list, or ``{"documents": [...]}``; ``page_content``/``content``/``text``), give evidence —
query ``input`` (a string, or ``input.{query, input, question}``); trace ``traceId``; answer: a
``GENERATION`` observation's ``output`` (a string or ``output.content``). Run settings
(:mod:`.settings`): the retriever observation's ``metadata`` over its trace's root observation's
(no ``parentObservationId``) over the trace's own (a trace export's ``trace.metadata``, read by
:class:`~ragaudit_core.logs.records.FileReader` where it unwraps the export); in each, where the
observation was ingested from OpenTelemetry, its span's attributes (``metadata.attributes``) under
its own keys (:func:`~.settings.read_observation_settings`).

Detector: ``traceId`` with ``type``. A trace export (``{"trace": {...}, "observations": [...]}``)
is unwrapped into observations by :mod:`ragaudit_core.logs.documents`.
"""

from __future__ import annotations

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span
from ragaudit_core.logs.formats.settings import read_observation_settings
from ragaudit_core.logs.formats.spans import doc_fields, documents, json_maybe, query_of, text_of, trace_id

__all__ = ["FORMAT"]


def detect(obj: dict) -> bool:
    return "traceId" in obj and "type" in obj


def read_span(obj: dict) -> Span:
    trace = trace_id(obj.get("traceId"))
    kind = str(obj.get("type", "")).upper()
    if kind in ("RETRIEVER", "SPAN"):
        docs = documents(obj.get("output"))
        if docs is not None:
            query = query_of(obj.get("input"))
            if query is None:
                raise FormatError("retriever observation without an input query")
            return Span(
                trace, "retriever", query, *doc_fields(docs), settings=read_observation_settings(obj.get("metadata"))
            )
        if kind == "RETRIEVER":
            raise FormatError("retriever observation whose output holds no documents")
    # a root observation's settings: its trace's retriever observations read them
    settings = None if obj.get("parentObservationId") else read_observation_settings(obj.get("metadata"))
    if kind == "GENERATION":
        return Span(trace, "answer", answer=text_of(json_maybe(obj.get("output"))), settings=settings)
    return Span(trace, "other", settings=settings)


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

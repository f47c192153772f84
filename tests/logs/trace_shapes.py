"""Trace exports in the shapes real tools write them, for the run-settings and documents tests:
Langfuse observations ingested from OpenTelemetry (documents in their output, or only in the span's
attributes), an OpenInference EMBEDDING span, and Phoenix's span dataframe (as
``get_spans_dataframe`` returns it, and flattened by ``pd.json_normalize``)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from tests.logs.test_format_openinference import DOCS

EMBEDDER = "BAAI/bge-small-en-v1.5"

_RESOURCE = {
    "telemetry.sdk.language": "python",
    "telemetry.sdk.name": "opentelemetry",
    "telemetry.sdk.version": "1.34.1",
    "service.name": "rag",
}
_SCOPE = {"name": "openinference.instrumentation.langchain", "version": "0.1.41", "attributes": {}}


def _langfuse_stringified(attrs: dict[str, Any]) -> dict[str, str]:
    """Span attributes as Langfuse's OTel endpoint keeps them in ``metadata.attributes``: a text
    as it is, anything else as its JSON (``5`` → ``"5"``)."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in attrs.items()}


def _otel_metadata(attrs: dict[str, Any], own: dict[str, Any] | None, as_text: bool) -> dict:
    """An observation's ``metadata`` as Langfuse's OtelIngestionProcessor writes it:
    ``{**langfuse.observation.metadata.*, "attributes": <every span attribute, stringified>,
    "resourceAttributes": …, "scope": …}``; ``as_text``: those three nested objects as JSON text, as
    the ClickHouse-backed API returns them."""
    nested = {"attributes": _langfuse_stringified(attrs), "resourceAttributes": _RESOURCE, "scope": _SCOPE}
    if as_text:
        nested = {k: json.dumps(v) for k, v in nested.items()}
    return {**(own or {}), **nested}


def otel_observation(
    trace: str,
    oid: str,
    kind: str,
    parent: str | None,
    attrs: dict[str, Any],
    *,
    own: dict[str, Any] | None = None,
    as_text: bool = False,
    **keys: Any,
) -> dict:
    """One observation of an OTel span (``attrs``) as ``GET /api/public/observations`` gives it
    back: ``input``/``output`` from ``input.value``/``output.value`` unless ``keys`` says otherwise."""
    return {
        "id": f"{trace}-{oid}",
        "traceId": trace,
        "type": kind,
        "name": oid,
        "startTime": "2025-03-01T10:15:00.010Z",
        "endTime": "2025-03-01T10:15:01.010Z",
        "parentObservationId": parent and f"{trace}-{parent}",
        "input": attrs.get("input.value"),
        "output": attrs.get("output.value"),
        "metadata": _otel_metadata(attrs, own, as_text),
        "level": "DEFAULT",
        "environment": "default",
        **keys,
    }


def otel_observations(
    trace: str,
    question: str,
    root_attrs: dict[str, Any],
    retriever_attrs: dict[str, Any],
    *,
    root_own: dict[str, Any] | None = None,
    as_text: bool = False,
) -> list[dict]:
    """One trace of a LangChain app instrumented by OpenInference and exported over OTLP to
    Langfuse (:func:`otel_observation`; ``as_text``: the metadata's nested objects as JSON text).
    ``root_own``: keys the root span also set as ``langfuse.observation.metadata.*`` attributes."""
    docs = [{"id": i, "page_content": t, "metadata": {"source": f"{i}.txt"}, "type": "Document"} for i, t, _s in DOCS]
    output = json.dumps({"documents": docs})
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": question, "output.value": output}
    for n, (i, t, _s) in enumerate(DOCS):
        retriever |= {
            f"retrieval.documents.{n}.document.content": t,
            f"retrieval.documents.{n}.document.metadata": json.dumps({"source": f"{i}.txt"}),
        }
    root = {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": "The Moon."}
    root |= {f"langfuse.observation.metadata.{k}": v for k, v in (root_own or {}).items()}
    llm = {"openinference.span.kind": "LLM", "output.value": "The Moon.", "llm.model_name": "gpt-4o-mini"}
    return [
        otel_observation(trace, "root", "CHAIN", None, {**root, **root_attrs}, own=root_own, as_text=as_text),
        otel_observation(trace, "retrieve", "RETRIEVER", "root", {**retriever, **retriever_attrs}, as_text=as_text),
        otel_observation(trace, "llm", "GENERATION", "root", llm, as_text=as_text),
    ]


def otel_retrieval(
    trace: str,
    question: str,
    docs: list[tuple[str, Any, str, Any]],
    *,
    kind: str = "RETRIEVER",
    model: str | None = None,
    model_attribute: str | None = None,
    as_text: bool = False,
    **retriever_keys: Any,
) -> list[dict]:
    """One trace of a LlamaIndex query engine instrumented by OpenInference and exported over OTLP
    to Langfuse: its retrieved documents only in the RETRIEVER span's attributes (``docs``: index as
    written, id, text, score), which Langfuse keeps under ``metadata.attributes`` (each stringified,
    a score ``"0.91"``); the retriever's ``output`` None, its ``kind`` ``RETRIEVER`` (``SPAN``: as
    Langfuse typed it before observation types); ``retriever_keys`` replace its own keys (``input``,
    ``output``). An EMBEDDING observation under the retriever names the model in ``model`` (as
    Langfuse's ingestion or SDK sets it) and/or its ``embedding.model_name`` attribute."""
    retriever: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
    for n, i, t, s in docs:
        retriever |= {
            f"retrieval.documents.{n}.document.id": i,
            f"retrieval.documents.{n}.document.content": t,
            f"retrieval.documents.{n}.document.score": s,
            f"retrieval.documents.{n}.document.metadata": json.dumps({"file_name": f"{i}.txt"}),
        }
    embedding = {"openinference.span.kind": "EMBEDDING", "embedding.embeddings.0.embedding.text": question}
    if model_attribute is not None:
        embedding["embedding.model_name"] = model_attribute
    root = {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": "The Moon."}
    llm = {"openinference.span.kind": "LLM", "output.value": "The Moon.", "llm.model_name": "gpt-4o-mini"}
    return [
        otel_observation(trace, "root", "CHAIN", None, root, as_text=as_text),
        otel_observation(
            trace, "retrieve", kind, "root", retriever, as_text=as_text, **{"output": None, **retriever_keys}
        ),
        otel_observation(trace, "embed", "EMBEDDING", "retrieve", embedding, as_text=as_text, model=model),
        otel_observation(trace, "llm", "GENERATION", "root", llm, as_text=as_text, model="gpt-4o-mini"),
    ]


def embedding_span(trace: str, parent: str, model: str | None, question: str) -> dict:
    """An OpenInference EMBEDDING span as OpenTelemetry's console exporter writes it (LlamaIndex
    embeds the query under its retriever span): the model, the text and its vector (a list)."""
    attrs: dict[str, Any] = {
        "openinference.span.kind": "EMBEDDING",
        "embedding.embeddings.0.embedding.text": question,
        "embedding.embeddings.0.embedding.vector": [0.0123, -0.0456, 0.0789],
    }
    if model is not None:
        attrs["embedding.model_name"] = model
    return {
        "name": "OpenAIEmbedding._get_query_embedding" if model is None else "HuggingFaceEmbedding",
        "context": {"trace_id": trace, "span_id": f"{trace}-e", "trace_state": "[]"},
        "kind": "SpanKind.INTERNAL",
        "parent_id": parent,
        "start_time": "2025-03-01T10:15:00.100000Z",
        "end_time": "2025-03-01T10:15:00.200000Z",
        "status": {"status_code": "OK"},
        "attributes": attrs,
        "events": [],
        "links": [],
        "resource": {"attributes": {"service.name": "rag"}, "schema_url": ""},
    }


def phoenix_frame(traces: list[tuple[str, str, dict | None, dict | None]]) -> pd.DataFrame:
    """Phoenix's span dataframe as ``get_spans_dataframe()`` returns it: semantic-convention
    attributes as ``attributes.*`` columns, ``attributes.metadata`` the span's metadata decoded (a
    dict; NaN where a span has none). Per (trace, question, root metadata, retriever metadata): a
    root CHAIN, its RETRIEVER and an LLM span."""
    rows = []
    for trace, question, root_md, ret_md in traces:
        base = {"context.trace_id": trace, "attributes.input.value": question}
        docs = [{"document.id": i, "document.content": t, "document.score": s} for i, t, s in DOCS]
        rows += [
            {
                **base,
                "name": "query",
                "span_kind": "CHAIN",
                "parent_id": None,
                "context.span_id": f"{trace}-c",
                "attributes.openinference.span.kind": "CHAIN",
                "attributes.output.value": "The Moon.",
                "attributes.metadata": root_md,
            },
            {
                **base,
                "name": "retrieve",
                "span_kind": "RETRIEVER",
                "parent_id": f"{trace}-c",
                "context.span_id": f"{trace}-r",
                "attributes.openinference.span.kind": "RETRIEVER",
                "attributes.retrieval.documents": docs,
                "attributes.metadata": ret_md,
            },
            {
                **base,
                "name": "llm",
                "span_kind": "LLM",
                "parent_id": f"{trace}-c",
                "context.span_id": f"{trace}-l",
                "attributes.openinference.span.kind": "LLM",
                "attributes.output.value": "The Moon.",
            },
        ]
    return pd.DataFrame(rows)


def flattened(frame: pd.DataFrame, *, bare: bool = False) -> pd.DataFrame:
    """The dataframe with its metadata spread into columns of their own, as ``pd.json_normalize``
    of its records gives it (``attributes.metadata.similarity_top_k``, …); ``bare``: without the
    ``attributes.`` prefix (``metadata.similarity_top_k``: a frame of the attributes alone)."""
    out = pd.json_normalize(frame.to_dict("records"))
    if bare:
        out = out.rename(columns=lambda c: c.removeprefix("attributes."))
    return out

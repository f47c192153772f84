"""LangSmith runs: ``run_type == "retriever"`` gives evidence — query ``inputs.query`` (or
``inputs.input``, ``inputs.question``), documents ``outputs.documents[i].{page_content, metadata,
id}`` (``pageContent`` from LangChain.js: :data:`~.spans.DOC_TEXT_KEYS`); trace ``trace_id``;
answer: the root run's ``outputs.{answer, output, result}``, else the last LLM run's
``outputs.generations[0][0].text``. Run settings (:mod:`.settings`): the retriever run's
``extra.metadata`` over the root run's (LangChain passes a chain's metadata down to its runs, so
the retriever's usually holds the root's too). A retriever run without outputs that ended or
raised retrieved nothing (a record with no evidence, and a warning); one that had not ended (no
``end_time``, no ``error``: posted, never patched) is rejected.

Detector: ``run_type`` with ``inputs`` or ``outputs``. Batch payloads (``{"post", "patch"}``)
and run trees (``child_runs``) are unwrapped into runs by :mod:`ragaudit_core.logs.documents`.
"""

from __future__ import annotations

from typing import Any

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span
from ragaudit_core.logs.formats.settings import read_settings
from ragaudit_core.logs.formats.spans import absent, doc_fields, documents, json_maybe, query_of, text_of, trace_id

__all__ = ["FORMAT"]


def detect(obj: dict) -> bool:
    return "run_type" in obj and ("inputs" in obj or "outputs" in obj)


def read_span(obj: dict) -> Span:
    trace = trace_id(obj.get("trace_id"))
    rt = str(obj.get("run_type", "")).lower()
    outputs = json_maybe(obj.get("outputs")) or {}  # JSON text in a table's cell (to_csv, to_parquet)
    if rt == "retriever":
        docs = documents(outputs)
        query = query_of(obj.get("inputs"))
        if query is not None and absent(obj.get("outputs")):
            return Span(trace, "retriever", query, [], [], [], notes=[_returned_nothing(obj)], settings=_settings(obj))
        if docs is None or query is None:
            raise FormatError("retriever run without inputs.query or outputs.documents[].page_content (or pageContent)")
        return Span(trace, "retriever", query, *doc_fields(docs), settings=_settings(obj))
    root = not obj.get("parent_run_id") and not obj.get("parent_run_ids")
    if rt == "llm":
        gens = outputs.get("generations") if isinstance(outputs, dict) else None
        text = (
            gens[0][0].get("text")
            if gens
            and isinstance(gens, list)
            and isinstance(gens[0], list)
            and gens[0]
            and isinstance(gens[0][0], dict)
            else text_of(outputs)
        )
        return Span(trace, "answer", answer=text if isinstance(text, str) else None)
    settings = _settings(obj) if root else None  # the root run's: its trace's retriever runs read them
    if root and text_of(outputs) is not None:
        return Span(trace, "answer", answer=text_of(outputs), root=True, settings=settings)
    return Span(trace, "other", settings=settings)


def _returned_nothing(obj: dict) -> str:
    """The warning of a retriever run without outputs (null or absent) that ended or raised (its
    ``error``): a record that retrieved nothing, as an OpenInference span without documents is.
    A run with neither an end time nor an error (posted and never patched: a batch export cut
    short, a trace still running) is rejected: its outputs were not yet known."""
    error = obj.get("error")
    if not error and obj.get("end_time") is None:
        raise FormatError(
            "retriever run that had not ended when it was exported (no end_time, no outputs, no error): "
            "export the trace again once it has ended"
        )
    why = f" (error: {str(error)[:200]!r})" if error else ""
    return f"retriever run without outputs{why}: loaded as a record that retrieved nothing"


def _settings(obj: dict) -> dict[str, Any] | None:
    """The run settings a run's ``extra.metadata`` names (``extra`` may be JSON text: a table's cell)."""
    extra = obj.get("extra")
    if extra is None:
        return None
    extra = json_maybe(extra)
    return read_settings(extra.get("metadata")) if isinstance(extra, dict) else None


FORMAT = LogFormat(
    name="langsmith",
    label="LangSmith",
    kind="trace",
    detect=detect,
    keys=frozenset({"run_type", "inputs", "outputs", "dotted_order", "child_runs"}),
    read_span=read_span,
    unit="run",
    kind_of=lambda o: str(o.get("run_type") or "untyped").lower(),
)

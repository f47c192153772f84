"""MLflow traces: spans as MLflow writes them (``Span.to_dict``: ``trace_id``, ``span_id``,
``parent_span_id``, ``status``, ``end_time_unix_nano``; its older v2 dict: ``context``,
``parent_id``, ``status_code``, ``end_time``), each attribute value JSON-encoded as MLflow stores
it — ``mlflow.spanType``, ``mlflow.spanInputs``, ``mlflow.spanOutputs``,
``mlflow.traceRequestId``. A trace as ``mlflow traces get`` or ``Trace.to_json`` writes it
(``{"info": {...}, "data": {"spans": [...]}}``) is unwrapped into its spans by
:mod:`ragaudit_core.logs.shapes`.

Detector: an ``attributes`` object naming ``mlflow.spanType`` or ``mlflow.traceRequestId``.
Reader: a ``RETRIEVER`` span gives evidence — the query its inputs (a string, or
``query``/``input``/``question``), the documents its outputs (MLflow's and LangChain's
``Document``: ``page_content``, ``metadata``, ``id``), in order; the trace the request id. The
root span's outputs (no parent: the pipeline's) are the answer, over an ``LLM`` or ``CHAT_MODEL``
span's (a string, a chat completion's ``choices[0].message.content``, LangChain's
``generations[0][0].text``). A retriever whose outputs are null retrieved nothing when it ended or
failed (a record with no evidence, and a warning quoting its error); one still open (no end time)
is rejected. Run settings (:mod:`.settings`): the retriever span's own attributes (those that are
not ``mlflow.*``: ``span.set_attribute("top_k", 5)``) over the root span's; else ``--settings``.
"""

from __future__ import annotations

import json
from typing import Any

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span
from ragaudit_core.logs.formats.settings import read_settings
from ragaudit_core.logs.formats.spans import absent, doc_fields, documents, query_of, text_of, trace_id
from ragaudit_core.logs.jsontext import lone_surrogate

__all__ = ["FORMAT"]

_TYPE, _INPUTS, _OUTPUTS, _REQUEST = (
    "mlflow.spanType",
    "mlflow.spanInputs",
    "mlflow.spanOutputs",
    "mlflow.traceRequestId",
)
_LLMS = frozenset({"LLM", "CHAT_MODEL"})


def detect(obj: dict) -> bool:
    attrs = obj.get("attributes")
    return isinstance(attrs, dict) and (_TYPE in attrs or _REQUEST in attrs)


def _attr(obj: dict, key: str) -> Any:
    """An attribute's value: MLflow stores each as its JSON (a text ``'"RETRIEVER"'``); a value
    that is not JSON text is taken as it is."""
    v = obj["attributes"].get(key)
    if not isinstance(v, str):
        return v
    try:
        out = json.loads(v)
    except (ValueError, RecursionError):
        return v
    bad = lone_surrogate(out) if "\\u" in v else None
    if bad is not None:
        raise FormatError(f"{key} holds {bad}, half of a character (a text cut inside an emoji?): not text")
    return out


def _kind(obj: dict) -> str:
    try:
        v = _attr(obj, _TYPE) if isinstance(obj.get("attributes"), dict) else None
    except FormatError:
        v = None
    return str(v or "UNKNOWN").upper()


def read_span(obj: dict) -> Span:
    context: dict = obj["context"] if isinstance(obj.get("context"), dict) else {}
    trace = trace_id(_attr(obj, _REQUEST) or obj.get("trace_id") or context.get("trace_id"))
    kind = _kind(obj)
    outputs = _attr(obj, _OUTPUTS)
    if kind == "RETRIEVER":
        return _retriever(obj, trace, outputs)
    root = not (obj.get("parent_span_id") or obj.get("parent_id"))
    settings = _settings(obj) if root else None  # the root span's: its trace's retrievers read them
    if root and text_of(outputs) is not None:
        return Span(trace, "answer", answer=text_of(outputs), root=True, settings=settings)  # the pipeline's output
    if kind in _LLMS:
        return Span(trace, "answer", answer=_completion(outputs), settings=settings)
    return Span(trace, "other", settings=settings)


def _settings(obj: dict) -> dict[str, Any] | None:
    """The run settings a span's own attributes name (those MLflow does not write, ``mlflow.*``;
    set with ``span.set_attribute("top_k", 5)``): :mod:`.settings`' aliases."""
    own = {k: _attr(obj, k) for k in obj["attributes"] if not str(k).startswith("mlflow.")}
    return read_settings(own) if own else None


def _retriever(obj: dict, trace: str | None, outputs: Any) -> Span:
    query = query_of(_attr(obj, _INPUTS))
    if query is None or not query.strip():
        raise FormatError("RETRIEVER span without its query in mlflow.spanInputs (a text, or query/input/question)")
    if absent(outputs):
        return Span(trace, "retriever", query, [], [], [], notes=[_returned_nothing(obj)], settings=_settings(obj))
    docs = documents(outputs)
    if docs is None:
        raise FormatError(
            "RETRIEVER span whose mlflow.spanOutputs hold no documents (a list of objects with a text under "
            "page_content, pageContent, content or text)"
        )
    return Span(trace, "retriever", query, *doc_fields(docs), settings=_settings(obj))


def _returned_nothing(obj: dict) -> str:
    """The warning of a RETRIEVER span without outputs that ended or failed (its status message
    quoted); one without an end time is rejected: what it retrieved was not yet known."""
    status: dict = obj["status"] if isinstance(obj.get("status"), dict) else {}
    code = str(status.get("code") or obj.get("status_code") or "").upper()
    message = status.get("message") or obj.get("status_message")
    if "ERROR" not in code and not (obj.get("end_time_unix_nano") or obj.get("end_time")):
        raise FormatError(
            "RETRIEVER span that had not ended when it was exported (no end time, no outputs): "
            "export the trace again once it has ended"
        )
    why = (
        f" (status ERROR: {str(message)[:200]!r})"
        if "ERROR" in code and message
        else " (status ERROR)"
        if "ERROR" in code
        else ""
    )
    return f"RETRIEVER span without outputs{why}: loaded as a record that retrieved nothing"


def _completion(outputs: Any) -> str | None:
    """An LLM span's text: a string, a chat completion's first choice, LangChain's first generation."""
    if isinstance(outputs, dict):
        choices, gens = outputs.get("choices"), outputs.get("generations")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            return text_of(message) if isinstance(message, dict) else text_of(choices[0])
        if isinstance(gens, list) and gens and isinstance(gens[0], list) and gens[0] and isinstance(gens[0][0], dict):
            text = gens[0][0].get("text")
            return text if isinstance(text, str) else None
    return text_of(outputs)


FORMAT = LogFormat(
    name="mlflow",
    label="MLflow",
    kind="trace",
    detect=detect,
    read_span=read_span,
    unit="span",
    kind_of=_kind,
)

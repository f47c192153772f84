"""MLflow traces: spans as MLflow writes them (``Span.to_dict``: ``trace_id``, ``span_id``,
``parent_span_id``, ``status``, ``end_time_unix_nano``; its older v2 dict: ``context``,
``parent_id``, ``status_code``, ``end_time``), each attribute value JSON-encoded as MLflow stores
it — ``mlflow.spanType``, ``mlflow.spanInputs``, ``mlflow.spanOutputs``,
``mlflow.traceRequestId``. A trace as ``mlflow traces get`` or ``Trace.to_json`` writes it
(``{"info": {...}, "data": {"spans": [...]}}``), and a row of the DataFrame
``mlflow.search_traces()`` returns (saved with ``to_parquet``, ``to_csv`` or ``to_json``:
``trace_id`` or MLflow 2's ``request_id``, ``spans``, the ``trace`` as its JSON text, ``request``,
``response``, ``tags`` …), are unwrapped into their spans by :mod:`ragaudit_core.logs.shapes`
(:func:`search_traces_spans`).

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
from ragaudit_core.logs.formats.lists import data_string
from ragaudit_core.logs.formats.settings import read_settings
from ragaudit_core.logs.formats.spans import absent, doc_fields, documents, query_of, text_of, trace_id
from ragaudit_core.logs.jsontext import lone_surrogate

__all__ = ["FORMAT", "SEARCH_TRACES_ROW", "is_row", "search_traces_spans"]

_TYPE, _INPUTS, _OUTPUTS, _REQUEST = (
    "mlflow.spanType",
    "mlflow.spanInputs",
    "mlflow.spanOutputs",
    "mlflow.traceRequestId",
)
_LLMS = frozenset({"LLM", "CHAT_MODEL"})
SEARCH_TRACES_ROW = "an MLflow search_traces() row"
"""What :mod:`ragaudit_core.logs.shapes` calls a row of ``mlflow.search_traces()``' DataFrame."""
_ROW_COLUMNS = ("request", "response", "state", "status", "tags", "trace_metadata", "request_metadata")


def detect(obj: dict) -> bool:
    attrs = obj.get("attributes")
    return (isinstance(attrs, dict) and (_TYPE in attrs or _REQUEST in attrs)) or is_row(obj)


def is_row(obj: dict) -> bool:
    """A row of ``mlflow.search_traces()``' DataFrame: its id column (``trace_id``; MLflow 2:
    ``request_id``), one more of its columns, and a ``spans`` column holding a list (a CSV cell: a
    list's text) or a ``trace`` column holding a trace (``{"info", "data"}``, or its JSON text); not
    a span. Another format's record with such keys (a LangSmith run's null ``trace``) is not one."""
    if not ("trace_id" in obj or "request_id" in obj) or "attributes" in obj:
        return False
    if not any(k in obj for k in _ROW_COLUMNS):
        return False
    spans, trace = obj.get("spans"), obj.get("trace")
    if isinstance(spans, list) or (isinstance(spans, str) and spans.lstrip().startswith("[")):
        return True
    if isinstance(trace, dict):
        return "data" in trace and "info" in trace
    return isinstance(trace, str) and trace.lstrip().startswith("{") and '"data"' in trace


def search_traces_spans(obj: Any) -> list | None:
    """The spans of a row of ``mlflow.search_traces()``' DataFrame — its ``spans`` column (a list
    of span dicts; a CSV cell holds the list's JSON or Python literal, read as data by
    :func:`~.lists.data_string`), else the spans of its ``trace`` column (MLflow 3 writes the trace
    as its JSON text, ``{"info", "data": {"spans"}}``; MLflow 2's Trace object printed as
    ``Trace(request_id=…)`` holds none) — ``[]`` when the row has no spans (searched with
    ``include_spans=False``); None for anything that is not such a row. Raises
    :class:`FormatError` when neither column can be read (the row is rejected with the reason)."""
    if not isinstance(obj, dict) or not is_row(obj):
        return None
    why = None
    spans = obj.get("spans")
    if isinstance(spans, str):
        try:
            spans = data_string(spans, "its spans cell")
        except FormatError as e:
            why, spans = str(e), None
    if isinstance(spans, list) and spans:
        return spans
    trace = obj.get("trace")
    if isinstance(trace, str) and trace.lstrip().startswith("{"):
        try:
            trace = data_string(trace, "its trace cell")
        except FormatError as e:
            why = why or str(e)
    data = trace.get("data") if isinstance(trace, dict) else None
    inner = data.get("spans") if isinstance(data, dict) else None
    if isinstance(inner, list) and inner:
        return inner
    if why is not None:
        raise FormatError(f"{SEARCH_TRACES_ROW} whose spans cannot be read: {why}")
    if spans in (None, []) and inner in (None, []):
        return []
    raise FormatError(f"{SEARCH_TRACES_ROW} whose spans column holds no list of spans (got {type(spans).__name__})")


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
    if is_row(obj):  # (a row :mod:`..shapes` did not unwrap: the reason its spans were not read)
        search_traces_spans(obj)
        raise FormatError(f"{SEARCH_TRACES_ROW} inside containers nested too deep to read")
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

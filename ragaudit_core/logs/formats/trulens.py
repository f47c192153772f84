"""TruLens traces: spans as TruLens 1.x writes them with OpenTelemetry, under its semantic
conventions (``trulens.otel.semconv``: ``ai.observability.span_type``,
``ai.observability.retrieval.query_text``, ``ai.observability.retrieval.retrieved_contexts``,
``ai.observability.record_root.output`` …), in either shape a user gets them in:

* an OpenTelemetry span — ``{"name", "context": {"trace_id", "span_id"}, "parent_id",
  "attributes": {...}}`` as the SDK's ``span.to_json()`` and the console exporter print it, and
  each span of an OTLP JSON export (:mod:`.otlp` turns those into this shape);
* a row of TruLens' event table — ``{"event_id", "record": {"name", "kind", "parent_span_id",
  "status"}, "record_attributes": {...}, "record_type": "SPAN", "resource_attributes", "trace":
  {"trace_id", "span_id", "parent_id"}, …}`` as ``session.connector.get_events()`` returns it (a
  DataFrame its user saves), and as Snowflake's AI Observability event table holds it (the same
  columns in upper case); in a CSV each object column is a cell of JSON (or the Python literal
  pandas writes), read as data.

Detector: a ``attributes`` (or ``record_attributes``) object naming ``ai.observability.span_type``.
Reader: a ``retrieval`` span gives evidence — its ``query_text`` the query, its
``retrieved_contexts`` (a list of texts) the passages, in order (TruLens logs no document ids: each
passage's id is its text's hash, or a stored run's id for the same text), its ``num_contexts`` (the
contexts asked for) the run's top-k. A ``record_root`` span's ``record_root.output`` is the answer
(the app's output, as the RAG triad's groundedness reads it). Spans are joined per record —
``ai.observability.record_id``, every span of one app call carries it — else per trace id. A
retrieval span without ``retrieved_contexts`` retrieved nothing (a record with no evidence, and a
warning quoting its error when it failed); one without a query is rejected with the reason.
Evaluation spans (``eval_root``, ``eval``: a feedback function's judge call, which repeats the
contexts as its arguments) carry no evidence.
"""

from __future__ import annotations

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span, check_id
from ragaudit_core.logs.formats.lists import data_string, text_list
from ragaudit_core.logs.formats.settings import read_settings
from ragaudit_core.logs.formats.spans import absent, text_of, trace_id

__all__ = ["FORMAT", "SPAN_TYPE"]

_NS = "ai.observability."
SPAN_TYPE = _NS + "span_type"
"""The attribute that marks a TruLens span (``retrieval``, ``record_root``, ``generation`` …)."""
_RECORD_ID = _NS + "record_id"
_QUERY, _CONTEXTS, _NUM = (_NS + "retrieval." + k for k in ("query_text", "retrieved_contexts", "num_contexts"))
_OUTPUT = _NS + "record_root.output"
_ATTRIBUTE_KEYS = ("attributes", "record_attributes", "RECORD_ATTRIBUTES")


def _marked(obj: dict) -> str | None:
    """The key of the span's attributes — ``attributes`` (an OpenTelemetry span) or
    ``record_attributes`` (an event-table row; in a CSV, a cell of their text) — when they name a
    TruLens span type; None otherwise."""
    for key in _ATTRIBUTE_KEYS:
        v = obj.get(key)
        if (isinstance(v, dict) and SPAN_TYPE in v) or (isinstance(v, str) and SPAN_TYPE in v):
            return key
    return None


def _attributes(obj: dict) -> dict:
    """The span's attributes (a cell's text read as data, bounded: :func:`~.lists.data_string`);
    raises :class:`FormatError` with the reason when they cannot be read."""
    key = _marked(obj)
    v = obj.get(key) if key is not None else None
    if isinstance(v, str):
        v = data_string(v, key or "attributes")
    if not isinstance(v, dict) or SPAN_TYPE not in v:
        raise FormatError(f"its attributes do not name {SPAN_TYPE}")
    return v


def _legacy(obj: dict) -> bool:
    """A record of TruLens before its OpenTelemetry tracing: a row of ``get_records_and_feedback()``
    or of its ``records`` table (``record_json`` beside ``app_id`` or ``record_id``)."""
    return "record_json" in obj and ("app_id" in obj or "record_id" in obj)


LEGACY = (
    "a TruLens record from before its OpenTelemetry tracing (record_json): which of its calls retrieved "
    "what is not written in it the same way twice, so it is not read; run the app with "
    "TRULENS_OTEL_TRACING=1 and save its spans (session.connector.get_events(), or an OTLP export)"
)
"""Why such a record is rejected (once per record, the same words each time)."""


def detect(obj: dict) -> bool:
    return _marked(obj) is not None or _legacy(obj)


def _kind(obj: dict) -> str:
    """A span's type, for messages ("3 TruLens spans (eval 1, generation 1, …)")."""
    if _marked(obj) is None and _legacy(obj):
        return "record (before OpenTelemetry)"
    try:
        return _type_of(_attributes(obj))
    except FormatError:
        return "unknown"


def _type_of(attrs: dict) -> str:
    v = attrs.get(SPAN_TYPE)
    return str(v).lower() if isinstance(v, str) and v.strip() else "unknown"


def _member(obj: dict, key: str) -> dict:
    """An object column of the span (``context``, ``trace``, ``record``; upper case in Snowflake's
    table; a CSV cell of JSON read as data), or ``{}``."""
    v = obj.get(key, obj.get(key.upper()))
    if isinstance(v, str) and v.lstrip().startswith("{"):
        try:
            v = data_string(v, key)
        except FormatError:
            return {}
    return v if isinstance(v, dict) else {}


def _join_key(obj: dict, attrs: dict) -> str | None:
    """What joins a record's spans: its TruLens record id, else its OpenTelemetry trace id (an id
    that is not a text or an integer rejects the span: its answer could not be joined)."""
    record = check_id(attrs.get(_RECORD_ID), _RECORD_ID)
    if record is not None and str(record).strip():
        return str(record)
    return trace_id(_member(obj, "context").get("trace_id") or _member(obj, "trace").get("trace_id"))


def read_span(obj: dict) -> Span:
    if _marked(obj) is None and _legacy(obj):
        raise FormatError(LEGACY)
    attrs = _attributes(obj)  # (a CSV cell's text parsed once per span)
    key, kind = _join_key(obj, attrs), _type_of(attrs)
    if kind == "retrieval":
        return _retrieval(obj, attrs, key)
    if kind == "record_root":
        answer = text_of(attrs.get(_OUTPUT))
        return Span(key, "answer", answer=answer, root=True) if answer is not None else Span(key, "other")
    return Span(key, "other")


def _retrieval(obj: dict, attrs: dict, key: str | None) -> Span:
    query = attrs.get(_QUERY)
    if not isinstance(query, str) or not query.strip():
        raise FormatError(f"retrieval span without its query ({_QUERY}, a text)")
    n = attrs.get(_NUM)
    settings = read_settings({"top_k": n}) if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None
    contexts = attrs.get(_CONTEXTS)
    if absent(contexts):
        return Span(key, "retriever", query, [], [], [], notes=[_returned_nothing(obj)], settings=settings)
    texts = text_list(contexts, _CONTEXTS)
    notes = [] if texts else [f"retrieval span whose {_CONTEXTS} is empty: loaded as a record that retrieved nothing"]
    return Span(
        key, "retriever", query, texts, [None] * len(texts), [None] * len(texts), notes=notes, settings=settings
    )


def _returned_nothing(obj: dict) -> str:
    """The warning of a retrieval span without contexts (its error quoted when it failed)."""
    status = obj.get("status", _member(obj, "record").get("status"))
    code = status.get("status_code", status.get("code")) if isinstance(status, dict) else status
    message = status.get("description", status.get("message")) if isinstance(status, dict) else None
    failed = "ERROR" in str(code or "").upper() or code in (2, "2")  # (OTLP's STATUS_CODE_ERROR is 2)
    why = f" (status ERROR: {str(message)[:200]!r})" if failed and message else " (status ERROR)" if failed else ""
    return f"retrieval span without {_CONTEXTS}{why}: loaded as a record that retrieved nothing"


FORMAT = LogFormat(
    name="trulens",
    label="TruLens",
    kind="trace",
    detect=detect,
    keys=frozenset({"record_attributes", "resource_attributes"}),
    read_span=read_span,
    unit="span",
    kind_of=_kind,
)

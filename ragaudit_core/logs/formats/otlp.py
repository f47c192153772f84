"""OTLP JSON trace exports — OpenTelemetry's protocol written as JSON, as a collector's file
exporter writes it (one export per line) or as one document: ``{"resourceSpans": [{"resource":
…, "scopeSpans": [{"scope": …, "spans": [...]}]}]}``. An export is a container
(:func:`ragaudit_core.logs.documents.unwrap`): each of its spans is one record, read as an
OpenInference span, since OpenInference's instrumentations write their conventions as OTel
attributes (``openinference.span.kind``, ``input.value``, ``retrieval.documents.0.document.id``):

``{"traceId", "spanId", "parentSpanId", "name", "attributes": [{"key", "value": {…}}]}`` becomes
``{"name", "context": {"trace_id", "span_id"}, "parent_id", "attributes": {key: value}}``, each
value read from its ``stringValue``, ``boolValue``, ``intValue`` (a decimal string in OTLP JSON),
``doubleValue``, ``bytesValue``, ``arrayValue.values`` (a list) or ``kvlistValue.values`` (an
object). A span without ``openinference.span.kind`` (an HTTP or database span of the same
service) is a span of kind UNKNOWN, as Phoenix shows it: counted as carrying no evidence — unless
TruLens' ``ai.observability.span_type`` marks it (read by :mod:`.trulens`). The
resource's and scope's attributes are not read. Nesting deeper than :data:`MAX_DEPTH` is kept as
it is written.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_DEPTH", "is_export", "spans"]

MAX_DEPTH = 32
"""Array and key-list values nested deeper than this are kept as written (not converted)."""


def is_export(obj: Any) -> bool:
    """An OTLP JSON trace export (``resourceSpans`` a list)."""
    return isinstance(obj, dict) and isinstance(obj.get("resourceSpans"), list)


def spans(obj: dict) -> list:
    """The export's spans as OpenInference spans, in order (an element that is not an object is
    kept as it is: the ingest rejects it as not a record)."""
    out: list = []
    for rs in obj["resourceSpans"]:
        for ss in _items(rs, "scopeSpans") + _items(rs, "instrumentationLibrarySpans"):  # (the latter: OTLP < 0.15)
            out.extend(_span(s) if isinstance(s, dict) else s for s in _items(ss, "spans"))
    return out


def _items(v: Any, key: str) -> list:
    got = v.get(key) if isinstance(v, dict) else None
    return got if isinstance(got, list) else []


def _span(s: dict) -> dict:
    attrs = _attributes(s.get("attributes"), 0)
    span: dict[str, Any] = {
        "name": s.get("name"),
        "context": {"trace_id": s.get("traceId"), "span_id": s.get("spanId")},
        "parent_id": s.get("parentSpanId") or None,
        "attributes": attrs,
    }
    if isinstance(s.get("status"), dict):  # (``code`` 2: an error; its ``message`` is quoted where a reader words one)
        span["status"] = s["status"]
    if "openinference.span.kind" not in attrs and "ai.observability.span_type" not in attrs:
        span["span_kind"] = "UNKNOWN"  # (a TruLens span, marked by its span type, is TruLens': :mod:`.trulens`)
    return span


def _attributes(v: Any, depth: int) -> dict:
    """A list of ``{"key", "value"}`` as an object (a later key wins, as in OTel)."""
    out: dict[str, Any] = {}
    for kv in v if isinstance(v, list) else []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _value(kv.get("value"), depth + 1)
    return out


def _value(v: Any, depth: int) -> Any:
    """One ``AnyValue`` as a plain value (an object of another shape, or one nested past
    :data:`MAX_DEPTH`, as it is)."""
    if not isinstance(v, dict) or depth > MAX_DEPTH:
        return v
    for key in ("stringValue", "boolValue", "bytesValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        x = v["intValue"]
        digits = x.removeprefix("-") if isinstance(x, str) else ""
        return int(x) if digits.isascii() and digits.isdecimal() and len(digits) <= 40 else x
    if "doubleValue" in v:
        return _double(v["doubleValue"])
    if "arrayValue" in v:
        return [_value(x, depth + 1) for x in _items(v["arrayValue"], "values")]
    if "kvlistValue" in v:
        kv = v["kvlistValue"]
        return _attributes(kv.get("values") if isinstance(kv, dict) else None, depth)
    return v or None  # {}: a value left empty


def _double(x: Any) -> Any:
    """A double (OTLP JSON may write one as a string, ``"NaN"`` and ``"Infinity"`` included): a
    number, None where it is not finite (as NaN is read everywhere)."""
    if isinstance(x, str):
        try:
            x = float(x)
        except ValueError:
            return x
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x

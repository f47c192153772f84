"""OTLP JSON trace exports (``{"resourceSpans": [...]}``, what OpenTelemetry collectors and
Phoenix's OTel pipeline write) load as the OpenInference spans they hold: one document, or one
export per JSON Lines line; spans of other instrumentations are counted without evidence."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import otlp
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl


def _attr(key: str, value) -> dict:
    if isinstance(value, bool):
        v: dict = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}  # OTLP JSON writes 64-bit integers as decimal strings
    elif isinstance(value, float):
        v = {"doubleValue": value}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [_attr("", x)["value"] for x in value]}}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


def _span(trace: str, span_id: str, attrs: dict, parent: str = "") -> dict:
    return {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": "span",
        "kind": 1,
        "attributes": [_attr(k, v) for k, v in attrs.items()],
        "status": {},
    }


def _export(i: int) -> dict:
    trace = f"{i:032x}"
    retriever = {"openinference.span.kind": "RETRIEVER", "input.value": f"question {i}", "tag.tags": ["a", "b"]}
    for n in range(2):
        retriever |= {
            f"retrieval.documents.{n}.document.id": f"d{i}{n}",
            f"retrieval.documents.{n}.document.content": f"text {i} {n}",
            f"retrieval.documents.{n}.document.score": 0.5 + n,
        }
    spans = [
        _span(trace, "r", retriever, parent="c"),
        _span(
            trace, "l", {"openinference.span.kind": "LLM", "output.value": f"answer {i}", "llm.token_count.total": 7}
        ),
        _span(trace, "h", {"http.method": "GET", "http.status_code": 200}),  # not OpenInference's
    ]
    resource = {"attributes": [_attr("service.name", "rag")]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": {"name": "oi"}, "spans": spans}]}]}


def _ingest(path):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions())
    ev = con.execute("SELECT query_id, doc_id, text, score FROM evidence ORDER BY doc_id").fetchall()
    recs = con.execute("SELECT query, answer, n_evidence FROM records ORDER BY query").fetchall()
    return rep, ev, recs


def test_an_otlp_document_loads_its_retriever_spans_with_their_answers_and_scores(tmp_path):
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(_export(0), indent=2), encoding="utf-8")
    rep, ev, recs = _ingest(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (1, 2, 0)
    f = rep.files[0]
    assert (f.n_lines, f.n_skipped, f.formats_read()) == (3, 2, "OpenInference")
    assert [(d, t, s) for _q, d, t, s in ev] == [("d00", "text 0 0", 0.5), ("d01", "text 0 1", 1.5)]
    assert recs == [("question 0", "answer 0", 2)]


def test_otlp_exports_one_per_line_load_every_trace(tmp_path):
    rep, _ev, recs = _ingest(write_jsonl(tmp_path / "otlp.jsonl", [_export(i) for i in range(3)]))
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (3, 6, 0)
    assert recs == [(f"question {i}", f"answer {i}", 2) for i in range(3)]
    assert rep.files[0].n_lines == 9 and rep.files[0].n_skipped == 6


def test_an_otlp_export_without_a_retriever_is_refused_in_one_sentence(tmp_path):
    export = _export(0)
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    del spans[0]
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions())
    [issue] = rep.rejected
    assert issue.message == "an OTLP trace export with 2 spans (LLM 1, UNKNOWN 1) and no retriever: nothing to audit"
    assert rep.n_records == 0 and rep.files[0].status == "unreadable"


def test_attribute_values_are_read_as_otlp_writes_them():
    values = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "-12"}},
        {"key": "big", "value": {"intValue": "1" * 50}},  # kept as written past 40 digits
        {"key": "d", "value": {"doubleValue": "NaN"}},
        {"key": "e", "value": {"doubleValue": "2.5"}},
        {"key": "b", "value": {"boolValue": False}},
        {"key": "a", "value": {"arrayValue": {"values": [{"intValue": 1}, {"stringValue": "y"}]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}},
        {"key": "empty", "value": {}},
        {"key": 3, "value": {"stringValue": "no key"}},
    ]
    (span,) = otlp.spans({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "t", "attributes": values}]}]}]})
    assert span["attributes"] == {
        "s": "x",
        "i": -12,
        "big": "1" * 50,
        "d": None,
        "e": 2.5,
        "b": False,
        "a": [1, "y"],
        "kv": {"k": "v"},
        "empty": None,
    }
    assert span["context"] == {"trace_id": "t", "span_id": None} and span["span_kind"] == "UNKNOWN"
    deep: dict = {"stringValue": "bottom"}
    for _ in range(otlp.MAX_DEPTH + 5):
        deep = {"arrayValue": {"values": [deep]}}
    (span,) = otlp.spans(
        {"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [{"key": "x", "value": deep}]}]}]}]}
    )
    v = span["attributes"]["x"]
    for _ in range(otlp.MAX_DEPTH):
        v = v[0]
    assert isinstance(v, dict) and "arrayValue" in v  # kept as written past the depth


def _state(path, **opts):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    return (
        con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY ALL").fetchall(),
        con.execute("SELECT query_id, position, doc_id, text, score FROM evidence ORDER BY ALL").fetchall(),
        [(i.line_no, i.message) for i in rep.rejected],
        [(f.status, f.n_lines, f.n_loaded, f.n_skipped) for f in rep.files],
    )


def test_an_otlp_document_past_the_limit_is_read_one_resource_at_a_time(tmp_path):
    """A collector's export of several services past --max-line-bytes (each resource under it)
    loads what it loads read whole; a resource past the limit costs only itself. It was refused
    whole ("JSON value is longer than the … limit")."""
    resources = [_export(i)["resourceSpans"][0] for i in range(10)]
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps({"resourceSpans": resources}, indent=2), encoding="utf-8")
    whole = _state(path)
    limit = 2 * max(len(json.dumps(r, indent=2)) for r in resources)  # (indented deeper in the document)
    streamed = _state(path, max_line_bytes=limit)
    assert path.stat().st_size > 3 * limit
    assert whole[0] and whole[3] == [("loaded", 30, 10, 20)]
    assert streamed == whole
    # one resource made longer than the limit: only its trace is lost, with the reason
    resources[2]["scopeSpans"][0]["spans"][2]["attributes"].append(_attr("note", "x" * limit))
    path.write_text(json.dumps({"resourceSpans": resources}, indent=2), encoding="utf-8")
    records, _ev, rejected, _files = _state(path, max_line_bytes=limit)
    assert sorted(q for _r, _q, q, _a, _n in records) == sorted(f"question {i}" for i in range(10) if i != 2)
    assert [m for _ln, m in rejected] == [
        f"an OTLP resource (one service's spans) longer than the {limit:,}-byte limit is read whole; raise "
        "--max-line-bytes, or have the exporter write fewer spans per export"
    ]
    # an export with no resource, past the limit, is an empty container (it says so)
    path.write_text(json.dumps({"resourceSpans": [], "pad": "x" * 3000}, indent=1), encoding="utf-8")
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(max_line_bytes=1000))
    assert rep.n_records == 0 and any("an OTLP trace export with no spans" in w.message for w in rep.warnings)


def test_an_otlp_export_past_the_limit_is_named_as_one_read_whole_not_a_record_to_split(tmp_path):
    doc = tmp_path / "otlp.json"
    doc.write_text(json.dumps(_export(0), indent=2), encoding="utf-8")
    line = json.dumps(_export(1))
    lines = tmp_path / "otlp.jsonl"
    lines.write_text(line + "\n", encoding="utf-8")
    con = store.connect(":memory:")
    rep = ingest_paths(con, [doc, lines], IngestOptions(max_line_bytes=1000))
    assert rep.n_records == 0
    assert [(i.path.rsplit("/", 1)[1], i.line_no, i.message) for i in rep.rejected] == [
        (
            "otlp.json",
            1,
            "an OTLP resource (one service's spans) longer than the 1,000-byte limit is read whole; raise "
            "--max-line-bytes, or have the exporter write fewer spans per export",
        ),
        (
            "otlp.jsonl",
            1,
            f"line is longer than the 1,000-byte limit (at least {len(line) + 1:,} bytes); it is an OTLP trace "
            "export, read whole: raise --max-line-bytes, or have the exporter write fewer spans per export",
        ),
    ]

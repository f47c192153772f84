"""TruLens traces (OpenTelemetry spans under TruLens' semantic conventions): as the SDK and the
console exporter print spans, as an OTLP JSON export, and as rows of TruLens' event table
(``connector.get_events()`` saved as JSON Lines, Parquet or CSV) — each loads to the rows the
native log stores for the same retrieval; the record root's output is the answer."""

from __future__ import annotations

import json

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

Q = "What causes tides?"
CONTEXTS = ["The Moon's gravity pulls the oceans.", "Tides follow the lunar cycle."]
NS = "ai.observability."


def _attrs(record: str, kind: str, **more) -> dict:
    return {NS + "app_name": "rag", NS + "app_version": "v1", NS + "record_id": record, NS + "span_type": kind} | {
        NS + k: v for k, v in more.items()
    }


def spans(record="rec-1", contexts=CONTEXTS) -> list[tuple[str, str | None, dict]]:
    """(span id, parent id, attributes) of one app call: the record root, its retrieval, its
    generation, and a feedback function's evaluation that repeats the contexts as its arguments."""
    retrieval = {"retrieval.query_text": Q, "retrieval.num_contexts": 4}
    if contexts is not None:
        retrieval["retrieval.retrieved_contexts"] = contexts
    return [
        ("s0", None, _attrs(record, "record_root", **{"record_root.input": Q, "record_root.output": "The Moon."})),
        ("s1", "s0", _attrs(record, "retrieval", **retrieval)),
        ("s2", "s0", _attrs(record, "generation", **{"call.return": "the moon (draft)"})),
        ("e0", None, {NS + "span_type": "eval", NS + "eval.args": {NS + "retrieval.retrieved_contexts": CONTEXTS}}),
    ]


def otel(record="rec-1", **kw) -> list[dict]:
    """The spans as ``span.to_json()`` and the console exporter print them."""
    trace = "0x" + record.encode().hex().ljust(32, "0")
    return [
        {"name": f"span {sid}", "context": {"trace_id": trace, "span_id": sid, "trace_state": "[]"}}
        | {"kind": "SpanKind.INTERNAL", "parent_id": parent, "start_time": "2026-11-27T10:00:00Z"}
        | {"end_time": "2026-11-27T10:00:01Z", "status": {"status_code": "UNSET"}, "attributes": attrs}
        | {"events": [], "links": [], "resource": {"attributes": {"service.name": "trulens"}}}
        for sid, parent, attrs in spans(record, **kw)
    ]


def events(record="rec-1", **kw) -> list[dict]:
    """The spans as rows of TruLens' event table (``connector.get_events()``)."""
    return [
        {"event_id": f"{record}-{sid}", "record": {"kind": 1, "name": f"span {sid}", "parent_span_id": parent or ""}}
        | {"record_attributes": attrs, "record_type": "SPAN", "resource_attributes": {"service.name": "trulens"}}
        | {"start_timestamp": "2026-11-27 10:00:00", "timestamp": "2026-11-27 10:00:01"}
        | {"trace": {"trace_id": f"tr-{record}", "span_id": sid, "parent_id": parent or ""}}
        for sid, parent, attrs in spans(record, **kw)
    ]


def otlp(record="rec-1") -> dict:
    """The spans as one OTLP JSON export (``{"resourceSpans": …}``, typed attribute values)."""

    def value(v):
        if isinstance(v, list):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        if isinstance(v, dict):
            return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}

    out = [
        {"traceId": record.encode().hex().ljust(32, "0"), "spanId": sid, "parentSpanId": parent or "", "name": sid}
        | {"attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()]}
        for sid, parent, attrs in spans(record)
    ]
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": out}]}]}


def _stored(*paths):
    con = store.connect(":memory:")
    rep = ingest_paths(con, list(paths))
    ev = con.execute("SELECT run_id, query_id, position, doc_id, text FROM evidence ORDER BY all").fetchall()
    recs = con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY all").fetchall()
    return rep, ev, recs, con


def _native(tmp_path):
    """The same retrieval in our own format, its ids the texts' hashes (TruLens logs none)."""
    ev = [{"doc_id": "text:" + span_hash(t)[:16], "text": t} for t in CONTEXTS]
    rec = {"run_id": "rag", "query_id": query_id_for(Q), "query": Q, "answer": "The Moon.", "evidence": ev}
    return _stored(write_jsonl(tmp_path / "native" / "rag.jsonl", [rec]))


def test_spans_printed_exported_or_stored_as_events_equal_the_native_log(tmp_path):
    """The same app call as the console exporter's spans (JSON Lines, and back-to-back pretty
    objects), an OTLP export, and event-table rows saved as JSON Lines, Parquet and CSV: the
    native log's rows, its answer the record root's output, its top-k the contexts asked for; the
    generation and the evaluation span (which repeats the contexts) load nothing."""
    import pandas as pd

    _, want_ev, want_recs, _ = _native(tmp_path)
    assert len(want_ev) == 2 and want_recs[0][3] == "The Moon."
    console = tmp_path / "console" / "rag.log"
    console.parent.mkdir()
    console.write_text("\n".join(json.dumps(s, indent=4) for s in otel()))
    export = tmp_path / "otlp" / "rag.json"
    export.parent.mkdir()
    export.write_text(json.dumps(otlp()))
    paths = [write_jsonl(tmp_path / "sdk" / "rag.jsonl", otel()[::-1]), console, export]
    paths.append(write_jsonl(tmp_path / "events" / "rag.jsonl", events()))
    for name, save in (("rag.parquet", "to_parquet"), ("rag.csv", "to_csv")):
        (tmp_path / name[4:]).mkdir()
        getattr(pd.DataFrame(events()), save)(tmp_path / name[4:] / name, **({"index": False} if "csv" in name else {}))
        paths.append(tmp_path / name[4:] / name)
    for path in paths:
        rep, ev, recs, con = _stored(path)
        assert (rep.n_rejected, ev, recs) == (0, want_ev, want_recs), path
        assert rep.files[0].formats["TruLens"] == 4, path
        assert con.execute("SELECT top_k FROM runs").fetchall() == [(4,)], path


def test_a_retrieval_without_contexts_and_one_without_a_query(tmp_path):
    """No ``retrieved_contexts``: a record that retrieved nothing, with a warning (its error quoted
    where the span failed). No ``query_text``: rejected with the reason; the other record loads."""
    failed = otel(contexts=None)
    failed[1]["status"] = {"status_code": "ERROR", "description": "index timed out"}
    rep, ev, recs, _ = _stored(write_jsonl(tmp_path / "failed" / "rag.jsonl", failed))
    assert (rep.n_rejected, ev, recs) == (0, [], [("rag", query_id_for(Q), Q, "The Moon.", 0)])
    assert [w.message for w in rep.warnings if w.code == "trulens-mapping"] == [
        "retrieval span without ai.observability.retrieval.retrieved_contexts (status ERROR: 'index timed out'): "
        "loaded as a record that retrieved nothing"
    ]
    empty = otel(contexts=[])  # an empty list: said as OpenInference and Langfuse say it (it was silent)
    rep, ev, recs, _ = _stored(write_jsonl(tmp_path / "empty" / "rag.jsonl", empty))
    assert (rep.n_rejected, ev, [r[4] for r in recs]) == (0, [], [0])
    assert [w.message for w in rep.warnings if w.code == "trulens-mapping"] == [
        "retrieval span whose ai.observability.retrieval.retrieved_contexts is empty: loaded as a record that "
        "retrieved nothing"
    ]
    rows = events("rec-1") + events("rec-2")
    del rows[1]["record_attributes"][NS + "retrieval.query_text"]
    rep, ev, recs, _ = _stored(write_jsonl(tmp_path / "noquery" / "rag.jsonl", rows))
    assert [(r.line_no, r.message) for r in rep.rejected] == [
        (2, "TruLens span: retrieval span without its query (ai.observability.retrieval.query_text, a text)")
    ]
    assert [r[3] for r in recs] == ["The Moon."] and len(ev) == 2


@pytest.mark.parametrize("bad", [[1, 2], "two passages", [{"text": "x"}]])
def test_contexts_that_are_not_a_list_of_texts_reject_the_span(tmp_path, bad):
    rows = otel()
    rows[1]["attributes"][NS + "retrieval.retrieved_contexts"] = bad
    rep, _ev, recs, _ = _stored(write_jsonl(tmp_path / "rag.jsonl", rows))
    assert recs == [] and "ai.observability.retrieval.retrieved_contexts" in rep.rejected[0].message


def test_a_trace_without_a_retrieval_is_refused_in_one_sentence(tmp_path):
    rows = [r for r in otel() if r["attributes"][NS + "span_type"] != "retrieval"]
    rep, _ev, recs, _ = _stored(write_jsonl(tmp_path / "chat.jsonl", rows))
    assert recs == [] and [r.message for r in rep.rejected] == [
        "3 TruLens spans (eval 1, generation 1, record_root 1) and no retriever: nothing to audit"
    ]


def test_the_workers_store_what_the_process_stores(tmp_path, monkeypatch):
    """Event rows of 30 app calls (one retrieval that failed) read by two worker processes in
    ranges of ~3 KB: the same rows and warnings as in the process."""
    from tests.logs.test_streaming import force_pool

    rows = []
    for i in range(30):
        rows += events(f"rec-{i}", **({"contexts": None} if i == 7 else {}))
    for i, r in enumerate(rows):  # 30 questions
        attrs = r["record_attributes"]
        if NS + "retrieval.query_text" in attrs:
            attrs[NS + "retrieval.query_text"] = f"{Q} ({i})"
    path = write_jsonl(tmp_path / "rag.jsonl", rows)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    rep, *expected, _ = _stored(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (30, 58, 0)
    seen = force_pool(monkeypatch, 3_000)
    rep2, *got, _ = _stored(path)
    assert got == expected and sum(seen) > 0
    assert [(w.line_no, w.message) for w in rep2.warnings] == [(w.line_no, w.message) for w in rep.warnings]


def test_unreadable_attributes_a_bad_record_id_and_a_failed_retrieval_in_an_otlp_export(tmp_path):
    """Review findings: attributes whose text cannot be read (a CSV cell that is neither JSON nor a
    literal) reject their span with the reason, not as "not an evidence record"; a record id that is
    an array rejects its span (its answer could not be joined); a failed retrieval in an OTLP export
    has its error quoted (OTLP's status code 2)."""
    rows = events()
    rows[1]["record_attributes"] = "{'ai.observability.span_type': 'retrieval', 'x': run()}"
    rows[2]["record_attributes"] = rows[2]["record_attributes"] | {NS + "record_id": ["rec-1"]}
    rep, _ev, _recs, _ = _stored(write_jsonl(tmp_path / "bad" / "rag.jsonl", rows))
    assert [(r.line_no, r.message.split(":")[0]) for r in rep.rejected] == [
        (2, "TruLens span"),
        (3, "TruLens span"),
    ]
    assert "record_attributes is text that is neither JSON nor a Python literal" in rep.rejected[0].message
    assert "ai.observability.record_id must be a string or an integer" in rep.rejected[1].message
    doc = otlp()
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    span["attributes"] = [a for a in span["attributes"] if a["key"] != NS + "retrieval.retrieved_contexts"]
    span["status"] = {"code": 2, "message": "index timed out"}
    (tmp_path / "otlp.json").write_text(json.dumps(doc))
    rep, ev, recs, _ = _stored(tmp_path / "otlp.json")
    assert (ev, [r[4] for r in recs]) == ([], [0]) and [
        w.message for w in rep.warnings if "retrieval" in w.message
    ] == [
        "retrieval span without ai.observability.retrieval.retrieved_contexts (status ERROR: 'index timed out'): "
        "loaded as a record that retrieved nothing"
    ]


def test_a_records_table_from_before_opentelemetry_is_rejected_saying_what_to_do(tmp_path):
    """``get_records_and_feedback()`` before TruLens' OpenTelemetry tracing: rows of ``record_id``,
    ``app_id``, ``input``, ``output``, ``record_json`` (calls). Each was "not an evidence record"
    with its keys listed; now each says what it is and what to do instead."""
    import pandas as pd

    record = {"record_id": "r1", "main_input": Q, "main_output": "The Moon.", "calls": []}
    row = {"app_id": "app_hash", "record_id": "r1", "input": json.dumps(Q), "output": json.dumps("The Moon.")}
    pd.DataFrame([row | {"record_json": json.dumps(record), "Context Relevance": 0.9}]).to_csv(
        tmp_path / "records.csv", index=False
    )
    rep, _ev, recs, _ = _stored(tmp_path / "records.csv")
    assert recs == [] and [r.message for r in rep.rejected] == [
        "TruLens span: a TruLens record from before its OpenTelemetry tracing (record_json): which of its "
        "calls retrieved what is not written in it the same way twice, so it is not read; run the app with "
        "TRULENS_OTEL_TRACING=1 and save its spans (session.connector.get_events(), or an OTLP export)"
    ]

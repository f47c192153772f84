"""MLflow traces (``mlflow traces get`` / ``Trace.to_json``: ``{"info", "data": {"spans"}}``, or
span dicts as JSON Lines, in MLflow's v4 and v2 span shapes, every attribute JSON-encoded) load to
the rows the native log stores; the root span's outputs are the answer."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

Q = "What causes tides?"
DOCS = [("moon", "The Moon's gravity pulls the oceans."), ("cycle", "Tides follow the lunar cycle.")]


def _attrs(kind: str, trace: str, inputs, outputs) -> dict:
    out = {"mlflow.traceRequestId": json.dumps(trace), "mlflow.spanType": json.dumps(kind)}
    out["mlflow.spanInputs"] = json.dumps(inputs)
    if outputs is not None:
        out["mlflow.spanOutputs"] = json.dumps(outputs)
    return out


def span_v4(name, kind, trace, span_id, parent, inputs, outputs, *, status="OK", message="", ended=True) -> dict:
    return {
        "trace_id": trace,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "start_time_unix_nano": 1_700_000_000_000_000_000,
        "end_time_unix_nano": 1_700_000_001_000_000_000 if ended else None,
        "events": [],
        "status": {"code": status, "message": message},
        "attributes": _attrs(kind, trace, inputs, outputs),
        "mlflow.span_dict_version": 4,
    }


def span_v2(name, kind, trace, span_id, parent, inputs, outputs) -> dict:
    return {
        "name": name,
        "context": {"span_id": span_id, "trace_id": "0x" + trace.encode().hex()},
        "parent_id": parent,
        "start_time": 1,
        "end_time": 2,
        "status_code": "OK",
        "status_message": "",
        "attributes": _attrs(kind, trace, inputs, outputs),
        "events": [],
    }


def trace_spans(trace="tr-1", shape=span_v4, retriever_outputs="docs", **retriever):
    docs = [{"page_content": t, "metadata": {"source": f"{i}.txt"}, "id": i} for i, t in DOCS]
    outputs = docs if retriever_outputs == "docs" else retriever_outputs
    chat = {"choices": [{"message": {"role": "assistant", "content": "the moon (draft)"}}]}
    return [
        shape("RetrievalQA", "CHAIN", trace, "s0", None, {"query": Q}, {"result": "The Moon."}),
        shape("VectorStoreRetriever", "RETRIEVER", trace, "s1", "s0", Q, outputs, **retriever),
        shape("ChatOpenAI", "CHAT_MODEL", trace, "s2", "s0", {"messages": []}, chat),
    ]


def _stored(*paths):
    con = store.connect(":memory:")
    rep = ingest_paths(con, list(paths))
    ev = con.execute(
        "SELECT run_id, query_id, position, doc_id, text FROM evidence ORDER BY run_id, position"
    ).fetchall()
    recs = con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY run_id").fetchall()
    return rep, ev, recs


def test_an_mlflow_trace_document_and_its_spans_as_json_lines_equal_the_native_log(tmp_path):
    native = {"run_id": "flow", "query_id": query_id_for(Q), "query": Q, "answer": "The Moon."}
    native["evidence"] = [{"doc_id": i, "text": t} for i, t in DOCS]
    _, want_ev, want_recs = _stored(write_jsonl(tmp_path / "n" / "flow.jsonl", [native]))
    doc = tmp_path / "doc" / "flow.json"
    doc.parent.mkdir()
    doc.write_text(
        json.dumps({"info": {"trace_id": "tr-1", "state": "OK"}, "data": {"spans": trace_spans()}}, indent=2)
    )
    for path in (
        doc,
        write_jsonl(tmp_path / "v4" / "flow.jsonl", trace_spans()[::-1]),  # the retriever after the answers
        write_jsonl(tmp_path / "v2" / "flow.jsonl", trace_spans(shape=span_v2)),
    ):
        rep, ev, recs = _stored(path)
        assert (rep.n_rejected, ev, recs) == (0, want_ev, want_recs), path.parent.name
        assert rep.files[0].n_skipped == 2 and rep.files[0].formats["MLflow"] == 3


def test_without_a_root_output_the_chat_model_s_text_is_the_answer(tmp_path):
    spans = trace_spans()
    spans[0]["attributes"].pop("mlflow.spanOutputs")
    _, _, recs = _stored(write_jsonl(tmp_path / "flow.jsonl", spans))
    assert recs == [("flow", query_id_for(Q), Q, "the moon (draft)", 2)]


def test_a_retriever_that_returned_nothing_and_one_still_open(tmp_path):
    """Outputs null on a failed span: a record that retrieved nothing, its error quoted; on a span
    with no end time: rejected saying so. Outputs that are not documents: rejected."""
    failed = trace_spans(retriever_outputs=None, status="ERROR", message="index timed out")
    rep, ev, recs = _stored(write_jsonl(tmp_path / "failed" / "flow.jsonl", failed))
    assert (rep.n_rejected, ev, recs) == (0, [], [("flow", query_id_for(Q), Q, "The Moon.", 0)])
    assert [w.message for w in rep.warnings if w.code == "mlflow-mapping"] == [
        "RETRIEVER span without outputs (status ERROR: 'index timed out'): loaded as a record that retrieved nothing"
    ]
    rep, ev, recs = _stored(
        write_jsonl(tmp_path / "open" / "flow.jsonl", trace_spans(retriever_outputs=None, ended=False))
    )
    assert (ev, recs) == ([], []) and rep.rejected[0].message.endswith(
        "RETRIEVER span that had not ended when it was exported (no end time, no outputs): "
        "export the trace again once it has ended"
    )
    rep, _, recs = _stored(write_jsonl(tmp_path / "text" / "flow.jsonl", trace_spans(retriever_outputs="two passages")))
    assert recs == [] and "mlflow.spanOutputs hold no documents" in rep.rejected[0].message


def test_a_trace_without_a_retriever_is_refused_in_one_sentence(tmp_path):
    doc = tmp_path / "chat.json"
    doc.write_text(json.dumps({"info": {"trace_id": "tr-9"}, "data": {"spans": [trace_spans()[0], trace_spans()[2]]}}))
    rep, _, recs = _stored(doc)
    assert recs == [] and [r.message for r in rep.rejected] == [
        "an MLflow trace with 2 spans (CHAIN 1, CHAT_MODEL 1) and no retriever: nothing to audit"
    ]


def test_the_workers_store_what_the_process_stores(tmp_path, monkeypatch):
    """Spans of 30 traces (answers before and after their retrievers, one retriever that failed)
    read by two worker processes in ranges of ~2 KB: the same rows and report as in the process."""
    from tests.logs.test_streaming import force_pool

    spans = []
    for i in range(30):
        trace = trace_spans(f"tr-{i}", **({"retriever_outputs": None, "status": "ERROR"} if i == 7 else {}))
        spans += trace if i % 2 else trace[::-1]
    path = write_jsonl(tmp_path / "flow.jsonl", spans)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    rep, *expected = _stored(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (30, 58, 0)
    seen = force_pool(monkeypatch, 2_000)
    rep2, *got = _stored(path)
    assert got == expected and sum(seen) > 0
    assert [(w.line_no, w.message) for w in rep2.warnings] == [(w.line_no, w.message) for w in rep.warnings]


def test_half_a_character_in_an_attribute_rejects_its_span_not_the_call(tmp_path):
    """A lone surrogate inside an attribute's JSON (``"ans\\ud800"``: a text cut inside an emoji)
    was read as a character no UTF-8 text holds, and storing it failed the whole call. Now that
    span is rejected with the reason; the rest of the file and the other files load."""
    spans = trace_spans()
    spans[0]["attributes"]["mlflow.spanOutputs"] = '"The Moon.\\ud83d"'
    bad = write_jsonl(tmp_path / "bad" / "flow.jsonl", spans)
    good = write_jsonl(tmp_path / "good" / "other.jsonl", trace_spans("tr-2"))
    rep, _ev, recs = _stored(bad, good)
    assert [r.message for r in rep.rejected] == [
        "not an MLflow span: mlflow.spanOutputs holds \\ud83d, half of a character "
        "(a text cut inside an emoji?): not text"
    ]
    assert [(r, a, n) for r, _q, _t, a, n in recs] == [("flow", "the moon (draft)", 2), ("other", "The Moon.", 2)]


def test_run_settings_from_the_spans_own_attributes(tmp_path):
    """Attributes a pipeline sets on its spans (``span.set_attribute("top_k", 5)``, stored as JSON
    like MLflow's own) name the run's settings: the retriever's over the root span's."""
    spans = trace_spans()
    spans[0]["attributes"] |= {"top_k": json.dumps(3), "chunk_size": json.dumps(256)}
    spans[1]["attributes"] |= {"top_k": json.dumps(5), "mlflow.spanFunctionName": json.dumps("retrieve")}
    con = store.connect(":memory:")
    rep = ingest_paths(con, [write_jsonl(tmp_path / "flow.jsonl", spans)])
    got = con.execute("SELECT top_k, chunk_size, chunk_overlap FROM runs").fetchall()
    assert rep.n_rejected == 0 and got == [(5, 256, None)]

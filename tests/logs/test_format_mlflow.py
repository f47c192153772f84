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
        "MLflow span: mlflow.spanOutputs holds \\ud83d, half of a character (a text cut inside an emoji?): not text"
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


def _search_traces(traces, *, mlflow2=False):
    """The DataFrame ``mlflow.search_traces()`` returns for ``traces`` (trace id → spans): MLflow 3's
    columns (``trace`` as its JSON text), or MLflow 2's (``request_id``; its Trace object dropped,
    as it must be before ``to_parquet``)."""
    import pandas as pd

    rows = []
    for tid, spans in traces.items():
        if mlflow2:
            row = {"request_id": tid, "timestamp_ms": 1, "status": "OK", "execution_time_ms": 5}
            row |= {"request": json.dumps({"query": Q}), "response": json.dumps({"result": "The Moon."})}
            meta, tags = {"mlflow.trace_schema.version": "2"}, {"mlflow.traceName": "RetrievalQA"}
            rows.append(row | {"request_metadata": meta, "spans": spans, "tags": tags})
            continue
        doc = json.dumps({"info": {"trace_id": tid, "state": "OK"}, "data": {"spans": spans}})
        row = {"trace_id": tid, "trace": doc, "client_request_id": None, "state": "OK", "request_time": 1}
        row |= {"execution_duration": 5, "request": {"query": Q}, "response": {"result": "The Moon."}}
        meta, tags = {"mlflow.trace_schema.version": "3"}, {"mlflow.traceName": "RetrievalQA"}
        rows.append(row | {"trace_metadata": meta, "tags": tags, "spans": spans, "assessments": []})
    return pd.DataFrame(rows)


def test_a_search_traces_dataframe_saved_every_way_equals_the_native_log(tmp_path):
    """``mlflow.search_traces()`` gives a DataFrame, one trace per row, its spans in a ``spans``
    column; auditors save it with ``to_parquet`` (a column of structs), ``to_csv`` (the spans'
    Python literal in a cell), ``to_json`` (records, lines, or pandas' column-by-column default).
    Each row is read as its trace: the same rows as the native log, in MLflow 3's columns and 2's;
    a CSV without the spans column is read from the trace's JSON text."""
    natives = [  # (the same question twice: two samples, as the rows are)
        {"run_id": "flow", "query_id": qid, "query": Q, "answer": "The Moon."}
        | {"evidence": [{"doc_id": d, "text": t} for d, t in DOCS]}
        for qid in (query_id_for(Q), query_id_for(Q) + "#2")
    ]
    _, want_ev, want_recs = _stored(write_jsonl(tmp_path / "native" / "flow.jsonl", natives))
    for i, (name, save) in enumerate(
        [
            ("flow.parquet", lambda df, p: df.to_parquet(p)),
            ("flow.csv", lambda df, p: df.to_csv(p, index=False)),
            ("flow.jsonl", lambda df, p: df.to_json(p, orient="records", lines=True)),
            ("flow.json", lambda df, p: df.to_json(p)),
            ("flow.csv", lambda df, p: df.drop(columns=["spans"]).to_csv(p, index=False)),
            ("flow.parquet", lambda df, p: df.to_parquet(p)),
        ]
    ):
        mlflow2 = i == 5
        spans = {f"tr-{k}": trace_spans(f"tr-{k}", shape=span_v2 if mlflow2 else span_v4) for k in (1, 2)}
        path = tmp_path / str(i) / name
        path.parent.mkdir()
        save(_search_traces(spans, mlflow2=mlflow2), path)
        rep, ev, recs = _stored(path)
        assert (rep.n_rejected, rep.n_records) == (0, 2), (i, rep.rejected)
        assert (ev, recs) == (want_ev, want_recs), i
        assert rep.files[0].formats["MLflow"] == 6, i


def test_search_traces_rows_without_spans_and_a_spans_cell_that_is_not_data(tmp_path):
    """Rows searched with ``include_spans=False`` hold no spans: a warning saying so, nothing
    loaded. A spans cell that is neither JSON nor a Python literal rejects its row with the
    reason; the next row loads."""
    df = _search_traces({"tr-1": []})
    df.to_json(tmp_path / "none.jsonl", orient="records", lines=True)
    rep, _, recs = _stored(tmp_path / "none.jsonl")
    assert recs == [] and [w.message for w in rep.warnings] == [
        "file holds no records (mlflow.search_traces() rows without their spans: search with include_spans=True)"
    ]
    df = _search_traces({"tr-1": trace_spans("tr-1"), "tr-2": trace_spans("tr-2")}, mlflow2=True)
    df["spans"] = df["spans"].astype(str)
    df.loc[0, "spans"] = "[{'name': 'retrieve', 'attributes': {'mlflow.spanType': run()}}]"
    df.to_csv(tmp_path / "bad.csv", index=False)
    rep, ev, recs = _stored(tmp_path / "bad.csv")
    assert [(r.line_no, r.message) for r in rep.rejected] == [
        (
            2,
            "MLflow span: an MLflow search_traces() row whose spans cannot be read: its spans cell is text "
            "that is neither JSON nor a Python literal (\"[{'name': 'retrieve', 'attributes': {'ml…\"): "
            "write it as a JSON list or object",
        )
    ]
    assert [(r[0], r[3], r[4]) for r in recs] == [("bad", "The Moon.", 2)] and len(ev) == 2


def test_search_traces_parquet_settings_and_the_workers(tmp_path, monkeypatch):
    """Parquet writes the spans as structs holding every key any span has (a key a span lacks is
    null): a null attribute names no setting, so the retriever's ``top_k`` and the root's
    ``chunk_size`` both hold. JSON Lines of 20 rows read by two worker processes store what the
    process stores."""
    from tests.logs.test_streaming import force_pool

    spans = trace_spans()
    spans[0]["attributes"]["chunk_size"] = json.dumps(256)
    spans[1]["attributes"]["top_k"] = json.dumps(5)
    _search_traces({"tr-1": spans}).to_parquet(tmp_path / "flow.parquet")
    con = store.connect(":memory:")
    rep = ingest_paths(con, [tmp_path / "flow.parquet"])
    assert rep.n_records == 1 and con.execute("SELECT top_k, chunk_size FROM runs").fetchall() == [(5, 256)]
    df = _search_traces({f"tr-{i}": trace_spans(f"tr-{i}") for i in range(20)})
    df.to_json(tmp_path / "rows.jsonl", orient="records", lines=True)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    rep, *expected = _stored(tmp_path / "rows.jsonl")
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (20, 40, 0)
    force_pool(monkeypatch, 4_000)
    rep2, *got = _stored(tmp_path / "rows.jsonl")
    assert got == expected and rep2.n_records == 20


def test_other_formats_records_with_a_rows_keys_stay_theirs_and_rows_without_spans_are_said(tmp_path):
    """A LangSmith run that carries ``trace_id``, ``status``, ``tags`` and a null ``trace`` is a
    LangSmith run (review finding: it was taken for a search_traces row with no spans and dropped
    without a word). A row without spans beside rows with them is skipped with a warning."""
    run = {"id": "r1", "run_type": "retriever", "trace_id": "t1", "status": "success", "tags": [], "trace": None}
    run |= {"inputs": {"query": Q}, "outputs": {"documents": [{"page_content": DOCS[0][1]}]}, "end_time": "2024"}
    rep, ev, recs = _stored(write_jsonl(tmp_path / "ls" / "flow.jsonl", [run]))
    assert (rep.n_records, len(ev), rep.files[0].formats["LangSmith"]) == (1, 1, 1)
    df = _search_traces({"tr-1": trace_spans("tr-1"), "tr-2": []})
    df.to_json(tmp_path / "rows.jsonl", orient="records", lines=True)
    rep, _ev, recs = _stored(tmp_path / "rows.jsonl")
    assert len(recs) == 1 and [w.message for w in rep.warnings if w.code == "empty-container"] == [
        "1 row of the file held no records and was skipped (mlflow.search_traces() rows without their spans: "
        "search with include_spans=True)"
    ]


def test_mlflow_traces_search_output_and_past_the_value_limit_trace_by_trace(tmp_path):
    """``mlflow traces search --output json`` prints ``{"traces": [trace.to_dict(), …],
    "next_page_token": …}``, pretty-printed: each trace a document of its spans. It was refused as
    "a JSON object with no records"; now each trace loads, and past ``--max-line-bytes`` the traces
    are read one by one (each under the limit): the same records either way. A search that found
    nothing loads nothing, saying so."""
    from ragaudit_core.logs.ingest import IngestOptions

    traces = []
    for i in range(40):
        spans = trace_spans(f"tr-{i}")
        spans[1]["attributes"]["mlflow.spanInputs"] = json.dumps(f"{Q} ({i})")
        traces.append({"info": {"trace_id": f"tr-{i}", "state": "OK"}, "data": {"spans": spans}})
    f = tmp_path / "search.json"
    f.write_text(json.dumps({"traces": traces, "next_page_token": None}, indent=2))
    got = []
    for opts in (IngestOptions(), IngestOptions(max_line_bytes=8_000)):
        con = store.connect(":memory:")
        rep = ingest_paths(con, [f], opts)
        assert (rep.n_records, rep.n_entries, rep.n_rejected) == (40, 80, 0)
        got.append(con.execute("SELECT query_id, query, answer, n_evidence FROM records ORDER BY all").fetchall())
    assert f.stat().st_size > 40_000 and got[0] == got[1] and got[0][0][2] == "The Moon."
    (tmp_path / "none.json").write_text(json.dumps({"traces": [], "next_page_token": None}))
    rep, _ev, recs = _stored(tmp_path / "none.json")
    assert recs == [] and [w.message for w in rep.warnings] == [
        "file holds no records (an MLflow trace search that found no traces)"
    ]


def test_second_review_a_row_whose_span_names_an_openinference_kind_and_records_with_a_traces_list(tmp_path):
    """Second review's findings: (1) a search_traces row whose LLM span also carries an
    OpenInference attribute was read whole as one OpenInference span, its trace lost without a
    word — the row's own keys decide now, not its spans'; (2) a ``traces`` list made any record a
    container (a LangSmith run carrying one loaded nothing) — only ``{"traces", "next_page_token"}``
    is an MLflow search, read whole or streamed; (3) a trace without spans beside others in a
    search is skipped with a warning."""
    from ragaudit_core.logs.ingest import IngestOptions

    spans = trace_spans("tr-1")
    spans[2]["attributes"]["openinference.span.kind"] = '"LLM"'
    _search_traces({"tr-1": spans, "tr-2": trace_spans("tr-2")}).to_json(
        tmp_path / "rows.jsonl", orient="records", lines=True
    )
    rep, _ev, recs = _stored(tmp_path / "rows.jsonl")
    assert (len(recs), rep.n_rejected) == (2, 0)
    run = {"id": "r1", "run_type": "retriever", "trace_id": "t1", "inputs": {"query": Q}, "end_time": "2024"}
    run |= {"outputs": {"documents": [{"page_content": DOCS[0][1]}]}, "traces": [{"id": "x"}]}
    rep, ev, _recs = _stored(write_jsonl(tmp_path / "ls" / "run.jsonl", [run]))
    assert (rep.n_records, len(ev), rep.files[0].formats["LangSmith"]) == (1, 1, 1)
    # (its own keys first: an object whose first member is a record array is read as a container past the
    # limit, as one opening on 'data' is: docs/log-contract.md, "Containers")
    native = {"run_id": "r", "query_id": "q", "traces": [{"k": "v" * 100}] * 40, "evidence": [{"doc_id": "d"}]}
    (tmp_path / "native.json").write_text(json.dumps(native, indent=2))
    rep, _ev, recs = _stored(tmp_path / "native.json")  # a native record with a 'traces' key: loaded
    assert (len(recs), rep.n_rejected) == (1, 0)
    rep = ingest_paths(store.connect(":memory:"), [tmp_path / "native.json"], IngestOptions(max_line_bytes=3_000))
    assert [r.message for r in rep.rejected] == [  # past the limit: one value too long, as before (not "not a log")
        f"JSON value is longer than the {3_000:,}-byte limit; split the record or raise --max-line-bytes"
    ]
    traces = [{"info": {"trace_id": f"tr-{i}"}, "data": {"spans": trace_spans(f"tr-{i}") if i else []}} for i in (0, 1)]
    (tmp_path / "search.json").write_text(json.dumps({"traces": traces, "next_page_token": None}))
    rep, _ev, recs = _stored(tmp_path / "search.json")
    assert len(recs) == 1 and [w.message for w in rep.warnings if w.code == "empty-container"] == [
        "1 row of the file held no records and was skipped (an MLflow trace with no spans: search with its "
        "spans, without --extract-fields)"
    ]
    infos = [{"info": {"trace_id": f"tr-{i}", "state": "OK"}} for i in range(3)]  # --extract-fields info.trace_id,…
    (tmp_path / "fields.json").write_text(json.dumps({"traces": infos, "next_page_token": None}))
    rep, _ev, recs = _stored(tmp_path / "fields.json")
    assert (recs, rep.n_rejected) == ([], 0) and [w.message for w in rep.warnings] == [
        "file holds no records (an MLflow trace with no spans: search with its spans, without --extract-fields)"
    ]


def test_a_llamaindex_retriever_autologged_by_mlflow_names_its_question(tmp_path):
    """MLflow's LlamaIndex autolog records retrieve(str_or_query_bundle) by its argument's name: a
    string, or a QueryBundle with query_str. Both were rejected ('RETRIEVER span without its query')."""
    docs = [{"page_content": "The Moon's gravity pulls the oceans.", "metadata": {}, "id": "n1"}]
    spans = [
        span_v4("VectorIndexRetriever.retrieve", "RETRIEVER", "t1", "a", None, {"str_or_query_bundle": Q}, docs),
        span_v4(
            "VectorIndexRetriever.retrieve",
            "RETRIEVER",
            "t2",
            "b",
            None,
            {"str_or_query_bundle": {"query_str": Q, "custom_embedding_strs": None}},
            docs,
        ),
    ]
    rep, ev, recs = _stored(write_jsonl(tmp_path / "li.jsonl", spans))
    assert not rep.rejected and [r[2] for r in recs] == [Q, Q]  # the question, twice: two traces, two samples
    assert [e[3] for e in ev] == ["n1", "n1"]

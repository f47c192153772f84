"""Langfuse observations (a retriever, or a span whose JSON output holds documents) load to the
same stored rows as the native log; the trace's generation gives the answer."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

Q = "What causes tides?"
DOCS = [("moon", "The Moon's gravity pulls the oceans."), ("cycle", "Tides follow the lunar cycle.")]


def observations(kind="RETRIEVER", trace="t1"):
    docs = [{"id": i, "page_content": t, "metadata": {}} for i, t in DOCS]
    return [
        {
            "id": "o1",
            "traceId": trace,
            "type": kind,
            "name": "retrieve",
            "input": {"query": Q},
            "output": json.dumps(docs) if kind == "SPAN" else {"documents": docs},
            "parentObservationId": None,
        },
        {
            "id": "o2",
            "traceId": trace,
            "type": "GENERATION",
            "name": "answer",
            "input": "prompt",
            "output": {"role": "assistant", "content": "The Moon."},
            "parentObservationId": None,
        },
        {"id": "o3", "traceId": trace, "type": "EVENT", "name": "log", "input": None, "output": None},
    ]


def _stored(path):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path])
    return rep, (
        con.execute(
            "SELECT run_id, query_id, position, doc_id, span_hash, text FROM evidence ORDER BY position"
        ).fetchall(),
        con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records").fetchall(),
    )


def test_langfuse_retriever_and_span_observations_equal_the_native_log(tmp_path):
    native = {
        "run_id": "fuse",
        "query_id": query_id_for(Q),
        "query": Q,
        "answer": "The Moon.",
        "evidence": [{"doc_id": i, "text": t} for i, t in DOCS],
    }
    want = _stored(write_jsonl(tmp_path / "n" / "fuse.jsonl", [native]))[1]
    for kind in ("RETRIEVER", "SPAN"):
        rep, got = _stored(write_jsonl(tmp_path / kind / "fuse.jsonl", observations(kind)))
        assert rep.n_rejected == 0 and rep.files[0].n_skipped == 2 and got == want, kind


def test_a_trace_list_whose_observations_are_ids_says_so_once_per_trace(tmp_path):
    """``GET /api/public/traces`` (``langfuse.api.trace.list()``) gives each trace's observations as
    ids: each id was rejected "expected a JSON object per line, got string" — three lines per trace
    in a one-line file, and not a word on what to export instead."""
    traces = [
        {"id": f"t{i}", "name": "rag", "input": {"question": Q}, "output": "The Moon.", "observations": ["o1", "o2"]}
        for i in range(3)
    ]
    f = tmp_path / "traces.json"
    f.write_text(json.dumps({"data": traces, "meta": {"page": 1, "limit": 50, "totalItems": 3}}, indent=2))
    con = store.connect(":memory:")
    rep = ingest_paths(con, [f])
    why = (
        "a Langfuse trace whose observations are ids, not observations (as the trace list gives them): "
        "export each trace by its id (GET /api/public/traces/{traceId}) or its observations "
        "(GET /api/public/observations?traceId=…)"
    )
    assert [(i.line_no, i.message) for i in rep.rejected] == [(n, why) for n in (1, 2, 3)]


# ---------------------------------------------------------------- run settings in the metadata


def trace_export(trace_md: dict | None, root_md: dict | None, retriever_md: dict | None, trace="lf-t1") -> dict:
    """A trace as Langfuse's "download trace" gives it: the trace (with the metadata the app set on
    it) and its observations — a root span, the retriever under it, the generation."""
    docs = [{"id": i, "page_content": t, "metadata": {"file_name": f"{i}.txt"}} for i, t in DOCS]
    md = {"metadata": trace_md} if trace_md is not None else {}
    return {
        "trace": {
            "id": trace,
            "projectId": "cm0abc",
            "name": "rag-query",
            "timestamp": "2025-03-01T10:15:00.000Z",
            "input": {"query": Q},
            "output": "The Moon.",
            "tags": ["eval"],
            "scores": [],
            "latency": 1.42,
            **md,
        },
        "observations": [
            {
                "id": "o-root",
                "traceId": trace,
                "type": "SPAN",
                "name": "query",
                "startTime": "2025-03-01T10:15:00.010Z",
                "parentObservationId": None,
                "input": {"query": Q},
                "output": {"response": "The Moon."},
                "metadata": root_md,
            },
            {
                "id": "o-ret",
                "traceId": trace,
                "type": "RETRIEVER",
                "name": "retrieve",
                "startTime": "2025-03-01T10:15:00.020Z",
                "parentObservationId": "o-root",
                "input": {"query": Q},
                "output": {"documents": docs},
                "metadata": retriever_md,
            },
            {
                "id": "o-gen",
                "traceId": trace,
                "type": "GENERATION",
                "name": "llm",
                "startTime": "2025-03-01T10:15:00.900Z",
                "parentObservationId": "o-root",
                "model": "gpt-4o-mini",
                "input": [{"role": "user", "content": Q}],
                "output": {"role": "assistant", "content": "The Moon."},
                "metadata": {"ls_provider": "openai"},
                "usageDetails": {"input": 120, "output": 3, "total": 123},
            },
        ],
    }


def _grid(path, **opts) -> list[tuple]:
    from ragaudit_core.logs.ingest import IngestOptions

    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    assert rep.n_rejected == 0
    return con.execute("SELECT run_id, top_k, chunk_size, chunk_overlap, embedder, config FROM runs").fetchall()


def test_settings_of_the_trace_its_root_and_its_retriever_fill_the_grid_in_that_precedence(tmp_path):
    """The retriever observation's metadata wins over its root observation's, which wins over the
    trace's: here top-k from the retriever, the overlap from the root span, the rest from the trace."""
    trace_md = {"similarity_top_k": 8, "chunk_size": 512, "chunk_overlap": 50, "embed_model": "BAAI/bge-small-en-v1.5"}
    export = trace_export(trace_md, {"chunk_overlap": 64, "user": "u1"}, {"top_k": 4})
    path = tmp_path / "fuse.json"
    path.write_text(json.dumps(export, indent=2))
    want = '{"chunk_overlap": 64, "chunk_size": 512, "embedder": "BAAI/bge-small-en-v1.5", "top_k": 4}'
    assert _grid(path) == [("fuse", 4, 512, 64, "BAAI/bge-small-en-v1.5", want)]
    # past the per-value limit the export is streamed member by member: the same settings
    assert _grid(path, max_line_bytes=1000) == [("fuse", 4, 512, 64, "BAAI/bge-small-en-v1.5", want)]
    # the observations alone (GET /api/public/observations?traceId=…): the root's and the retriever's
    lines = write_jsonl(tmp_path / "obs" / "fuse.jsonl", export["observations"])
    want = '{"chunk_overlap": 64, "top_k": 4}'
    assert _grid(lines) == [("fuse", 4, None, 64, None, want)]


def test_the_api_trace_with_its_observations_reads_its_metadata(tmp_path):
    """``GET /api/public/traces/{id}`` gives the trace itself, its observations inside it."""
    export = trace_export(None, None, None)
    api_trace = {**export["trace"], "metadata": {"topK": 6, "chunkSize": 300}, "observations": export["observations"]}
    path = write_jsonl(tmp_path / "fuse.jsonl", [api_trace])
    assert _grid(path) == [("fuse", 6, 300, None, None, '{"chunk_size": 300, "top_k": 6}')]


def test_a_setting_that_is_not_an_integer_is_kept_in_the_config_and_null_in_the_grid(tmp_path):
    """As a native config's: the config keeps what was logged, the grid column is NULL (a whole
    number written as text still reads); an object is no setting."""
    md = {"top_k": "5", "chunk_size": "auto", "chunk_overlap": 12.5, "embedder": {"name": "bge"}, "k": 3}
    path = write_jsonl(tmp_path / "fuse.jsonl", [trace_export(None, None, md)])
    want = '{"chunk_overlap": 12.5, "chunk_size": "auto", "top_k": "5"}'
    assert _grid(path) == [("fuse", 5, None, None, None, want)]


def _js_documents(obs: list[dict]) -> list[dict]:
    """``obs`` as LangChain.js writes documents (``pageContent``, not ``page_content``)."""
    out = json.loads(json.dumps(obs))
    docs = out[0]["output"]["documents"]
    out[0]["output"]["documents"] = [{"pageContent": d.pop("page_content"), **d} for d in docs]
    return out


def test_langchain_js_documents_page_content_in_camel_case_load_as_the_python_ones(tmp_path):
    rep, got = _stored(write_jsonl(tmp_path / "a" / "fuse.jsonl", _js_documents(observations())))
    assert rep.n_rejected == 0
    assert got == _stored(write_jsonl(tmp_path / "b" / "fuse.jsonl", observations()))[1]
    assert [e[5] for e in got[0]] == [t for _, t in DOCS]


def _nothing(tmp_path, name: str, **retriever):
    obs = observations()
    obs[0] = {k: v for k, v in (obs[0] | retriever).items() if v != "absent"}
    return _stored(write_jsonl(tmp_path / name / "fuse.jsonl", obs))


def test_a_retriever_observation_that_returned_nothing_is_a_record_that_retrieved_nothing(tmp_path):
    """Output null or absent (a retriever that failed, or found nothing and logged no list): the
    record is loaded with no evidence and a warning, as an OpenInference RETRIEVER span without
    documents is; it was rejected, so the run looked as if it had not asked the question."""
    qid = query_id_for(Q)
    for name, extra, why in (
        ("null", {"output": None, "endTime": "2026-01-01T00:00:01Z"}, ""),
        ("absent", {"output": "absent"}, ""),
        (
            "error",
            {"output": None, "level": "ERROR", "statusMessage": "index timed out"},
            ": level ERROR, 'index timed out'",
        ),
    ):
        rep, (ev, recs) = _nothing(tmp_path, name, **extra)
        assert (rep.n_rejected, ev, recs) == (0, [], [("fuse", qid, Q, "The Moon.", 0)]), name
        assert [w.message for w in rep.warnings if w.code == "langfuse-mapping"] == [
            f"RETRIEVER observation without output (null{why}): loaded as a record that retrieved nothing"
        ], name


def test_a_retriever_observation_that_had_not_ended_is_rejected_saying_so(tmp_path):
    rep, (ev, recs) = _nothing(tmp_path, "open", output=None, endTime=None)
    assert (rep.n_rejected, ev, recs) == (1, [], [])
    assert rep.rejected[0].message.endswith(
        "retriever observation that had not ended when it was exported (endTime null, no output): "
        "export the trace again once it has ended"
    )


def test_a_retriever_observation_whose_output_is_not_documents_is_still_rejected(tmp_path):
    rep, _ = _nothing(tmp_path, "text", output="three passages about tides")
    assert rep.n_rejected == 1 and "hold no documents" in rep.rejected[0].message


def test_the_root_observation_s_output_is_the_answer_over_a_generation_s(tmp_path):
    """The trace's root observation (no parent; a CHAIN or AGENT) holds the pipeline's final
    output: it is the answer, over a GENERATION's (a draft, a query rewrite), before or after it in
    the file, as a LangSmith root run's is. Without a root output the GENERATION's stays the answer;
    a parentless plain SPAN (the low-level SDK writes several: a feedback log) is not the root."""
    qid = query_id_for(Q)
    pull = "The Moon's pull."
    for kind, output in (("CHAIN", {"output": pull}), ("AGENT", pull)):
        root = {"id": "o0", "traceId": "t1", "type": kind, "name": "rag", "input": Q, "output": output}
        obs = [{**o, "parentObservationId": "o0"} for o in observations()]
        for order in ([*obs[:1], root, *obs[1:]], [*obs, root]):
            _rep, (_ev, recs) = _stored(write_jsonl(tmp_path / kind / "fuse.jsonl", order))
            assert recs == [("fuse", qid, Q, pull, 2)], (kind, order)
    _rep, (_ev, recs) = _stored(write_jsonl(tmp_path / "none" / "fuse.jsonl", observations()))
    assert recs == [("fuse", qid, Q, "The Moon.", 2)]
    log = {"id": "o9", "traceId": "t1", "type": "SPAN", "name": "log-feedback", "input": None, "output": "ok"}
    _rep, (_ev, recs) = _stored(write_jsonl(tmp_path / "flat" / "fuse.jsonl", [*observations(), log]))
    assert recs == [("fuse", qid, Q, "The Moon.", 2)]


def test_a_trace_export_s_own_output_is_the_answer_where_no_root_observation_gives_one(tmp_path):
    """``{"trace": {..., "output": ...}, "observations": [...]}``: the trace's output (what the app
    set as its final output) is the answer over a GENERATION's; a root observation's output wins
    over it. Read whole and streamed past the value limit alike."""
    from ragaudit_core.logs.ingest import IngestOptions

    qid = query_id_for(Q)
    trace = {"id": "t1", "name": "rag", "output": {"output": "The Moon's pull."}, "metadata": {}}
    nested = [{**o, "parentObservationId": "o0"} for o in observations()]
    root = {"id": "o0", "traceId": "t1", "type": "CHAIN", "name": "rag", "output": "The root's answer."}
    for name, obs, want in (
        ("generation", nested, "The Moon's pull."),
        ("root", [*nested, root], "The root's answer."),
        ("root-first", [root, *nested], "The root's answer."),
    ):
        f = tmp_path / name / "fuse.json"
        f.parent.mkdir()
        f.write_text(json.dumps({"trace": trace, "observations": obs}, indent=2))
        assert f.stat().st_size > 800
        for opts in (IngestOptions(), IngestOptions(max_line_bytes=800)):
            con = store.connect(":memory:")
            rep = ingest_paths(con, [f], opts)
            recs = con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records").fetchall()
            assert (rep.n_rejected, recs) == (0, [("fuse", qid, Q, want, 2)]), (name, opts.max_line_bytes)


def test_half_a_character_in_a_streamed_trace_s_output_is_warned_and_the_call_kept(tmp_path):
    """A trace export past the value limit whose ``trace.output`` holds a lone surrogate (a text cut
    inside an emoji): the output was read as the answer and storing it failed the whole call, the
    good file beside it lost. Now neither it nor the trace's metadata is read, with a warning; the
    observations load (the GENERATION's answer) and so does the other file."""
    from ragaudit_core.logs.ingest import IngestOptions

    obs = [{**o, "parentObservationId": "o0"} for o in observations()]
    text = json.dumps({"trace": {"id": "t1", "output": "ans"}, "observations": obs}, indent=2)
    f = tmp_path / "fuse.json"
    f.write_text(text.replace('"ans"', '"ans\\ud800"'))
    good = write_jsonl(tmp_path / "good.jsonl", [{"run_id": "g", "query_id": "1", "evidence": ["d"]}])
    con = store.connect(":memory:")
    rep = ingest_paths(con, [f, good], IngestOptions(max_line_bytes=800))
    recs = con.execute("SELECT run_id, answer FROM records ORDER BY run_id").fetchall()
    assert (rep.n_rejected, recs) == (0, [("fuse", "The Moon."), ("g", None)])
    assert [w.message for w in rep.warnings if w.code == "langfuse-mapping"] == [
        "the Langfuse trace's output or metadata holds \\ud800, half of a character: neither is read"
    ]

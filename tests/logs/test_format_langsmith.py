"""LangSmith runs (retriever runs with LangChain documents) load to the same stored rows as the
native log; the trace's root run gives the answer."""

from __future__ import annotations

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl

Q = "What causes tides?"
DOCS = [("moon.txt", "The Moon's gravity pulls the oceans."), ("cycle.txt", "Tides follow the lunar cycle.")]


def runs(trace="t1"):
    root = {
        "id": "r1",
        "name": "RetrievalQA",
        "run_type": "chain",
        "trace_id": trace,
        "parent_run_id": None,
        "inputs": {"query": Q},
        "outputs": {"result": "The Moon."},
    }
    retriever = {
        "id": "r2",
        "name": "VectorStoreRetriever",
        "run_type": "retriever",
        "trace_id": trace,
        "parent_run_id": "r1",
        "inputs": {"query": Q},
        "outputs": {"documents": [{"page_content": t, "metadata": {"source": s}, "type": "Document"} for s, t in DOCS]},
    }
    llm = {
        "id": "r3",
        "name": "ChatOpenAI",
        "run_type": "llm",
        "trace_id": trace,
        "parent_run_id": "r1",
        "inputs": {"messages": []},
        "outputs": {"generations": [[{"text": "the moon (draft)"}]]},
    }
    return [root, retriever, llm]


def _stored(path, **opts):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    return rep, (
        con.execute(
            "SELECT run_id, query_id, position, doc_id, span_hash, text FROM evidence ORDER BY position"
        ).fetchall(),
        con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records").fetchall(),
    )


def test_langsmith_runs_equal_the_native_log(tmp_path):
    rep, got = _stored(write_jsonl(tmp_path / "smith.jsonl", runs()), doc_id_key="source")
    assert rep.n_rejected == 0 and rep.files[0].n_skipped == 2
    native = {
        "run_id": "smith",
        "query_id": query_id_for(Q),
        "query": Q,
        "answer": "The Moon.",
        "evidence": [{"doc_id": s, "text": t} for s, t in DOCS],
    }
    assert got == _stored(write_jsonl(tmp_path / "n" / "smith.jsonl", [native]))[1]


def test_without_a_doc_id_key_the_text_hash_is_the_id_with_a_warning(tmp_path):
    rep, (ev, _rec) = _stored(write_jsonl(tmp_path / "smith.jsonl", runs()))
    assert all(e[3].startswith("text:") for e in ev)
    assert any("--doc-id-key" in w.message for w in rep.warnings)


def test_runs_saved_as_a_table_read_their_outputs_text_as_json(tmp_path):
    """LangSmith runs in a dataframe saved with ``to_csv`` or ``to_parquet`` hold ``inputs`` and
    ``outputs`` as JSON text: the documents and the query were read from it, but the root run's
    answer was stored as the text itself — ``{"result": "The Moon."}`` — and an LLM run's
    generations were never found."""
    import json

    import pandas as pd

    want = _stored(write_jsonl(tmp_path / "j" / "smith.jsonl", runs()), doc_id_key="source")[1]
    as_text = [{**r, "inputs": json.dumps(r["inputs"]), "outputs": json.dumps(r["outputs"])} for r in runs()]
    df = pd.DataFrame(as_text)
    df.to_csv(tmp_path / "smith.csv", index=False)
    df.to_parquet(tmp_path / "smith.parquet")
    for name in ("smith.csv", "smith.parquet"):
        rep, got = _stored(tmp_path / name, doc_id_key="source")
        assert rep.n_rejected == 0 and got == want, name
    no_root = [{**r, "outputs": None} if r["run_type"] == "chain" else r for r in as_text]
    pd.DataFrame(no_root).to_csv(tmp_path / "llm.csv", index=False)
    assert _stored(tmp_path / "llm.csv", doc_id_key="source")[1][1][0][3] == "the moon (draft)"


# ---------------------------------------------------------------- run settings in the runs' metadata

LANGCHAIN_LS = {  # what LangChain's VectorStoreRetriever adds to its run's metadata for tracing
    "ls_retriever_name": "vectorstore",
    "ls_vector_store_provider": "FAISS",
    "ls_embedding_provider": "OpenAIEmbeddings",
}


def traced_runs(trace: str, question: str, root_metadata: dict, retriever_metadata: dict) -> list[dict]:
    """One trace as the LangSmith SDK posts it (``client.list_runs`` gives the same fields): the root
    chain's ``extra.metadata`` is what the user passed in the config; LangChain gives its runs the
    root's metadata, and the retriever its own tracing parameters."""
    root_id, ret_id = f"{trace}-root", f"{trace}-ret"
    runtime = {"sdk": "langsmith-py", "sdk_version": "0.1.147", "library": "langchain-core", "runtime": "python"}
    return [
        {
            "id": ret_id,
            "name": "VectorStoreRetriever",
            "run_type": "retriever",
            "trace_id": trace,
            "parent_run_id": root_id,
            "dotted_order": f"20250301T101500000000Z{root_id}.20250301T101500100000Z{ret_id}",
            "inputs": {"query": question},
            "outputs": {
                "documents": [{"page_content": t, "metadata": {"source": s}, "type": "Document"} for s, t in DOCS]
            },
            "extra": {"metadata": {**root_metadata, **retriever_metadata, "ls_run_depth": 1}, "runtime": runtime},
            "tags": ["seq:step:1", "FAISS", "OpenAIEmbeddings"],
            "session_name": "rag-eval",
        },
        {
            "id": root_id,
            "name": "RunnableSequence",
            "run_type": "chain",
            "trace_id": trace,
            "parent_run_id": None,
            "dotted_order": f"20250301T101500000000Z{root_id}",
            "inputs": {"input": question},
            "outputs": {"output": "The Moon."},
            "extra": {"metadata": {**root_metadata, "ls_run_depth": 0, "revision_id": "v1"}, "runtime": runtime},
            "tags": [],
            "session_name": "rag-eval",
        },
    ]


def _runs_table(con) -> list[tuple]:
    return con.execute(
        "SELECT run_id, top_k, chunk_size, chunk_overlap, embedder, config FROM runs ORDER BY 1"
    ).fetchall()


def test_settings_in_the_runs_metadata_fill_the_runs_grid(tmp_path):
    """A chain invoked with ``config={"metadata": {...}}`` logs its settings in every run's
    ``extra.metadata``: they were ignored, so the grid columns were empty and stability's "what
    changed" read "unknown (no config)"."""
    from ragaudit_core.stability.metrics import compute_stability

    md = {"chunk_size": 256, "chunk_overlap": 32, "embedding_model": "text-embedding-3-small"}
    files = []
    for name, k in (("k5", 5), ("k10", 10)):
        lines = [
            r
            for t in ("t1", "t2")
            for r in traced_runs(f"{name}{t}", f"{Q} {t}", md, {**LANGCHAIN_LS, "search_kwargs": {"k": k}})
        ]
        files.append(write_jsonl(tmp_path / f"{name}.jsonl", lines))
    con = store.connect(":memory:")
    rep = ingest_paths(con, files, IngestOptions(doc_id_key="source"))
    assert rep.n_rejected == 0 and not [w for w in rep.warnings if w.code == "config-mismatch"]
    config = '{"chunk_overlap": 32, "chunk_size": 256, "embedder": "text-embedding-3-small", "top_k": %d}'
    assert _runs_table(con) == [
        ("k10", 10, 256, 32, "text-embedding-3-small", config % 10),
        ("k5", 5, 256, 32, "text-embedding-3-small", config % 5),
    ]
    assert set(compute_stability(con).pairs["changed"]) == {"top_k"}


def test_the_retriever_runs_settings_win_over_the_root_runs(tmp_path):
    """Each setting from the retriever run's metadata where it names one, else the root run's —
    also in a batch payload (``{"post": [...], "patch": [...]}``), whose root run comes first."""
    root_md = {"top_k": 10, "chunk_size": 512, "embedder": "bge-base"}
    for shape in ("lines", "batch"):
        runs_ = traced_runs("t1", Q, {}, {"similarity_top_k": 4, "embed_model": "bge-small"})
        runs_[1]["extra"]["metadata"] = {**root_md, "ls_run_depth": 0}
        path = tmp_path / shape / "smith.jsonl"
        write_jsonl(path, runs_ if shape == "lines" else [{"post": runs_[::-1], "patch": []}])
        con = store.connect(":memory:")
        ingest_paths(con, [path], IngestOptions(doc_id_key="source"))
        assert _runs_table(con)[0][1:5] == (4, 512, None, "bge-small"), shape


def test_runs_without_settings_in_their_metadata_log_no_config(tmp_path):
    """LangChain's own tracing keys (and ``ls_embedding_provider``, a class name, not the model)
    are no settings: the run logs none, and ``--settings`` applies to it."""
    from ragaudit_core.workspace import load_paths

    path = write_jsonl(tmp_path / "smith.jsonl", traced_runs("t1", Q, {"user_id": "u7"}, LANGCHAIN_LS))
    con = store.connect(":memory:")
    load_paths(con, [path], IngestOptions(doc_id_key="source"), settings={"top_k": 3})
    assert _runs_table(con) == [("smith", 3, None, None, None, '{"top_k": 3}')]


def test_langchain_js_documents_page_content_in_camel_case_load_as_the_python_ones(tmp_path):
    js = runs()
    js[1]["outputs"]["documents"] = [
        {"pageContent": d["page_content"], "metadata": d["metadata"]} for d in js[1]["outputs"]["documents"]
    ]
    rep, got = _stored(write_jsonl(tmp_path / "a" / "smith.jsonl", js), doc_id_key="source")
    assert rep.n_rejected == 0
    assert got == _stored(write_jsonl(tmp_path / "b" / "smith.jsonl", runs()), doc_id_key="source")[1]


def _nothing(tmp_path, name: str, **retriever):
    rs = runs()
    rs[1] = {k: v for k, v in (rs[1] | retriever).items() if v != "absent"}
    return _stored(write_jsonl(tmp_path / name / "smith.jsonl", rs))


def test_a_retriever_run_that_returned_nothing_is_a_record_that_retrieved_nothing(tmp_path):
    """Outputs null or absent on a run that ended (or raised: its ``error``): the record is loaded
    with no evidence and a warning, as an OpenInference RETRIEVER span without documents is."""
    qid = query_id_for(Q)
    for name, extra, why in (
        ("null", {"outputs": None, "end_time": "2026-01-01T00:00:01Z"}, ""),
        ("cell", {"outputs": "null", "end_time": "2026-01-01T00:00:01Z"}, ""),  # a table's cell
        (
            "error",
            {"outputs": "absent", "error": "TimeoutError('index')", "end_time": None},
            " (error: \"TimeoutError('index')\")",
        ),
    ):
        rep, (ev, recs) = _nothing(tmp_path, name, **extra)
        assert (rep.n_rejected, ev, recs) == (0, [], [("smith", qid, Q, "The Moon.", 0)]), name
        assert [w.message for w in rep.warnings if w.code == "langsmith-mapping"] == [
            f"retriever run without outputs{why}: loaded as a record that retrieved nothing"
        ], name


def test_a_retriever_run_that_had_not_ended_is_rejected_saying_so(tmp_path):
    """A run posted and never patched (a batch export cut short, a trace still running): no
    outputs, no end time, no error. Not a retrieval of nothing: rejected, with what to do."""
    for name, extra in (("absent", {"outputs": "absent"}), ("null", {"outputs": None, "end_time": None})):
        rep, (ev, recs) = _nothing(tmp_path, name, **extra)
        assert (rep.n_rejected, ev, recs) == (1, [], []), name
        assert rep.rejected[0].message.endswith(
            "retriever run that had not ended when it was exported (no end_time, no outputs, no error): "
            "export the trace again once it has ended"
        ), name

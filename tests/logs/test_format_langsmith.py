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

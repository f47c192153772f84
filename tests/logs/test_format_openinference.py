"""OpenInference spans (Arize Phoenix), nested and flattened, as JSONL and as Phoenix's span
dataframe in Parquet, load to the same stored rows as the native log; the LLM span of the same
trace gives the answer."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl

Q = "What causes tides?"
DOCS = [("moon", "The Moon's gravity pulls the oceans.", 0.91), ("cycle", "Tides follow the lunar cycle.", 0.55)]


def nested_spans(trace="t1", query=Q, answer="The Moon."):
    retriever = {
        "name": "retrieve",
        "context": {"trace_id": trace, "span_id": "s2"},
        "parent_id": "s1",
        "attributes": {
            "openinference": {"span": {"kind": "RETRIEVER"}},
            "input": {"value": query},
            "retrieval": {
                "documents": [
                    {"document": {"id": i, "content": t, "score": sc, "metadata": json.dumps({"source": f"{i}.txt"})}}
                    for i, t, sc in DOCS
                ]
            },
        },
    }
    llm = {
        "name": "llm",
        "context": {"trace_id": trace, "span_id": "s3"},
        "parent_id": "s1",
        "attributes": {
            "openinference.span.kind": "LLM",
            "output.value": answer,
            "llm.output_messages": [{"message.role": "assistant", "message.content": answer}],
        },
    }
    chain = {
        "name": "rag",
        "context": {"trace_id": trace, "span_id": "s1"},
        "attributes": {"openinference.span.kind": "CHAIN", "input.value": query},
    }
    return [llm, chain, retriever]  # the answer may come first


def flat_span(trace="t1"):
    row = {"span_kind": "RETRIEVER", "context.trace_id": trace, "attributes.input.value": Q}
    for n, (i, t, sc) in enumerate(DOCS):
        row |= {
            f"attributes.retrieval.documents.{n}.document.id": i,
            f"attributes.retrieval.documents.{n}.document.content": t,
            f"attributes.retrieval.documents.{n}.document.score": sc,
        }
    return row


def _stored(path, **opts):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    return rep, (
        con.execute(
            "SELECT run_id, query_id, position, doc_id, span_hash, text FROM evidence ORDER BY query_id, position"
        ).fetchall(),
        con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records").fetchall(),
    )


def _native(tmp_path, answer="The Moon."):
    rec = {
        "run_id": "phoenix",
        "query_id": query_id_for(Q),
        "query": Q,
        "answer": answer,
        "evidence": [{"doc_id": i, "text": t} for i, t, _ in DOCS],
    }
    return _stored(write_jsonl(tmp_path / "native" / "phoenix.jsonl", [rec]))[1]


def test_nested_spans_join_the_llm_answer(tmp_path):
    rep, got = _stored(write_jsonl(tmp_path / "phoenix.jsonl", nested_spans()))
    assert rep.n_rejected == 0 and rep.n_records == 1 and rep.files[0].n_skipped == 2
    assert got == _native(tmp_path)


def test_flattened_spans_and_the_phoenix_parquet_dataframe(tmp_path):
    llm = {"span_kind": "LLM", "context.trace_id": "t1", "attributes.output.value": "The Moon."}
    rep, got = _stored(write_jsonl(tmp_path / "phoenix.jsonl", [flat_span(), llm]))
    assert rep.n_rejected == 0 and got == _native(tmp_path)
    # Phoenix's get_spans_dataframe(): retrieval.documents as a list of {"document": {...}} per row
    rows = [
        {
            "name": "retrieve",
            "span_kind": "RETRIEVER",
            "context.trace_id": "t1",
            "attributes.input.value": Q,
            "attributes.retrieval.documents": [{"document": {"id": i, "content": t, "score": sc}} for i, t, sc in DOCS],
            "attributes.output.value": None,
        },
        {
            "name": "llm",
            "span_kind": "LLM",
            "context.trace_id": "t1",
            "attributes.input.value": "prompt",
            "attributes.retrieval.documents": None,
            "attributes.output.value": "The Moon.",
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "phoenix.parquet")
    rep, got = _stored(tmp_path / "phoenix.parquet")
    assert rep.n_rejected == 0 and got == _native(tmp_path)


def test_a_named_doc_id_key_wins_over_a_node_id(tmp_path):
    """LlamaIndex's spans (as Phoenix exports them) give each chunk's node UUID as ``document.id`` and
    the source document in its metadata: ``--doc-id-key doc_id`` was silently ignored (the node id
    won), so the run shared no document with any other run or label. A key the user names wins where a
    passage's metadata holds it; the logged id stays where it does not."""
    docs = [
        {"document.id": "3eca67e6-9085-5ac1-a84e-d9de0672cb92", "document.content": "The Moon's gravity.",
         "document.metadata": {"doc_id": "moon", "chunk_index": 2}},
        {"document.id": "8d9f6d11-4210-501c-b12e-0da279e2a647", "document.content": "Tides follow the Moon.",
         "document.metadata": {"title": "no id here"}},
    ]  # fmt: skip
    rows = [
        {"span_kind": "RETRIEVER", "context.trace_id": "t1", "attributes.input.value": Q,
         "attributes.retrieval.documents": docs},
        {"span_kind": "LLM", "context.trace_id": "t1", "attributes.input.value": "prompt",
         "attributes.retrieval.documents": None},
    ]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "phoenix.parquet")
    rep, (ev, _rec) = _stored(tmp_path / "phoenix.parquet", doc_id_key="doc_id")
    assert rep.n_rejected == 0 and [e[3] for e in ev] == ["moon", "8d9f6d11-4210-501c-b12e-0da279e2a647"]
    _rep, (ev, _rec) = _stored(tmp_path / "phoenix.parquet")  # without the key: the node ids, as logged
    assert [e[3] for e in ev] == ["3eca67e6-9085-5ac1-a84e-d9de0672cb92", "8d9f6d11-4210-501c-b12e-0da279e2a647"]
    smith = [
        {"id": "r2", "run_type": "retriever", "trace_id": "t1", "inputs": {"query": Q},
         "outputs": {"documents": [{"id": "uuid-1", "page_content": "The Moon's gravity.",
                                    "metadata": {"doc_id": "moon"}, "type": "Document"}]}},
    ]  # fmt: skip
    _rep, (ev, _rec) = _stored(write_jsonl(tmp_path / "smith.jsonl", smith), doc_id_key="doc_id")
    assert [e[3] for e in ev] == ["moon"]  # a LangChain Document's own id (newer LangChain) likewise


def test_a_broken_span_is_quarantined_and_the_trace_still_loads(tmp_path):
    no_content = {
        "span_kind": "RETRIEVER",
        "context.trace_id": "t2",
        "attributes.input.value": "x",
        "attributes.retrieval.documents.0.document.id": "d",
    }
    spans = [*nested_spans(), no_content]
    rep, (_ev, rec) = _stored(write_jsonl(tmp_path / "p.jsonl", spans))
    assert len(rec) == 1 and rep.n_rejected == 1 and "document.content" in rep.rejected[0].message
    f = rep.files[0]
    assert f.n_loaded + f.n_rejected + f.n_skipped == f.n_lines == 4


def test_a_reranker_span_makes_the_trace_a_provenance_graph(tmp_path):
    reranker = {
        "span_kind": "RERANKER",
        "context.trace_id": "t1",
        "attributes.reranker.query": Q,
        "attributes.reranker.output_documents.0.document.id": "cycle",
        "attributes.reranker.output_documents.0.document.content": DOCS[1][1],
    }
    answer = "The lunar cycle [Document 1]."
    rep, (_ev, _rec) = _stored(write_jsonl(tmp_path / "phoenix.jsonl", [*nested_spans(answer=answer), reranker]))
    assert rep.n_rejected == 0 and rep.n_records == 1 and rep.n_provenance == 1
    f = rep.files[0]
    assert f.n_loaded + f.n_rejected + f.n_skipped == f.n_lines == 4
    from ragaudit_core.fidelity import fidelity_runs

    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "phoenix.jsonl"])
    nodes = con.execute("SELECT node_id, stage, doc_id, derived_from FROM prov_nodes ORDER BY ord").fetchall()
    assert [n[:3] for n in nodes] == [
        ("r0", 2, "moon"),
        ("r1", 2, "cycle"),
        ("k0", 3, "cycle"),
        ("x0", 4, None),
        ("g", 5, None),
    ]
    assert nodes[2][3] == ["r1"]  # the reranked document links to its retrieval
    dropped = json.loads(con.execute("SELECT dropped FROM prov_records").fetchone()[0])
    assert [d["node_id"] for d in dropped] == ["r0"]  # the reranker left the Moon passage out
    fid = fidelity_runs(con)["phoenix"]
    assert fid.queries["cfs"].tolist() == [1.0]  # "[Document 1]" is the reranked context element


def test_reranked_chunks_of_one_document_link_to_their_own_retrievals(tmp_path):
    """Two retrieved chunks of manual.pdf, reranked in the other order: each reranked chunk comes from
    the retrieved chunk with its id and its text (the id alone named the first chunk twice, and the
    second was reported dropped though the reranker kept it)."""
    ret = {"span_kind": "RETRIEVER", "context.trace_id": "t9", "attributes.input.value": "How do I reset?"}
    for i, (doc, text) in enumerate([("manual.pdf", "Chunk one."), ("manual.pdf", "Chunk two."), ("faq.md", "FAQ.")]):
        ret[f"attributes.retrieval.documents.{i}.document.id"] = doc
        ret[f"attributes.retrieval.documents.{i}.document.content"] = text
    rr = {"span_kind": "RERANKER", "context.trace_id": "t9", "attributes.reranker.query": "How do I reset?"}
    for j, text in enumerate(["Chunk two.", "Chunk one."]):
        rr[f"attributes.reranker.output_documents.{j}.document.id"] = "manual.pdf"
        rr[f"attributes.reranker.output_documents.{j}.document.content"] = text
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "rr.jsonl", [ret, rr])])
    links = con.execute("SELECT node_id, derived_from FROM prov_nodes WHERE stage = 3 ORDER BY ord").fetchall()
    assert links == [("k0", ["r1"]), ("k1", ["r0"])]
    dropped = json.loads(con.execute("SELECT dropped FROM prov_records").fetchone()[0])
    assert [d["node_id"] for d in dropped] == ["r2"]  # only the FAQ entry was left out


def test_a_reranked_document_whose_content_is_a_list_leaves_the_file_readable(tmp_path):
    """The id-and-text key made of a list content was unhashable: the whole file was refused
    (TypeError) where it loaded before. A list is no text: the document is linked by its id."""
    ret = {"span_kind": "RETRIEVER", "context.trace_id": "t8", "attributes.input.value": "Q?"}
    ret |= {
        "attributes.retrieval.documents.0.document.id": "a",
        "attributes.retrieval.documents.0.document.content": "A.",
    }
    rr = {
        "span_kind": "RERANKER",
        "context.trace_id": "t8",
        "attributes.reranker.query": "Q?",
        "attributes.reranker.output_documents.0.document.id": "a",
        "attributes.reranker.output_documents.0.document.content": ["A.", "B."],
    }
    con = store.connect(":memory:")
    rep = ingest_paths(con, [write_jsonl(tmp_path / "l.jsonl", [ret, rr])])
    assert rep.n_records == 1
    assert con.execute("SELECT node_id, derived_from FROM prov_nodes WHERE stage = 3").fetchall() == [("k0", ["r0"])]


def test_the_provenance_graph_names_documents_as_the_evidence_does_under_a_doc_id_key(tmp_path):
    """--doc-id-key file_name: the evidence stores n1.txt, n2.txt; the graph's retrieved and reranked
    documents named n1, n2 (the span's own ids), so fidelity matched other documents than stability."""
    ret = {"span_kind": "RETRIEVER", "context.trace_id": "t7", "attributes.input.value": "Why tides?"}
    for i, text in enumerate(["Moon pulls.", "Sun helps."]):
        ret[f"attributes.retrieval.documents.{i}.document.id"] = f"n{i + 1}"
        ret[f"attributes.retrieval.documents.{i}.document.content"] = text
        ret[f"attributes.retrieval.documents.{i}.document.metadata"] = json.dumps({"file_name": f"n{i + 1}.txt"})
    rr = {
        "span_kind": "RERANKER",
        "context.trace_id": "t7",
        "attributes.reranker.query": "Why tides?",
        "attributes.reranker.output_documents.0.document.id": "n2",
        "attributes.reranker.output_documents.0.document.content": "Sun helps.",
    }
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "k.jsonl", [ret, rr])], IngestOptions(doc_id_key="file_name"))
    assert [d for (d,) in con.execute("SELECT doc_id FROM evidence ORDER BY rank").fetchall()] == ["n1.txt", "n2.txt"]
    graph = con.execute("SELECT node_id, doc_id FROM prov_nodes WHERE stage IN (2, 3) ORDER BY ord").fetchall()
    assert graph == [("r0", "n1.txt"), ("r1", "n2.txt"), ("k0", "n2.txt")]


_KIND_KEYS = ["kind", "span.kind", "openinference.span.kind", "openinference", "openinference.span", "span", "kind."]
_KEYS = st.sampled_from([*_KIND_KEYS, "", ".", "a", "attributes", "context", "span_kind"])
_JSONISH = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS | st.text(max_size=4), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_KEYS | st.text(max_size=4), _JSONISH, max_size=4))
def test_telling_spans_apart_without_flattening_decides_as_flattening_does(obj):
    """The detector's shortcut (no key ending in ``kind`` on the paths ``flatten`` walks: not a
    span) never changes its answer; nesting past flatten's depth included."""
    from ragaudit_core.logs.formats import openinference
    from ragaudit_core.logs.formats.spans import flatten

    def by_flattening(o: dict) -> bool:
        flat = flatten(o)
        return any(k.endswith("openinference.span.kind") for k in flat) or (
            "span_kind" in o and any(k.startswith(("attributes.", "context.")) for k in flat)
        )

    deep: object = {"openinference.span.kind": "RETRIEVER"}
    for _ in range(14):
        deep = {"x": deep}
    for o in (obj, {"a": {"openinference.span.kind": 1}}, {"openinference.span": {"kind.": 1}}, deep):
        assert openinference.detect(o) == by_flattening(o)


# ---------------------------------------------------------------- run settings in the spans' metadata


def console_spans(trace: str, question: str, root_md: dict | None, retriever_md: dict | None) -> list[dict]:
    """One trace as OpenTelemetry's console exporter writes a LangChain app that OpenInference
    instruments: each span's ``metadata`` attribute is the run's metadata as JSON text (the root
    chain's as the app passed it; the retriever's with LangChain's tracing keys added)."""

    def span(span_id: str, parent: str | None, attrs: dict, md: dict | None) -> dict:
        return {
            "name": attrs["openinference.span.kind"].lower(),
            "context": {"trace_id": trace, "span_id": span_id, "trace_state": "[]"},
            "kind": "SpanKind.INTERNAL",
            "parent_id": parent,
            "start_time": "2025-03-01T10:15:00.000000Z",
            "end_time": "2025-03-01T10:15:01.000000Z",
            "status": {"status_code": "OK"},
            "attributes": {**attrs, **({"metadata": json.dumps(md)} if md is not None else {})},
            "events": [],
            "links": [],
            "resource": {"attributes": {"service.name": "rag"}, "schema_url": ""},
        }

    retrieved = {"openinference.span.kind": "RETRIEVER", "input.value": question}
    for n, (i, t, sc) in enumerate(DOCS):
        retrieved |= {
            f"retrieval.documents.{n}.document.id": i,
            f"retrieval.documents.{n}.document.content": t,
            f"retrieval.documents.{n}.document.score": sc,
        }
    chain = {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": "The Moon."}
    llm = {"openinference.span.kind": "LLM", "output.value": "The Moon.", "llm.model_name": "gpt-4o-mini"}
    with_ls = None if retriever_md is None else {**retriever_md, "ls_retriever_name": "vectorstore"}
    return [
        span(f"{trace}-r", f"{trace}-c", retrieved, with_ls),
        span(f"{trace}-l", f"{trace}-c", llm, root_md),
        span(f"{trace}-c", None, chain, root_md),
    ]


def _grid(path, **opts) -> list[tuple]:
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    assert rep.n_rejected == 0
    return con.execute("SELECT run_id, top_k, chunk_size, chunk_overlap, embedder, config FROM runs").fetchall()


def test_settings_in_the_spans_metadata_attribute_fill_the_grid(tmp_path):
    """The retriever span's ``metadata`` (read on the fast path: the exporter's shape) over the
    root span's: top-k from the retriever, the rest from the root chain."""
    from ragaudit_core.logs.formats import openinference

    root_md = {"top_k": 10, "chunk_size": 256, "chunk_overlap": 32, "embedder": "all-MiniLM-L6-v2", "session_id": "s"}
    spans = console_spans("t1", Q, root_md, {"search_kwargs": {"k": 4}})
    assert openinference.read_span_fast(json.dumps(spans[0]).encode()).settings == {"top_k": 4}
    want = '{"chunk_overlap": 32, "chunk_size": 256, "embedder": "all-MiniLM-L6-v2", "top_k": 4}'
    assert _grid(write_jsonl(tmp_path / "phoenix.jsonl", spans)) == [("phoenix", 4, 256, 32, "all-MiniLM-L6-v2", want)]
    # the retriever without metadata: the root span's settings; nested spans (the general path) likewise
    spans = console_spans("t1", Q, root_md, None)
    want = '{"chunk_overlap": 32, "chunk_size": 256, "embedder": "all-MiniLM-L6-v2", "top_k": 10}'
    assert _grid(write_jsonl(tmp_path / "b" / "phoenix.jsonl", spans))[0][1:] == (10, 256, 32, "all-MiniLM-L6-v2", want)
    nested = nested_spans()
    nested[1]["attributes"]["metadata"] = json.dumps({"similarity_top_k": 3, "embed_model": "bge"})
    assert _grid(write_jsonl(tmp_path / "c" / "phoenix.jsonl", nested))[0][1:5] == (3, None, None, "bge")


def test_the_phoenix_dataframe_and_an_otlp_export_read_the_same_settings(tmp_path):
    """Phoenix's span dataframe holds ``attributes.metadata`` decoded (an object); an OTLP JSON
    export holds it as a string attribute."""
    md = {"similarity_top_k": 5, "chunk_size": 1024, "chunk_overlap": 20, "embed_model": "BAAI/bge-small-en-v1.5"}
    want = [("phoenix", 5, 1024, 20, "BAAI/bge-small-en-v1.5")]
    row = {**flat_span(), "name": "retrieve", "parent_id": "c", "attributes.metadata": md}
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "phoenix.parquet")
    assert [r[:5] for r in _grid(tmp_path / "phoenix.parquet")] == want
    from tests.logs.test_otlp import _attr

    spans = []
    for span_id, parent, attrs in (
        ("c", "", {"openinference.span.kind": "CHAIN", "input.value": Q, "metadata": json.dumps(md)}),
        ("r", "c", {k.removeprefix("attributes."): v for k, v in flat_span().items() if k.startswith("attributes.")}),
    ):
        if span_id == "r":
            attrs["openinference.span.kind"] = "RETRIEVER"
        attrs = [_attr(k, v) for k, v in attrs.items()]
        spans.append({"traceId": "t1", "spanId": span_id, "parentSpanId": parent, "name": span_id, "attributes": attrs})
    otlp = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": spans}]}]}
    (tmp_path / "otlp").mkdir()
    (tmp_path / "otlp" / "phoenix.json").write_text(json.dumps(otlp))
    assert [r[:5] for r in _grid(tmp_path / "otlp" / "phoenix.json")] == want

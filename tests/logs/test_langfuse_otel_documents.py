"""Langfuse observations ingested from OpenTelemetry whose retrieved documents are only in the span's
attributes (``metadata.attributes``, OpenInference's flattened ``retrieval.documents.{i}.document.*``
keys, each stringified by Langfuse) load as retriever spans, read by OpenInference's rules; a
Langfuse EMBEDDING observation names its trace's embedder. The same on every ingest path (in the
process, the general readers alone, mapped as read, worker processes), from JSON Lines and from a
trace export document."""

from __future__ import annotations

import json

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import FormatError, langfuse, query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl
from tests.logs.test_format_openinference import DOCS, Q
from tests.logs.test_trace_settings import every_path
from tests.logs.trace_shapes import EMBEDDER, otel_observations, otel_retrieval

MOON, CYCLE = DOCS[0][1], DOCS[1][1]
TWO = [("0", "moon", MOON, 0.91), ("1", "cycle", CYCLE, 0.55)]
"""Two documents as ``otel_retrieval`` writes them: index, id, text, score."""


def _export(trace: str, observations: list[dict], metadata: dict | None = None) -> dict:
    """A Langfuse trace export (the UI's "download trace"): the trace and its observations."""
    head = {"id": trace, "name": "rag", "timestamp": "2025-03-01T10:15:00.000Z", "input": Q, "output": "The Moon."}
    return {"trace": {**head, **({"metadata": metadata} if metadata else {})}, "observations": observations}


def _loaded(monkeypatch, paths: list) -> tuple:
    """Evidence, records, runs, warnings and rejections of ``paths``, the same on every path; and
    how many retriever spans each worker range mapped."""

    def ingest() -> tuple:
        con = store.connect(":memory:")
        rep = ingest_paths(con, paths, IngestOptions())
        q = "SELECT run_id, query_id, position, doc_id, text, rank, score, metadata FROM evidence ORDER BY ALL"
        return (
            con.execute(q).fetchall(),
            con.execute("SELECT run_id, query_id, query, answer FROM records ORDER BY ALL").fetchall(),
            con.execute("SELECT run_id, embedder, config FROM runs ORDER BY ALL").fetchall(),
            sorted((w.line_no, w.code, w.message) for w in rep.warnings if w.code.startswith("langfuse")),
            sorted((i.line_no, i.message) for i in rep.rejected),
        )

    return every_path(monkeypatch, ingest)


def _stored_md(key: str, doc: str) -> str:
    """A document's metadata as the evidence table stores it (compact JSON)."""
    return json.dumps({key: f"{doc}.txt"}, separators=(",", ":"))


def _rows(run: str, question: str, docs: list[tuple]) -> list[tuple]:
    """The evidence rows a record of ``docs`` (id, text, score) stores, in rank order."""
    return [
        (run, query_id_for(question), n, i, t, n, s, _stored_md("file_name", i)) for n, (i, t, s) in enumerate(docs)
    ]


def test_documents_only_in_the_spans_attributes_load_as_a_retriever(tmp_path, monkeypatch):
    """A RETRIEVER (or, as older Langfuse typed it, SPAN) observation whose ``output`` is null or a
    text and whose documents are only in ``metadata.attributes``: its documents in index order with
    their ids, scores (stringified numbers) and metadata; its query its ``input``, else
    ``input.value``; its trace's EMBEDDING observation's model (``model``, else the
    ``embedding.model_name`` attribute) the run's embedder, before or after it in the file."""
    why = "Why do tides turn?"
    older = otel_retrieval("a2", why, TWO, kind="SPAN", model_attribute=EMBEDDER, as_text=True, input=None)
    older[1]["output"] = "2 nodes retrieved"
    older[2]["type"] = "SPAN"  # (its EMBEDDING kind only in its attributes)
    attrs = write_jsonl(tmp_path / "attrs.jsonl", [*otel_retrieval("a1", Q, TWO, model=EMBEDDER), *older[::-1]])
    two = [(i, t, s) for _n, i, t, s in TWO]
    got, held = _loaded(monkeypatch, [attrs])
    assert got[0] == sorted(_rows("attrs", Q, two) + _rows("attrs", why, two))
    assert got[1] == sorted(
        [("attrs", query_id_for(Q), Q, "The Moon."), ("attrs", query_id_for(why), why, "The Moon.")]
    )
    assert got[2] == [("attrs", EMBEDDER, json.dumps({"embedder": EMBEDDER}))]
    assert got[3:] == ([], []) and sum(held) == 2  # (both retrievers mapped by the worker processes)


def test_indices_with_gaps_or_written_twice_and_the_observations_own_keys(tmp_path, monkeypatch):
    """Indices as OpenInference's reader takes them: gaps read in order as ranks (a warning naming the
    line), an index written twice rejects the observation. The observation's own keys win over its
    span's attributes: ``input`` over ``input.value``, ``model`` over ``embedding.model_name``, the
    documents its ``output`` holds over the attributes' (read as before)."""
    gaps = [("0", "moon", MOON, 0.91), ("2", "cycle", CYCLE, 0.55), ("7", "sun", "The Sun pulls too.", None)]
    traces = otel_retrieval("g1", "attribute question", gaps, model="bge-own", model_attribute="bge-attr")
    traces[1]["input"] = {"query": Q}
    twice = otel_retrieval("g2", "Why?", [*TWO, ("00", "other", "Another text.", 0.1)], model="bge-own")
    path = write_jsonl(tmp_path / "gaps.jsonl", [*traces, *twice])
    both = otel_observations("o1", Q, {}, {"retrieval.documents.0.document.id": "attr-id"})
    output = write_jsonl(tmp_path / "output.jsonl", both)
    (evidence, records, runs, warnings, rejected), _held = _loaded(monkeypatch, [path, output])
    sun = [("moon", MOON, 0.91), ("cycle", CYCLE, 0.55), ("sun", "The Sun pulls too.", None)]
    langchain = [  # (the output's documents: ids and metadata as LangChain logs them, no scores)
        ("output", query_id_for(Q), n, i, t, n, None, _stored_md("source", i)) for n, (i, t, _s) in enumerate(DOCS)
    ]
    assert evidence == sorted(_rows("gaps", Q, sun) + langchain)
    assert [r[:3] for r in records] == [("gaps", query_id_for(Q), Q), ("output", query_id_for(Q), Q)]
    assert runs == [("gaps", "bge-own", '{"embedder": "bge-own"}'), ("output", None, None)]
    gap = "retrieval.documents indices 0, 2, 7 have gaps: read in that order as ranks 0–2"
    assert warnings == [(2, "langfuse-mapping", gap)]
    twice_why = (
        "Langfuse observation: document index 0 is written twice (retrieval.documents.0 and retrieval.documents.00); "
        "which one is meant is unknown"
    )
    assert rejected == [(6, twice_why)]


def test_trace_export_documents_and_a_trace_without_retriever(tmp_path, monkeypatch):
    """A trace export (``{"trace", "observations"}``, pretty-printed or on a line of JSON Lines)
    reads the same; the trace's metadata names the embedder over its EMBEDDING observation. A trace
    of such observations without a retriever is still refused in one sentence; a RETRIEVER
    observation with documents neither in its output nor in its attributes retrieved nothing where
    its output is null, and is rejected where its output is a text."""
    pretty = tmp_path / "export.json"
    pretty.write_text(
        json.dumps(_export("x1", otel_retrieval("x1", Q, TWO, model=EMBEDDER), {"embedder": "e5"}), indent=2)
    )
    line = write_jsonl(tmp_path / "line.jsonl", [_export("x2", otel_retrieval("x2", Q, TWO, model_attribute=EMBEDDER))])
    chat = [o for o in otel_retrieval("c1", Q, TWO, model=EMBEDDER) if o["type"] != "RETRIEVER"]
    refused = tmp_path / "chat.json"
    refused.write_text(json.dumps(_export("c1", chat), indent=2))
    (evidence, _records, runs, _warnings, rejected), _held = _loaded(monkeypatch, [pretty, line, refused])
    two = [(i, t, s) for _n, i, t, s in TWO]
    assert evidence == sorted(_rows("export", Q, two) + _rows("line", Q, two))
    assert runs == [("export", "e5", '{"embedder": "e5"}'), ("line", EMBEDDER, json.dumps({"embedder": EMBEDDER}))]
    sentence = (
        "a Langfuse trace with 3 observations (CHAIN 1, EMBEDDING 1, GENERATION 1) and no retriever: nothing to audit"
    )
    assert rejected == [(None, sentence)]
    with pytest.raises(
        FormatError,
        match=r"^retriever observation whose output and span attributes hold no documents \(a list of objects "
        r"with a text under page_content, pageContent",
    ):
        langfuse.read_span({**otel_retrieval("e1", Q, [])[1], "output": "three passages"})
    nothing = langfuse.read_span(otel_retrieval("e1", Q, [])[1])
    assert (nothing.kind, nothing.query, nothing.texts) == ("retriever", Q, [])
    assert nothing.notes == ["RETRIEVER observation without output (null): loaded as a record that retrieved nothing"]

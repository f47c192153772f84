"""Run settings in more shapes real exports hold them, the same on every ingest path (read in
the process, by the general readers alone, mapped as read, by worker processes): Langfuse
observations ingested from OpenTelemetry (the span's attributes under ``metadata.attributes``),
the model an OpenInference EMBEDDING span of the trace names, and Phoenix's span dataframe with its
metadata spread into columns or written by ``to_csv``."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import detect, langfuse, openinference
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.shapes import langfuse_trace_settings
from tests.helpers import write_jsonl
from tests.logs.test_format_openinference import Q, console_spans
from tests.logs.test_trace_settings import every_path
from tests.logs.trace_shapes import EMBEDDER, embedding_span, flattened, otel_observations, phoenix_frame


def _runs(monkeypatch, paths: list) -> list[tuple]:
    """The runs table (and the config warnings) of ``paths`` loaded on every path (the same each time)."""

    def ingest() -> tuple:
        con = store.connect(":memory:")
        rep = ingest_paths(con, paths, IngestOptions(doc_id_key="source"))
        assert rep.n_rejected == 0
        grid = con.execute("SELECT run_id, top_k, chunk_size, chunk_overlap, embedder, config FROM runs ORDER BY 1")
        return grid.fetchall(), sorted(w.message for w in rep.warnings if w.code == "config-mismatch")

    (grid, mismatches), _held = every_path(monkeypatch, ingest)
    assert mismatches == []
    return grid


def test_langfuse_observations_from_otel_read_the_spans_attributes(tmp_path, monkeypatch):
    """Langfuse keeps an OTel span's attributes under its observation's ``metadata.attributes``
    (each value stringified; the three nested objects JSON text where the API returns them so):
    the OpenInference ``metadata`` attribute there and the span's plain attributes name settings,
    under the observation's own keys (``langfuse.observation.metadata.*``)."""
    root_md = {"chunk_size": 256, "chunk_overlap": 32, "embedding_model": "text-embedding-3-small"}
    ret_md = {**root_md, "ls_retriever_name": "vectorstore", "ls_embedding_provider": "OpenAIEmbeddings"}
    lines = [
        *otel_observations(
            "a1", "What causes tides?", {"metadata": json.dumps(root_md)}, {"metadata": json.dumps(ret_md), "top_k": 4}
        ),
        *otel_observations(
            "a2", "Why?", {"metadata": json.dumps(root_md)}, {"metadata": json.dumps(ret_md), "top_k": 4}, as_text=True
        ),
    ]
    # the root span's own key (a langfuse.observation.metadata.* attribute) over its attributes;
    # a plain attribute (set on the span itself) over the context-wide ``metadata`` attribute
    own = otel_observations(
        "b1",
        Q,
        {"metadata": json.dumps({**root_md, "top_k": 10}), "chunk_overlap": 64},
        {},
        root_own={"chunk_size": 512},
    )
    export = {"trace": {"id": "c1", "name": "rag", "metadata": own[0]["metadata"] | {"chunk_size": 128}}}
    export["observations"] = [{**o, "traceId": "c1", "metadata": None} for o in own]
    paths = [
        write_jsonl(tmp_path / "otel.jsonl", lines),
        write_jsonl(tmp_path / "own.jsonl", own),
        write_jsonl(tmp_path / "export.jsonl", [export]),
    ]
    assert _runs(monkeypatch, paths) == [
        (
            "export",
            10,
            128,
            64,
            "text-embedding-3-small",
            '{"chunk_overlap": "64", "chunk_size": 128, "embedder": "text-embedding-3-small", "top_k": 10}',
        ),
        (
            "otel",
            4,
            256,
            32,
            "text-embedding-3-small",
            '{"chunk_overlap": 32, "chunk_size": 256, "embedder": "text-embedding-3-small", "top_k": "4"}',
        ),
        (
            "own",
            10,
            512,
            64,
            "text-embedding-3-small",
            '{"chunk_overlap": "64", "chunk_size": 512, "embedder": "text-embedding-3-small", "top_k": 10}',
        ),
    ]
    assert langfuse_trace_settings(export)[1]["chunk_size"] == 128
    assert detect(own[1]) is langfuse.FORMAT  # (its span's OpenInference kind under metadata.attributes)
    # the resource's and the scope's attributes name no setting; a Langfuse SDK span has no attributes
    assert (
        langfuse.read_span({**own[0], "metadata": {"resourceAttributes": {"top_k": 3}, "scope": {}}}).settings is None
    )


def test_an_embedding_span_names_the_embedder_where_no_metadata_does(tmp_path, monkeypatch):
    """An OpenInference EMBEDDING span (LlamaIndex embeds the query under its retriever span) names
    its trace's embedder in ``embedding.model_name``, before or after the retriever span in the
    file; an embedder in the metadata wins; a model-less embedding span names none."""

    def trace(t: str, root_md: dict | None, model: str | None, first: bool) -> list[dict]:
        spans = console_spans(t, f"{Q} {t}", root_md, None)
        emb = embedding_span(t, f"{t}-r", model, Q)
        return [emb, *spans] if first else [*spans, emb]

    top = {"similarity_top_k": 2}
    paths = [
        write_jsonl(tmp_path / "after.jsonl", [*trace("a1", top, EMBEDDER, False), *trace("a2", top, EMBEDDER, True)]),
        write_jsonl(
            tmp_path / "before.jsonl", [*trace("b1", None, EMBEDDER, True), *trace("b2", None, EMBEDDER, False)]
        ),
        write_jsonl(
            tmp_path / "metadata.jsonl", trace("m1", {"embed_model": {"model_name": "bge-large"}}, EMBEDDER, True)
        ),
        write_jsonl(tmp_path / "nameless.jsonl", trace("n1", top, None, True)),
    ]
    assert _runs(monkeypatch, paths) == [
        ("after", 2, None, None, EMBEDDER, json.dumps({"embedder": EMBEDDER, "top_k": 2})),
        ("before", None, None, None, EMBEDDER, json.dumps({"embedder": EMBEDDER})),
        ("metadata", None, None, None, "bge-large", '{"embedder": "bge-large"}'),
        ("nameless", 2, None, None, None, '{"top_k": 2}'),
    ]
    span = openinference.read_span(embedding_span("e", "r", EMBEDDER, Q))
    assert (span.kind, span.embedder, span.settings) == ("other", EMBEDDER, None)


def test_phoenix_dataframe_metadata_in_columns_or_written_by_to_csv(tmp_path, monkeypatch):
    """Phoenix's span dataframe holds a span's metadata decoded in ``attributes.metadata``: saved
    with ``to_csv`` it is the Python literal pandas writes; ``pd.json_normalize`` spreads it into
    ``attributes.metadata.<key>`` columns (or ``metadata.<key>``, a frame of the attributes alone),
    saved as Parquet, CSV or JSON Lines (read by the worker processes too)."""
    root_md = {"chunk_size": 512, "chunk_overlap": 64, "embed_model": EMBEDDER}
    frame = phoenix_frame(
        [("t1", Q, root_md, {"similarity_top_k": 5}), ("t2", "Why?", root_md, {"similarity_top_k": 5})]
    )
    frame.to_csv(tmp_path / "literal.csv", index=False)
    assert "{'similarity_top_k': 5}" in (tmp_path / "literal.csv").read_text()
    spread = flattened(frame)
    assert "attributes.metadata.similarity_top_k" in spread.columns
    spread.to_parquet(tmp_path / "columns.parquet")
    spread.to_csv(tmp_path / "columns_csv.csv", index=False)  # (the columns' numbers written "5.0")
    spread.to_json(tmp_path / "columns_jsonl.jsonl", orient="records", lines=True)
    flattened(frame, bare=True).to_parquet(tmp_path / "bare.parquet")
    names = ("literal.csv", "columns.parquet", "columns_csv.csv", "columns_jsonl.jsonl", "bare.parquet")
    got = _runs(monkeypatch, [tmp_path / f for f in names])
    runs = ("bare", "columns", "columns_csv", "columns_jsonl", "literal")
    assert [r[:5] for r in got] == [(r, 5, 512, 64, EMBEDDER) for r in runs]
    assert got[-1][5] == json.dumps({"chunk_overlap": 64, "chunk_size": 512, "embedder": EMBEDDER, "top_k": 5})

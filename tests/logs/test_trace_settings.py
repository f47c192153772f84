"""Run settings logged in other tools' trace metadata (LangSmith ``extra.metadata``, Langfuse
``metadata``, OpenInference's ``metadata`` attribute) give a trace export's records a ``config``
as a native log's does: the same runs table, the same rule where a run's traces disagree, on every
path a span takes (read here or by the worker processes, mapped as it is read or at the file's
end, by a fast reader or the general one) — and ``--settings`` still goes only to runs that log
none."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from ragaudit_core.logs import formats, records, store
from ragaudit_core.logs import held as held_rows
from ragaudit_core.logs import ingest as ing
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.formats.settings import merged, read_settings
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.workspace import load_paths
from tests.helpers import write_jsonl
from tests.logs.test_format_langfuse import trace_export
from tests.logs.test_format_langsmith import LANGCHAIN_LS, traced_runs
from tests.logs.test_format_openinference import console_spans
from tests.logs.test_streaming import _everything, force_pool
from tests.logs.trace_shapes import EMBEDDER, embedding_span, flattened, otel_observations, phoenix_frame

T = TypeVar("T")
ROOT_MD = {"chunk_size": 256, "chunk_overlap": 32, "embedder": "all-MiniLM-L6-v2"}


def test_the_aliases_read_as_documented():
    assert read_settings(None) is None and read_settings("not json") is None and read_settings({}) is None
    assert read_settings({"user_id": "u", "ls_embedding_provider": "OpenAIEmbeddings"}) is None
    assert read_settings('{"search_kwargs": "{\\"k\\": 4}", "embed_model": {"model_name": "bge"}}') == {
        "top_k": 4,
        "embedder": "bge",
    }
    assert read_settings({"search_kwargs.k": 3, "k": 9}) == {"top_k": 3}  # (the first alias that holds one)
    assert read_settings({"top_k": None, "similarity_top_k": " ", "k": 2}) == {"top_k": 2}
    assert read_settings({"top_k": [5], "chunk_size": float("nan"), "chunkOverlap": True}) == {"chunk_overlap": True}
    assert read_settings({"ls_embedding_model": "text-embedding-3-small"}) == {"embedder": "text-embedding-3-small"}
    assert merged(None, {"top_k": 1, "chunk_size": 2}, {}, {"top_k": 3}) == {"top_k": 3, "chunk_size": 2}
    assert merged(None, {}) is None


def test_given_settings_do_not_override_logged_ones(tmp_path):
    """``ingest --settings`` (the upload's "Settings of these runs") gives its settings to the
    runs of the load that log none; a run whose traces log settings keeps them, with a warning."""
    logged = write_jsonl(tmp_path / "logged.jsonl", traced_runs("t1", "Why?", {"top_k": 8, "chunk_size": 128}, {}))
    bare = write_jsonl(tmp_path / "bare.jsonl", traced_runs("t2", "Why?", {}, LANGCHAIN_LS))
    con = store.connect(":memory:")
    rep = load_paths(con, [logged, bare], IngestOptions(doc_id_key="source"), settings={"top_k": 3, "embedder": "e5"})
    assert con.execute("SELECT run_id, top_k, chunk_size, embedder, config FROM runs ORDER BY 1").fetchall() == [
        ("bare", 3, None, "e5", '{"embedder": "e5", "top_k": 3}'),
        ("logged", 8, 128, None, '{"chunk_size": 128, "top_k": 8}'),
    ]
    assert any("run 'logged' logs its own settings: they are kept" in w.message for w in rep.warnings)


def test_traces_that_disagree_keep_the_rule_of_native_configs(tmp_path):
    """A run's first record's config is kept and a different one later is warned about (with its
    line), as for native records — here the second trace's retriever logs another top-k. And a run
    whose first record logs none takes the first config logged after it, as a native run does."""
    spans = [
        *console_spans("t1", "q one", ROOT_MD, {"top_k": 4}),
        *console_spans("t2", "q two", ROOT_MD, {"top_k": 6}),
        *console_spans("t3", "q three", ROOT_MD, {"top_k": 4}),
    ]
    natives = [
        {"run_id": "r", "query_id": query_id_for(q), "config": {**ROOT_MD, "top_k": k}, "evidence": ["d"]}
        for q, k in (("q one", 4), ("q two", 6), ("q three", 4))
    ]

    def loaded(name: str, lines: list) -> tuple:
        con = store.connect(":memory:")
        path = write_jsonl(tmp_path / name / "r.jsonl", lines)
        rep = ingest_paths(con, [path])
        warned = [(w.line_no is not None, w.code) for w in rep.warnings if w.code == "config-mismatch"]
        return con.execute("SELECT * FROM runs").fetchall(), warned

    got, want = loaded("spans", spans), loaded("native", natives)
    assert got == want and got[1] == [(True, "config-mismatch")]
    assert got[0][0][2] == 4  # (run_id, config, top_k, …)
    first_bare = [*console_spans("t0", "q zero", None, None), *spans]
    native_bare = [{"run_id": "r", "query_id": "z", "evidence": ["d"]}, *natives]
    assert loaded("bare-spans", first_bare) == loaded("bare-native", native_bare)
    assert loaded("bare-spans", first_bare)[0][0][2] == 4  # t1's, the first logged


def _trace_lines(i: int) -> list:
    """Trace ``i`` of a mixed export: OpenInference spans in the exporter's shape (their retriever
    read by the fast reader), LangSmith runs and Langfuse observations (the general readers), root
    spans before or after their retriever, settings from the root, the retriever or both (the
    retrievers of traces 7 and 20 disagree with the others: a warning), none in some. Some in other
    shapes (:data:`SHAPED`, their questions their own): Langfuse observations ingested from
    OpenTelemetry (settings in ``metadata.attributes``), OpenInference traces with an EMBEDDING
    span before or after the retriever (its model their embedder where no metadata names one),
    Phoenix's span dataframe with its metadata spread into columns (``pd.json_normalize``, saved
    by ``to_json``), an exporter's span with an attribute ``metadata.top_k`` (not the fast
    reader's layout)."""
    q = f"shaped question {i}" if i in SHAPED else f"question {i % 11}"
    root_md = None if i % 5 == 4 else {**ROOT_MD, "top_k": 10}
    ret_md = {"top_k": 6 if i in (7, 20) else 4} if i % 3 else None
    kind = i % 3
    if kind == 0 and i % 7 == 5:
        lines = json.loads(flattened(phoenix_frame([(f"t{i}", q, root_md, ret_md)])).to_json(orient="records"))
    elif kind == 0:
        lines = console_spans(f"t{i}", q, root_md, ret_md)
        if i == 30:
            lines[0]["attributes"]["metadata.top_k"] = 5
    elif kind == 1:
        lines = traced_runs(f"t{i}", q, root_md or {}, {**LANGCHAIN_LS, **(ret_md or {})})
    elif i % 4 == 3:
        attrs = [{} if md is None else {"metadata": json.dumps(md)} for md in (root_md, ret_md)]
        lines = otel_observations(f"t{i}", q, *attrs, as_text=i % 8 == 7)
    else:
        lines = [{**o, "traceId": f"t{i}"} for o in trace_export(None, root_md, ret_md, trace=f"t{i}")["observations"]]
    if kind == 0 and (i % 4 == 2 or i == 39):
        lines.append(embedding_span(f"t{i}", f"t{i}-r", EMBEDDER, q))
    if i % 2:
        lines.reverse()  # the root span first
    if i == 9:  # a reranker: the retriever span is read again here for the trace's provenance graph
        lines.append(
            {
                "name": "rerank",
                "context": {"trace_id": f"t{i}", "span_id": "k"},
                "parent_id": f"t{i}-c",
                "attributes": {
                    "openinference.span.kind": "RERANKER",
                    "reranker.output_documents.0.document.id": "moon",
                },
            }
        )
    if i == 13:  # NaN: the line is read in the ingesting process
        lines.append(json.dumps(console_spans("t13b", "nan?", None, {"chunk_size": 64})[0]).replace("0.91", "NaN"))
    return lines


SHAPED = {
    11: {**ROOT_MD, "top_k": 4},  # Langfuse from OTel: the root's metadata attribute, the retriever's top-k
    23: {**ROOT_MD, "top_k": 4},  # (the same, its metadata's objects JSON text)
    12: {**ROOT_MD, "top_k": 10},  # Phoenix's dataframe, the root row's metadata in columns
    30: {**ROOT_MD, "top_k": 5},  # the retriever's metadata.top_k attribute
    33: {**ROOT_MD, "top_k": 10},
    39: {"embedder": EMBEDDER},  # no metadata: its embedding span's model (the span first in the file)
    42: {**ROOT_MD, "top_k": 10},  # the root's metadata names an embedder: it wins over the embedding span's
}
"""Traces in other shapes: the config each one's record gets."""


def _mixed_files(tmp_path) -> list:
    a = write_jsonl(tmp_path / "mixed_a.jsonl", [x for i in range(27) for x in _trace_lines(i)])
    b = write_jsonl(tmp_path / "mixed_b.jsonl", [x for i in range(24, 51) for x in _trace_lines(i)])  # 24: none
    return [a, b]


def test_every_path_gives_the_same_runs_and_records(tmp_path, monkeypatch):
    """The same export loaded in the process (spans held until the file ends), mapped as they are
    read (past the premap threshold), by the general readers alone (the fast ones off), and by two
    worker processes in small ranges: the same runs table (config and grid columns), records,
    evidence, warnings and report."""
    paths = _mixed_files(tmp_path)

    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, paths, IngestOptions(doc_id_key="id")))
        grid = con.execute("SELECT * FROM runs ORDER BY run_id").fetchall()
        prov = con.execute("SELECT run_id, query_id FROM prov_records ORDER BY ALL").fetchall()
        configs = dict(noted)
        noted.clear()
        return got, grid, prov, configs

    noted: list[tuple[str, dict | None]] = []
    note = ing._Batch._run_config

    def spy(self, rec, *args) -> None:  # each record's config, by its query id
        noted.append((rec.query_id, rec.config))
        note(self, rec, *args)

    monkeypatch.setattr(ing._Batch, "_run_config", spy)

    expected, held = every_path(monkeypatch, ingest)
    runs = {r[0]: r for r in expected[1]}
    config = {**ROOT_MD, "top_k": 10}  # its first trace's: the root span's (its retriever logs none)
    assert runs["mixed_a"][1:] == (json.dumps(config, sort_keys=True), 10, 256, 32, "all-MiniLM-L6-v2")
    # its first trace (24) logs none: the next, 25, gives its root's settings and its retriever's top-k
    assert runs["mixed_b"][1:] == (json.dumps({**ROOT_MD, "top_k": 4}, sort_keys=True), 4, 256, 32, "all-MiniLM-L6-v2")
    warnings = expected[0][2]
    assert sum(code == "config-mismatch" for _, code, _ in warnings) >= 2
    assert expected[2] and expected[0][5] == 55 and not expected[0][1]  # the reranker's trace; every retriever
    assert len(held) > 5 and sum(held) >= 40  # the retriever spans mapped by the workers
    assert {i: expected[3][query_id_for(f"shaped question {i}")] for i in SHAPED} == SHAPED


def every_path(monkeypatch, ingest: Callable[[], T]) -> tuple[T, list[int]]:
    """``ingest()`` in the process (spans held until their file ends), by the general readers alone
    (the fast ones off), with every span mapped as it is read (its rows spilled), and by two worker
    processes in small ranges: the same each time (asserted). Returns it, and how many retriever
    spans each worker range mapped."""
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = ingest()
    with monkeypatch.context() as m:  # the general readers alone
        m.setattr(formats, "FAST_TRACE_FORMATS", ())
        m.setattr(records, "fast_record", lambda _rec: None)
        assert ingest() == expected
    with monkeypatch.context() as m:  # every span mapped as it is read, its rows spilled
        m.setattr(held_rows, "PREMAP_BYTES", 0)
        m.setattr(held_rows, "SPILL_BYTES", 1000)
        assert ingest() == expected
    held = force_pool(monkeypatch, 2000, lambda it: it.held)
    assert ingest() == expected
    return expected, held

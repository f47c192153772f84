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

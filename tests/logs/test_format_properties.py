"""For mixed good and bad rows of every format: records loaded + lines quarantined == lines read."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
_good_ragas = st.builds(
    lambda q, ctx: {"user_input": q, "retrieved_contexts": ctx, "response": "a"}, _text, st.lists(_text, max_size=4)
)
_bad_ragas = st.sampled_from(
    [
        {"user_input": "q", "retrieved_contexts": 3},
        {"user_input": ""},
        {"user_input": "q", "retrieved_contexts": ["t"], "retrieved_context_ids": []},
        "not an object",
        [1, 2],
    ]
)
_good_checker = st.builds(
    lambda i, q, t: {
        "query_id": str(i),
        "query": q,
        "response": "r",
        "retrieved_context": [{"doc_id": "d", "text": t}],
    },
    st.integers(0, 10**6),
    _text,
    _text,
)
_bad_checker = st.sampled_from(
    [
        {"query_id": "x", "query": "q", "retrieved_context": [{"doc_id": "d"}]},
        {"query_id": "y", "retrieved_context": []},
        7,
    ]
)


def _count(path) -> tuple[int, int, int]:
    con = store.connect(":memory:")
    report = ingest_paths(con, [path])
    n_quarantined = con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
    return report.n_records, n_quarantined, sum(f.n_lines for f in report.files)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_good_ragas, _bad_ragas), min_size=1, max_size=12), st.booleans())
def test_ragas_rows_are_loaded_or_quarantined(tmp_path, rows, as_array):
    rows[0] = {"user_input": "first", "retrieved_contexts": ["t"], "response": "a"}  # recognisable
    path = tmp_path / ("r.json" if as_array else "r.jsonl")
    path.write_text(json.dumps(rows) if as_array else "\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    loaded, quarantined, read = _count(path)
    assert read == len(rows) and loaded + quarantined == read


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_good_checker, _bad_checker), min_size=1, max_size=12))
def test_ragchecker_results_are_loaded_or_quarantined(tmp_path, results):
    results[0] = {"query_id": "first", "query": "q", "retrieved_context": []}
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"results": results}), encoding="utf-8")
    loaded, quarantined, read = _count(path)
    assert read == len(results) and loaded + quarantined == read


_good_span = st.builds(
    lambda t, q, txt: {
        "span_kind": "RETRIEVER",
        "context.trace_id": t,
        "attributes.input.value": q,
        "attributes.retrieval.documents.0.document.content": txt,
    },
    st.sampled_from(["t1", "t2", "t3"]),
    _text,
    _text,
)
_other_span = st.builds(
    lambda t, a: {"span_kind": "LLM", "context.trace_id": t, "attributes.output.value": a},
    st.sampled_from(["t1", "t2"]),
    _text,
)
_bad_span = st.sampled_from(
    [
        {"span_kind": "RETRIEVER", "context.trace_id": "t9"},
        "x",
        [],
        {
            "span_kind": "RETRIEVER",
            "attributes.input.value": "q",
            "attributes.retrieval.documents.0.document.id": "no content",
        },
    ]
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_good_span, _other_span, _bad_span), min_size=1, max_size=12))
def test_openinference_spans_are_loaded_quarantined_or_counted_as_without_evidence(tmp_path, spans):
    spans[0] = {"span_kind": "CHAIN", "context.trace_id": "t0", "attributes.input.value": "q"}
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(s) for s in spans) + "\n", encoding="utf-8")
    con = store.connect(":memory:")
    report = ingest_paths(con, [path])
    f = report.files[0]
    quarantined = con.execute("SELECT count(*) FROM quarantine").fetchone()[0]
    assert f.n_lines == len(spans)
    if f.status == "unreadable":  # no retriever span, nothing rejected: refused in one sentence
        # (an empty array holds no record: read and counted, nothing loaded)
        assert all(s in spans[:1] or s == [] or (isinstance(s, dict) and s.get("span_kind") == "LLM") for s in spans)
        assert quarantined == 1 and report.n_records == 0
        assert report.rejected[0].message.endswith("and no retriever: nothing to audit")
    else:
        assert report.n_records + quarantined + f.n_skipped == f.n_lines

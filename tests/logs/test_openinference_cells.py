"""OpenInference list attributes written as text — a Phoenix span dataframe saved with pandas'
``to_csv`` (Python list literals), a JSON string in JSON Lines — are read as data on every path
(general, fast, worker processes); a text that is not a list rejects its span with the reason; a
retriever span without documents loads with a warning; ``document.score`` is stored (evidence,
and the provenance graph of a trace with a reranker)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import openinference
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl

QS = ["What causes tides?", "Why is the sky blue?", "What is DNA?"]


def _frame() -> pd.DataFrame:
    """Phoenix's span dataframe (``px.Client().get_spans_dataframe()``): per trace a chain, a
    retriever (documents a list of dicts, a missing score NaN) and an LLM span (messages a list)."""
    rows = []
    for i, q in enumerate(QS):
        base = {"context.trace_id": f"t{i}", "attributes.input.value": q, "attributes.output.value": None}
        rows.append({**base, "span_kind": "CHAIN", "attributes.retrieval.documents": None})
        docs = [
            {
                "document.content": f"passage {i} a, with 'quotes' and \"dq\"",
                "document.id": f"d{i}a",
                "document.score": 0.9,
            },
            {
                "document.content": f"passage {i} b",
                "document.id": f"d{i}b",
                "document.score": float("nan") if i == 1 else 0.5,
            },
        ]
        for d in docs:
            d["document.metadata"] = {"source": d["document.id"] + ".txt"}
        rows.append({**base, "span_kind": "RETRIEVER", "attributes.retrieval.documents": docs})
        llm = [{"message.role": "assistant", "message.content": f"answer {i}"}]
        rows.append({**base, "span_kind": "LLM", "attributes.llm.output_messages": llm, "attributes.input.value": "p"})
    return pd.DataFrame(rows)


def _ingest(path, **opts):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(**opts))
    ev = con.execute("SELECT doc_id, text, score, metadata FROM evidence ORDER BY doc_id").fetchall()
    recs = con.execute("SELECT query, answer, n_evidence FROM records ORDER BY query").fetchall()
    return rep, ev, recs, con


EXPECTED_RECORDS = [(q, f"answer {QS.index(q)}", 2) for q in sorted(QS)]


def _expected_evidence() -> list:
    out = []
    for i in range(3):
        out.append((f"d{i}a", f"passage {i} a, with 'quotes' and \"dq\"", 0.9, json.dumps({"source": f"d{i}a.txt"})))
        out.append((f"d{i}b", f"passage {i} b", None if i == 1 else 0.5, json.dumps({"source": f"d{i}b.txt"})))
    return out


def test_a_phoenix_dataframe_saved_with_to_csv_loads_its_documents_scores_and_answers(tmp_path):
    path = tmp_path / "spans.csv"
    _frame().to_csv(path, index=False)
    assert "[{'document.content'" in path.read_text()  # pandas wrote the lists as Python literals
    rep, ev, recs, _ = _ingest(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (3, 6, 0)
    assert [(d, t, s, json.loads(m)) for d, t, s, m in ev] == [
        (d, t, s, json.loads(m)) for d, t, s, m in _expected_evidence()
    ]
    assert recs == EXPECTED_RECORDS
    assert not [w for w in rep.warnings if "without documents" in w.message]


def test_lists_written_as_json_strings_in_json_lines_load_the_same(tmp_path):
    frame = _frame()
    for col in ("attributes.retrieval.documents", "attributes.llm.output_messages"):
        frame[col] = [None if v is None or v != v else json.dumps(v) for v in frame[col]]
    rows = [{k: v for k, v in r.items() if v is not None and v == v} for r in frame.to_dict("records")]
    assert '"document.score": NaN' in rows[4]["attributes.retrieval.documents"]  # json.dumps writes it so
    rep, ev, recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", rows))
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (3, 6, 0)
    assert [(d, s) for d, _t, s, _m in ev] == [(d, s) for d, _t, s, _m in _expected_evidence()]
    assert recs == EXPECTED_RECORDS


def _exported(trace: str, attrs: dict) -> dict:
    """A span as OpenTelemetry exporters write it (the fast reader's shape)."""
    return {"name": "retrieve", "context": {"trace_id": trace, "span_id": "s"}, "attributes": attrs}


def _retriever(trace: str, query: str, docs) -> dict:
    return _exported(trace, {"openinference.span.kind": "RETRIEVER", "input.value": query, "retrieval.documents": docs})


def test_the_fast_reader_reads_a_documents_string_as_the_general_reader_does():
    docs = json.dumps([{"document.id": "a", "document.content": "x", "document.score": 0.25}])
    line = json.dumps(_retriever("t", "Why?", docs)).encode()
    fast = openinference.read_span_fast(line)
    assert fast is not None and fast == openinference.read_span(json.loads(line))
    assert (fast.texts, fast.ids, fast.scores, fast.notes) == (["x"], ["a"], [0.25], [])


BAD = [
    ("[{'document.id': 'a'", "is text that is neither JSON nor a Python literal"),
    ("[{'document.id': 'a', 'document.content': 'x'}\n {'document.id': 'b', 'document.content': 'y'}]", "numpy array"),
    ("['just', 'texts']", "must be a list of documents (objects with document.id and document.content)"),
    ("{'document.id': 'a'}", "must be a list, got an object written as text"),
    ("[" * 40 + "]" * 40, "nested more than 32 levels deep"),
    ('[{"document.id": "a\\ud83d", "document.content": "x"}]', "holds \\ud83d, half of a character written as a"),
    ("[{'document.id': 'a', 'document.content': '\\udc00'}]", "holds \\udc00, half of a character written as a"),
]


@pytest.mark.parametrize(("cell", "reason"), BAD)
def test_a_documents_text_that_is_not_a_list_of_documents_rejects_its_span(tmp_path, cell, reason):
    good = _retriever("t1", "Why?", json.dumps([{"document.id": "a", "document.content": "x"}]))
    rep, _ev, _recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [_retriever("t0", "How?", cell), good]))
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (1, 1, 1)
    assert rep.rejected[0].line_no == 1 and rep.rejected[0].message.startswith(
        "OpenInference span: attributes.retrieval.documents "
    )
    assert reason in rep.rejected[0].message


def test_an_llm_span_whose_messages_text_is_not_a_list_is_rejected_and_the_retrieval_loads(tmp_path):
    llm = _exported("t", {"openinference.span.kind": "LLM", "llm.output_messages": "[{'message.content': 'x'"})
    docs = [{"document.id": "a", "document.content": "x"}]
    rep, _ev, recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [llm, _retriever("t", "Why?", docs)]))
    assert (rep.n_records, rep.n_rejected) == (1, 1) and recs == [("Why?", None, 1)]
    assert "llm.output_messages is text that is neither JSON nor a Python literal" in rep.rejected[0].message


@pytest.mark.parametrize("docs", ["[]", "", [], None, "absent"])
def test_a_retriever_span_without_documents_loads_with_a_warning(tmp_path, docs):
    span = _retriever("t", "Why?", docs)
    if docs == "absent":
        del span["attributes"]["retrieval.documents"]
    rep, _ev, recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [span]))
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (1, 0, 0) and recs == [("Why?", None, 0)]
    assert [(w.line_no, w.message) for w in rep.warnings if w.code == "openinference-mapping"] == [
        (1, openinference._NO_DOCUMENTS)
    ]
    assert "retrieval.documents is absent or empty" in openinference._NO_DOCUMENTS


def test_document_scores_are_stored_on_every_path_and_a_bad_one_is_named(tmp_path):
    def flat(trace: str, score) -> dict:
        a = {"openinference.span.kind": "RETRIEVER", "input.value": f"q {trace}"}
        a |= {"retrieval.documents.0.document.id": trace, "retrieval.documents.0.document.content": "x"}
        return _exported(trace, a | {"retrieval.documents.0.document.score": score})

    nested = {"span_kind": "RETRIEVER", "context.trace_id": "n", "attributes.input.value": "q n"}
    nested["attributes.retrieval.documents"] = [{"document": {"id": "n", "content": "x", "score": -1.5}}]
    spans = [flat("a", 0.75), flat("b", 3), flat("c", "high"), flat("d", None), {**flat("e", 0.125), "events": [{}]}]
    rep, ev, _recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [*spans, nested]))
    assert [(d, s) for d, _t, s, _m in ev] == [
        ("a", 0.75),
        ("b", 3.0),
        ("c", None),
        ("d", None),
        ("e", 0.125),
        ("n", -1.5),
    ]
    assert [(w.line_no, w.message) for w in rep.warnings if w.code == "openinference-mapping"] == [
        (3, "document.score of retrieved document 0 is not a number: stored without a score")
    ]


def test_a_reranker_traces_provenance_keeps_both_scores(tmp_path):
    docs = [{"document.id": "a", "document.content": "x", "document.score": 0.4}]
    reranker = _exported(
        "t",
        {
            "openinference.span.kind": "RERANKER",
            "reranker.output_documents": "[{'document.id': 'a', 'document.content': 'x', 'document.score': 0.8}]",
        },
    )
    rep, _ev, _recs, con = _ingest(write_jsonl(tmp_path / "spans.jsonl", [_retriever("t", "Why?", docs), reranker]))
    assert (rep.n_records, rep.n_provenance, rep.n_rejected) == (1, 1, 0)
    nodes = con.execute("SELECT node_id, metadata FROM prov_nodes WHERE stage IN (2, 3) ORDER BY ord").fetchall()
    assert [(n, json.loads(m)["score"]) for n, m in nodes] == [("r0", 0.4), ("k0", 0.8)]


def test_worker_processes_read_documents_strings_as_the_process_does(tmp_path, monkeypatch):
    from tests.logs.test_streaming import _everything, force_pool

    lines = []
    for i in range(30):
        docs = [{"document.id": f"d{i % 7}", "document.content": f"text {i}", "document.score": i / 8}]
        text = json.dumps(docs) if i % 3 else str(docs)  # JSON, or the Python literal to_csv writes
        lines.append(_retriever(f"t{i}", f"question {i}", text if i % 5 else docs))
        lines.append(
            _exported(
                f"t{i}",
                {
                    "openinference.span.kind": "LLM",
                    "llm.output_messages": str([{"message.role": "assistant", "message.content": f"answer {i}"}]),
                },
            )
        )
    lines.insert(7, _retriever("tx", "bad?", "[{'document.id': 'a'"))
    lines.insert(9, _retriever("ty", "empty?", "[]"))
    path = write_jsonl(tmp_path / "spans.jsonl", lines)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    serial = store.connect(":memory:")
    expected = _everything(serial, ingest_paths(serial, [path], IngestOptions()))
    held = force_pool(monkeypatch, 500, lambda it: it.held)
    pooled = store.connect(":memory:")
    assert _everything(pooled, ingest_paths(pooled, [path], IngestOptions())) == expected
    assert sum(held) >= 20
    assert (expected[5], expected[6]) == (31, 30) and len(expected[4]) == 1
    assert serial.execute("SELECT count(*) FROM records WHERE answer LIKE 'answer %'").fetchone()[0] == 30
    assert serial.execute("SELECT sum(score) FROM evidence").fetchone()[0] == sum(i / 8 for i in range(30))


def test_a_list_attribute_another_kind_of_span_does_not_use_is_left_as_it_is(tmp_path):
    chain = _exported("t", {"openinference.span.kind": "CHAIN", "retrieval.documents": "[{'broken'"})
    docs = [{"document.id": "a", "document.content": "x"}]
    rep, _ev, recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [chain, _retriever("t", "Why?", docs)]))
    assert (rep.n_records, rep.n_rejected, rep.files[0].n_skipped) == (1, 0, 1) and recs == [("Why?", None, 1)]


_doc = st.fixed_dictionaries(
    {"document.content": st.sampled_from(["x", "y 'q'", 'z "dq"'])},
    optional={
        "document.id": st.one_of(st.sampled_from(["a", "b", ""]), st.integers(-3, 3)),
        "document.score": st.one_of(st.none(), st.floats(-2, 2), st.integers(-2, 2), st.just("high")),
        "document.metadata": st.one_of(st.just({"source": "s"}), st.just('{"source": "s"}')),
    },
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_doc, max_size=4), st.sampled_from(["json", "literal", "list", "dotted"]))
def test_documents_written_any_way_read_the_same_on_either_reader(docs, how):
    """The same documents as a JSON string, a Python literal, a list or dotted keys: one span,
    whichever reader (fast, general) reads it."""
    dotted = {f"retrieval.documents.{i}.{k}": v for i, d in enumerate(docs) for k, v in d.items()}
    dotted = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in dotted.items()}
    base = {"openinference.span.kind": "RETRIEVER", "input.value": "Why?"}
    written = {"json": json.dumps(docs), "literal": str(docs), "list": docs}
    span = {"context": {"trace_id": "t"}, "attributes": {**base, **dotted}}
    reference = openinference.read_span(span)
    if how != "dotted":
        span = {"context": {"trace_id": "t"}, "attributes": {**base, "retrieval.documents": written[how]}}
    line = json.dumps(span).encode()
    general = openinference.read_span(json.loads(line))
    fast = openinference.read_span_fast(line)
    assert general == reference and fast in (None, reference)
    assert fast is not None or how == "list"  # the fast reader takes every span whose attributes are scalars


def test_a_metadata_text_whose_json_writes_half_a_character_loads_its_document_without_it(tmp_path):
    meta = '{"source": "x\\ud83d"}'  # JSON for a text cut inside an emoji: read as JSON, it cannot be stored
    docs = [{"document.id": "a", "document.content": "x", "document.metadata": meta}]
    rep, ev, _recs, _ = _ingest(write_jsonl(tmp_path / "spans.jsonl", [_retriever("t", "Why?", docs)]))
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (1, 1, 0)
    assert ev == [("a", "x", None, None)]  # as a metadata text that is not JSON is

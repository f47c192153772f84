"""Issue #22 item 8: RagCiteCheck's aliases and string lists and the common Ragas row take a fast
path (msgspec) and store exactly what the general path (orjson + format mapping + the pydantic
contract) stores: the same evidence, records, warnings and quarantine, line for line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import formats, records, store
from ragaudit_core.logs.formats import openinference, ragas
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import spy

_TABLES = {
    "evidence": "SELECT * EXCLUDE (file_id) FROM evidence ORDER BY ALL",
    "records": "SELECT * EXCLUDE (file_id) FROM records ORDER BY ALL",
    "warnings": "SELECT * EXCLUDE (file_id) FROM ingest_warnings ORDER BY ALL",
    "quarantine": "SELECT * EXCLUDE (file_id) FROM quarantine ORDER BY ALL",
}


def _stored(path, monkeypatch, *, fast: bool, **opts) -> dict:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(records, "decode_native", lambda _data: None)
            m.setattr(formats, "FAST_FORMATS", ())
            m.setattr(formats, "FAST_TRACE_FORMATS", ())
            m.setattr(records, "fast_record", lambda _rec: None)
        con = store.connect(":memory:")
        rep = ingest_paths(con, [path], IngestOptions(**opts))
    out = {name: _rows(con, sql) for name, sql in _TABLES.items()}
    out["report"] = (rep.n_records, rep.n_entries)
    return out


def _rows(con, sql: str) -> list:
    try:
        return con.sql(sql).fetchall()
    except Exception:  # noqa: BLE001 — a table without file_id
        return con.sql(sql.replace(" EXCLUDE (file_id)", "")).fetchall()


def _write(path, lines) -> None:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")


TEXTS = ["The Moon pulls the sea.", "Tides  rise twice a day.", "Hamlet was written by Shakespeare.", "é ﬁ"]


def _rcc(q: int, key: str, plain: bool, run="r1", qid: object = None) -> dict:
    docs = [f"d{i}" for i in range(3)] if plain else [{"doc_id": f"d{i}", "text": TEXTS[i]} for i in range(3)]
    return {"run_id": run, "qid" if q % 2 else "query_id": qid if qid is not None else str(q), key: docs}


RCC_LINES = [
    _rcc(0, "docs", False),
    _rcc(1, "cited", True),
    _rcc(2, "retrieved", False, qid=2),
    _rcc(3, "contexts", True, run="r2"),
    _rcc(0, "docs", False),  # a duplicate (run, query): rejected, first kept
    {"run_id": "r1", "query_id": " 9 ", "docs": ["a"]},  # padded: trimmed by the general path
    {"run_id": "r1", "query_id": "8", "docs": ["a", "a"]},  # duplicate entry: dropped with a warning
    {"run_id": "r1", "query_id": "7", "docs": None},  # rejected with the contract's reason
    {"run_id": "r1", "query_id": "6", "docs": ["a"], "user_input": "x"},  # native, key ignored (warned)
    {"runId": "r3", "qid": 5, "contexts": [{"doc_id": "D", "text": "t", "rank": 0, "score": 0.5}]},
    '{"run_id": "r1", "query_id": "4", "docs": [{"doc_id": "a", "score": NaN}]}',
]

RAGAS_LINES = [
    {"user_input": "What causes tides?", "retrieved_contexts": TEXTS[:2], "retrieved_context_ids": ["m", "t"]},
    {"user_input": "What causes tides?", "retrieved_contexts": TEXTS[1:3], "response": "The Moon."},  # repeated
    {"user_input": "Who wrote Hamlet?", "retrieved_contexts": TEXTS[2:], "retrieved_context_ids": [3, None]},
    {"user_input": "Who?", "retrieved_contexts": TEXTS[:1], "retrieved_context_ids": [" p "]},  # trimmed there
    {"user_input": "Bad?", "retrieved_contexts": TEXTS[:2], "retrieved_context_ids": ["x"]},  # rejected there
    {"user_input": "Empty?", "retrieved_contexts": [], "response": 3},
    {"user_input": "  ", "question": "v1?", "contexts": TEXTS[:1]},
    {"user_input": "x", "reference_contexts": TEXTS[:1], "reference": "y"},  # a test-set row
    '{"user_input": "NaN?", "retrieved_contexts": ["a"], "score": NaN}',
]


def _oi(trace: str, query: str, docs: list, **attrs) -> dict:
    a: dict = {"openinference.span.kind": "RETRIEVER", "input.value": query, **attrs}
    for i, (doc, text) in enumerate(docs):
        a[f"retrieval.documents.{i}.document.id"] = doc
        a[f"retrieval.documents.{i}.document.content"] = text
        a[f"retrieval.documents.{i}.document.score"] = 0.5
    return {
        "name": "retrieve",
        "context": {"trace_id": trace, "span_id": "s"},
        "parent_id": None,
        "attributes": a,
        "status": {"status_code": "OK"},
        "resource": {"attributes": {"service.name": "app"}, "schema_url": ""},
    }


OI_LINES = [
    _oi("t1", "What causes tides?", [("m", TEXTS[0]), ("t", TEXTS[1])]),
    _oi("t2", "What causes tides?", [("m", TEXTS[0])]),  # a repeated question
    _oi("t3", "Who wrote Hamlet?", [(7, TEXTS[2]), ("", TEXTS[3])]),  # an integer id, a missing one
    _oi("t4", "Gaps?", [("a", TEXTS[0])], **{"retrieval.documents.2.document.id": "b"}),  # no content: rejected
    _oi("t5", "Pad?", [(" p ", TEXTS[0])]),  # trimmed by the contract
    _oi("t6", "Meta?", [("a", TEXTS[0])], **{"retrieval.documents.0.document.metadata": '{"source": "s"}'}),
    _oi("t7", "Kind?", [], **{"openinference.span.kind": "LLM", "output.value": "Shakespeare."}),
    {**_oi("t8", "Nested?", [("a", TEXTS[0])]), "events": [{"name": "e"}]},  # the general path
    '{"context": {"trace_id": "t9"}, "attributes": {"openinference.span.kind": "RETRIEVER", "x": NaN}}',
]


@pytest.mark.parametrize(("name", "lines"), [("rcc", RCC_LINES), ("ragas", RAGAS_LINES), ("oi", OI_LINES)])
def test_fast_and_general_paths_store_the_same_rows(tmp_path, monkeypatch, name, lines):
    path = tmp_path / f"{name}.jsonl"
    _write(path, lines)
    fast = _stored(path, monkeypatch, fast=True)
    slow = _stored(path, monkeypatch, fast=False)
    assert fast == slow
    assert fast["report"][0] >= 4 and fast["evidence"]


def test_the_fast_paths_take_the_common_shapes():
    from ragaudit_core.logs.decode import decode_native
    from ragaudit_core.logs.formats.base import MapContext

    for line in RCC_LINES[:4]:
        assert decode_native(json.dumps(line).encode()) is not None
    ctx = MapContext("run")
    recs = ragas.decode_fast(json.dumps(RAGAS_LINES[0]).encode(), ctx)
    assert recs is not None and [e.doc_id for e in recs[0].evidence] == ["m", "t"]
    assert recs[0].query_id == formats.query_id_for("What causes tides?")
    assert ragas.decode_fast(json.dumps(RAGAS_LINES[3]).encode(), ctx) is None  # padded id
    assert ragas.decode_fast(json.dumps({**RAGAS_LINES[0], "run_id": "x"}).encode(), ctx) is None
    span = openinference.read_span_fast(json.dumps(OI_LINES[0]).encode())
    assert span is not None and span.ids == ["m", "t"] and span.trace_id == "t1"
    assert openinference.read_span_fast(json.dumps(OI_LINES[7]).encode()) is None


_ids = st.one_of(st.sampled_from(["d1", "D1", " d2", "", "7"]), st.integers(-2, 2), st.none(), st.just(1.5))
_ragas_row = st.fixed_dictionaries(
    {"user_input": st.sampled_from(["q1", "Q1 ", "q2", " ", "q\u00a0x"])},
    optional={
        "retrieved_contexts": st.one_of(st.lists(st.sampled_from(TEXTS), max_size=3), st.just("['a']")),
        "retrieved_context_ids": st.lists(_ids, max_size=3),
        "response": st.one_of(st.none(), st.just("ans"), st.just(2)),
        "answer": st.just("other"),
        "reference": st.just("ref"),
        "contexts": st.lists(st.sampled_from(TEXTS), max_size=2),
        "run_id": st.just("rr"),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_ragas_row, min_size=1, max_size=6))
def test_any_ragas_rows_store_the_same_rows_either_way(tmp_path, monkeypatch, rows):
    path = tmp_path / "rows.jsonl"
    _write(path, rows)
    try:
        fast = _stored(path, monkeypatch, fast=True)
    except Exception as e:  # noqa: BLE001 — a refused file must be refused the same way
        with pytest.raises(type(e)):
            _stored(path, monkeypatch, fast=False)
        return
    assert fast == _stored(path, monkeypatch, fast=False)


_FIELDS = ["document.id", "document.content", "document.metadata", "document.score", "id", "content"]
_doc_key = st.tuples(
    st.sampled_from(["0", "1", "2", "00", "3"]),
    st.sampled_from([*_FIELDS, "document.metadata.source", "document.id.x"]),
)
_value = st.one_of(
    st.sampled_from([*TEXTS, "", '{"source": "s"}', "[1]", "d1"]), st.integers(0, 3), st.none(), st.just(0.5)
)
_doc = st.fixed_dictionaries(
    {"document.content": st.one_of(st.sampled_from(TEXTS), st.sampled_from(TEXTS), _value)},
    optional={
        "document.id": st.one_of(st.sampled_from(["d1", "7", ""]), st.integers(0, 3), _value),
        "document.metadata": st.one_of(st.just('{"source": "s"}'), _value),
        "document.score": _value,
    },
)
_span_attrs = st.one_of(
    st.lists(_doc, max_size=4).map(
        lambda docs: {f"retrieval.documents.{i}.{f}": v for i, d in enumerate(docs) for f, v in d.items()}
    ),
    st.lists(st.tuples(_doc_key, _value), max_size=10).map(
        lambda kv: {f"retrieval.documents.{i}.{f}": v for (i, f), v in kv}
    ),
)


_span_metadata = st.one_of(
    st.none(),
    st.sampled_from(['{"top_k": 5, "chunk_size": "256"}', '{"search_kwargs": {"k": 3}}', "{}", "not json", "[1]", 7]),
)


@settings(max_examples=150, deadline=None)
@given(_span_attrs, st.sampled_from(["Why?", "Why?", " ", None]), st.booleans(), _span_metadata)
def test_the_layout_of_a_spans_keys_reads_what_the_dotted_keys_read(attrs, query, extra, metadata):
    """read_span_fast looks a span's values up by a layout of its keys, compiled once per key
    sequence: the same span (or None) as reading its dotted keys one by one — its run settings
    (its ``metadata`` attribute) included."""
    a: dict = {"openinference.span.kind": "RETRIEVER", **attrs}
    if query is not None:
        a["input.value"] = query
    if metadata is not None:
        a["metadata"] = metadata
    if extra:
        a["context.trace_id.x"] = "y"
    line = json.dumps({"context": {"trace_id": "t"}, "attributes": a}).encode()
    got = openinference.read_span_fast(line)
    openinference._LAYOUTS.clear()
    layout = openinference._layout
    try:
        openinference._layout = lambda _keys: None
        expected = openinference.read_span_fast(line)
    finally:
        openinference._layout = layout
        openinference._LAYOUTS.clear()
    assert got == expected


def _ragas_file(path) -> None:
    lines: list = []
    for i in range(40):
        row = {"user_input": f"question {i % 13}", "retrieved_contexts": [TEXTS[i % 4], TEXTS[(i + 1) % 4]]}
        if i % 3:
            row["retrieved_context_ids"] = [f"d{i % 5}", f"d{(i + 1) % 5}"]
        lines.append(row)
        if i % 11 == 0:
            lines.append(RAGAS_LINES[3 + i % 4])
    lines.insert(5, RAGAS_LINES[-1])
    _write(path, lines)


def test_ragas_rows_mapped_by_worker_processes_store_what_the_process_stores(tmp_path, monkeypatch):
    """Ragas rows go to the workers (ranges of ~300 bytes, 2 workers):
    repeated questions (inside and across ranges: numbered by the ingesting process), rows without
    ids (one warning, first where the process raises it), lines the workers leave (NaN, padded ids,
    v0.1 rows)."""
    from tests.logs.test_streaming import _everything, force_pool

    path = tmp_path / "log.jsonl"
    _ragas_file(path)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    serial = store.connect(":memory:")
    expected = _everything(serial, ingest_paths(serial, [path], IngestOptions()))
    mapped = force_pool(monkeypatch, 300, lambda it: it.mapped)
    pooled = store.connect(":memory:")
    got = _everything(pooled, ingest_paths(pooled, [path], IngestOptions()))
    assert len(mapped) > 5 and sum(mapped) >= 30
    assert got == expected
    assert any(code == "repeated-question" for _, code, _ in expected[2])
    assert any("no document ids" in m for _, _, m in expected[2])


def _oi_file(path) -> None:
    """Retriever spans (a question asked again, inside and across ranges; no document ids in some),
    their traces' LLM answers before or after them, a reranker, and spans the workers leave."""
    lines: list = []
    for i in range(36):
        docs = [(f"d{i % 5}" if i % 4 else "", TEXTS[i % 4]), (f"d{(i + 1) % 5}", TEXTS[(i + 1) % 4])]
        answer = _oi(f"t{i}", "", [], **{"openinference.span.kind": "LLM", "output.value": f"answer {i}"})
        if i % 3 == 0:
            lines.append(answer)  # the answer before its retriever span
        lines.append(_oi(f"t{i}", f"question {i % 11}", docs))
        if i % 3 == 1:
            lines.append(answer)  # … or after it
        if i % 10 == 0:
            lines.append(OI_LINES[7 + i % 3 if i % 3 < 2 else 3])  # events, NaN, a gap: the general path
    lines.insert(
        9,
        {
            "name": "rerank",
            "context": {"trace_id": "t4", "span_id": "r"},
            "attributes": {
                "openinference.span.kind": "RERANKER",
                "reranker.query": "question 4",
                "reranker.output_documents.0.document.id": "d0",
            },
        },
    )
    _write(path, lines)


def test_openinference_spans_mapped_by_worker_processes_store_what_the_process_stores(tmp_path, monkeypatch):
    """OpenInference retriever spans go to the workers (ranges of ~600 bytes, 2 workers), are held
    until the file is read and joined with their trace's answer there: repeated questions numbered,
    a reranker's trace read again for its provenance, spans the workers leave read here — the same
    database and report as reading every span in the process."""
    from tests.logs.test_streaming import _everything, force_pool

    path = tmp_path / "spans.jsonl"
    _oi_file(path)

    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, [path], IngestOptions()))
        prov = con.execute("SELECT run_id, query_id, generated_text FROM prov_records ORDER BY ALL").fetchall()
        answers = con.execute("SELECT count(answer) FROM records").fetchall()[0][0]
        return got, prov, answers

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = ingest()
    held = force_pool(monkeypatch, 600, lambda it: it.held)
    got = ingest()
    assert len(held) > 5 and sum(held) >= 30
    assert got == expected
    from ragaudit_core.logs import held as held_rows

    monkeypatch.setattr(held_rows, "SPILL_BYTES", 1000)  # the held rows go to a temporary file
    spilled: list = []
    spy(monkeypatch, held_rows.HeldRows, "rows", lambda self, _a, _r: spilled.append(self.path))
    assert ingest() == expected
    assert spilled[0] is not None and not Path(spilled[0]).exists()
    warnings = expected[0][2]
    assert any(code == "repeated-question" for _, code, _ in warnings)
    assert any("no document ids" in m for _, _, m in warnings)
    assert expected[1] and expected[2] == 24  # the reranker's trace; the answers joined (i % 3 < 2)


def test_a_document_index_that_is_a_digit_but_not_a_number_is_no_index(tmp_path, monkeypatch):
    """``"²".isdigit()`` is true but ``int("²")`` fails: such a key is not a document's (it crashed
    the whole file before); the span's real documents load, on either path."""
    path = tmp_path / "sup.jsonl"
    _write(path, [_oi("t1", "Why?", [("a", TEXTS[0])], **{"retrieval.documents.².document.content": "x"})])
    for fast in (True, False):
        got = _stored(path, monkeypatch, fast=fast)
        assert got["report"] == (1, 1) and not got["quarantine"]


def test_spans_mapped_as_they_are_read_in_the_process_store_what_the_file_end_stores(tmp_path, monkeypatch):
    """Past PREMAP_BYTES of held span lines (here: at once) a file's spans read in the process are
    mapped as they are read and held by their rows (spilled too) and bytes: the same database and
    report as holding every span until the file ends — repeats numbered, a reranker's trace read
    again from the kept bytes — and no temporary file left."""
    from ragaudit_core.logs import held as held_rows
    from tests.logs.test_streaming import _everything

    path = tmp_path / "spans.jsonl"
    _oi_file(path)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")

    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, [path], IngestOptions()))
        return got, con.execute("SELECT run_id, query_id, generated_text FROM prov_records ORDER BY ALL").fetchall()

    expected = ingest()
    monkeypatch.setattr(held_rows, "PREMAP_BYTES", 0)
    monkeypatch.setattr(held_rows, "BUFFER_ROWS", 7)
    monkeypatch.setattr(held_rows, "SPILL_BYTES", 1000)
    kept: list = []
    spy(monkeypatch, held_rows.HeldRows, "hold_line", lambda _s, _a, got: kept.append(got[1]))
    assert ingest() == expected
    assert len(kept) >= 30 and expected[1]
    assert not Path(kept[0]).exists()

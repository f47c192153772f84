"""The fast decoder (msgspec) accepts a subset of the contract and, on it, gives the pydantic
contract's record: same ids, same entries, same values."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ragaudit_core.logs.contracts import EvidenceRecord
from ragaudit_core.logs.decode import decode_canonical, decode_native

_ENTRY_FIELDS = (
    "doc_id",
    "text",
    "span_hash",
    "rank",
    "score",
    "chunk_id",
    "char_start",
    "char_end",
    "page",
    "metadata",
)

ids = st.one_of(
    st.sampled_from(["d1", " d2", "D3 ", "", "  ", "a\tb", "x\u00a0", "\u2003y"]),
    st.integers(-3, 3),
    st.just(2**70),
    st.booleans(),
    st.none(),
    st.just(1.0),
)
counts = st.one_of(st.none(), st.integers(-1, 3), st.just(2**31), st.just(2.0), st.just("1"), st.booleans())
texts = st.one_of(st.none(), st.text(max_size=8), st.integers(0, 2))
values = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.just(10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
)
entry = st.one_of(
    ids,
    st.fixed_dictionaries(
        {},
        optional={
            "doc_id": ids,
            "document_id": ids,
            "source": st.fixed_dictionaries({"doc_id": ids}),
            "text": texts,
            "span_hash": st.one_of(st.none(), st.sampled_from(["ab", " ab ", "", " "]), st.integers()),
            "spanHash": st.sampled_from(["cd"]),
            "rank": counts,
            "score": st.one_of(values, st.booleans()),
            "chunk_id": ids,
            "char_start": counts,
            "char_end": counts,
            "page": counts,
            "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), values, max_size=2), st.just([1])),
        },
    ),
)
good_ids = st.sampled_from(["d1", "D2", "a b", "é", "7"])
good_counts = st.one_of(st.none(), st.integers(0, 5))
canonical_entry = st.one_of(
    good_ids,
    st.fixed_dictionaries(
        {"doc_id": st.one_of(good_ids, st.sampled_from([" d2", "", 7]))},
        optional={
            "text": st.one_of(st.none(), st.text(max_size=8), st.just(3)),
            "span_hash": st.one_of(st.none(), st.sampled_from(["ab", "cd", "ef", " ab ", ""])),
            "rank": good_counts,
            "score": values,
            "chunk_id": st.one_of(st.none(), good_ids),
            "char_start": good_counts,
            "char_end": good_counts,
            "page": good_counts,
            "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=3), values, max_size=2)),
            "extra": values,
        },
    ),
)
canonical = st.fixed_dictionaries(
    {
        "run_id": st.one_of(good_ids, ids),
        "query_id": st.one_of(good_ids, ids),
        "evidence": st.lists(canonical_entry, max_size=4),
    },
    optional={
        "config": st.one_of(st.none(), st.dictionaries(st.sampled_from(["top_k", "x"]), values, max_size=2)),
        "query": texts,
        "answer": texts,
        "qid": ids,
        "nodes": st.just([]),
    },
)
noisy = st.fixed_dictionaries(
    {},
    optional={
        "run_id": ids,
        "runId": ids,
        "query_id": ids,
        "qid": ids,
        "id": ids,
        "evidence": st.one_of(st.lists(entry, max_size=4), st.just("d1"), st.none()),
        "contexts": st.lists(entry, max_size=2),
        "config": st.one_of(
            st.none(), st.dictionaries(st.sampled_from(["top_k", "x"]), values, max_size=2), st.just(3)
        ),
        "query": texts,
        "answer": texts,
        "nodes": st.just([]),
        "schema": st.just("ragaudit.provenance/1"),
    },
)
record = st.one_of(canonical, noisy)


def _as_pydantic(line: bytes):
    try:
        return EvidenceRecord.model_validate(json.loads(line))
    except Exception:  # noqa: BLE001 — any failure means "not valid"
        return None


def _fields(rec) -> tuple:
    return (
        rec.run_id,
        rec.query_id,
        rec.config,
        rec.query,
        rec.answer,
        [tuple(getattr(e, f) for f in _ENTRY_FIELDS) for e in rec.evidence],
    )


_RICH = {
    "run_id": "r1",
    "query_id": "q1",
    "config": {"top_k": 5},
    "query": "why?",
    "answer": "because",
    "evidence": [
        "d0",
        {
            "doc_id": "D1",
            "text": "a  b",
            "span_hash": "h",
            "rank": 0,
            "score": 0.5,
            "chunk_id": "c1",
            "char_start": 1,
            "char_end": 4,
            "page": 2,
            "metadata": {"k": [1, 2]},
        },
        {"doc_id": "d2", "text": "é ﬁ", "extra": 1},
    ],
}


@settings(max_examples=600, deadline=None)
@given(record)
@example(_RICH)  # always run: a rich record the fast path takes (the property is not vacuous)
@example({**_RICH, "evidence": [{"doc_id": "d", "char_start": 4, "char_end": 1}]})
def test_what_the_fast_path_accepts_the_contract_reads_the_same_way(obj):
    line = json.dumps(obj).encode()
    fast = decode_canonical(line)
    if obj == _RICH:
        assert fast is not None
    if fast is None:
        return  # the general path decides this line
    slow = _as_pydantic(line)
    assert slow is not None, f"fast path accepted a line the contract rejects: {line!r}"
    assert _fields(fast) == _fields(slow)
    assert all(type(x) is str for x in (fast.run_id, fast.query_id)) and all(
        type(e.doc_id) is str for e in fast.evidence
    )


def test_canonical_lines_take_the_fast_path():
    line = json.dumps(
        {
            "run_id": "7",
            "query_id": "q1",
            "config": {"top_k": 5},
            "query": "why?",
            "evidence": [
                "d0",
                "12",
                {
                    "doc_id": "d1",
                    "text": "a  b",
                    "rank": 0,
                    "score": 1,
                    "span_hash": "h",
                    "char_start": 1,
                    "char_end": 4,
                    "metadata": {"big": 10**25},
                },
            ],
        }
    ).encode()
    rec = decode_canonical(line)
    assert rec is not None
    assert (rec.run_id, rec.query_id) == ("7", "q1")
    assert [e.doc_id for e in rec.evidence] == ["d0", "12", "d1"]
    e = rec.evidence[2]
    assert (e.text, e.span_hash, e.score, e.metadata) == ("a  b", "h", 1.0, {"big": 10**25})
    assert _fields(rec) == _fields(_as_pydantic(line))


@pytest.mark.parametrize(
    "line",
    [
        b'{"runId": "r", "query_id": "q", "evidence": []}',  # alias: general path
        b'{"run_id": " r", "query_id": "q", "evidence": []}',  # padded id: trimmed there
        b'{"run_id": 7, "query_id": "q", "evidence": []}',  # integer id: read as "7" there
        b'{"run_id": "r", "query_id": "q", "evidence": [" d"]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "d", "span_hash": " h"}]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [{"source": {"doc_id": "d"}}]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "d", "rank": 1.0}]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "d", "char_start": 5, "char_end": 2}]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [], "nodes": []}',  # provenance
        b'{"run_id": "r", "query_id": "q", "evidence": [], }',  # not JSON
        b'{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "d", "score": NaN}]}',
        b'{"run_id": "r", "query_id": "q", "evidence": [{"doc_id": "\xff"}]}',
    ],
)
def test_anything_else_goes_to_the_general_path(line):
    assert decode_canonical(line) is None


# ---------------------------------------------------------------- aliases (RagCiteCheck's dialect)

alias_record = st.fixed_dictionaries(
    {},
    optional={
        "run_id": st.one_of(good_ids, ids),
        "runId": st.one_of(good_ids, ids),
        "config_id": good_ids,
        "run": st.one_of(good_ids, st.integers(0, 10**18)),
        "query_id": st.one_of(good_ids, ids),
        "qid": st.one_of(good_ids, st.integers(-5, 5)),
        "id": ids,
        "evidence": st.one_of(st.lists(canonical_entry, max_size=3), st.none()),
        "cited": st.lists(canonical_entry, max_size=3),
        "docs": st.one_of(st.lists(canonical_entry, max_size=3), st.just("d1")),
        "documents": st.lists(entry, max_size=2),
        "retrieved": st.lists(good_ids, max_size=3),
        "contexts": st.one_of(st.lists(canonical_entry, max_size=3), st.none()),
        "config": st.one_of(st.none(), st.just({"top_k": 3})),
        "query": texts,
        "answer": texts,
    },
)

_RCC = {"run_id": "r", "qid": 7, "docs": ["d1", {"doc_id": "D2", "text": "t"}], "contexts": ["x"]}


@settings(max_examples=800, deadline=None)
@given(alias_record)
@example(_RCC)
@example({"run_id": None, "runId": "r", "query_id": "q", "evidence": []})  # canonical shape: null is an error
def test_what_the_alias_path_accepts_the_contract_reads_the_same_way(obj):
    line = json.dumps(obj).encode()
    fast = decode_native(line)
    if obj == _RCC:
        assert fast is not None and [e.doc_id for e in fast.evidence] == ["d1", "D2"]
    if fast is None:
        return
    slow = _as_pydantic(line)
    assert slow is not None, f"alias path accepted a line the contract rejects: {line!r}"
    assert _fields(fast) == _fields(slow)
    assert all(type(x) is str for x in (fast.run_id, fast.query_id))


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "r", "qid": "q", "docs": []}',  # the ambiguous id: the general path reads it
        b'{"run_id": "r", "query_id": "q", "docs": [], "user_input": "x"}',  # another format's key: warned there
        b'{"run_id": "r", "query_id": "q", "docs": [], "nodes": [1]}',  # provenance
        b'{"run_id": "r", "query_id": 123456789012345678901, "docs": []}',  # beyond 64 bits
        b'{"run_id": "r", "query_id": "q"}',  # no evidence list: worded there
        b'{"run_id": true, "query_id": "q", "docs": []}',
    ],
)
def test_the_alias_path_leaves_the_rest_to_the_general_path(line):
    assert decode_native(line) is None


@pytest.mark.parametrize(
    "line, run, query, doc",
    [
        # canonical shape: msgspec's fast path
        (
            b'{"run_id": "a", "run_id": "b", "query_id": "q", "evidence": [{"doc_id": "x", "doc_id": "y"}]}',
            "b",
            "q",
            "y",
        ),
        # alias keys: the alias struct
        (b'{"runId": "a", "runId": "b", "qid": "q", "qid": "r", "docs": ["x"], "docs": ["y"]}', "b", "r", "y"),
        # NaN: the general path (json, after orjson refused the line)
        (
            b'{"run_id": "a", "query_id": "q", "evidence": [{"doc_id": "x", "score": NaN}], "run_id": "b"}',
            "b",
            "q",
            "x",
        ),
    ],
)
def test_a_key_written_twice_in_one_object_is_read_as_its_last_value(con, tmp_path, line, run, query, doc):
    """docs/log-contract.md's rule, the same on every path: JSON allows a repeated key, and every decoder
    RagAudit uses keeps its last value (none reports the repeat; checking would cost a second scan of
    every line — see the contract). A change of decoder that read the first value would move records
    between runs silently: this pins it."""
    from ragaudit_core.logs.ingest import ingest_paths

    path = tmp_path / "dup.jsonl"
    path.write_bytes(line + b"\n")
    rep = ingest_paths(con, [path])
    assert rep.rejected == []
    assert con.execute("SELECT run_id, query_id FROM records").fetchall() == [(run, query)]
    assert con.execute("SELECT doc_id FROM evidence").fetchall() == [(doc,)]

"""Provenance records read without pydantic (:mod:`ragaudit_core.logs.provfast`): the same stored
rows as the contract's validation, or None (then the contract reads the record or words its error)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragaudit_core.logs.formats import Span
from ragaudit_core.logs.identity import CanonOptions
from ragaudit_core.logs.lines import buffer_provenance, parse_provenance_object
from ragaudit_core.logs.provenance import ARTIFACT_TYPES, ProvenanceRecord, graph_error
from ragaudit_core.logs.provfast import NodeView, RecordView, canonical_record
from ragaudit_core.logs.traces import provenance_record


def _rows(rec: Any) -> tuple[list, list]:
    rec_rows: list = []
    node_rows: list = []
    buffer_provenance(rec, 7, 3, CanonOptions(), {}, rec_rows, node_rows)
    return rec_rows, node_rows


def _same_as_validation(d: dict, fast_when_valid: bool = True) -> None:
    """Where validation refuses ``d``, canonical_record leaves it to it; where validation accepts it,
    canonical_record gives the same rows, or (not ``fast_when_valid``) None."""
    fast = canonical_record(d)
    try:
        slow = ProvenanceRecord.model_validate(d)
    except ValidationError:
        assert fast is None
        return
    assert fast is not None or not fast_when_valid
    if fast is not None:
        assert _rows(fast) == _rows(slow)


def _node(node_id: str, stage: int, parents: list[str], **extra: Any) -> dict:
    return {"node_id": node_id, "stage": stage, "artifact_type": "rank_result", "derived_from": parents, **extra}


def _record(nodes: list[dict], **extra: Any) -> dict:
    return {"run_id": "run", "query_id": "q1", "nodes": nodes, **extra}


def test_a_trace_graph_is_read_without_validation_into_the_same_rows():
    texts = ["Tides follow the moon.", "The sun is a star.", "Ice floats."]
    retriever = Span("t", "retriever", query="what pulls tides?", texts=texts, ids=["moon", "sun", "ice"])
    reranker = Span("t", "reranker", reranked=[{"id": "sun"}, {"id": None, "content": texts[0]}])
    d = provenance_record("run", "q1", retriever, reranker, "The moon [Document 2].")
    fast = canonical_record(d)
    assert isinstance(fast, RecordView)
    # 3 retrieved + 2 reranked + 2 context + the generation; "ice" (r2) is dropped at stage 3
    assert [n.node_id for n in fast.nodes] == ["r0", "r1", "r2", "k0", "x0", "k1", "x1", "g"]
    assert [(d.node_id, d.stage) for d in fast.dropped] == [("r2", 3)]
    assert fast.nodes[5].derived_from == ["r0"]  # matched by its text: it logged no id
    assert _rows(fast) == _rows(ProvenanceRecord.model_validate(d))
    assert parse_provenance_object(d) == (None, fast)


@pytest.mark.parametrize(
    "change",
    [
        {"run_id": " run"},  # an id the contract strips
        {"query_id": 1},  # an id the contract writes as a string
        {"run": "run"},  # an alias
        {"config": {"k": 5}},  # a key read by the contract
        {"generated_text": 3},
        {"nodes": []},
    ],
)
def test_a_record_the_contract_must_read_is_left_to_it(change):
    d = _record([_node("a", 2, [])]) | change
    assert canonical_record(d) is None


@pytest.mark.parametrize(
    "node",
    [
        _node("a", "retrieval", []),  # a stage by name
        _node("a", True, []),
        _node("a", 7, []),
        {**_node("a", 2, []), "artifact_type": "Rank_Result"},
        _node("a", 2, "b"),  # derived_from as one id
        _node("a", 2, [], coordinates={"doc_id": "d1 "}),
        _node("a", 2, [], coordinates={"doc_id": "d1", "char_start": 9, "char_end": 3}),
        _node("a", 2, [], coordinates={"doc_id": "d1", "page": 1.0}),
        _node("a", 2, [], metadata=[1]),
        {**_node("a", 2, []), "id": "a"},
    ],
)
def test_a_node_the_contract_must_read_is_left_to_it(node):
    assert canonical_record(_record([node])) is None


def test_a_graph_the_checks_refuse_is_left_to_the_contract_which_words_why():
    cycle = _record([_node("a", 2, ["b"]), _node("b", 2, ["a"])])
    assert canonical_record(cycle) is None
    reason, rec = parse_provenance_object(cycle)
    assert rec is None and "cycle: 'a' → 'b' → 'a'" in (reason or "")
    for broken in (
        _record([_node("a", 2, []), _node("a", 3, [])]),  # a node id twice
        _record([_node("a", 2, ["z"])]),  # dangling
        _record([_node("a", 3, []), _node("b", 2, ["a"])]),  # a parent at a later stage
        _record([_node("a", 2, [])], dropped=[{"node_id": "z", "stage": 3, "reason": "cut"}]),
    ):
        assert canonical_record(broken) is None
        assert parse_provenance_object(broken)[1] is None


def test_edges_that_only_go_to_earlier_stages_close_no_cycle():
    nodes = [NodeView(f"n{s}", s, "chunk", None, [f"n{s - 1}"] if s else [], None, {}) for s in range(7)]
    assert graph_error(nodes, []) is None
    nodes[0] = nodes[0]._replace(derived_from=["n6"])
    assert "later stage" in (graph_error(nodes, []) or "")


# ----------------------------------------------------------------------------- any record


def _mostly(good: st.SearchStrategy, odd: st.SearchStrategy) -> st.SearchStrategy:
    """Values in the contract's form three times in four (so that both paths are exercised)."""
    return st.one_of(good, good, good, odd)


_IDS = _mostly(st.sampled_from("abcd"), st.sampled_from([" a", "b ", "", 1, None, True]))
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
_NODE = st.fixed_dictionaries(
    {
        "node_id": _IDS,
        "stage": _mostly(st.integers(0, 6), st.sampled_from([-1, 7, True, "2", "retrieval", 2.0])),
        "artifact_type": _mostly(st.sampled_from(ARTIFACT_TYPES), st.sampled_from(["Chunk", " chunk", "other", 3])),
    },
    optional={
        "derived_from": _mostly(st.lists(_IDS, max_size=1), _IDS),
        "coordinates": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {"doc_id": _IDS},
                optional={k: st.one_of(st.none(), st.integers(-1, 9), st.just(2.0)) for k in ("page", "char_start")}
                | {"char_end": st.integers(0, 9)},
            ),
        ),
        "metadata": _mostly(st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2), st.sampled_from([None, []])),
        "transformation": _mostly(st.text(max_size=3), st.sampled_from([None, 5])),
    },
)
_DROP = st.fixed_dictionaries(
    {"node_id": _IDS, "stage": st.one_of(st.integers(0, 6), st.just("3"))},
    optional={"reason": st.one_of(st.text(max_size=3), st.just(1)), "why": st.just("x")},
)
_RECORD = st.fixed_dictionaries(
    {
        "run_id": _IDS,
        "query_id": _IDS,
        "nodes": st.lists(_NODE, min_size=1, max_size=4, unique_by=lambda n: n["node_id"]),
    },
    optional={
        "query": _mostly(st.text(max_size=3), _SCALARS),
        "generated_text": _mostly(st.text(max_size=3), _SCALARS),
        "dropped": st.one_of(st.none(), st.lists(_DROP, max_size=2)),
        "schema": st.just("ragaudit.provenance/1"),
    },
)


@settings(max_examples=600, deadline=None)
@given(_RECORD)
def test_any_record_read_without_validation_stores_what_validation_stores(d):
    """canonical_record(d) is None, or validation accepts d and both give the same rows."""
    _same_as_validation(d, fast_when_valid=False)


_TEXT = st.text(alphabet="ab ", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_TEXT, st.one_of(_TEXT, st.integers(0, 3), st.none())), max_size=4),
    st.lists(st.fixed_dictionaries({}, optional={"id": st.one_of(_TEXT, st.integers(0, 3)), "content": _TEXT})),
    st.one_of(st.none(), _TEXT),
)
def test_any_trace_graph_stores_what_validation_stores(docs, reranked, answer):
    retriever = Span("t", "retriever", query="q?", texts=[t for t, _ in docs], ids=[i for _, i in docs])
    d = provenance_record("run", "q1", retriever, Span("t", "reranker", reranked=reranked), answer)
    fast = canonical_record(d)
    # the ids the graph names (a reranked document linked to a retrieved one takes that one's id)
    named = [n["coordinates"]["doc_id"] for n in d["nodes"] if "coordinates" in n]
    plain = all(i == i.strip() for i in named)
    assert (fast is not None) == plain  # only ids the contract strips (or refuses) take its path
    if fast is not None:
        assert _rows(fast) == _rows(ProvenanceRecord.model_validate(d))


_PLAIN_NODE = st.fixed_dictionaries(
    {"node_id": st.sampled_from("abcd"), "stage": st.integers(0, 6), "artifact_type": st.sampled_from(ARTIFACT_TYPES)},
    optional={
        "derived_from": st.lists(st.sampled_from("abcd"), max_size=2),
        "coordinates": st.fixed_dictionaries(
            {"doc_id": st.sampled_from(["d1", "d2"])}, optional={"page": st.integers(0, 3)}
        ),
        "metadata": st.dictionaries(st.text(max_size=3), _SCALARS, max_size=2),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PLAIN_NODE, min_size=1, max_size=4), st.lists(st.sampled_from("abcz"), max_size=2))
def test_a_record_in_the_contracts_form_is_read_without_validation_exactly_when_its_graph_holds(nodes, dropped):
    _same_as_validation(_record(nodes, dropped=[{"node_id": n, "stage": 3, "reason": "cut"} for n in dropped]))

"""A provenance record already in its validated form, read without pydantic.

``ProvenanceRecord.model_validate`` costs about 120 µs for a trace's 17-node graph (a retriever's
8 documents, a reranker's 8 and the generation) — most of what a trace export with rerankers
costs the ingesting process beyond its evidence. Most records need none of what the validators
do: the graphs :func:`~ragaudit_core.logs.traces.provenance_record` builds from spans, and most
hand-written ones, already hold stripped string ids, integer stages, lower-case artifact types
and lists. :func:`canonical_record` reads such a record into plain named tuples — the fields
:func:`~ragaudit_core.logs.lines.buffer_provenance` writes — after the same graph checks
(:func:`~ragaudit_core.logs.provenance.graph_error`), and answers None for anything else: an
alias, an id to strip or to turn into a string, a stage by name, a key the contract reads
otherwise, a graph the checks refuse. That record is then validated, and any error worded, by
the contract as before. A property test holds the two paths to the same stored rows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ragaudit_core.defaults import INT32_MAX
from ragaudit_core.logs.provenance import ARTIFACT_TYPES, graph_error

__all__ = ["CoordinatesView", "DropView", "NodeView", "RecordView", "canonical_record"]


class CoordinatesView(NamedTuple):
    doc_id: str | None = None
    page: int | None = None
    paragraph: int | None = None
    char_start: int | None = None
    char_end: int | None = None


class NodeView(NamedTuple):
    node_id: str
    stage: int
    artifact_type: str
    coordinates: CoordinatesView | None
    derived_from: list[str]
    transformation: str | None
    metadata: dict[str, Any]


class DropView(NamedTuple):
    node_id: str
    stage: int
    reason: str


class RecordView(NamedTuple):
    """What a :class:`~ragaudit_core.logs.provenance.ProvenanceRecord` holds, for a record with
    no ``config``, ``ground_truth`` or ``documents`` (those take the contract's path)."""

    run_id: str
    query_id: str
    query: str | None
    nodes: list[NodeView]
    dropped: list[DropView]
    generated_text: str | None
    config: None = None
    ground_truth: tuple[()] = ()
    documents: tuple[()] = ()


_RECORD_KEYS = frozenset({"schema", "run_id", "query_id", "query", "nodes", "dropped", "generated_text"})
_NODE_KEYS = frozenset(
    {"node_id", "stage", "artifact_type", "coordinates", "derived_from", "transformation", "metadata"}
)
_COORD_KEYS = frozenset({"doc_id", "page", "paragraph", "char_start", "char_end"})
_DROP_KEYS = frozenset({"node_id", "stage", "reason"})
_ARTIFACTS = frozenset(ARTIFACT_TYPES)
_NO_PARENTS: list[str] = []


class _Contract(Exception):
    """The record needs the contract's reading (an alias, a coercion, an error to word)."""


def _plain_id(v: object) -> str:
    """A string id the contract keeps as it is (non-empty, nothing to strip)."""
    if type(v) is not str or v == "" or v[0].isspace() or v[-1].isspace():
        raise _Contract
    return v


def _opt_text(v: object) -> str | None:
    if v is not None and type(v) is not str:
        raise _Contract
    return v


def _count(v: object) -> int | None:
    if v is not None and (type(v) is not int or not 0 <= v <= INT32_MAX):
        raise _Contract
    return v


def _coordinates(c: object) -> CoordinatesView | None:
    if c is None:
        return None
    if type(c) is not dict:
        raise _Contract
    if len(c) == 1 and "doc_id" in c:  # (the common case: a document, by its id)
        return CoordinatesView(_plain_id(c["doc_id"]))
    if not c.keys() <= _COORD_KEYS:
        raise _Contract
    doc_id = c.get("doc_id")
    view = CoordinatesView(
        None if doc_id is None else _plain_id(doc_id),
        _count(c.get("page")),
        _count(c.get("paragraph")),
        _count(c.get("char_start")),
        _count(c.get("char_end")),
    )
    if view.char_start is not None and view.char_end is not None and view.char_end < view.char_start:
        raise _Contract
    return view


def _node(n: object) -> NodeView:
    if type(n) is not dict or not n.keys() <= _NODE_KEYS:
        raise _Contract
    stage, artifact, meta = n.get("stage"), n.get("artifact_type"), n.get("metadata")
    parents = n.get("derived_from", _NO_PARENTS)
    if type(stage) is not int or not 0 <= stage <= 6 or artifact not in _ARTIFACTS or type(parents) is not list:
        raise _Contract
    if meta is None:
        meta = {}
    elif type(meta) is dict and all(type(k) is str for k in meta):
        meta = dict(meta)
    else:
        raise _Contract
    return NodeView(
        _plain_id(n.get("node_id")),
        stage,
        artifact,
        _coordinates(n.get("coordinates")),
        [_plain_id(p) for p in parents],
        _opt_text(n.get("transformation")),
        meta,
    )


def _drop(d: object) -> DropView:
    if type(d) is not dict or d.keys() != _DROP_KEYS:
        raise _Contract
    node_id, stage, reason = d["node_id"], d["stage"], d["reason"]
    if type(node_id) is not str or type(stage) is not int or type(reason) is not str:
        raise _Contract
    return DropView(node_id, stage, reason)


def canonical_record(d: dict) -> RecordView | None:
    """``d`` read as :class:`~ragaudit_core.logs.provenance.ProvenanceRecord` reads it, when it is
    already in that form (every id a stripped string, stages integers 0–6, artifact types as the
    contract spells them, ``derived_from`` lists, no alias, ``config``, ``ground_truth`` or
    ``documents``) and its graph passes :func:`~ragaudit_core.logs.provenance.graph_error`;
    None otherwise (validate it: the contract reads, or words the error)."""
    if not d.keys() <= _RECORD_KEYS:
        return None
    nodes, dropped = d.get("nodes"), d.get("dropped")
    try:
        if type(nodes) is not list or not nodes or (dropped is not None and type(dropped) is not list):
            raise _Contract
        rec = RecordView(
            _plain_id(d.get("run_id")),
            _plain_id(d.get("query_id")),
            _opt_text(d.get("query")),
            [_node(n) for n in nodes],
            [_drop(x) for x in dropped or ()],
            _opt_text(d.get("generated_text")),
        )
    except _Contract:
        return None
    return None if graph_error(rec.nodes, rec.dropped) is not None else rec

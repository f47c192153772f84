"""Provenance log contract, version 1 (seed 002, "Provenance Graph Schema").

A **provenance record** is one JSON object per (run, query): the stage-wise provenance
graph of one answer, from source documents to the citations in the generated text::

    {"schema": "ragaudit.provenance/1", "run_id": "base", "query_id": "q1",
     "query": "...", "config": {...},
     "nodes": [
       {"node_id": "d1", "stage": 0, "artifact_type": "document",
        "coordinates": {"doc_id": "D1", "page": 1}, "derived_from": [],
        "transformation": "source", "metadata": {"doc_version": "2026-01-02T00:00:00Z"}},
       {"node_id": "c1", "stage": 1, "artifact_type": "chunk",
        "coordinates": {"doc_id": "D1", "page": 1, "char_start": 0, "char_end": 812},
        "derived_from": ["d1"], "transformation": "token_window_256_32",
        "metadata": {"text": "...", "content_hash": "…", "indexed_at": "2026-01-03T00:00:00Z"}},
       ... stage 2 rank_result, 3 rank_result, 4 context_element, 5 generation, 6 citation
     ],
     "dropped": [{"node_id": "r7", "stage": 4, "reason": "token budget of 1024 exceeded"}],
     "generated_text": "... [Source: D1, p. 1] ...",
     "ground_truth": [{"doc_id": "D1", "page": 1}],
     "documents": [{"doc_id": "D1", "pages": 3}]}

Stages (seed 002): 0 source, 1 chunking, 2 retrieval, 3 reranking, 4 compression
(context selection), 5 generation, 6 post-processing; a stage may also be given by
name. ``artifact_type`` is one of the seed's seven (document, chunk, embedding,
rank_result, context_element, generation, citation). A stage-4 ``context_element``
may carry ``metadata.context_index`` (the number the prompt shows, "[Document 3]").

A record is rejected (file, line, reason) when its graph is not a DAG that flows
forward: duplicate node ids, a ``derived_from`` naming no node of the record
(dangling), a node claiming an earlier stage than one of its parents, or a cycle.

``documents`` (optional) is the document catalogue citation verification consults
(does the cited document exist, how many pages has it); without it, the stage-0
document nodes of the record are the catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ragaudit_core.defaults import INT32_MAX
from ragaudit_core.logs.contracts import QUERY_ID_KEYS, RUN_ID_KEYS, _id_value, json_type

__all__ = [
    "ARTIFACT_TYPES",
    "PROVENANCE_SCHEMA",
    "STAGES",
    "Coordinates",
    "DocumentInfo",
    "Drop",
    "GroundTruth",
    "ProvNode",
    "ProvenanceRecord",
    "graph_error",
]

PROVENANCE_SCHEMA = "ragaudit.provenance/1"
STAGES: dict[int, str] = {
    0: "source",
    1: "chunking",
    2: "retrieval",
    3: "reranking",
    4: "compression",
    5: "generation",
    6: "post_processing",
}
_STAGE_BY_NAME = {v: k for k, v in STAGES.items()} | {
    "post-processing": 6,
    "postprocessing": 6,
    "context": 4,
    "compression/selection": 4,
    "embedding": 2,
}
ARTIFACT_TYPES = ("document", "chunk", "embedding", "rank_result", "context_element", "generation", "citation")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _opt_int(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        else:
            raise ValueError(f"{what} must be an integer, got {json_type(v)}")
    if not (0 <= v <= INT32_MAX):
        raise ValueError(f"{what} must be between 0 and {INT32_MAX}, got {v}")
    return v


def _object(data: Any, what: str) -> dict:
    """A copy of ``data`` when it is a JSON object; else the error naming ``what`` was expected."""
    if not isinstance(data, dict):
        raise ValueError(f"{what}, got {json_type(data)}")
    return dict(data)


class Coordinates(_Strict):
    doc_id: str | None = None
    page: int | None = None
    paragraph: int | None = None
    char_start: int | None = None
    char_end: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        out = _object(data, "coordinates must be an object")
        if "char_offset" in out and isinstance(out["char_offset"], (list, tuple)) and len(out["char_offset"]) == 2:
            out.setdefault("char_start", out["char_offset"][0])
            out.setdefault("char_end", out["char_offset"][1])
        if out.get("doc_id") is not None:
            out["doc_id"] = _id_value(out["doc_id"], "coordinates.doc_id")
        for k in ("page", "paragraph", "char_start", "char_end"):
            out[k] = _opt_int(out.get(k), f"coordinates.{k}")
        if out["char_start"] is not None and out["char_end"] is not None and out["char_end"] < out["char_start"]:
            raise ValueError(f"coordinates.char_end ({out['char_end']}) is before char_start ({out['char_start']})")
        return out


class ProvNode(_Strict):
    node_id: str
    stage: int
    artifact_type: Literal["document", "chunk", "embedding", "rank_result", "context_element", "generation", "citation"]
    coordinates: Coordinates | None = None
    derived_from: list[str] = Field(default_factory=list)
    transformation: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        out = _object(data, "a node must be an object")
        if "node_id" not in out and "id" in out:
            out["node_id"] = out["id"]
        if out.get("node_id") is None:
            raise ValueError("node_id is required")
        out["node_id"] = _id_value(out["node_id"], "node_id")
        if "coordinates" not in out and "canonical_coordinates" in out:
            out["coordinates"] = out["canonical_coordinates"]
        st = out.get("stage")
        if isinstance(st, str):
            key = st.strip().lower()
            if key.isdecimal():  # ("²".isdigit(), but int() refuses it)
                st = int(key)
            elif key in _STAGE_BY_NAME:
                st = _STAGE_BY_NAME[key]
            else:
                raise ValueError(f"stage {st!r} is not a stage; use 0–6 or one of {', '.join(STAGES.values())}")
        if isinstance(st, bool) or not isinstance(st, int) or not (0 <= st <= 6):
            raise ValueError(f"stage must be an integer 0–6 (or a stage name), got {st!r}")
        out["stage"] = st
        df = out.get("derived_from", [])
        if df is None:
            df = []
        if isinstance(df, (str, int)) and not isinstance(df, bool):
            df = [df]
        if not isinstance(df, list):
            raise ValueError(f"derived_from must be a list of node ids, got {json_type(df)}")
        out["derived_from"] = [_id_value(x, "derived_from entry") for x in df]
        if out.get("metadata") is None:
            out["metadata"] = {}
        elif not isinstance(out["metadata"], dict):
            raise ValueError(f"metadata must be an object, got {json_type(out['metadata'])}")
        return out

    @field_validator("artifact_type", mode="before")
    @classmethod
    def _artifact(cls, v: Any) -> Any:
        if isinstance(v, str) and v.strip().lower() in ARTIFACT_TYPES:
            return v.strip().lower()
        raise ValueError(f"artifact_type must be one of {', '.join(ARTIFACT_TYPES)}, got {v!r}")


class Drop(_Strict):
    node_id: str
    stage: int = 4
    reason: str


class GroundTruth(_Strict):
    doc_id: str
    page: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        if isinstance(data, (str, int)) and not isinstance(data, bool):
            return {"doc_id": _id_value(data, "ground_truth doc_id")}
        out = _object(data, "a ground-truth entry must be an object or a document id")
        out["doc_id"] = _id_value(out.get("doc_id"), "ground_truth doc_id")
        out["page"] = _opt_int(out.get("page"), "ground_truth page")
        return out


class DocumentInfo(_Strict):
    doc_id: str
    pages: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _coerce(cls, data: Any) -> Any:
        out = _object(data, "a document entry must be an object")
        out["doc_id"] = _id_value(out.get("doc_id"), "documents doc_id")
        out["pages"] = _opt_int(out.get("pages", out.get("total_pages")), "documents pages")
        return out


class ProvenanceRecord(_Strict):
    run_id: str
    query_id: str
    query: str | None = None
    config: dict[str, Any] | None = None
    nodes: list[ProvNode] = Field(min_length=1)
    dropped: list[Drop] = Field(default_factory=list)
    generated_text: str | None = None
    ground_truth: list[GroundTruth] = Field(default_factory=list)
    documents: list[DocumentInfo] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _ids(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for field, keys, what in (("run_id", RUN_ID_KEYS, "run id"), ("query_id", QUERY_ID_KEYS, "query id")):
            v = next((out[k] for k in keys if out.get(k) is not None), None)
            if v is None:
                raise ValueError(f"missing {what}: none of {', '.join(keys)} is present")
            out[field] = _id_value(v, what)
        if out.get("generated_text") is None:
            for k in ("answer", "generated", "output"):
                if isinstance(out.get(k), str):
                    out["generated_text"] = out[k]
                    break
        if out.get("ground_truth") is None:
            out["ground_truth"] = []
        if out.get("documents") is None:
            out["documents"] = []
        if out.get("dropped") is None:
            out["dropped"] = []
        return out

    @model_validator(mode="after")
    def _graph(self) -> ProvenanceRecord:
        err = graph_error(self.nodes, self.dropped)
        if err is not None:
            raise ValueError(err)
        return self


class _GraphNode(Protocol):
    @property
    def node_id(self) -> str: ...
    @property
    def stage(self) -> int: ...
    @property
    def derived_from(self) -> list[str]: ...


class _Dropped(Protocol):
    @property
    def node_id(self) -> str: ...


def graph_error(nodes: Sequence[_GraphNode], dropped: Sequence[_Dropped]) -> str | None:
    """Why a record's graph is not a DAG that flows forward, or None: a node id that appears
    twice, a ``derived_from`` naming no node (dangling), a node at an earlier stage than a
    parent, a cycle, a dropped node that is not a node of the record."""
    by_id: dict[str, _GraphNode] = {}
    for n in nodes:
        if n.node_id in by_id:
            return f"node id {n.node_id!r} appears twice; node ids must be unique within a record"
        by_id[n.node_id] = n
    level = False  # an edge between nodes of one stage (only those can close a cycle)
    for n in nodes:
        for p in n.derived_from:
            parent = by_id.get(p)
            if parent is None:
                return (
                    f"node {n.node_id!r} is derived from {p!r}, which is not a node of this record "
                    "(dangling derived_from)"
                )
            if parent.stage > n.stage:
                return (
                    f"node {n.node_id!r} claims stage {n.stage} ({STAGES[n.stage]}) but its parent "
                    f"{p!r} is at the later stage {parent.stage} ({STAGES[parent.stage]})"
                )
            level = level or parent.stage == n.stage
    cycle = _find_cycle(by_id) if level else None  # stages never fall along an edge: a cycle stays on one
    if cycle:
        return "the provenance graph has a cycle: " + " → ".join(map(repr, cycle))
    for d in dropped:
        if d.node_id not in by_id:
            return f"dropped node {d.node_id!r} is not a node of this record"
    return None


def _find_cycle(by_id: Mapping[str, _GraphNode]) -> list[str] | None:
    """A cycle along derived_from edges (as a closed list of node ids), or None."""
    colour: dict[str, int] = {}
    for root in by_id:
        if colour.get(root):
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                colour[node] = 1
                path.append(node)
            parents = by_id[node].derived_from
            if i < len(parents):
                stack.append((node, i + 1))
                p = parents[i]
                if colour.get(p) == 1:
                    return [*path[path.index(p) :], p]
                if not colour.get(p):
                    stack.append((p, 0))
            else:
                colour[node] = 2
                path.pop()
    return None

"""Provenance graphs as stored: nodes with coordinates, resolution of a node to its
(document, page), the seed's graph failure-mode checks, loading from DuckDB, and a layout
for drawing one graph (seed 002, Patterns 1–2 and the failure modes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

if TYPE_CHECKING:
    from ragaudit_core.fidelity.score import QueryFidelity

__all__ = [
    "FIDELITY_STAGES",
    "Node",
    "QueryGraph",
    "failure_modes",
    "graph_layout",
    "has_origin",
    "load_graphs",
    "provenance_runs",
]

FIDELITY_STAGES = {1: "chunking", 2: "retrieval", 3: "reranking", 4: "compression", 5: "generation"}


@dataclass
class Node:
    node_id: str
    stage: int
    artifact_type: str
    doc_id: str | None
    page: int | None
    paragraph: int | None
    char_start: int | None
    char_end: int | None
    transformation: str | None
    derived_from: list[str]
    metadata: dict


@dataclass
class QueryGraph:
    """One provenance record, as stored (doc ids already canonical)."""

    run_id: str
    query_id: str
    query: str | None
    generated_text: str | None
    nodes: dict[str, Node]
    ground_truth: list[dict]
    documents: dict[str, int | None]  # doc_id -> pages (None: unknown)
    dropped: list[dict] = field(default_factory=list)

    def resolve(self, node_id: str, _seen: frozenset = frozenset()) -> tuple[str | None, int | None]:
        """(doc_id, page) of a node: its own coordinates, else the nearest ancestor's."""
        n = self.nodes[node_id]
        if n.doc_id is not None:
            page = n.page
            if page is None:  # a chunk may carry the document but inherit the page
                for p in n.derived_from:
                    if p not in _seen:
                        d, pg = self.resolve(p, _seen | {node_id})
                        if d == n.doc_id and pg is not None:
                            page = pg
                            break
            return n.doc_id, page
        for p in n.derived_from:
            if p not in _seen:
                d, pg = self.resolve(p, _seen | {node_id})
                if d is not None:
                    return d, pg
        return None, None

    def context(self) -> list[Node]:
        """Stage-4 context elements in prompt order (``metadata.context_index``, else logged order)."""
        ctx = [n for n in self.nodes.values() if n.stage == 4 and n.artifact_type == "context_element"]
        order = {nid: i for i, nid in enumerate(self.nodes)}
        return sorted(ctx, key=lambda n: (n.metadata.get("context_index", 10**9), order[n.node_id]))

    def catalogue(self) -> dict[str, int | None]:
        cat = {n.doc_id: _pages(n.metadata) for n in self.nodes.values() if n.stage == 0 and n.doc_id is not None}
        cat.update(self.documents)
        return cat


def _pages(md: dict) -> int | None:
    v = md.get("pages", md.get("n_pages", md.get("total_pages")))
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def has_origin(n: Node) -> bool:
    return n.doc_id is not None and (n.page is not None or (n.char_start is not None and n.char_end is not None))


def _parse_ts(v: object) -> datetime | None:
    if not isinstance(v, str):
        return None
    try:
        t = datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def _content_hash(n: Node) -> str | None:
    h = n.metadata.get("content_hash")
    if isinstance(h, str):
        return h
    t = n.metadata.get("text")
    return hashlib.sha256(t.encode("utf-8")).hexdigest() if isinstance(t, str) else None


def failure_modes(g: QueryGraph) -> list[dict]:
    """The seed's failure-mode checks on one graph: offset/length mismatch (FM 1), reranker
    text mutation by content hash (FM 2), stale chunks by timestamps (FM 4)."""
    out: list[dict[str, object]] = []
    for n in g.nodes.values():
        text = n.metadata.get("text")
        if (
            n.artifact_type == "chunk"
            and isinstance(text, str)
            and n.char_start is not None
            and n.char_end is not None
            and n.char_end - n.char_start != len(text)
        ):
            out.append(
                {
                    "node_id": n.node_id,
                    "check": "offset_length_mismatch",
                    "detail": f"offsets span {n.char_end - n.char_start} characters, text has {len(text)}",
                }
            )
        if n.stage == 3:
            mine = _content_hash(n)
            for p in n.derived_from:
                parent = g.nodes[p]
                theirs = _content_hash(parent)
                if mine is not None and theirs is not None and mine != theirs and parent.stage < 3:
                    out.append(
                        {
                            "node_id": n.node_id,
                            "check": "reranker_text_mutation",
                            "detail": f"content hash differs from its parent {p!r}",
                        }
                    )
        if n.artifact_type == "chunk":
            indexed = _parse_ts(n.metadata.get("indexed_at"))
            version = _parse_ts(n.metadata.get("doc_version"))
            for p in n.derived_from:
                version = version or _parse_ts(g.nodes[p].metadata.get("doc_version"))
            if indexed is not None and version is not None and indexed < version:
                delta = (version - indexed).total_seconds()
                out.append(
                    {
                        "node_id": n.node_id,
                        "check": "stale_chunk",
                        "detail": f"indexed {delta / 86400:.1f} days before the document's current version",
                        "staleness_s": delta,
                    }
                )
    return out


def provenance_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    cur = con.cursor()
    try:
        return [r for (r,) in cur.execute("SELECT DISTINCT run_id FROM prov_records ORDER BY run_id").fetchall()]
    finally:
        cur.close()


def load_graphs(
    con: duckdb.DuckDBPyConnection, run_id: str, query_ids: Sequence[str] | None = None
) -> list[QueryGraph]:
    cur = con.cursor()
    try:
        recs = cur.execute(
            """SELECT query_id, query, generated_text, ground_truth, documents, dropped FROM prov_records
               WHERE run_id = ? AND (? OR list_contains(?, query_id)) ORDER BY query_id""",
            [run_id, query_ids is None, list(query_ids or [])],
        ).fetchall()
        nodes = cur.execute(
            """SELECT query_id, node_id, stage, artifact_type, doc_id, page, paragraph, char_start, char_end,
                      transformation, derived_from, metadata
               FROM prov_nodes WHERE run_id = ? AND (? OR list_contains(?, query_id)) ORDER BY query_id, ord""",
            [run_id, query_ids is None, list(query_ids or [])],
        ).fetchall()
    finally:
        cur.close()
    by_q: dict[str, dict[str, Node]] = {}
    for qid, nid, stage, at, doc, page, para, cs, ce, tr, df, md in nodes:
        by_q.setdefault(qid, {})[nid] = Node(
            nid, stage, at, doc, page, para, cs, ce, tr, list(df or []), json.loads(md) if md else {}
        )
    out = []
    for qid, query, text, gt, docs, dropped in recs:
        out.append(
            QueryGraph(
                run_id,
                qid,
                query,
                text,
                by_q.get(qid, {}),
                json.loads(gt or "[]"),
                {d["doc_id"]: d.get("pages") for d in json.loads(docs or "[]")},
                json.loads(dropped or "[]"),
            )
        )
    return out


def graph_layout(g: QueryGraph, r: QueryFidelity) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Nodes and edges of one provenance graph, placed for drawing (x = stage), with the
    ground-truth path and the broken edges marked.

    ``on_path``: the node resolves to a ground-truth document. An edge is ``broken`` when
    it leaves a ground-truth node and enters a node that no longer resolves to one, at
    the first failing stage; a ground-truth node whose lineage stops there (dropped, or
    reranked without a link) gets a ``broken`` stub edge to nowhere (``child`` None) with
    the reason as label. Citation nodes (stage 6) and emitted citations resolve through
    their own coordinates.
    """
    gt = {t["doc_id"] for t in g.ground_truth}
    rows = []
    per_stage: dict[int, int] = {}
    resolved = {nid: g.resolve(nid) for nid in g.nodes}
    for nid, n in g.nodes.items():
        y = per_stage.get(n.stage, 0)
        per_stage[n.stage] = y + 1
        d, p = resolved[nid]
        label = n.artifact_type + (f" {d}" if d else " (no coordinates)") + (f" p.{p}" if p is not None else "")
        rows.append(
            {
                "node_id": nid,
                "stage": n.stage,
                "x": n.stage,
                "y": -y,
                "artifact_type": n.artifact_type,
                "doc_id": d,
                "page": p,
                "on_path": d in gt if gt else False,
                "label": label,
            }
        )
    nodes = pd.DataFrame(
        rows, columns=["node_id", "stage", "x", "y", "artifact_type", "doc_id", "page", "on_path", "label"]
    )
    on = dict(zip(nodes["node_id"], nodes["on_path"]))
    fail = r.first_failed_stage
    children: dict[str, list[str]] = {}
    edges = []
    for nid, n in g.nodes.items():
        for parent in n.derived_from:
            children.setdefault(parent, []).append(nid)
            broken = bool(fail is not None and on.get(parent) and not on.get(nid) and n.stage == fail)
            edges.append({"parent": parent, "child": nid, "broken": broken, "label": ""})
    if fail is not None and fail > 1:
        reasons = {d["node_id"]: d.get("reason", "") for d in g.dropped}
        for nid, n in g.nodes.items():
            if n.stage == fail - 1 and on.get(nid) and not any(on.get(c) for c in children.get(nid, [])):
                edges.append(
                    {
                        "parent": nid,
                        "child": None,
                        "broken": True,
                        "label": reasons.get(nid, f"lost at {FIDELITY_STAGES[fail]}"),
                    }
                )
    if fail == 1:
        for nid, n in g.nodes.items():
            if n.artifact_type == "chunk" and not has_origin(n):
                edges.append(
                    {"parent": nid, "child": None, "broken": True, "label": "chunk without origin coordinates"}
                )
    return nodes, pd.DataFrame(edges, columns=["parent", "child", "broken", "label"])

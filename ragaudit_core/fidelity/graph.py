"""Provenance graphs as stored: nodes with coordinates, resolution of a node to its
(document, page), the seed's graph failure-mode checks, loading from DuckDB, and a layout
for drawing one graph (seed 002, Patterns 1–2 and the failure modes)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import duckdb
import pandas as pd

from ragaudit_core.wording import counted

if TYPE_CHECKING:
    from ragaudit_core.fidelity.score import QueryFidelity

__all__ = [
    "FIDELITY_STAGES",
    "Node",
    "QueryGraph",
    "failure_modes",
    "graph_layout",
    "has_origin",
    "iter_graph_chunks",
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
                    "detail": f"offsets span {counted(n.char_end - n.char_start, 'character')}, text has {len(text)}",
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


_RECORD_COLUMNS = "run_id, query_id, query, generated_text, ground_truth, documents, dropped"
_NODE_COLUMNS = """run_id, query_id, node_id, stage, artifact_type, doc_id, page, paragraph, char_start, char_end,
                 transformation, derived_from, metadata"""

CHUNK_RECORDS = 20_000
"""Records :func:`iter_graph_chunks` reads per pair of queries: runs are taken together until their
records reach it (a run that holds more is read alone), so the graphs held at once stay near one
chunk's, or one run's."""


def _graphs(recs: list[tuple], nodes: list[tuple]) -> dict[str, list[QueryGraph]]:
    """Run id → its records' graphs (in the order of ``recs``) from rows of :data:`_RECORD_COLUMNS`
    and of :data:`_NODE_COLUMNS` (ordered by run, query and ``ord``)."""
    by_q: dict[tuple[str, str], dict[str, Node]] = {}
    for run, qid, nid, stage, at, doc, page, para, cs, ce, tr, df, md in nodes:
        by_q.setdefault((run, qid), {})[nid] = Node(
            nid, stage, at, doc, page, para, cs, ce, tr, list(df or []), json.loads(md) if md else {}
        )
    out: dict[str, list[QueryGraph]] = {}
    for run, qid, query, text, gt, docs, dropped in recs:
        out.setdefault(run, []).append(
            QueryGraph(
                run,
                qid,
                query,
                text,
                by_q.get((run, qid), {}),
                json.loads(gt or "[]"),
                {d["doc_id"]: d.get("pages") for d in json.loads(docs or "[]")},
                json.loads(dropped or "[]"),
            )
        )
    return out


def load_graphs(
    con: duckdb.DuckDBPyConnection, run_id: str, query_ids: Sequence[str] | None = None
) -> list[QueryGraph]:
    """One run's graphs (all, or those of ``query_ids``), ordered by query id: two queries, each a
    scan of the provenance tables. For many runs, :func:`iter_graph_chunks` reads them together."""
    cur = con.cursor()
    try:
        recs = cur.execute(
            f"""SELECT {_RECORD_COLUMNS} FROM prov_records
               WHERE run_id = ? AND (? OR list_contains(?, query_id)) ORDER BY query_id""",
            [run_id, query_ids is None, list(query_ids or [])],
        ).fetchall()
        nodes = cur.execute(
            f"""SELECT {_NODE_COLUMNS}
               FROM prov_nodes WHERE run_id = ? AND (? OR list_contains(?, query_id)) ORDER BY query_id, ord""",
            [run_id, query_ids is None, list(query_ids or [])],
        ).fetchall()
    finally:
        cur.close()
    return _graphs(recs, nodes).get(run_id, [])


def _chunks(runs: list[str], sizes: dict[str, int], limit: int) -> Iterator[list[str]]:
    """Consecutive runs whose records add up to at most ``limit`` (a larger run on its own)."""
    chunk: list[str] = []
    held = 0
    for run in runs:
        n = sizes.get(run, 0)
        if chunk and held + n > limit:
            yield chunk
            chunk, held = [], 0
        chunk.append(run)
        held += n
    if chunk:
        yield chunk


def iter_graph_chunks(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], chunk_records: int = CHUNK_RECORDS
) -> Iterator[dict[str, list[QueryGraph]]]:
    """Run → its graphs, a chunk of runs at a time, for each run of ``runs`` in their order (a
    run named twice once; a run without records with no graphs); each run's graphs as
    :func:`load_graphs` gives them.

    Cost: one count of the records per run, then two queries per chunk of runs holding up to
    ``chunk_records`` records (:data:`CHUNK_RECORDS`; a larger run is a chunk alone), each a scan
    of the provenance tables — not two per run, which made a log with a run per record (5,000
    one-record runs) spend 17 s in 10,000 scans. The graphs held at once are one chunk's."""
    order = list(dict.fromkeys(runs))
    cur = con.cursor()
    try:
        sizes = dict(
            cur.execute(
                """SELECT run_id, count(*) FROM prov_records
                   WHERE run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY run_id""",
                [order],
            ).fetchall()
        )
        for chunk in _chunks(order, sizes, chunk_records):
            present = [r for r in chunk if sizes.get(r)]
            recs = cur.execute(
                f"""SELECT {_RECORD_COLUMNS} FROM prov_records
                   WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY run_id, query_id""",
                [present],
            ).fetchall()
            nodes = cur.execute(
                f"""SELECT {_NODE_COLUMNS} FROM prov_nodes
                   WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY run_id, query_id, ord""",
                [present],
            ).fetchall()
            by_run = _graphs(recs, nodes)
            del recs, nodes
            yield {run: by_run.pop(run, []) for run in chunk}
    finally:
        cur.close()


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

"""Small provenance graphs written out by hand for the fidelity tests."""

from __future__ import annotations


def node(nid, stage, at, derived=(), doc=None, page=None, start=None, end=None, **md):
    n = {"node_id": nid, "stage": stage, "artifact_type": at, "derived_from": list(derived), "metadata": md}
    coords = {k: v for k, v in (("doc_id", doc), ("page", page), ("char_start", start), ("char_end", end))
              if v is not None}
    if coords:
        n["coordinates"] = coords
    return n


TEXT = ("A [Source: D1, p. 2] B [Document 2] C [Source: D1, p. 3] D [Source: D1, p. 9] "
        "E [Source: D9, p. 1] F [7] G [Source: D1]")


def pipeline(run="base", qid="q1", *, text=TEXT, strip_rerank=False, gt=("D1",), mutate=False, stale=False,
             bad_offsets=False):
    """Two documents through every stage; D1 p. 2 is the ground truth.

    strip_rerank: the reranker returns D1's chunk without any link or coordinates.
    """
    k1 = node("k1", 3, "rank_result", [] if strip_rerank else ["r1"], doc=None if strip_rerank else "D1",
              page=None if strip_rerank else 2, content_hash="MUTATED" if mutate else "h1")
    nodes = [
        node("d1", 0, "document", doc="D1", pages=3, doc_version="2026-01-01T00:00:00Z"),
        node("d2", 0, "document", doc="D2", pages=1, doc_version="2026-02-01T00:00:00Z" if stale else
             "2025-12-01T00:00:00Z"),
        node("c1", 1, "chunk", ["d1"], doc="D1", page=2, start=0, end=12 if bad_offsets else 10,
             text="0123456789", content_hash="h1", indexed_at="2026-01-02T00:00:00Z"),
        node("c2", 1, "chunk", ["d2"], doc="D2", page=1, start=0, end=5, text="abcde", content_hash="h2",
             indexed_at="2026-01-01T00:00:00Z"),
        node("r1", 2, "rank_result", ["c1"], doc="D1", page=2, content_hash="h1", rank=0),
        node("r2", 2, "rank_result", ["c2"], doc="D2", page=1, content_hash="h2", rank=1),
        k1,
        node("k2", 3, "rank_result", ["r2"], doc="D2", page=1, content_hash="h2"),
        node("x1", 4, "context_element", ["k1"], context_index=1),
        node("x2", 4, "context_element", ["k2"], context_index=2),
        node("g", 5, "generation", ["x1", "x2"]),
    ]
    return {"run_id": run, "query_id": qid, "query": "what?", "nodes": nodes, "generated_text": text,
            "ground_truth": [{"doc_id": d} for d in gt]}

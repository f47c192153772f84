"""The ranking-quality metrics of :mod:`.ranking` in plain Python, one query at a time: the
oracle the SQL is tested against (and the definitions, written once more as code)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["query_metrics"]


def query_metrics(ranked: Sequence[str], labels: Mapping[str, int], cutoffs: Sequence[int]) -> dict[str, float]:
    """Every metric of one query: ``ranked`` document ids in rank order (repeats are later chunks
    of a document and are skipped), ``labels`` document → relevance (≥ 1 relevant). The query
    must have a relevant label (callers leave the others out)."""
    docs = list(dict.fromkeys(ranked))
    gains = [max(int(labels.get(d, 0)), 0) for d in docs]
    n_rel = sum(1 for v in labels.values() if v > 0)
    if n_rel == 0:
        raise ValueError("a query without relevant labels is left out, not scored")
    ideal = sorted((v for v in labels.values() if v > 0), reverse=True)

    def dcg(gs: Sequence[int]) -> float:
        return sum(g / math.log2(i + 2) for i, g in enumerate(gs))

    out: dict[str, float] = {}
    for k in cutoffs:
        hits = sum(1 for g in gains[:k] if g > 0)
        out[f"ndcg@{k}"] = dcg(gains[:k]) / dcg(ideal[:k])
        out[f"recall@{k}"] = hits / n_rel
        out[f"precision@{k}"] = hits / k
        out[f"hit@{k}"] = float(hits > 0)
    first = next((i for i, g in enumerate(gains, start=1) if g > 0), None)
    out["mrr"] = 1.0 / first if first else 0.0
    cum, ap = 0, 0.0
    for i, g in enumerate(gains, start=1):
        if g > 0:
            cum += 1
            ap += cum / i
    out["map"] = ap / n_rel
    out["ndcg"] = dcg(gains) / dcg(ideal)
    out["recall"] = sum(1 for g in gains if g > 0) / n_rel
    return out

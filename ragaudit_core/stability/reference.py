"""A straightforward pure-Python, set-based implementation of the stability metrics.

It is the *oracle* for the SQL implementation in :mod:`ragaudit_core.stability.metrics`
(property tests compare the two on random logs) and the *reference* the benchmark
measures against. It reads already-parsed records; it applies the same canonical ids,
span hashes and conventions (both empty → 1.0, strict ``J < τ``, ties broken by pair
order) but none of the ingest guarantees.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable

from ragaudit_core.defaults import FLIP_THRESHOLD

__all__ = ["reference_stability"]


def _jaccard(a: set, b: set) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def reference_stability(
    records: Iterable[tuple[str, str, list[tuple[str, str | None]]]],
    tau: float = FLIP_THRESHOLD,
    baseline: str | None = None,
) -> dict:
    """``records`` are ``(run_id, query_id, [(doc_id, span_hash_or_None), ...])``.

    Returns ``{"pairs": {(a, b, level): {...}}, "queries": {(q, level): (j_min, pair)},
    "runs": {run: {...}}, "collapse_rate": {level: x}, "gap_ratio": x}``.
    """
    docs: dict[str, dict[str, set]] = {}
    spans: dict[str, dict[str, set]] = {}
    sizes: dict[str, dict[str, int]] = {}
    span_ok: dict[str, bool] = {}
    for run, q, entries in records:
        docs.setdefault(run, {})[q] = {d for d, _ in entries}
        spans.setdefault(run, {})[q] = {(d, s) for d, s in entries}
        sizes.setdefault(run, {})[q] = len(entries)
        span_ok[run] = span_ok.get(run, True) and all(s is not None for _, s in entries)
    runs = sorted(docs)
    queries = sorted(set.intersection(*(set(docs[r]) for r in runs)))
    if baseline is None:
        pairs = list(itertools.combinations(runs, 2))
    else:
        pairs = [(min(baseline, r), max(baseline, r)) for r in runs if r != baseline]
    out_pairs = {}
    per_query: dict[tuple[str, str], tuple[float, str]] = {}
    collapsed: dict[str, set] = {"doc": set(), "span": set()}
    cells: dict[str, list[float]] = {"doc": [], "span": []}
    both: list[tuple[float, float]] = []
    for a, b in pairs:
        for level, sets in (("doc", docs), ("span", spans)):
            if level == "span" and not (span_ok[a] and span_ok[b]):
                continue
            js, flips, na, nb, loss, gain, coll = [], 0, 0, 0, 0, 0, 0
            for q in queries:
                sa, sb = sets[a][q], sets[b][q]
                j = _jaccard(sa, sb)
                js.append(j)
                cells[level].append(j)
                flips += j < tau
                na += not sa
                nb += not sb
                loss += bool(sa) and not sb
                gain += (not sa) and bool(sb)
                if sa and sb and not (sa & sb):
                    coll += 1
                    collapsed[level].add(q)
                label = f"{a} vs {b}"
                cur = per_query.get((q, level))
                if cur is None or j < cur[0]:
                    per_query[(q, level)] = (j, label)
                if level == "span":
                    both.append((_jaccard(docs[a][q], docs[b][q]), j))
            n = len(queries)
            out_pairs[(a, b, level)] = {
                "j_avg": sum(js) / n,
                "flip_rate": flips / n,
                "null_rate_a": na / n,
                "null_rate_b": nb / n,
                "null_loss": loss / n,
                "null_gain": gain / n,
                "collapse_rate": coll / n,
            }
    run_stats = {}
    for r in runs:
        s = sorted(sizes[r][q] for q in queries)
        run_stats[r] = {
            "citation_rate": sum(1 for x in s if x) / len(s),
            "mean_evidence": sum(s) / len(s),
            "median_evidence": statistics.median(s),
        }
    gap = None
    if both:
        mean_doc = sum(d for d, _ in both) / len(both)
        mean_span = sum(s for _, s in both) / len(both)
        gap = mean_doc / mean_span if mean_span else None
    return {
        "pairs": out_pairs,
        "queries": per_query,
        "runs": run_stats,
        "collapse_rate": {lv: len(collapsed[lv]) / len(queries) for lv in collapsed},
        "gap_ratio": gap,
        "queries_evaluated": queries,
    }

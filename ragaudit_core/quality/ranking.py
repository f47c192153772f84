"""Ranking quality of each run from relevance labels, in SQL: the trec_eval definitions.

A run's list for a query is read at **document level**: each document counts once, at its first
rank; later chunks of the same document are skipped (a trec_eval run holds each document once), so
rank ``i`` is the i-th distinct document. ``k`` cuts that list. A label with relevance ≥ 1 is
relevant (trec_eval's ``relevance_level`` 1); graded relevance is the gain.

For a query with ``R`` relevant documents (labels ``rel_d``), ranks ``i = 1, 2, …`` and
``rel_i`` the label of the document at rank ``i`` (0 when unjudged or ≤ 0):

* ``precision@k = #{i ≤ k : rel_i ≥ 1} / k`` — divided by ``k`` even when the list is shorter
  (trec_eval ``P_k``);
* ``recall@k = #{i ≤ k : rel_i ≥ 1} / R`` (``recall_k``); ``recall`` at the list's depth;
* ``hit@k = 1`` when some ``i ≤ k`` has ``rel_i ≥ 1`` (``success_k``, "hit rate");
* ``ndcg@k = DCG@k / IDCG@k``, ``DCG@k = Σ_{i ≤ k} rel_i / log2(i + 1)`` with linear gains, and
  ``IDCG@k`` the same sum over the labels sorted in decreasing order (trec_eval ``ndcg_cut_k``);
  ``ndcg`` without a cut over the whole list and every relevant label (``ndcg``);
* ``mrr`` = ``1 / first i with rel_i ≥ 1`` over the whole list, 0 when none (``recip_rank``);
* ``map`` = average precision ``Σ_{i : rel_i ≥ 1} precision@i / R`` (``map``).

Which queries count: those a run has a record for **and** that have at least one relevant label.
A query without labels (or whose labels are all 0) is counted and left out, never scored 0; a
labelled query the run answered with no evidence scores 0 (a miss). A run that logged no document
ids (every id ``text:`` and its passage's hash: :func:`~ragaudit_core.logs.catalog.text_id_runs`)
counts only the queries with a relevant label of a passage (a ``text:`` id, from Ragas' reference
contexts): a label naming a document cannot meet its evidence, so it would score 0 by construction.
Reference implementation: :mod:`.reference` (pure Python); the tests check both against ``pytrec_eval``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.logs.catalog import text_id_runs

__all__ = ["DEFAULT_CUTOFFS", "DEPTH_METRICS", "label_coverage", "metric_names", "per_query_quality"]

DEFAULT_CUTOFFS = (5, 10, 20)
CUT_METRICS = ("ndcg", "recall", "precision", "hit")
DEPTH_METRICS = ("mrr", "map", "ndcg", "recall")


def metric_names(cutoffs: Sequence[int] = DEFAULT_CUTOFFS) -> list[str]:
    """Metric keys in display order: ``ndcg@10, recall@10, …`` per cut-off, then ``mrr``, ``map``,
    ``ndcg`` and ``recall`` at the list's depth."""
    return [f"{m}@{k}" for k in cutoffs for m in CUT_METRICS] + list(DEPTH_METRICS)


_GROUPS_SQL = """
WITH lab AS (
    SELECT l.query_id, coalesce(m.canonical, l.doc_id) AS doc_id, max(l.relevance) AS rel
    FROM qrels l LEFT JOIN _q_map m ON m.raw = l.doc_id
    GROUP BY ALL
),
judged AS (
    SELECT query_id, bool_or(rel > 0 AND starts_with(doc_id, 'text:')) AS by_text
    FROM lab GROUP BY query_id HAVING max(rel) > 0
)
SELECT r.run_id, r.query_id
FROM records r SEMI JOIN _q_runs ON _q_runs.run_id = r.run_id JOIN judged j ON j.query_id = r.query_id
WHERE (? OR list_contains(?, r.query_id)) AND (j.by_text OR NOT list_contains(?, r.run_id))
ORDER BY r.run_id, r.query_id
"""

_RANKED_SQL = """
WITH lab AS (
    SELECT l.query_id, coalesce(m.canonical, l.doc_id) AS doc_id, max(l.relevance) AS rel
    FROM qrels l LEFT JOIN _q_map m ON m.raw = l.doc_id
    GROUP BY ALL
),
judged AS (SELECT query_id FROM lab GROUP BY query_id HAVING max(rel) > 0),
docs AS (
    SELECT e.run_id, e.query_id, coalesce(m.canonical, e.doc_id) AS doc_id, min(e.position) AS pos
    FROM evidence e
    SEMI JOIN _q_runs ON _q_runs.run_id = e.run_id
    SEMI JOIN judged ON judged.query_id = e.query_id
    LEFT JOIN _q_map m ON m.raw = e.doc_id
    GROUP BY ALL
)
SELECT g.gi, d.pos, greatest(coalesce(l.rel, 0), 0)::DOUBLE AS rel
FROM docs d
JOIN _q_groups g ON g.run_id = d.run_id AND g.query_id = d.query_id
LEFT JOIN lab l ON l.query_id = d.query_id AND l.doc_id = d.doc_id
"""

_IDEAL_SQL = """
WITH lab AS (
    SELECT l.query_id, coalesce(m.canonical, l.doc_id) AS doc_id, max(l.relevance) AS rel
    FROM qrels l LEFT JOIN _q_map m ON m.raw = l.doc_id
    GROUP BY ALL
)
SELECT query_id, list(rel ORDER BY rel DESC) AS gains FROM lab WHERE rel > 0 GROUP BY query_id
"""


def _register(cur: duckdb.DuckDBPyConnection, runs: Sequence[str], docid_map: Mapping[str, str] | None) -> None:
    cur.register("_q_runs", pd.DataFrame({"run_id": pd.Series(list(runs), dtype="string")}))
    dm = dict(docid_map or {})
    cur.register(
        "_q_map",
        pd.DataFrame(
            {"raw": pd.Series(list(dm), dtype="string"), "canonical": pd.Series(list(dm.values()), dtype="string")}
        ),
    )


def _dcg_at(gains: np.ndarray, ranks: np.ndarray, group: np.ndarray, n_groups: int, k: float) -> np.ndarray:
    """Σ over the ranks ≤ k of ``gain / log2(rank + 1)`` per group."""
    keep = ranks <= k
    return np.bincount(group[keep], weights=gains[keep] / np.log2(ranks[keep] + 1.0), minlength=n_groups)


def _ideal_dcg(ideal: list[np.ndarray], ks: list[int]) -> tuple[np.ndarray, dict[float, np.ndarray]]:
    """Per query: its number of relevant labels and its ideal DCG at each cut-off (and at full
    depth, key ``inf``), from its gains in decreasing order."""
    n_rel = np.array([len(g) for g in ideal], dtype=float)
    width = int(n_rel.max()) if len(ideal) else 0
    pad = np.zeros((len(ideal), max(width, 1)))
    for i, g in enumerate(ideal):
        pad[i, : len(g)] = g
    cum = np.cumsum(pad / np.log2(np.arange(2, pad.shape[1] + 2)), axis=1)
    out = {float(k): cum[:, min(k, pad.shape[1]) - 1] for k in ks}
    out[np.inf] = cum[:, -1]
    return n_rel, out


def _metrics(
    gi: np.ndarray,
    pos: np.ndarray,
    rel: np.ndarray,
    group_query: np.ndarray,
    ideal: list[np.ndarray],
    ks: list[int],
) -> dict[str, np.ndarray]:
    """Every metric per group (run, query) from its distinct documents (group, first position,
    relevance); ``group_query`` indexes each group's query in ``ideal`` (the query's relevant
    labels, decreasing)."""
    n_groups = len(group_query)
    order = np.lexsort((pos, gi))
    gi, rel = gi[order], rel[order]
    start = np.r_[0, np.flatnonzero(np.diff(gi)) + 1] if gi.size else np.array([], dtype=np.int64)
    counts = np.diff(np.r_[start, gi.size])
    ranks = (np.arange(gi.size) - np.repeat(start, counts) + 1).astype(float)  # 1-based, per group
    hit = (rel > 0).astype(float)
    n_rel_q, idcg_q = _ideal_dcg(ideal, ks)
    n_rel = n_rel_q[group_query]
    idcg = {k: v[group_query] for k, v in idcg_q.items()}
    out: dict[str, np.ndarray] = {}
    for k in ks:
        hits = np.bincount(gi[ranks <= k], weights=hit[ranks <= k], minlength=n_groups)
        out[f"ndcg@{k}"] = _dcg_at(rel, ranks, gi, n_groups, k) / idcg[float(k)]
        out[f"recall@{k}"] = hits / n_rel
        out[f"precision@{k}"] = hits / k
        out[f"hit@{k}"] = (hits > 0).astype(float)
    first = np.full(n_groups, np.inf)
    np.minimum.at(first, gi[hit > 0], ranks[hit > 0])
    out["mrr"] = np.where(np.isfinite(first), 1.0 / first, 0.0)
    cum = np.cumsum(hit)
    cum_in_group = cum - np.repeat(np.r_[0.0, cum][start], counts) if gi.size else cum
    out["map"] = np.bincount(gi, weights=hit * cum_in_group / ranks, minlength=n_groups) / n_rel
    out["ndcg"] = _dcg_at(rel, ranks, gi, n_groups, np.inf) / idcg[np.inf]
    out["recall"] = np.bincount(gi, weights=hit, minlength=n_groups) / n_rel
    return out


def per_query_quality(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    docid_map: Mapping[str, str] | None = None,
    queries: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per (run, labelled query the run has) with a column per metric
    (:func:`metric_names`), ordered by run and query; only ``queries`` when given. Empty (with the
    columns) when nothing is labelled. ``docid_map`` (raw → canonical) applies to evidence and
    labels alike.

    SQL joins and de-duplicates (a document at its first position, with its label); the metrics
    are vectorised sums over the ranked rows (one pass per cut-off), not per-query Python."""
    ks = sorted({int(k) for k in cutoffs})
    if any(k < 1 for k in ks):
        raise ValueError("cut-offs must be at least 1")
    cols = ["run_id", "query_id", *metric_names(ks)]
    cur = con.cursor()
    try:
        _register(cur, runs, docid_map)
        groups = cur.execute(_GROUPS_SQL, [queries is None, list(queries or []), text_id_runs(con)]).df()
        if groups.empty:
            return pd.DataFrame(columns=cols)
        groups["gi"] = np.arange(len(groups), dtype=np.int64)
        cur.register("_q_groups", groups)
        ranked = cur.execute(_RANKED_SQL).fetchnumpy()
        ideal_by_q = {q: np.asarray(g, dtype=float) for q, g in cur.execute(_IDEAL_SQL).fetchall()}
    finally:
        cur.close()
    qcodes, qnames = pd.factorize(groups["query_id"])
    m = _metrics(
        np.asarray(ranked["gi"], dtype=np.int64),
        np.asarray(ranked["pos"], dtype=np.int64),
        np.asarray(ranked["rel"], dtype=float),
        np.asarray(qcodes, dtype=np.int64),
        [ideal_by_q[q] for q in qnames],
        ks,
    )
    out = groups[["run_id", "query_id"]].copy()
    for c in cols[2:]:
        out[c] = m[c]
    return out.reset_index(drop=True)


def label_coverage(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> pd.DataFrame:
    """Per run: its queries, how many have a relevant label (scored), and how many are left out
    (no label, or only non-relevant ones)."""
    cur = con.cursor()
    try:
        cur.register("_q_runs", pd.DataFrame({"run_id": pd.Series(list(runs), dtype="string")}))
        return cur.execute(
            """WITH judged AS (
                   SELECT query_id, bool_or(relevance > 0 AND starts_with(doc_id, 'text:')) AS by_text
                   FROM qrels GROUP BY query_id HAVING max(relevance) > 0
               ),
               scored AS (
                   SELECT r.run_id, r.query_id,
                          j.query_id IS NOT NULL AND (j.by_text OR NOT list_contains(?, r.run_id)) AS ok
                   FROM records r JOIN _q_runs USING (run_id) LEFT JOIN judged j USING (query_id)
               )
               SELECT run_id, count(*) AS queries, count(*) FILTER (ok) AS labelled,
                      count(*) FILTER (ok IS NOT TRUE) AS unlabelled
               FROM scored GROUP BY run_id ORDER BY run_id""",
            [text_id_runs(con)],
        ).df()
    finally:
        cur.close()

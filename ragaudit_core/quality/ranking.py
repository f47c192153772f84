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
labelled query the run answered with no evidence scores 0 (a miss). Reference implementation:
:mod:`.reference` (pure Python); the tests check both against ``pytrec_eval``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import duckdb
import pandas as pd

__all__ = ["DEFAULT_CUTOFFS", "DEPTH_METRICS", "label_coverage", "metric_names", "per_query_quality"]

DEFAULT_CUTOFFS = (5, 10, 20)
CUT_METRICS = ("ndcg", "recall", "precision", "hit")
DEPTH_METRICS = ("mrr", "map", "ndcg", "recall")


def metric_names(cutoffs: Sequence[int] = DEFAULT_CUTOFFS) -> list[str]:
    """Metric keys in display order: ``ndcg@10, recall@10, …`` per cut-off, then ``mrr``, ``map``,
    ``ndcg`` and ``recall`` at the list's depth."""
    return [f"{m}@{k}" for k in cutoffs for m in CUT_METRICS] + list(DEPTH_METRICS)


_SQL = """
WITH lab AS (
    SELECT l.query_id, coalesce(m.canonical, l.doc_id) AS doc_id, max(l.relevance) AS rel
    FROM qrels l LEFT JOIN _q_map m ON m.raw = l.doc_id
    GROUP BY ALL
),
judged AS (
    SELECT query_id, count(*) FILTER (WHERE rel > 0) AS n_rel FROM lab GROUP BY query_id HAVING n_rel > 0
),
ideal AS (
    SELECT query_id, rel, row_number() OVER (PARTITION BY query_id ORDER BY rel DESC, doc_id) AS i
    FROM lab WHERE rel > 0
),
rec AS (
    SELECT r.run_id, r.query_id, j.n_rel
    FROM records r JOIN _q_runs USING (run_id) JOIN judged j USING (query_id)
),
docs AS (
    SELECT e.run_id, e.query_id, coalesce(m.canonical, e.doc_id) AS doc_id, min(e.position) AS pos
    FROM evidence e SEMI JOIN rec ON rec.run_id = e.run_id AND rec.query_id = e.query_id
    LEFT JOIN _q_map m ON m.raw = e.doc_id
    GROUP BY ALL
),
ranked AS (
    SELECT d.run_id, d.query_id,
           row_number() OVER (PARTITION BY d.run_id, d.query_id ORDER BY d.pos) AS rnk,
           greatest(coalesce(l.rel, 0), 0) AS rel
    FROM docs d LEFT JOIN lab l ON l.query_id = d.query_id AND l.doc_id = d.doc_id
),
scored AS (
    SELECT *, sum((rel > 0)::INTEGER) OVER (PARTITION BY run_id, query_id ORDER BY rnk) AS cum_hits
    FROM ranked
),
cuts AS (
    SELECT rec.run_id, rec.query_id, rec.n_rel, k.k,
           coalesce(sum(s.rel / log2(s.rnk + 1)) FILTER (WHERE s.rnk <= k.k), 0) AS dcg,
           count(*) FILTER (WHERE s.rnk <= k.k AND s.rel > 0) AS hits
    FROM rec CROSS JOIN _q_cuts k
    LEFT JOIN scored s ON s.run_id = rec.run_id AND s.query_id = rec.query_id
    GROUP BY rec.run_id, rec.query_id, rec.n_rel, k.k
),
idcg AS (
    SELECT i.query_id, k.k, sum(i.rel / log2(i.i + 1)) FILTER (WHERE i.i <= k.k) AS idcg
    FROM ideal i CROSS JOIN _q_cuts k GROUP BY i.query_id, k.k
),
depth AS (
    SELECT rec.run_id, rec.query_id, rec.n_rel,
           coalesce(1.0 / min(s.rnk) FILTER (WHERE s.rel > 0), 0) AS mrr,
           coalesce(sum(s.cum_hits / s.rnk) FILTER (WHERE s.rel > 0), 0) / rec.n_rel AS map,
           coalesce(sum(s.rel / log2(s.rnk + 1)), 0) AS dcg,
           count(*) FILTER (WHERE s.rel > 0) AS hits
    FROM rec LEFT JOIN scored s ON s.run_id = rec.run_id AND s.query_id = rec.query_id
    GROUP BY rec.run_id, rec.query_id, rec.n_rel
),
full_idcg AS (
    SELECT query_id, sum(rel / log2(i + 1)) AS idcg FROM ideal GROUP BY query_id
)
SELECT 'cut' AS part, c.run_id, c.query_id, c.k, c.dcg / g.idcg AS ndcg, c.hits / c.n_rel AS recall,
       c.hits / c.k AS precision, (c.hits > 0)::DOUBLE AS hit, NULL::DOUBLE AS mrr, NULL::DOUBLE AS map
FROM cuts c JOIN idcg g ON g.query_id = c.query_id AND g.k = c.k
UNION ALL
SELECT 'depth', d.run_id, d.query_id, NULL, d.dcg / f.idcg, d.hits / d.n_rel, NULL, NULL, d.mrr, d.map
FROM depth d JOIN full_idcg f USING (query_id)
"""


def per_query_quality(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str],
    cutoffs: Sequence[int] = DEFAULT_CUTOFFS,
    docid_map: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per (run, labelled query the run has) with a column per metric
    (:func:`metric_names`), ordered by run and query. Empty (with the columns) when nothing is
    labelled. ``docid_map`` (raw → canonical) applies to evidence and labels alike."""
    ks = sorted({int(k) for k in cutoffs})
    if any(k < 1 for k in ks):
        raise ValueError("cut-offs must be at least 1")
    cols = ["run_id", "query_id", *metric_names(ks)]
    cur = con.cursor()
    try:
        cur.register("_q_runs", pd.DataFrame({"run_id": pd.Series(list(runs), dtype="string")}))
        cur.register("_q_cuts", pd.DataFrame({"k": pd.Series(ks, dtype="int64")}))
        dm = dict(docid_map or {})
        cur.register(
            "_q_map",
            pd.DataFrame(
                {"raw": pd.Series(list(dm), dtype="string"), "canonical": pd.Series(list(dm.values()), dtype="string")}
            ),
        )
        long = cur.execute(_SQL).df()
    finally:
        cur.close()
    if long.empty:
        return pd.DataFrame(columns=cols)
    cut = long[long["part"] == "cut"].pivot_table(
        index=["run_id", "query_id"], columns="k", values=list(CUT_METRICS), aggfunc="first"
    )
    cut.columns = [f"{m}@{int(k)}" for m, k in cut.columns]
    depth = long[long["part"] == "depth"].set_index(["run_id", "query_id"])[list(DEPTH_METRICS)]
    wide = cut.join(depth, how="outer").reset_index()
    for c in cols:
        if c not in wide:
            wide[c] = float("nan")
    return wide[cols].sort_values(["run_id", "query_id"], kind="stable").reset_index(drop=True)


def label_coverage(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> pd.DataFrame:
    """Per run: its queries, how many have a relevant label (scored), and how many are left out
    (no label, or only non-relevant ones)."""
    cur = con.cursor()
    try:
        cur.register("_q_runs", pd.DataFrame({"run_id": pd.Series(list(runs), dtype="string")}))
        return cur.execute(
            """WITH judged AS (SELECT query_id FROM qrels GROUP BY query_id HAVING max(relevance) > 0)
               SELECT r.run_id, count(*) AS queries,
                      count(j.query_id) AS labelled,
                      count(*) - count(j.query_id) AS unlabelled
               FROM records r JOIN _q_runs USING (run_id) LEFT JOIN judged j USING (query_id)
               GROUP BY r.run_id ORDER BY r.run_id"""
        ).df()
    finally:
        cur.close()

"""The SQL of the stability metrics (seed 000, §3), over the views :func:`metrics._compute`
registers: ``_sel_runs`` (run → ri), ``_eval_q`` (query → qi), ``_chunk_q`` (the queries of one
chunk), ``_span_runs``, ``_pair_levels`` (level, run_a, run_b, ra, rb) and ``_map`` (raw →
canonical document id).

The cells are built one chunk of queries at a time by :mod:`.cells` (every metric is per query,
so a chunk is independent): ``_cells_part`` of each chunk is appended to ``_cells``, the
per-(run, query) sizes to ``_sizes_all`` and the entry counts to ``_evn``. A chunk stays within
DuckDB's memory, so the work grows linearly with the queries instead of spilling.

``MASKS_SQL`` gives :mod:`.cells` each item's runs as a bitmask (up to 64 runs); beyond,
``CELLS_SQL`` (or ``KEYED_CELLS_SQL``) builds ``_cells`` by the items' self-join: one row per
(level, pair, query) with the two sets' sizes, their intersection and ``J`` (both empty → 1.0).
The other statements aggregate the cells per pair, per query (over ``_qworst``, :mod:`.worst`)
and per run, "same documents, different spans" coming from ``_sdds`` (:mod:`.joint`). Kept apart so the
metric definitions read as one page. Inside a chunk the level is the integer ``lv`` (0 doc,
1 span): the items' self-join and the cells' joins compare one byte instead of a string (1.10 →
0.95 s for the cells of 1M entries in 12 runs).
"""

__all__ = [
    "CELLS_SQL",
    "EV_KEYED_SQL",
    "EV_MAPPED_SQL",
    "KEYED_CELLS_SQL",
    "MASKS_SQL",
    "PAIRS_SQL",
    "QUERIES_SQL",
    "RUNS_SQL",
]

_EV_SQL = """
CREATE OR REPLACE TEMP TABLE _ev AS
SELECT r.ri, q.qi, {doc} AS doc_id, {span} AS span_hash
FROM evidence e
JOIN _sel_runs r ON r.run_id = e.run_id
JOIN _chunk_q q ON q.query_id = e.query_id
{map_join}
WHERE e.position < ?;
"""

_ITEMS_KEYED_SQL = """
CREATE OR REPLACE TEMP TABLE _items AS
SELECT DISTINCT 0::UTINYINT AS lv, ri, qi, doc_id AS k1, 0::UBIGINT AS k2 FROM _ev
UNION ALL
SELECT DISTINCT 1::UTINYINT AS lv, e.ri, e.qi, e.doc_id AS k1, e.span_hash AS k2
FROM _ev e JOIN _span_runs s ON s.ri = e.ri;
"""

_ITEMS_RANKED_SQL = """
CREATE OR REPLACE TEMP TABLE _items AS
WITH keyed AS (
  SELECT DISTINCT 0::UTINYINT AS lv, ri, qi, doc_id, '' AS span FROM _ev
  UNION ALL
  SELECT DISTINCT 1::UTINYINT AS lv, e.ri, e.qi, e.doc_id, e.span_hash AS span
  FROM _ev e JOIN _span_runs s ON s.ri = e.ri)
SELECT lv, ri, qi, dense_rank() OVER (PARTITION BY lv, qi ORDER BY doc_id, span) AS k1, 0 AS k2 FROM keyed;
"""

_CELLS_TAIL_SQL = """
CREATE OR REPLACE TEMP TABLE _sizes AS
SELECT lv, CASE lv WHEN 0 THEN 'doc' ELSE 'span' END AS level, ri, qi, n
FROM (SELECT lv, ri, qi, count(*) AS n FROM _items GROUP BY lv, ri, qi);

CREATE OR REPLACE TEMP TABLE _inter AS
WITH pl AS (SELECT (level = 'span')::UTINYINT AS lv, ra, rb, least(ra, rb) AS r1, greatest(ra, rb) AS r2
            FROM _pair_levels),
x AS (  -- each unordered pair once (the intersection is symmetric): half the join of both orders
  SELECT a.lv, a.ri AS r1, b.ri AS r2, a.qi, count(*) AS n
  FROM _items a
  JOIN _items b ON b.lv = a.lv AND b.qi = a.qi AND b.k1 = a.k1 AND b.k2 = a.k2 AND b.ri > a.ri
  WHERE EXISTS (SELECT 1 FROM pl WHERE pl.lv = a.lv AND pl.r1 = a.ri AND pl.r2 = b.ri)
  GROUP BY a.lv, a.ri, b.ri, a.qi)
SELECT pl.lv, pl.ra, pl.rb, x.qi, x.n AS n_inter
FROM x JOIN pl ON pl.lv = x.lv AND pl.r1 = x.r1 AND pl.r2 = x.r2;

CREATE OR REPLACE TEMP TABLE _cells_part AS
WITH p AS (SELECT level, (level = 'span')::UTINYINT AS lv, ra, rb FROM _pair_levels)
SELECT p.level, p.ra, p.rb, q.qi,
       coalesce(sa.n, 0) AS n_a, coalesce(sb.n, 0) AS n_b, coalesce(i.n_inter, 0) AS n_inter,
       CASE WHEN coalesce(sa.n, 0) + coalesce(sb.n, 0) = 0 THEN 1.0
            ELSE coalesce(i.n_inter, 0) * 1.0 / (coalesce(sa.n, 0) + coalesce(sb.n, 0) - coalesce(i.n_inter, 0))
       END AS j
FROM p
CROSS JOIN _chunk_q q
LEFT JOIN _sizes sa ON sa.lv = p.lv AND sa.ri = p.ra AND sa.qi = q.qi
LEFT JOIN _sizes sb ON sb.lv = p.lv AND sb.ri = p.rb AND sb.qi = q.qi
LEFT JOIN _inter i ON i.lv = p.lv AND i.ra = p.ra AND i.rb = p.rb AND i.qi = q.qi;
"""

EV_MAPPED_SQL = _EV_SQL.format(
    doc="coalesce(m.canonical, e.doc_id)", span="e.span_hash", map_join="LEFT JOIN _map m ON m.raw = e.doc_id"
)
"""A chunk's entries with (canonical) ids: ``_ev`` (ri, qi, doc_id, span_hash)."""
EV_KEYED_SQL = _EV_SQL.format(doc="hash(e.doc_id)", span="hash(e.span_hash)", map_join="")
"""A chunk's entries with ids keyed by DuckDB's 64-bit ``hash`` (see :data:`KEYED_CELLS_SQL`)."""

MASKS_SQL = """
CREATE OR REPLACE TEMP TABLE _mcount AS
WITH m AS (
  SELECT 0::UTINYINT AS lv, qi, bit_or(1::UBIGINT << ri::UBIGINT) AS mask FROM _ev GROUP BY qi, doc_id
  UNION ALL
  SELECT 1::UTINYINT AS lv, e.qi, bit_or(1::UBIGINT << e.ri::UBIGINT) AS mask
  FROM _ev e JOIN _span_runs s ON s.ri = e.ri GROUP BY e.qi, e.doc_id, e.span_hash)
SELECT lv, qi, mask, count(*) AS n FROM m GROUP BY ALL;
"""
"""Each item's runs as a bitmask (bit ``ri``), and ``_mcount``: the items of each (level, query,
mask) — the input of :mod:`.cells`' run-mask cells (up to 64 runs)."""

CELLS_SQL = EV_MAPPED_SQL + _ITEMS_RANKED_SQL + _CELLS_TAIL_SQL
"""The cells with items numbered per query by ``dense_rank`` over the (canonical) document ids and
span hashes: exact whatever the ids, and what a document-id map needs."""

KEYED_CELLS_SQL = EV_KEYED_SQL + _ITEMS_KEYED_SQL + _CELLS_TAIL_SQL
"""The same cells with items keyed by DuckDB's 64-bit ``hash`` of the document id and of the span
hash instead of ranked (no sort of the ids within each query: 24.7 s → 3.5 s for the items at 10M
entries). Used only where :func:`ragaudit_core.logs.catalog.hash_keys_unique` has verified, for
the stored data and this DuckDB version, that no two distinct ids share a hash — so the counts,
and every metric, are those of the exact path."""


PAIRS_SQL = """
WITH agg AS (
  SELECT level, ra, rb, count(*) AS n_queries, avg(j) AS j_avg,
         avg(CASE WHEN j < ? THEN 1.0 ELSE 0.0 END) AS flip_rate,
         avg(CASE WHEN n_a = 0 THEN 1.0 ELSE 0.0 END) AS null_rate_a,
         avg(CASE WHEN n_b = 0 THEN 1.0 ELSE 0.0 END) AS null_rate_b,
         avg(CASE WHEN n_a > 0 AND n_b = 0 THEN 1.0 ELSE 0.0 END) AS null_loss,
         avg(CASE WHEN n_a = 0 AND n_b > 0 THEN 1.0 ELSE 0.0 END) AS null_gain,
         avg(CASE WHEN n_a > 0 AND n_b > 0 AND n_inter = 0 THEN 1.0 ELSE 0.0 END) AS collapse_rate
  FROM _cells GROUP BY level, ra, rb)
SELECT agg.level, pl.run_a, pl.run_b, agg.n_queries, agg.j_avg, agg.flip_rate, agg.null_rate_a, agg.null_rate_b,
       agg.null_loss, agg.null_gain, agg.collapse_rate,
       CASE WHEN agg.level = 'span' THEN sdds.n END AS same_docs_diff_spans
FROM agg JOIN _pair_levels pl ON pl.level = agg.level AND pl.ra = agg.ra AND pl.rb = agg.rb
LEFT JOIN _sdds sdds ON sdds.ra = agg.ra AND sdds.rb = agg.rb
ORDER BY agg.level, pl.run_a, pl.run_b
"""

QUERIES_SQL = """
SELECT g.level, q.query_id, g.j AS j_min, pl.run_a || ' vs ' || pl.run_b AS worst_pair, pl.run_a, pl.run_b,
       g.collapsed, g.flipped
FROM _qworst g JOIN _eval_q q ON q.qi = g.qi
JOIN _pair_levels pl ON pl.level = g.level AND pl.ra = g.ra AND pl.rb = g.rb
ORDER BY g.level, j_min, q.query_id
"""
"""Per (level, query) the worst pair (lowest J; ties: run ids in order), collapse and flip, from
``_qworst`` (:mod:`.worst`). Run indices follow the runs' sorted order (``_sel_runs``), so the
tie-break on (ra, rb) is the tie-break on the run ids."""

RUNS_SQL = """
WITH grid AS (
  SELECT r.run_id, coalesce(n.n, 0) AS n, coalesce(d.n, 0) AS nd
  FROM _sel_runs r CROSS JOIN _eval_q q
  LEFT JOIN _evn n ON n.ri = r.ri AND n.qi = q.qi
  LEFT JOIN _sizes_all d ON d.level = 'doc' AND d.ri = r.ri AND d.qi = q.qi)
SELECT run_id, count(*) AS n_queries,
       avg(CASE WHEN n > 0 THEN 1.0 ELSE 0.0 END) AS citation_rate,
       avg(CASE WHEN n = 0 THEN 1.0 ELSE 0.0 END) AS null_rate,
       avg(n) AS mean_evidence,
       quantile_cont(n, 0.5) AS median_evidence,
       quantile_cont(n, 0.95) AS p95_evidence,
       avg(nd) AS mean_docs
FROM grid GROUP BY run_id ORDER BY run_id
"""

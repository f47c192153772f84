"""Does jitter cost quality? The change in ranking quality set against the change in evidence.

For a run pair ``(a, b)`` and each labelled query both runs have:

* ``j`` — the pair's Jaccard of the query at span level (document level when a run carries no
  spans), from :func:`ragaudit_core.stability.compare_runs` (seed 000, eq. 1);
* ``delta`` — ``nDCG@k(b) − nDCG@k(a)`` (:mod:`.ranking`);
* Spearman's ρ between ``j`` and ``delta`` (average ranks for ties; Pearson on the ranks) with
  its 95 % percentile bootstrap interval over the queries. ρ > 0 reads "the more the evidence
  changed, the more quality dropped"; ρ is undefined (NaN) when either side is constant.

Each **collapsed** query (``J_span = 0`` with both lists non-empty: the exact spans all changed)
is then split by what happened to its relevant documents — the documents with a relevant label
that run ``a`` retrieved (at document level, the whole list):

* ``relevant kept`` — every one of them is still retrieved by ``b`` (the evidence changed, the
  answerable documents did not);
* ``relevant lost`` — at least one is no longer retrieved by ``b``;
* ``nothing relevant to lose`` — ``a`` retrieved no relevant document;
* ``unlabelled`` — the query has no relevant label (not classified).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED, Estimate
from ragaudit_core.quality.ranking import per_query_quality
from ragaudit_core.stability.compare import CompareResult

__all__ = ["OUTCOMES", "JitterCost", "jitter_cost", "spearman"]

OUTCOMES = ("relevant kept", "relevant lost", "nothing relevant to lose", "unlabelled")


@dataclass
class JitterCost:
    run_a: str
    run_b: str
    k: int
    level: str  # the level j is read at: "span", or "doc" when a run has no spans
    queries: pd.DataFrame  # query_id, j, ndcg_a, ndcg_b, delta, collapsed, relevant_a, relevant_kept, outcome
    rho: Estimate
    collapsed: dict[str, int] = field(default_factory=dict)  # outcome → collapsed queries

    @property
    def n_labelled(self) -> int:
        return int(self.queries["delta"].notna().sum())

    def to_json(self) -> dict[str, object]:
        return {
            "run_a": self.run_a,
            "run_b": self.run_b,
            "k": self.k,
            "level": self.level,
            "n_labelled": self.n_labelled,
            "spearman": {
                "rho": _num(self.rho.value),
                "ci": [_num(self.rho.lo), _num(self.rho.hi)],
                "n": self.rho.n,
            },
            "collapsed": dict(self.collapsed),
        }


def _num(v: float) -> float | None:
    return None if v != v else float(v)


def _avg_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share their mean rank)."""
    return pd.DataFrame(np.atleast_2d(x)).rank(axis=1, method="average").to_numpy()


def spearman(x: np.ndarray, y: np.ndarray, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Estimate:
    """Spearman's ρ of paired values with a percentile bootstrap interval over the pairs
    (resamples where either side is constant are left out of the interval)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    n = x.size

    def rho(rx: np.ndarray, ry: np.ndarray) -> np.ndarray:
        rx = rx - rx.mean(axis=1, keepdims=True)
        ry = ry - ry.mean(axis=1, keepdims=True)
        den = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, (rx * ry).sum(axis=1) / den, np.nan)

    if n < 3:
        return Estimate(np.nan, np.nan, np.nan, n)
    value = float(rho(_avg_ranks(x), _avg_ranks(y))[0])
    rng = np.random.default_rng(seed)
    reps: list[np.ndarray] = []
    block = max(1, 2_000_000 // n)
    done = 0
    while done < resamples:
        b = min(block, resamples - done)
        idx = rng.integers(0, n, size=(b, n))
        reps.append(rho(_avg_ranks(x[idx]), _avg_ranks(y[idx])))
        done += b
    r = np.concatenate(reps) if reps else np.array([])
    r = r[~np.isnan(r)]
    if r.size == 0:
        return Estimate(value, np.nan, np.nan, n)
    lo, hi = np.quantile(r, [0.025, 0.975])
    return Estimate(value, float(lo), float(hi), n)


_RELEVANT_SQL = """
WITH rel AS (SELECT query_id, doc_id FROM qrels WHERE relevance > 0),
got AS (
    SELECT DISTINCT e.run_id, e.query_id, e.doc_id
    FROM evidence e JOIN rel ON rel.query_id = e.query_id AND rel.doc_id = e.doc_id
    WHERE e.run_id IN (?, ?)
)
SELECT q.query_id,
       count(DISTINCT a.doc_id) AS relevant_a,
       count(DISTINCT a.doc_id) FILTER (WHERE b.doc_id IS NOT NULL) AS relevant_kept
FROM (SELECT DISTINCT query_id FROM rel) q
LEFT JOIN got a ON a.query_id = q.query_id AND a.run_id = ?
LEFT JOIN got b ON b.query_id = q.query_id AND b.run_id = ? AND b.doc_id = a.doc_id
GROUP BY q.query_id
"""


def jitter_cost(
    con: duckdb.DuckDBPyConnection,
    compare: CompareResult,
    *,
    k: int = 10,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    docid_map: dict[str, str] | None = None,
) -> JitterCost:
    """The quality side of ``compare`` (baseline ``a`` → candidate ``b``) at nDCG@``k`` (document ids
    through ``docid_map`` when given, as ``compare`` took them)."""
    a, b = compare.baseline, compare.candidate
    q = compare.queries[["query_id", "j_doc", "j_span", "collapsed"]].copy()
    level = compare.summary.level
    q["j"] = pd.to_numeric(q["j_span"] if level == "span" else q["j_doc"], errors="coerce")
    pq = per_query_quality(con, [a, b], cutoffs=(k,), docid_map=docid_map)
    key = f"ndcg@{k}"
    wide = pq.pivot(index="query_id", columns="run_id", values=key) if not pq.empty else pd.DataFrame()
    q["ndcg_a"] = q["query_id"].map(wide[a]) if a in wide else np.nan
    q["ndcg_b"] = q["query_id"].map(wide[b]) if b in wide else np.nan
    q["delta"] = q["ndcg_b"] - q["ndcg_a"]
    cur = con.cursor()
    try:
        rel = cur.execute(_RELEVANT_SQL, [a, b, a, b]).df().set_index("query_id")
    finally:
        cur.close()
    q["relevant_a"] = q["query_id"].map(rel["relevant_a"]).astype("Int64")
    q["relevant_kept"] = q["query_id"].map(rel["relevant_kept"]).astype("Int64")
    q["outcome"] = None
    coll = q["collapsed"].astype(bool)
    labelled = q["relevant_a"].notna()
    q.loc[coll & ~labelled, "outcome"] = "unlabelled"
    q.loc[coll & labelled & (q["relevant_a"] == 0), "outcome"] = "nothing relevant to lose"
    q.loc[coll & labelled & (q["relevant_a"] > 0) & (q["relevant_kept"] == q["relevant_a"]), "outcome"] = (
        "relevant kept"
    )
    q.loc[coll & labelled & (q["relevant_kept"] < q["relevant_a"]), "outcome"] = "relevant lost"
    rho = spearman(q["j"].to_numpy(float), q["delta"].to_numpy(float), resamples=resamples, seed=seed)
    counts = {o: int((q["outcome"] == o).sum()) for o in OUTCOMES}
    cols = ["query_id", "j", "ndcg_a", "ndcg_b", "delta", "collapsed", "relevant_a", "relevant_kept", "outcome"]
    return JitterCost(a, b, k, level, q[cols].reset_index(drop=True), rho, counts)

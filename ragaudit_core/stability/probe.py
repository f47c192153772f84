"""The exploratory evidence–answer probe (seed 000, §3 and appendix C, Table 1).

For two runs A and B and the queries where both logged an answer:

* answer similarity ``Sim(q)`` = cosine of the SBERT embeddings of the two answers
  (the same all-MiniLM-L6-v2 as the harness, normalised mean pooling);
* drift at threshold t = the queries with ``Sim < t`` (t = 0.9 and 0.8), reported as a
  count (as Table 1's "Drift" column) and as a rate (appendix C's "proportion");
* ρ = Spearman rank correlation between per-query ``J_span`` and ``Sim`` (ties get
  average ranks); undefined (None) when either side is constant or fewer than 3 queries;
* the Table 1 row: pair, data, mean ``J_span``, mean Sim, Drift (< 0.9), ρ.

"Silent jitter" marks queries whose evidence changed (``J_span < τ``) while the answer
stayed (``Sim ≥ 0.9``).

Similarity is a pure function of the two answer texts, so :func:`answer_similarity`
takes any encoder with the sentence-transformers ``encode`` signature.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_replicates, percentile_intervals
from ragaudit_core.logs.writer import arrow_schema, rows_table
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability

__all__ = [
    "DEFAULT_SIMILARITY_MODEL",
    "ProbeResult",
    "answer_similarity",
    "has_answers",
    "lookup_similarities",
    "probe_intervals",
    "probe_pair",
    "spearman",
    "stored_similarities",
    "summarise_probe",
]

DEFAULT_SIMILARITY_MODEL = "all-MiniLM-L6-v2"
log = logging.getLogger(__name__)


def has_answers(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> int:
    """How many queries have an answer logged in both runs."""
    cur = con.cursor()
    try:
        return cur.execute(
            """SELECT count(*) FROM records a JOIN records b ON a.query_id = b.query_id
               WHERE a.run_id = ? AND b.run_id = ? AND a.answer IS NOT NULL AND b.answer IS NOT NULL""",
            [run_a, run_b],
        ).fetchall()[0][0]
    finally:
        cur.close()


def answer_similarity(encoder: Any, answers_a: Sequence[str], answers_b: Sequence[str]) -> np.ndarray:
    """Cosine similarity of each pair of answers (``encoder.encode`` with normalisation)."""
    if len(answers_a) != len(answers_b):
        raise ValueError("answer lists differ in length")
    if not answers_a:
        return np.zeros(0)
    ea = encoder.encode(list(answers_a), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    eb = encoder.encode(list(answers_b), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return np.clip(np.sum(ea * eb, axis=1), -1.0, 1.0)


def spearman(x: ArrayLike, y: ArrayLike) -> float | None:
    """Spearman's ρ with average ranks for ties; None when undefined."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xa) < 3:
        return None
    from scipy.stats import spearmanr

    if np.all(xa == xa[0]) or np.all(ya == ya[0]):
        return None
    rho = spearmanr(xa, ya).statistic
    return None if rho is None or math.isnan(rho) else float(rho)


@dataclass
class ProbeResult:
    run_a: str
    run_b: str
    rows: pd.DataFrame  # query_id, j_doc, j_span, sim, silent_jitter
    summary: dict


def summarise_probe(
    j_span: ArrayLike, sim: ArrayLike, *, thresholds: Sequence[float] = (0.9, 0.8), tau: float = FLIP_THRESHOLD
) -> dict:
    """Table-1 figures from per-query ``J_span`` and answer similarity, and under ``intervals``
    their 95 % bootstrap intervals (:func:`probe_intervals`)."""
    js, sm = np.asarray(j_span, dtype=float), np.asarray(sim, dtype=float)
    n = len(sm)
    out: dict[str, Any] = {
        "n_queries": n,
        "mean_j_span": float(js.mean()) if n else None,
        "mean_sim": float(sm.mean()) if n else None,
        "spearman_rho": spearman(js, sm),
        "silent_jitter": int(np.sum((js < tau) & (sm >= 0.9))),
    }
    for t in thresholds:
        cnt = int(np.sum(sm < t))
        out[f"drift_{t}"] = cnt
        out[f"drift_rate_{t}"] = cnt / n if n else None
    out["intervals"] = probe_intervals(js, sm, thresholds=thresholds)
    return out


def probe_intervals(
    js: np.ndarray, sm: np.ndarray, *, thresholds: Sequence[float] = (0.9, 0.8), resamples: int = DEFAULT_RESAMPLES
) -> dict[str, list[float | None]]:
    """95 % percentile-bootstrap intervals over the answered queries (:mod:`ragaudit_core.intervals`,
    seed 0) of mean ``J_span``, mean Sim, each drift rate and Spearman's ρ — ρ recomputed on each
    resample's queries (a resample where either side is constant gives no replicate). Empty with
    fewer than 2 queries; ρ's bounds None where it is undefined on the queries themselves."""
    n = len(sm)
    if n < 2:
        return {}
    cols = np.column_stack([js, sm, *((sm < t).astype(float) for t in thresholds)])
    means, _counts, reps = bootstrap_replicates(cols, resamples=resamples, seed=DEFAULT_SEED)
    lo, hi = percentile_intervals(reps, points=means)
    names = ["mean_j_span", "mean_sim", *(f"drift_rate_{t}" for t in thresholds)]
    out: dict[str, list[float | None]] = {k: [float(lo[i]), float(hi[i])] for i, k in enumerate(names)}
    if spearman(js, sm) is not None:
        rng = np.random.default_rng(DEFAULT_SEED)
        block = max(1, min(resamples, 2_000_000 // n))  # about 16 MB of ranks a block, whatever n
        rho = np.concatenate(
            [
                _rho_rows(js[idx], sm[idx])
                for start in range(0, resamples, block)
                for idx in [rng.integers(0, n, size=(min(block, resamples - start), n))]
            ]
        )
        rlo, rhi = percentile_intervals(rho[:, None])
        out["spearman_rho"] = [None if rlo[0] != rlo[0] else float(rlo[0]), None if rhi[0] != rhi[0] else float(rhi[0])]
    return out


def _rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row pair (resamples × queries) as Pearson's r of average ranks; NaN
    where either row is constant."""
    from scipy.stats import rankdata

    rx = rankdata(x, axis=1) - (x.shape[1] + 1) / 2
    ry = rankdata(y, axis=1) - (y.shape[1] + 1) / 2
    den = np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=1) / den, np.nan)


def lookup_similarities(
    con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, *, model: str = DEFAULT_SIMILARITY_MODEL
) -> dict[str, float]:
    """The answer similarities already stored for a pair, by query id (computes nothing)."""
    cur = con.cursor()
    try:
        return dict(
            cur.execute(
                """SELECT query_id, sim FROM derived_answer_similarity
                                   WHERE run_a = ? AND run_b = ? AND model = ?""",
                [run_a, run_b, model],
            ).fetchall()
        )
    finally:
        cur.close()


def stored_similarities(
    con: duckdb.DuckDBPyConnection,
    run_a: str,
    run_b: str,
    query_ids: Sequence[str],
    answers_a: Sequence[str],
    answers_b: Sequence[str],
    encoder: Any,
    *,
    model: str = DEFAULT_SIMILARITY_MODEL,
) -> np.ndarray:
    """Answer similarities for the given queries, computed once and kept in the database.

    A (run, query) record never changes once ingested, so a similarity stored for
    (run_a, run_b, query, model) stays valid until the data is cleared. ``encoder`` is
    an encoder or a zero-argument callable returning one; it is called only when some
    similarity is missing, so a dashboard that revisits a pair loads no model.
    """
    cur = con.cursor()
    try:
        known = lookup_similarities(cur, run_a, run_b, model=model)
        todo = [i for i, q in enumerate(query_ids) if q not in known]
        if todo:
            enc = encoder if hasattr(encoder, "encode") else encoder()
            sims = answer_similarity(enc, [answers_a[i] for i in todo], [answers_b[i] for i in todo])
            rows = [(run_a, run_b, query_ids[i], model, float(v)) for i, v in zip(todo, sims)]
            _store_similarities(cur, rows)
            known.update({r[2]: r[4] for r in rows})
        return np.array([known[q] for q in query_ids], dtype=float)
    finally:
        cur.close()


def _store_similarities(cur: duckdb.DuckDBPyConnection, rows: list[tuple[str, str, str, str, float]]) -> None:
    """Keep computed similarities (one per query of the pair), through Arrow: ``executemany`` binds
    0.26 ms a row (2.6 s for 10,000 queries). A database opened read-only (or one whose folder may not
    be written) keeps nothing: the similarities are still right, only computed again next time."""
    cur.register("_sims", rows_table(rows, _SIM_SCHEMA))
    try:
        cur.execute("INSERT OR REPLACE INTO derived_answer_similarity SELECT * FROM _sims")
    except duckdb.Error as e:
        log.debug("answer similarities not stored: %s", e)
    finally:
        cur.unregister("_sims")


_SIM_SCHEMA = arrow_schema("derived_answer_similarity")


def probe_pair(
    con: duckdb.DuckDBPyConnection,
    run_a: str,
    run_b: str,
    encoder: Any,
    *,
    tau: float = FLIP_THRESHOLD,
    dataset: str | None = None,
    model: str = DEFAULT_SIMILARITY_MODEL,
) -> ProbeResult:
    """The probe for one run pair, over the queries where both runs logged an answer.

    ``encoder``: an encoder with the sentence-transformers ``encode`` signature, or a
    zero-argument callable that loads one (called only if a similarity is not stored yet).
    """
    st = compute_stability(
        con, StabilityOptions(pairs=[(run_a, run_b)], allow_missing=True, flip_threshold=tau), keep_cells=True
    )
    assert st.cells is not None  # keep_cells=True
    cells = st.cells.pivot_table(index="query_id", columns="level", values="j").reset_index()
    cur = con.cursor()
    try:
        ans = cur.execute(
            """SELECT a.query_id, a.answer AS answer_a, b.answer AS answer_b
               FROM records a JOIN records b ON a.query_id = b.query_id
               WHERE a.run_id = ? AND b.run_id = ? AND a.answer IS NOT NULL AND b.answer IS NOT NULL
               ORDER BY a.query_id""",
            [run_a, run_b],
        ).df()
    finally:
        cur.close()
    rows = ans.merge(cells, on="query_id", how="inner")
    rows = rows.rename(columns={"doc": "j_doc", "span": "j_span"})
    if "j_span" not in rows:
        rows["j_span"] = np.nan
    rows["sim"] = stored_similarities(
        con,
        run_a,
        run_b,
        rows["query_id"].tolist(),
        rows["answer_a"].tolist(),
        rows["answer_b"].tolist(),
        encoder,
        model=model,
    )
    rows["silent_jitter"] = (rows["j_span"] < tau) & (rows["sim"] >= 0.9)
    span_ok = bool(len(rows)) and rows["j_span"].notna().all()
    summary = summarise_probe(
        rows["j_span"].to_numpy() if span_ok else np.zeros(len(rows)), rows["sim"].to_numpy(), tau=tau
    )
    if len(rows) and not span_ok:  # doc-only logs: no span figures (nor their intervals), never 0
        for key in ("mean_j_span", "spearman_rho"):
            summary["intervals"].pop(key, None)
        summary.update(
            {
                "mean_j_span": None,
                "spearman_rho": None,
                "silent_jitter": None,
                "note": "span information unavailable for this pair",
            }
        )
    summary.update({"pair": f"{run_a} vs {run_b}", "data": dataset, "run_a": run_a, "run_b": run_b})
    return ProbeResult(
        run_a, run_b, rows[["query_id", "j_doc", "j_span", "sim", "silent_jitter", "answer_a", "answer_b"]], summary
    )

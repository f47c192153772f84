"""RAG-E end to end for one logged query (seed 001): retriever saliency, generator
document attributions, alignment — stored in DuckDB so a repeated request is free.

``explain_query`` takes the query and its first ``max_docs`` evidence texts from a run's
log (in logged = retriever order), then

1. IG token saliency (:mod:`saliency`) for each document against the query and for the
   query against each document;
2. the answer generated once with all documents, and Shapley values of every document
   for every answer token (:mod:`generator_game`, :mod:`shapley`) — for the documents in
   retriever order ("original") and, with ``shuffle``, in a seeded random order
   ("shuffled"; the attribution is mapped back to the documents);
3. the generator ranking (eq. 11) of the retrieved items by position (the same document
   may be retrieved as several chunks, so items are positions, with their doc ids beside),
   WARG(p) over a sweep of p (truncated, eq. 12, and extrapolated), Spearman between
   retriever rank and importance, and the two failure modes (:mod:`alignment`).

Results are keyed by (run, query, retriever, generator, method, parameters, condition);
``batch_tables`` aggregates a run's stored results into the paper's section-5 tables
(failure rates, mean WARG by p, mean Spearman) per condition.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.attribution import alignment
from ragaudit_core.attribution.shapley import CachedGame, ShapleyResult, estimator

if TYPE_CHECKING:
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import SaliencyResult

__all__ = [
    "AttributionError",
    "batch_tables",
    "compute_attribution",
    "explain_query",
    "job_params",
    "query_documents",
    "resolve_method",
    "result_key",
    "store_payloads",
    "stored_attribution",
    "stored_payloads",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS attributions (
    key        VARCHAR PRIMARY KEY,
    run_id     VARCHAR NOT NULL,
    query_id   VARCHAR NOT NULL,
    retriever  VARCHAR NOT NULL,
    generator  VARCHAR NOT NULL,
    method     VARCHAR NOT NULL,
    params     VARCHAR NOT NULL,
    condition  VARCHAR NOT NULL,
    wasted_retrieval  BOOLEAN,
    noise_distraction BOOLEAN,
    spearman   DOUBLE,
    payload    VARCHAR NOT NULL,
    created_at TIMESTAMP
)
"""


class AttributionError(ValueError):
    """The request cannot be served (message says why)."""


def _ensure(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(_SCHEMA)


def query_documents(
    con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, max_docs: int
) -> tuple[str, list[tuple[str, str]]]:
    """(query text, [(doc_id, text)]) in logged order; entries without text are skipped."""
    cur = con.cursor()
    try:
        rec = cur.execute("SELECT query FROM records WHERE run_id = ? AND query_id = ?", [run_id, query_id]).fetchall()
        if not rec:
            raise AttributionError(f"run {run_id!r} has no query {query_id!r}")
        if not rec[0][0]:
            raise AttributionError(f"run {run_id!r}, query {query_id!r}: the log has no query text to explain")
        docs = cur.execute(
            """SELECT doc_id, text FROM evidence WHERE run_id = ? AND query_id = ? AND text IS NOT NULL
               ORDER BY position LIMIT ?""",
            [run_id, query_id, max_docs],
        ).fetchall()
    finally:
        cur.close()
    if not docs:
        raise AttributionError(
            f"run {run_id!r}, query {query_id!r}: no evidence entry carries text; attributions "
            "need the document texts in the log"
        )
    return rec[0][0], [(d, t) for d, t in docs]


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def stored_attribution(con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, **filters: object) -> list[dict]:
    """Stored results for a query (each: the key columns and the decoded payload)."""
    _ensure(con)
    cur = con.cursor()
    try:
        rows = cur.execute(
            """SELECT retriever, generator, method, params, condition, payload FROM attributions
               WHERE run_id = ? AND query_id = ? ORDER BY created_at""",
            [run_id, query_id],
        ).fetchall()
    finally:
        cur.close()
    out = []
    for retr, gen, method, params, cond, payload in rows:
        rec = {
            "retriever": retr,
            "generator": gen,
            "method": method,
            "params": json.loads(params),
            "condition": cond,
            **json.loads(payload),
        }
        if all(rec.get(k) == v for k, v in filters.items()):
            out.append(rec)
    return out


def resolve_method(method: str, n_docs: int) -> str:
    """``auto``: exact Shapley up to 6 documents, PMCSHAP beyond."""
    return method if method != "auto" else ("exact" if n_docs <= 6 else "pmc")


def job_params(
    method: str,
    *,
    max_docs: int,
    max_new_tokens: int,
    ig_steps: int,
    ig_baseline: str,
    seed: int,
    n_samples: int,
    n_fits: int,
    ig_method: str = "riemann_right",
) -> dict:
    """The parameters that define a stored result (its key), for the resolved ``method``.
    ``ig_method`` enters only when it is not the original Riemann rule, so results stored
    before it existed keep their keys."""
    params = {
        "max_docs": max_docs,
        "max_new_tokens": max_new_tokens,
        "ig_steps": ig_steps,
        "ig_baseline": ig_baseline,
        "seed": seed,
    }
    if ig_method != "riemann_right":
        params["ig_method"] = ig_method
    if method in ("kernel", "mc", "pmc"):
        params["n_samples"] = n_samples
    if method in ("mc", "pmc"):
        params["n_fits"] = n_fits
    return params


def result_key(
    run_id: str, query_id: str, retriever: str, generator: str, method: str, params: dict, condition: str
) -> str:
    """The stored result's key: a hash of what defines it (not the device it ran on)."""
    return _key(
        {
            "run": run_id,
            "query": query_id,
            "retriever": retriever,
            "generator": generator,
            "method": method,
            "params": params,
            "condition": condition,
        }
    )


def stored_payloads(con: duckdb.DuckDBPyConnection, keys: Sequence[str]) -> dict[str, dict]:
    """The stored payloads among ``keys`` (key → payload)."""
    _ensure(con)
    cur = con.cursor()
    try:
        return {
            k: json.loads(p)
            for k, p in cur.execute(
                "SELECT key, payload FROM attributions WHERE list_contains(?, key)", [list(keys)]
            ).fetchall()
        }
    finally:
        cur.close()


def store_payloads(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple[str, dict, dict]]) -> None:
    """Store results: (key, description {run_id, query_id, retriever, generator, method, params,
    condition}, payload) each; a key stored before is replaced."""
    _ensure(con)
    cur = con.cursor()
    try:
        for key, d, payload in rows:
            cur.execute(
                "INSERT OR REPLACE INTO attributions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                [
                    key,
                    d["run_id"],
                    d["query_id"],
                    d["retriever"],
                    d["generator"],
                    d["method"],
                    json.dumps(d["params"], sort_keys=True),
                    d["condition"],
                    payload["wasted_retrieval"],
                    payload["noise_distraction"],
                    payload["spearman"],
                    json.dumps(payload),
                ],
            )
    finally:
        cur.close()


def explain_query(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    query_id: str,
    *,
    embedder: Any,
    generator: Any,
    retriever_name: str | None = None,
    generator_name: str | None = None,
    shuffle: bool = False,
    progress: Callable[[str, float], None] | None = None,
    **options: Any,
) -> list[dict]:
    """Explain one logged query in this process; returns one result per condition
    (original[, shuffled]). The job's own path (:mod:`ragaudit_core.jobs`): plan it from the
    database, serve it when stored, else compute (:func:`compute_attribution`) and store it.
    ``options`` override ``jobs.ATTRIBUTION_DEFAULTS`` (method, ig_steps, ...); ``embedder`` /
    ``generator`` are loaded models or zero-argument loaders, called only when the result is
    not stored yet."""
    from ragaudit_core.jobs import execute, plan, store

    spec, inputs = plan(
        con, run_id, query_id, retriever=retriever_name, generator=generator_name, shuffle=shuffle, **options
    )
    keys = spec.result_keys()
    have = stored_payloads(con, list(keys.values()))
    if len(have) == len(keys):
        return [have[keys[c]] for c in spec.conditions]
    results = execute(spec, inputs, embedder=embedder, generator=generator, progress=progress)
    store(con, spec, results)
    return results


def _loaded(model: Any, attr: str) -> Any:
    return model() if callable(model) and not hasattr(model, attr) else model


def compute_attribution(
    run_id: str,
    query_id: str,
    query: str,
    docs: Sequence[tuple[str, str]],
    *,
    embedder: Any,
    generator: Any,
    method: str,
    params: dict,
    conditions: Sequence[str] = ("original",),
    p_grid: Sequence[float] = alignment.DEFAULT_P_GRID,
    batch_size: int = 8,
    progress: Callable[[str, float], None] | None = None,
) -> list[dict]:
    """The attribution of one query, one payload per condition: a pure function of the query,
    its documents ``[(doc_id, text)]`` in retriever order, the models, the resolved ``method``
    and ``params`` (:func:`job_params`). Nothing is read or written. ``progress(label, frac)``
    is called after each IG side and each coalition (``frac`` in [0, 1]; label ``Shapley
    (exact): coalition 7 of 32``); it may raise to cancel."""
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import RetrieverSaliency

    say = progress or (lambda _l, _f: None)
    n = len(docs)
    enc, gen = _loaded(embedder, "encode"), _loaded(generator, "model")
    sal = RetrieverSaliency(enc)
    ig_share = _ig_share(params, n, method)
    t0 = time.perf_counter()
    ig_docs: list[dict] = []
    ig_query: list[dict] = []
    for i, (_doc_id, text) in enumerate(docs):
        for side, out in (("document", ig_docs), ("query", ig_query)):
            out.append(
                _ig_payload(
                    sal.attribute(
                        query,
                        text,
                        side=side,
                        steps=params["ig_steps"],
                        baseline=params["ig_baseline"],
                        method=params.get("ig_method", "riemann_right"),
                    )
                )
            )
            say(f"IG: document {i + 1} of {n}, {side} side", ig_share * (2 * i + (side == "query") + 1) / (2 * n))
    t_ig = time.perf_counter() - t0
    results, answer_ids = [], None
    rng = np.random.default_rng(params["seed"])
    total = _expected_coalitions(method, n, params) * len(conditions)
    done = [0]
    for cond in conditions:
        order = list(range(n)) if cond == "original" else [int(i) for i in rng.permutation(n)]
        t1 = time.perf_counter()
        texts = [docs[i][1] for i in order]
        game = (
            GeneratorGame.generate(gen, query, texts, max_new_tokens=params["max_new_tokens"], batch_size=batch_size)
            if answer_ids is None
            else GeneratorGame(gen, query, texts, answer_ids, batch_size=batch_size)
        )
        answer_ids = game.answer_ids if cond == "original" else answer_ids

        def tick(k: int = 1, cond: str = cond) -> None:
            done[0] += k
            say(
                f"Shapley ({method}), {cond} order: coalition {min(done[0], total)} of {total}",
                ig_share + (1 - ig_share) * min(1.0, done[0] / total),
            )

        game.on_coalition = tick
        est_params = {} if method == "exact" else {"n_samples": params["n_samples"], "seed": params["seed"]}
        if method in ("mc", "pmc"):
            est_params["n_fits"] = params["n_fits"]
        res = estimator(method, **est_params).attribute(CachedGame(n, game.values))
        results.append(
            _payload(
                run_id,
                query_id,
                query,
                docs,
                order,
                game,
                res,
                method,
                p_grid,
                ig_docs,
                ig_query,
                {"ig": round(t_ig, 2), "shapley": round(time.perf_counter() - t1, 2)},
            )
        )
    say("done", 1.0)
    return results


def _expected_coalitions(method: str, n: int, params: dict) -> int:
    """Distinct coalitions the estimator asks for: 2^n for exact; at most N + 2 (the sampled
    ones, the empty and the full coalition) and 2^n for the sampling estimators."""
    return 2**n if method == "exact" else min(2**n, params["n_samples"] + 2)


def _ig_share(params: dict, n: int, method: str) -> float:
    """IG's share of the job's time for the progress bar: from the per-unit costs measured on
    the attribution bench (2 CPU cores: 0.044 s per IG step and side of a 200-token document,
    0.55 s per coalition of a five-document prompt)."""
    ig = 0.044 * params["ig_steps"] * 2 * n
    shap = 0.55 * _expected_coalitions(method, n, params)
    return ig / (ig + shap)


def _payload(
    run_id: str,
    query_id: str,
    query: str,
    docs: Sequence[tuple[str, str]],
    order: list[int],
    game: GeneratorGame,
    res: ShapleyResult,
    method: str,
    p_grid: Sequence[float],
    ig_docs: list[dict],
    ig_query: list[dict],
    timings: dict[str, float],
) -> dict:
    n = len(docs)
    values = np.zeros_like(res.values)
    values[order] = res.values  # back to retriever order
    importance = values.mean(axis=1)
    ids = [d for d, _ in docs]
    items = list(range(n))  # retrieved items by position: one document may give several chunks
    ranking = alignment.generator_ranking(items, importance)
    return {
        "run_id": run_id,
        "query_id": query_id,
        "query": query,
        "doc_ids": ids,
        "doc_texts": [t for _, t in docs],
        "order": order,
        "answer": game.answer_text,
        "answer_tokens": game.answer_tokens,
        "values": values.tolist(),
        "importance": importance.tolist(),
        "v_empty": res.v_empty.tolist(),
        "v_full": res.v_full.tolist(),
        "generator_ranking": ranking,
        "generator_ranking_doc_ids": [ids[i] for i in ranking],
        "warg": {str(p): alignment.warg(items, ranking, p) for p in p_grid},
        "warg_extrapolated": {str(p): alignment.warg(items, ranking, p, extrapolated=True) for p in p_grid},
        "warg_floor": {str(p): alignment.warg_floor(n, p) for p in p_grid},
        "spearman": alignment.rank_spearman(importance),
        **alignment.failure_modes(items, ranking),
        "ig_documents": ig_docs,
        "ig_query": ig_query,
        "n_coalitions": res.n_coalitions,
        "method": method,
        "timings_s": timings,
    }


def _ig_payload(r: SaliencyResult) -> dict:
    return {
        "tokens": r.tokens,
        "attributions": r.attributions.tolist(),
        "words": r.words,
        "word_attributions": r.word_attributions.tolist(),
        "score": r.score,
        "baseline_score": r.baseline_score,
        "completeness": r.completeness,
        "baseline": r.baseline,
        "steps": r.steps,
    }


def batch_tables(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, pd.DataFrame]:
    """The paper's section-5 tables for a run's stored results, per condition:
    failure rates (Table 2), mean WARG by p (Table 3), mean Spearman."""
    _ensure(con)
    cur = con.cursor()
    try:
        rows = cur.execute(
            """SELECT condition, method, wasted_retrieval, noise_distraction, spearman, payload FROM attributions
               WHERE run_id = ?""",
            [run_id],
        ).fetchall()
    finally:
        cur.close()
    if not rows:
        return {}
    recs = []
    for cond, method, wr, nd, sp, payload in rows:
        p = json.loads(payload)
        recs.append(
            {
                "condition": cond,
                "method": method,
                "wasted_retrieval": wr,
                "noise_distraction": nd,
                "spearman": sp,
                **{f"warg_{k}": v for k, v in p["warg"].items()},
            }
        )
    df = pd.DataFrame(recs)
    failure = (
        df.groupby("condition")
        .agg(
            queries=("wasted_retrieval", "size"),
            wasted_retrieval=("wasted_retrieval", "mean"),
            noise_distraction=("noise_distraction", "mean"),
            spearman=("spearman", "mean"),
        )
        .reset_index()
    )
    warg_cols = [c for c in df.columns if c.startswith("warg_")]
    warg = df.groupby("condition")[warg_cols].mean().reset_index()
    return {"failure": failure, "warg": warg}

"""One query's attribution, computed (seed 001, RAG-E): a pure function of the query, its
documents in retriever order, the models, the resolved method and its parameters.

1. IG token saliency (:mod:`.saliency`) for each document against the query and for the
   query against each document;
2. the answer generated once with all documents, and Shapley values of every document
   for every answer token (:mod:`.generator_game`, :mod:`.shapley`) — for the documents in
   retriever order ("original") and, with a "shuffled" condition, in a seeded random order
   (the attribution is mapped back to the documents);
3. the generator ranking (eq. 11) of the retrieved items by position (the same document
   may be retrieved as several chunks, so items are positions, with their doc ids beside),
   WARG(p) over a sweep of p (truncated, eq. 12, and extrapolated), Spearman between
   retriever rank and importance, and the two failure modes (:mod:`.alignment`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ragaudit_core.attribution import alignment
from ragaudit_core.attribution.progress import PhaseClock, predicted_seconds, unit_cost
from ragaudit_core.attribution.result import AttributionResult, TokenSaliency
from ragaudit_core.attribution.shapley import CachedGame, ShapleyResult, estimator
from ragaudit_core.defaults import EXACT_SHAPLEY_MAX_DOCS

if TYPE_CHECKING:
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import SaliencyResult

__all__ = [
    "FIRST_IG_SIDES",
    "FIRST_IG_STEPS",
    "FIRST_LABELS",
    "FIRST_METHOD",
    "FIRST_METHODS",
    "compute_attribution",
    "job_params",
    "leave_one_out",
    "predicted_job_seconds",
    "resolve_method",
]

FIRST_IG_STEPS = 4
"""IG points per side of the first estimate (Gauss–Legendre): measured on the sample run's
documents, completeness off by 0.18 (median) to 0.54 (max) at 4 points, 0.05 / 0.22 at 8 — a
preview of where the saliency lies, refined to ``ig_steps`` in the same job."""

FIRST_IG_SIDES = ("query",)
"""The IG sides of the first estimate: the query side only (the query's few tokens against each
document: 0.7 s for five documents at 4 points on 2 cores, against 3.6 s for the documents' own
256 tokens); the document side comes with the refinement."""

FIRST_METHODS = ("marginal", "loo")
"""The first-estimate estimators (:data:`.shapley.ESTIMATORS`): ``marginal`` — the marginal
contributions along the retriever order (:class:`.shapley.RankOrderMarginals`, one permutation of
Shapley's permutation form, n + 1 coalitions whose prompts are prefixes of the full prompt up to the
query, so they start from the generation's KV cache: ~400 LM tokens for five documents and a
48-token answer); ``loo`` — leave-one-out (n + 2 coalitions, ~2,100 tokens)."""
FIRST_METHOD = "marginal"


def resolve_method(method: str, n_docs: int) -> str:
    """``auto``: exact Shapley up to :data:`~ragaudit_core.defaults.EXACT_SHAPLEY_MAX_DOCS` documents,
    PMCSHAP beyond."""
    return method if method != "auto" else ("exact" if n_docs <= EXACT_SHAPLEY_MAX_DOCS else "pmc")


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
    on_partial: Callable[[list[AttributionResult]], None] | None = None,
    first_ig_steps: int = FIRST_IG_STEPS,
    first_method: str = FIRST_METHOD,
    first_ig_sides: Sequence[str] = FIRST_IG_SIDES,
) -> list[AttributionResult]:
    """The attribution of one query, one result per condition: a pure function of the query,
    its documents ``[(doc_id, text)]`` in retriever order, the models, the resolved ``method``
    and ``params`` (:func:`job_params`). Nothing is read or written. ``progress(label, frac)``
    is called after each IG side, each answer token and each coalition (``frac`` a share of the
    job's time, :class:`.progress.PhaseClock`; label ``Shapley (exact): coalition 7 of 32``); it
    may raise to cancel.

    Anytime: with ``on_partial``, a first estimate comes first — document values by
    ``first_method`` (:data:`FIRST_METHODS`: by default the marginal contributions along the
    retriever order, n + 1 coalitions) and IG with ``first_ig_steps`` points on ``first_ig_sides``
    — passed to ``on_partial`` as results with ``estimate_stage="first"``; the same job then refines
    to the ``method``'s values (``estimate_stage="exact"``, returned). The coalitions of the first
    stage stay in the game's cache, so the refinement does not compute them again, and both walks
    start from the generation's cache of the full prompt (``GeneratorGame.anchor``). The refined values
    equal a run without the first stage up to float rounding (a coalition's prompt may then be
    computed in other chunks of the prompt trie): measured max |Δφ| 0.0 after the marginal first
    stage, 2.2e-6 after leave-one-out (docs/benchmarks.md, issue #24)."""
    from ragaudit_core.attribution.saliency import RetrieverSaliency

    say = progress or (lambda _l, _f: None)
    n = len(docs)
    t_start = time.perf_counter()
    enc, gen = _loaded(embedder, "encode"), _loaded(generator, "model")
    total = _expected_coalitions(method, n, params) * len(conditions)
    if first_method not in FIRST_METHODS:
        raise ValueError(f"unknown first-estimate method {first_method!r}; use one of {', '.join(FIRST_METHODS)}")
    first = on_partial is not None
    n_first = _coalitions_asked(first_method, n) * len(conditions) if first else 0
    clock = PhaseClock(
        [
            ("prefill", 1, 1.0),
            ("generate", params["max_new_tokens"] - 1, 1.0),
            ("first", n_first, 1.0),
            ("ig_first", len(first_ig_sides) * n if first else 0, first_ig_steps),
            ("coalition", max(0, total - n_first), 1.0),
            ("ig", 2 * n, params["ig_steps"]),
        ],
        say,
    )
    sal = RetrieverSaliency(enc)
    games = _answer_games(query, docs, gen, params, conditions, batch_size, clock)
    partial: dict[str, float] = {}
    if on_partial is not None:
        t1 = time.perf_counter()
        early = [_estimate(g, first_method, params, clock, n_first) for g in games]
        t_early = time.perf_counter() - t1
        t1 = time.perf_counter()
        ig_params = {**params, "ig_steps": first_ig_steps}
        ig_d, ig_q = _ig(sal, query, docs, ig_params, clock, "ig_first", sides=first_ig_sides)
        t_ig = time.perf_counter() - t1
        partial = {"first": round(time.perf_counter() - t_start, 2), "first_ig": round(t_ig, 2)}
        partial["first_shapley"] = round(t_early, 2)
        partial["first_lm_tokens"] = float(sum(g.game.n_forward_tokens for g in games))
        clock.begin("First estimate ready; computing the exact values")
        args = (run_id, query_id, query, docs)
        first_timings = {**partial, "shapley": round(t_early, 2)}
        on_partial(
            [
                _result(*args, g, res, first_method, p_grid, ig_d, ig_q, first_timings, "first")
                for g, res in zip(games, early)
            ]
        )
    t1 = time.perf_counter()
    exact = [_estimate(g, method, params, clock, total - n_first) for g in games]
    t_shap = time.perf_counter() - t1
    t1 = time.perf_counter()
    ig_docs, ig_query = _ig(sal, query, docs, params, clock, "ig")
    t_ig = time.perf_counter() - t1
    timings = {
        **partial,
        "ig": round(t_ig, 2),
        "shapley": round(t_shap + partial.get("first_shapley", 0.0), 2),
        "generate": round(sum(g.seconds for g in games), 2),
        "total": round(time.perf_counter() - t_start, 2),
        "lm_tokens": float(sum(g.game.n_forward_tokens for g in games)),
    }
    results = [
        _result(run_id, query_id, query, docs, g, res, method, p_grid, ig_docs, ig_query, timings, "exact")
        for g, res in zip(games, exact)
    ]
    clock.learn()
    say("done", 1.0)
    return results


@dataclass
class _Answered:
    """One condition's game: the document order, the generator game over the answer, the cache of
    its coalition values (shared by the first estimate and the refinement) and its seconds."""

    cond: str
    order: list[int]
    game: GeneratorGame
    cached: CachedGame
    seconds: float


def leave_one_out(game: Any) -> ShapleyResult:
    """Leave-one-out values from n + 2 coalitions (:class:`.shapley.LeaveOneOut`): φ_i = v(D) −
    v(D ∖ {i}) per answer token — what the answer loses without each document."""
    return estimator("loo").attribute(game)


def _answer_games(
    query: str,
    docs: Sequence[tuple[str, str]],
    gen: Any,
    params: dict,
    conditions: Sequence[str],
    batch_size: int,
    clock: PhaseClock,
) -> list[_Answered]:
    """Per condition: the document order and the generator game (the answer generated once, with
    every document in retriever order, and teacher-forced in every other condition)."""
    from ragaudit_core.attribution.generator_game import GeneratorGame

    n = len(docs)
    out: list[_Answered] = []
    answer_ids = None
    rng = np.random.default_rng(params["seed"])
    tokens = [0]
    budget = params["max_new_tokens"]

    def on_token() -> None:
        tokens[0] += 1
        phase = "prefill" if tokens[0] == 1 else "generate"
        clock.tick(phase, f"Generating the answer: token {tokens[0]} of at most {budget}")

    for cond in conditions:
        order = list(range(n)) if cond == "original" else [int(i) for i in rng.permutation(n)]
        t1 = time.perf_counter()
        texts = [docs[i][1] for i in order]
        if answer_ids is None:
            clock.begin("Generating the answer: reading the prompt")
            game = GeneratorGame.generate(
                gen, query, texts, max_new_tokens=budget, batch_size=batch_size, on_token=on_token
            )
            if tokens[0] < budget:  # the answer ended early: its unused tokens cost nothing
                clock.tick("generate", "Answer generated", k=budget - max(tokens[0], 1))
        else:
            game = GeneratorGame(gen, query, texts, answer_ids, batch_size=batch_size)
        answer_ids = game.answer_ids if cond == "original" else answer_ids
        out.append(_Answered(cond, order, game, CachedGame(n, game.values), time.perf_counter() - t1))
    return out


FIRST_LABELS = {"marginal": "marginal contributions in retriever order", "loo": "leave-one-out"}
"""How progress labels and the attributions page name each first-estimate method."""


def _estimate(g: _Answered, method: str, params: dict, clock: PhaseClock, total: int) -> ShapleyResult:
    """The ``method``'s estimate for one condition's game (:data:`.shapley.ESTIMATORS`), each
    coalition counted on the clock's phase for it (``first`` for :data:`FIRST_METHODS`, else
    ``coalition``)."""
    phase = "first" if method in FIRST_METHODS else "coalition"
    what = f"First estimate ({FIRST_LABELS[method]})" if phase == "first" else f"Shapley ({method})"

    def tick(k: int = 1) -> None:
        count = min(clock.phases[phase].done + k, total)
        clock.tick(phase, f"{what}, {g.cond} order: coalition {count} of {total}", k)

    g.game.on_coalition = tick
    est_params = {}
    if method in ("kernel", "mc", "pmc"):
        est_params = {"n_samples": params["n_samples"], "seed": params["seed"]}
    if method in ("mc", "pmc"):
        est_params["n_fits"] = params["n_fits"]
    res = estimator(method, **est_params).attribute(g.cached)
    g.game.on_coalition = None
    return res


def _ig(
    sal: Any,
    query: str,
    docs: Sequence[tuple[str, str]],
    params: dict,
    clock: PhaseClock,
    phase: str = "ig",
    sides: Sequence[str] = ("document", "query"),
) -> tuple[list[TokenSaliency], list[TokenSaliency]]:
    """IG token saliency of every document on ``sides`` (document side, query side;
    ``params["ig_steps"]`` points; the clock's ``phase`` counts the sides). A side left out gives
    an empty list."""
    n = len(docs)
    ig_docs: list[TokenSaliency] = []
    ig_query: list[TokenSaliency] = []
    todo = [(side, out) for side, out in (("document", ig_docs), ("query", ig_query)) if side in sides]
    if not todo:
        return ig_docs, ig_query
    clock.begin(f"{'IG (first estimate)' if phase == 'ig_first' else 'IG'}: document 1 of {n}, {todo[0][0]} side")
    for i, (_doc_id, text) in enumerate(docs):
        for side, out in todo:
            out.append(
                _token_saliency(
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
            clock.tick(
                phase,
                f"{'IG (first estimate)' if phase == 'ig_first' else 'IG'}: document {i + 1} of {n}, {side} side done",
            )
    return ig_docs, ig_query


def predicted_job_seconds(method: str, params: dict, n_docs: int, n_conditions: int = 1) -> float:
    """What one attribution with these settings is predicted to take before any has run here
    (:func:`.progress.predicted_seconds`: unit costs learned on this machine, else the quiet 2-core
    figures), plus the first estimate's IG points (a queued job is anytime: the worker listens for
    its first estimate; its coalitions are among the coalitions counted)."""
    first_ig = len(FIRST_IG_SIDES) * n_docs * FIRST_IG_STEPS * unit_cost("ig_first")
    return first_ig + predicted_seconds(
        n_docs,
        params["ig_steps"],
        params["max_new_tokens"],
        _expected_coalitions(method, n_docs, params) * n_conditions,
    )


def _coalitions_asked(method: str, n: int) -> int:
    """Distinct coalitions the (deterministic) estimator ``method`` asks of an n-player game: its
    walk on a game of zeros (marginal: n + 1; leave-one-out: n + 2, or 2 for one player)."""
    return estimator(method).attribute(CachedGame(n, lambda m: np.zeros((len(m), 1)))).n_coalitions


def _expected_coalitions(method: str, n: int, params: dict) -> int:
    """Distinct coalitions the estimator asks for: 2^n for exact; at most N + 2 (the sampled
    ones, the empty and the full coalition) and 2^n for the sampling estimators."""
    return 2**n if method == "exact" else min(2**n, params["n_samples"] + 2)


def _result(
    run_id: str,
    query_id: str,
    query: str,
    docs: Sequence[tuple[str, str]],
    g: _Answered,
    res: ShapleyResult,
    method: str,
    p_grid: Sequence[float],
    ig_docs: list[TokenSaliency],
    ig_query: list[TokenSaliency],
    timings: dict[str, float],
    stage: str,
) -> AttributionResult:
    n = len(docs)
    order, game = g.order, g.game
    values = np.zeros_like(res.values)
    values[order] = res.values  # back to retriever order
    importance = values.mean(axis=1)
    ids = [d for d, _ in docs]
    items = list(range(n))  # retrieved items by position: one document may give several chunks
    ranking = alignment.generator_ranking(items, importance)
    modes = alignment.failure_modes(items, ranking)
    return AttributionResult(
        run_id=run_id,
        query_id=query_id,
        query=query,
        doc_ids=ids,
        doc_texts=[t for _, t in docs],
        order=order,
        answer=game.answer_text,
        answer_tokens=game.answer_tokens,
        values=values.tolist(),
        importance=importance.tolist(),
        v_empty=res.v_empty.tolist(),
        v_full=res.v_full.tolist(),
        generator_ranking=ranking,
        generator_ranking_doc_ids=[ids[i] for i in ranking],
        warg={float(p): alignment.warg(items, ranking, p) for p in p_grid},
        warg_extrapolated={float(p): alignment.warg(items, ranking, p, extrapolated=True) for p in p_grid},
        warg_floor={float(p): alignment.warg_floor(n, p) for p in p_grid},
        spearman=alignment.rank_spearman(importance),
        wasted_retrieval=bool(modes["wasted_retrieval"]),
        noise_distraction=bool(modes["noise_distraction"]),
        ig_documents=ig_docs,
        ig_query=ig_query,
        n_coalitions=res.n_coalitions,
        method=method,
        timings_s=timings,
        estimate_stage=stage,
    )


def _token_saliency(r: SaliencyResult) -> TokenSaliency:
    return TokenSaliency(
        tokens=list(r.tokens),
        attributions=r.attributions.tolist(),
        words=list(r.words),
        word_attributions=r.word_attributions.tolist(),
        score=float(r.score),
        baseline_score=float(r.baseline_score),
        completeness=None if math.isnan(r.completeness) else float(r.completeness),  # s = s⁰: undefined
        baseline=r.baseline,
        steps=int(r.steps),
    )

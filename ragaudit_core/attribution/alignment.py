"""Retriever–generator alignment (seed 001, RAG-E §3.3 and §5.2): RBO, WARG, failure modes.

**RBO, truncated** (seed 001, eq. 12; Webber et al. 2010, eq. 4 cut at depth k)::

    RBO_k(S, T; p) = (1 − p) · Σ_{d=1..k} p^{d−1} · |S_{1:d} ∩ T_{1:d}| / d

with k the list depth (both rankings order the same k documents). Because the sum stops
at k, two *identical* lists score 1 − p^k, not 1: **WARG(p) = 1 − RBO_k has a floor of
p^k** (0.03125 at p = 0.5, k = 5; 0.59 at p = 0.9, k = 5). We report it as the paper
defines it and show the floor beside it.

**RBO, extrapolated** (Webber et al. 2010, eq. 32, lists of equal length k), an option::

    RBO_ext(S, T; p) = (X_k / k) · p^k + ((1 − p) / p) · Σ_{d=1..k} (X_d / d) · p^d

where X_d = |S_{1:d} ∩ T_{1:d}|; identical lists score exactly 1 (WARG_ext = 0).

**Failure modes** (§5.2, Table 2), with 0-based ranks: *wasted retrieval* — the
retriever's rank-0 document gets generator rank > 2; *noise distraction* — the
generator's rank-0 document has retriever rank > 2. With fewer than four documents
neither can happen (reported as False).

**Generator ranking** (eq. 11): documents by descending mean attribution over output
tokens; ties keep retriever order (a stable sort), so equal importances never count as
disagreement.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

__all__ = [
    "DEFAULT_P_GRID",
    "estimate_agreement",
    "failure_modes",
    "generator_ranking",
    "rank_spearman",
    "rbo",
    "warg",
    "warg_floor",
]

DEFAULT_P_GRID = (0.5, 0.6, 0.7, 0.8, 0.9)


def _check(s: Sequence[Hashable], t: Sequence[Hashable], p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if len(set(s)) != len(s) or len(set(t)) != len(t):
        raise ValueError("a ranking lists each item once")


def rbo(s: Sequence[Hashable], t: Sequence[Hashable], p: float, *, extrapolated: bool = False) -> float:
    """Rank-biased overlap of two rankings, truncated at their depth (eq. 12) or extrapolated.

    Depth k = the longer list's length; a shorter list simply has no item at the deeper
    ranks. Two empty lists: 1.0 (nothing disagrees) for both variants.
    """
    _check(s, t, p)
    k = max(len(s), len(t))
    if k == 0:
        return 1.0
    x = [len(set(s[:d]) & set(t[:d])) for d in range(1, k + 1)]  # X_d; k is small (documents)
    total = sum(p ** (d - 1) * x[d - 1] / d for d in range(1, k + 1))
    if not extrapolated:
        return (1 - p) * total
    xk = x[-1]
    return (xk / k) * p**k + ((1 - p) / p) * sum((x[d - 1] / d) * p**d for d in range(1, k + 1))


def warg(
    ret_ranking: Sequence[Hashable], gen_ranking: Sequence[Hashable], p: float, *, extrapolated: bool = False
) -> float:
    """WARG(p) = 1 − RBO(R_ret, R_gen; p) (seed 001, Definition 3.1)."""
    return 1.0 - rbo(ret_ranking, gen_ranking, p, extrapolated=extrapolated)


def warg_floor(k: int, p: float) -> float:
    """The smallest truncated WARG possible at depth k: p^k (identical lists)."""
    return p**k


def generator_ranking(doc_ids: Sequence[Hashable], importance: Sequence[float]) -> list:
    """Documents by descending importance (eq. 11); ties keep the given (retriever) order."""
    order = sorted(range(len(doc_ids)), key=lambda i: (-float(importance[i]), i))
    return [doc_ids[i] for i in order]


def failure_modes(ret_ranking: Sequence[Hashable], gen_ranking: Sequence[Hashable]) -> dict[str, bool]:
    """Wasted retrieval and noise distraction flags for one query (0-based ranks, > 2)."""
    if not ret_ranking or not gen_ranking:
        return {"wasted_retrieval": False, "noise_distraction": False}
    gen_pos = {d: i for i, d in enumerate(gen_ranking)}
    ret_pos = {d: i for i, d in enumerate(ret_ranking)}
    return {
        "wasted_retrieval": gen_pos.get(ret_ranking[0], len(gen_ranking)) > 2,
        "noise_distraction": ret_pos.get(gen_ranking[0], len(ret_ranking)) > 2,
    }


def rank_spearman(importance: Sequence[float]) -> float | None:
    """Spearman ρ between retriever rank (position, 0 = best) and generator importance.

    Positive ρ here means agreement: better-ranked documents (lower rank) matter more, so
    the correlation is taken with the *negated* rank. None when undefined (fewer than 3
    documents, or constant importance).
    """
    imp = np.asarray(importance, dtype=float)
    if len(imp) < 3 or np.all(imp == imp[0]):
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(-np.arange(len(imp)), imp).statistic)


def estimate_agreement(estimate: Sequence[float], exact: Sequence[float]) -> dict[str, float | bool | None]:
    """How far a first estimate's document importances are from the exact ones:
    ``spearman`` — Spearman ρ of the two importance vectors (ranks, ties averaged; None when
    either is constant or there are fewer than 2 documents) — and ``top_agrees`` — whether the
    most important document is the same (first one in retriever order on ties)."""
    a, b = np.asarray(estimate, dtype=float), np.asarray(exact, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"importances of different lengths: {len(a)} and {len(b)}")
    if len(a) == 0:
        return {"spearman": None, "top_agrees": False}
    top = bool(int(np.argmax(a)) == int(np.argmax(b)))
    if len(a) < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return {"spearman": None, "top_agrees": top}
    from scipy.stats import spearmanr

    return {"spearman": float(spearmanr(a, b).statistic), "top_agrees": top}

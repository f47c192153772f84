"""Shapley-value estimators over documents (seed 001, RAG-E §3.2, eq. 7–8, Algorithm 1).

A *game* gives, for a batch of coalitions (boolean masks over the n documents), one value
vector per coalition (for RAG-E: the teacher-forced log-probability of each of the m
answer tokens, eq. 10). Every estimator returns φ with shape (n, m) — a value per
document and output token — and is one class with one call, so they are interchangeable::

    result = PMCShap(n_samples=20, n_fits=200, seed=0).attribute(game)

* :class:`ExactShapley` — eq. 7 over all 2^n coalitions (default up to 6 documents).
* :class:`KernelShap` — eq. 8: weighted least squares on N sampled coalitions with the
  Shapley kernel, the efficiency constraint Σφ = v(D) − v(∅) imposed exactly. Coalition
  sizes are drawn with probability ∝ the kernel's total weight per size,
  (n−1)/(s(n−s)), then a uniform subset of that size; the regression then weights the
  samples equally (Lundberg & Lee 2017). ``paired=True`` adds each sample's complement
  (Covert & Lee 2021). When N reaches 2^n − 2 every coalition is used once with its exact
  kernel weight, and the solution equals exact Shapley.
* :class:`MCShap` — Algorithm 1 with random sampling: N coalitions evaluated once, then
  M KernelSHAP fits on random subsets of N′ of them, averaged.
* :class:`PMCShap` — the same with paired (complementary) coalitions; subsets keep the
  pairs together.
* :class:`RankOrderMarginals` — the marginal contributions along the players' own order
  (retriever rank): φ_i = v({1..i}) − v({1..i−1}), n + 1 coalitions. One permutation of the
  permutation form of Shapley (Castro et al. 2009 with a single, fixed permutation): efficient by
  construction, exact for additive games, biased towards earlier players when documents overlap.
  An anytime job's first estimate: its coalitions' prompts are prefixes of the full prompt up to
  the query, so they reuse the generation's KV cache (:mod:`.generator_game`).
* :class:`LeaveOneOut` — φ_i = v(D) − v(D ∖ {i}), n + 2 coalitions; not efficient in general.

The empty and the full coalition are always evaluated (they fix the constraint) and are
not counted in N. All sampling is seeded (``numpy.random.default_rng(seed)``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

__all__ = [
    "ESTIMATORS",
    "CachedGame",
    "ExactShapley",
    "Game",
    "KernelShap",
    "LeaveOneOut",
    "MCShap",
    "PMCShap",
    "RankOrderMarginals",
    "ShapleyResult",
    "estimator",
]


class Game(Protocol):
    n_players: int

    def values(self, coalitions: np.ndarray) -> np.ndarray:
        """(k, n) bool → (k, m) float."""


class CachedGame:
    """Wraps a value function so that each distinct coalition is evaluated once."""

    def __init__(self, n_players: int, fn: Callable[[np.ndarray], np.ndarray]) -> None:
        self.n_players = n_players
        self._fn = fn
        self._cache: dict[bytes, np.ndarray] = {}
        self.n_evaluated = 0

    def values(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = np.asarray(coalitions, dtype=bool)
        keys = [c.tobytes() for c in coalitions]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            idx = [keys.index(k) for k in missing]
            out = np.asarray(self._fn(coalitions[idx]), dtype=float)
            if out.ndim == 1:
                out = out[:, None]
            for k, row in zip(missing, out):
                self._cache[k] = row
            self.n_evaluated += len(missing)
        return np.stack([self._cache[k] for k in keys])


@dataclass
class ShapleyResult:
    values: np.ndarray  # (n, m): per document and output token
    v_empty: np.ndarray  # (m,)
    v_full: np.ndarray  # (m,)
    method: str
    params: dict = field(default_factory=dict)
    n_coalitions: int = 0  # distinct coalitions the game evaluated for this result

    @property
    def importance(self) -> np.ndarray:
        """Per-document importance: mean over output tokens (seed 001, eq. 11)."""
        return self.values.mean(axis=1)

    def efficiency_gap(self) -> np.ndarray:
        """Σ_i φ_ij − (v_j(D) − v_j(∅)) per output token (0 for an efficient estimate)."""
        return self.values.sum(axis=0) - (self.v_full - self.v_empty)


def _ends(game: Game) -> tuple[np.ndarray, np.ndarray]:
    n = game.n_players
    both = game.values(np.array([np.zeros(n, bool), np.ones(n, bool)]))
    return both[0], both[1]


class ExactShapley:
    """Eq. 7 by enumeration of all 2^n coalitions (one batch; the game caches)."""

    name = "exact"

    def __init__(self, max_players: int = 12) -> None:
        self.max_players = max_players

    def attribute(self, game: Game) -> ShapleyResult:
        n = game.n_players
        if n > self.max_players:
            raise ValueError(
                f"exact Shapley over {n} documents needs 2^{n} model calls; "
                f"use kernel, mc or pmc (or raise max_players)"
            )
        masks = np.array(list(itertools.product([False, True], repeat=n)), dtype=bool)
        vals = game.values(masks)
        index = {m.tobytes(): i for i, m in enumerate(masks)}
        phi = np.zeros((n, vals.shape[1]))
        for mask in masks:
            s = int(mask.sum())
            for i in np.flatnonzero(~mask):
                w = math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
                with_i = mask.copy()
                with_i[i] = True
                phi[i] += w * (vals[index[with_i.tobytes()]] - vals[index[mask.tobytes()]])
        empty, full = vals[index[np.zeros(n, bool).tobytes()]], vals[index[np.ones(n, bool).tobytes()]]
        return ShapleyResult(phi, empty, full, self.name, {}, len(masks))


def _one_player(v0: np.ndarray, v1: np.ndarray, method: str, params: dict) -> ShapleyResult:
    """The game of one document: its Shapley value is v(D) − v(∅), from the two coalitions there are."""
    return ShapleyResult((v1 - v0)[None, :], v0, v1, method, params, 2)


def _kernel_weight(n: int, s: int) -> float:
    return (n - 1) / (math.comb(n, s) * s * (n - s))


def _solve(z: np.ndarray, y: np.ndarray, w: np.ndarray, v0: np.ndarray, v1: np.ndarray) -> np.ndarray:
    """Constrained weighted least squares: min Σ w (y − v0 − zφ)² s.t. Σφ = v1 − v0."""
    n = z.shape[1]
    delta = v1 - v0
    if n == 1:
        return delta[None, :]
    a = z[:, :-1].astype(float) - z[:, -1:].astype(float)  # eliminate φ_n = Δ − Σ_{i<n} φ_i
    b = y - v0[None, :] - z[:, -1:].astype(float) * delta[None, :]
    sw = np.sqrt(w)[:, None]
    sol, *_ = np.linalg.lstsq(a * sw, b * sw, rcond=None)
    last = delta - sol.sum(axis=0)
    return np.vstack([sol, last[None, :]])


def _sample(n: int, count: int, rng: np.random.Generator, paired: bool) -> np.ndarray:
    sizes = np.arange(1, n)
    p = np.array([(n - 1) / (s * (n - s)) for s in sizes])
    p /= p.sum()
    out: list[np.ndarray] = []
    while len(out) < count:
        s = rng.choice(sizes, p=p)
        mask = np.zeros(n, bool)
        mask[rng.choice(n, size=s, replace=False)] = True
        out.append(mask)
        if paired and len(out) < count:
            out.append(~mask)
    return np.array(out, dtype=bool)


def _all_proper(n: int) -> tuple[np.ndarray, np.ndarray]:
    masks = np.array([m for m in itertools.product([False, True], repeat=n) if 0 < sum(m) < n], dtype=bool)
    return masks, np.array([_kernel_weight(n, int(m.sum())) for m in masks])


class KernelShap:
    """Eq. 8 on ``n_samples`` kernel-sampled coalitions (``paired``: with complements)."""

    name = "kernel"

    def __init__(self, n_samples: int = 20, *, paired: bool = False, seed: int = 0) -> None:
        self.n_samples, self.paired, self.seed = n_samples, paired, seed

    def _fit(self, game: Game, z: np.ndarray, w: np.ndarray, v0: np.ndarray, v1: np.ndarray) -> np.ndarray:
        return _solve(z, game.values(z), w, v0, v1)

    def attribute(self, game: Game) -> ShapleyResult:
        n = game.n_players
        v0, v1 = _ends(game)
        params = {"n_samples": self.n_samples, "paired": self.paired, "seed": self.seed}
        if n == 1:  # no proper coalition to sample: φ = v(D) − v(∅), the Shapley value
            return _one_player(v0, v1, self.name, params)
        if self.n_samples >= 2**n - 2:
            z, w = _all_proper(n)
        else:
            z = _sample(n, self.n_samples, np.random.default_rng(self.seed), self.paired)
            w = np.ones(len(z))
        phi = self._fit(game, z, w, v0, v1)
        return ShapleyResult(phi, v0, v1, self.name, params, len({m.tobytes() for m in z}) + 2)


class MCShap:
    """Algorithm 1: N coalitions evaluated once, M KernelSHAP fits on random subsets of N′."""

    name = "mc"
    paired = False

    def __init__(self, n_samples: int = 20, n_fits: int = 200, subset: int | None = None, *, seed: int = 0) -> None:
        self.n_samples, self.n_fits, self.seed = n_samples, n_fits, seed
        self.subset = subset

    def attribute(self, game: Game) -> ShapleyResult:
        n = game.n_players
        v0, v1 = _ends(game)
        if n == 1:  # no proper coalition to sample: φ = v(D) − v(∅), the Shapley value
            return _one_player(
                v0, v1, self.name, {"n_samples": self.n_samples, "n_fits": self.n_fits, "seed": self.seed}
            )
        rng = np.random.default_rng(self.seed)
        z = _sample(n, self.n_samples, rng, self.paired)
        y = game.values(z)  # every perturbation evaluated once
        n_sub = self.subset or max(n, round(0.8 * len(z)))
        n_sub = min(n_sub, len(z))
        if self.paired:
            pairs = [np.arange(i, min(i + 2, len(z))) for i in range(0, len(z), 2)]
            per = max(1, n_sub // 2)
        fits = []
        for _ in range(self.n_fits):
            if self.paired:
                chosen = rng.choice(len(pairs), size=min(per, len(pairs)), replace=False)
                idx = np.concatenate([pairs[c] for c in chosen])
            else:
                idx = rng.choice(len(z), size=n_sub, replace=False)
            fits.append(_solve(z[idx], y[idx], np.ones(len(idx)), v0, v1))
        params = {"n_samples": self.n_samples, "n_fits": self.n_fits, "subset": n_sub, "seed": self.seed}
        return ShapleyResult(np.mean(fits, axis=0), v0, v1, self.name, params, len({m.tobytes() for m in z}) + 2)


class PMCShap(MCShap):
    """Algorithm 1 with paired (complementary) coalitions — the paper's PMCSHAP."""

    name = "pmc"
    paired = True


class RankOrderMarginals:
    """Marginal contributions in the players' order (one permutation, the identity):

        φ_i = v({0, …, i}) − v({0, …, i − 1})   for every output token,

    from the n + 1 coalitions ∅, {0}, {0, 1}, …, D. Σ_i φ_i = v(D) − v(∅) (a telescoping sum), so
    it is efficient; for an additive game it equals the Shapley values; an interaction between
    players i < j is credited wholly to j (the later one), where Shapley splits it. One player:
    v(D) − v(∅), its Shapley value."""

    name = "marginal"

    def attribute(self, game: Game) -> ShapleyResult:
        n = game.n_players
        masks = np.array([np.arange(n) < k for k in range(n + 1)], dtype=bool)
        vals = game.values(masks)
        return ShapleyResult(np.diff(vals, axis=0), vals[0], vals[-1], self.name, {}, len(masks))


class LeaveOneOut:
    """φ_i = v(D) − v(D ∖ {i}) per output token, from n + 2 coalitions (the empty one for the
    efficiency gap). Not efficient in general (Σφ ≠ v(D) − v(∅) when players overlap or
    complement each other); for an additive game it equals the Shapley values. One player:
    v(D) − v(∅), its Shapley value."""

    name = "loo"

    def attribute(self, game: Game) -> ShapleyResult:
        n = game.n_players
        masks = np.array([np.zeros(n, bool), np.ones(n, bool)] + [~np.eye(n, dtype=bool)[i] for i in range(n)])
        vals = game.values(masks)
        phi = vals[1][None, :] - vals[2:]
        return ShapleyResult(phi, vals[0], vals[1], self.name, {}, len({m.tobytes() for m in masks}))


class Estimator(Protocol):
    """What every estimator is: a name and one call from a game to its attribution."""

    name: str

    def attribute(self, game: Game) -> ShapleyResult: ...


ESTIMATORS: dict[str, type[Estimator]] = {
    "exact": ExactShapley,
    "kernel": KernelShap,
    "mc": MCShap,
    "pmc": PMCShap,
    "marginal": RankOrderMarginals,
    "loo": LeaveOneOut,
}
"""Every estimator by name. ``marginal`` and ``loo`` are the anytime job's first-estimate estimators
(:data:`ragaudit_core.attribution.compute.FIRST_METHODS`); the user's choices are
:data:`ragaudit_core.defaults.SHAPLEY_METHODS`."""


def estimator(method: str, **params: Any) -> Estimator:
    """The estimator class for ``method`` (:data:`ESTIMATORS`), built with ``params``."""
    try:
        cls = ESTIMATORS[method]
    except KeyError:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(ESTIMATORS)}") from None
    return cls(**params)

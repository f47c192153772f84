"""Shapley estimators on games with known answers (the real-model tests are in test_attribution)."""

from __future__ import annotations

import numpy as np
import pytest

from ragaudit_core.attribution.shapley import CachedGame, ExactShapley, KernelShap, MCShap, PMCShap, estimator


def additive_game(weights):
    w = np.asarray(weights, dtype=float)  # (n, m)
    return CachedGame(len(w), lambda masks: masks.astype(float) @ w + 0.5)


def test_exact_on_an_additive_game_returns_the_weights():
    w = np.array([[1.0, 0.0], [2.0, -1.0], [0.5, 3.0]])
    r = ExactShapley().attribute(additive_game(w))
    np.testing.assert_allclose(r.values, w, atol=1e-12)
    np.testing.assert_allclose(r.efficiency_gap(), 0, atol=1e-12)
    np.testing.assert_allclose(r.importance, w.mean(axis=1))


def test_exact_by_hand_on_a_glove_game():
    # v(S) = 1 if S holds player 0 and (1 or 2): φ0 = 2/3, φ1 = φ2 = 1/6 (worked out over 3! orders)
    game = CachedGame(3, lambda m: (m[:, 0] & (m[:, 1] | m[:, 2])).astype(float)[:, None])
    r = ExactShapley().attribute(game)
    np.testing.assert_allclose(r.values[:, 0], [2 / 3, 1 / 6, 1 / 6], atol=1e-12)
    assert game.n_evaluated == 8


def test_kernel_with_every_coalition_equals_exact():
    rng = np.random.default_rng(3)
    table = rng.normal(size=(2**5, 4))
    game = CachedGame(5, lambda m: table[m.astype(int) @ (1 << np.arange(5))])
    exact = ExactShapley().attribute(game).values
    np.testing.assert_allclose(KernelShap(n_samples=30).attribute(game).values, exact, atol=1e-9)


def test_estimators_are_efficient_seeded_and_converge():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(2**6, 3))
    game = CachedGame(6, lambda m: table[m.astype(int) @ (1 << np.arange(6))])
    exact = ExactShapley().attribute(game).values
    for cls in (KernelShap, MCShap, PMCShap):
        est = cls(n_samples=20, seed=1) if cls is KernelShap else cls(n_samples=20, n_fits=50, seed=1)
        r = est.attribute(game)
        np.testing.assert_allclose(r.efficiency_gap(), 0, atol=1e-9)  # constraint holds exactly
        again = (cls(n_samples=20, seed=1) if cls is KernelShap else cls(n_samples=20, n_fits=50, seed=1)).attribute(
            game
        )
        np.testing.assert_array_equal(r.values, again.values)  # reproducible
    mse = {n: np.mean((KernelShap(n_samples=n, seed=2).attribute(game).values - exact) ** 2) for n in (8, 62)}
    assert mse[62] < 1e-20 < mse[8]


def test_estimator_factory():
    assert isinstance(estimator("pmc", n_samples=10), PMCShap)
    with pytest.raises(ValueError, match="unknown method"):
        estimator("lime")
    with pytest.raises(ValueError, match="2\\^13"):
        ExactShapley().attribute(CachedGame(13, lambda m: np.zeros((len(m), 1))))


@pytest.mark.parametrize("method", ["exact", "kernel", "mc", "pmc", "marginal", "loo"])
def test_one_document_is_its_own_shapley_value_for_every_estimator(method):
    """One player: no proper coalition to sample; φ = v(D) − v(∅) = (2.5 − 0.5, −1 − 0.5), by hand."""
    game = CachedGame(1, lambda m: np.where(m[:, :1], [[2.5, -1.0]], [[0.5, 0.5]]))
    r = estimator(method).attribute(game)
    np.testing.assert_allclose(r.values, [[2.0, -1.5]], atol=1e-12)
    np.testing.assert_allclose(r.efficiency_gap(), 0, atol=1e-12)

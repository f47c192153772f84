"""RBO / WARG (seed 001, eq. 12) and the failure modes, against values worked out by hand."""

from __future__ import annotations

import pytest

from ragaudit_core.attribution.alignment import failure_modes, generator_ranking, rank_spearman, rbo, warg, warg_floor


def test_identical_lists_hit_the_truncation_floor():
    s = ["a", "b", "c", "d", "e"]
    # (1 − p) Σ_{d=1..5} p^{d−1} · 1 = 1 − p^5
    assert rbo(s, s, 0.5) == pytest.approx(1 - 0.5**5)
    assert warg(s, s, 0.5) == pytest.approx(0.03125) == pytest.approx(warg_floor(5, 0.5))
    assert warg(s, s, 0.9) == pytest.approx(0.9**5)
    assert rbo(s, s, 0.9, extrapolated=True) == pytest.approx(1.0)  # the option removes the floor
    assert warg(s, s, 0.9, extrapolated=True) == pytest.approx(0.0)


def test_reversed_list_by_hand():
    s, t = ["a", "b", "c"], ["c", "b", "a"]
    # X = [0, 1, 3]; p = 0.5: 0.5 · (0/1 + 0.5 · 1/2 + 0.25 · 3/3) = 0.5 · 0.5 = 0.25
    assert rbo(s, t, 0.5) == pytest.approx(0.25)
    assert warg(s, t, 0.5) == pytest.approx(0.75)
    # extrapolated: (3/3)·0.125 + (0.5/0.5)·(0·0.5 + (1/2)·0.25 + 1·0.125) = 0.125 + 0.25 = 0.375
    assert rbo(s, t, 0.5, extrapolated=True) == pytest.approx(0.375)


def test_disjoint_tops_by_hand():
    s, t = ["a", "b", "c", "d"], ["c", "d", "a", "b"]
    # X = [0, 0, 2, 4]; p = 0.8: 0.2 · (0 + 0 + 0.64 · 2/3 + 0.512 · 1) = 0.2 · 0.938667 = 0.187733
    assert rbo(s, t, 0.8) == pytest.approx(0.2 * (0.64 * 2 / 3 + 0.512))
    fully = rbo(["a", "b"], ["c", "d"], 0.5)
    assert fully == 0.0 and warg(["a", "b"], ["c", "d"], 0.5) == 1.0


def test_symmetry_and_bounds():
    s, t = ["a", "b", "c", "d", "e"], ["b", "e", "a", "d", "c"]
    for p in (0.5, 0.7, 0.9):
        assert rbo(s, t, p) == pytest.approx(rbo(t, s, p))
        assert 0.0 <= warg(s, t, p) <= 1.0
    with pytest.raises(ValueError):
        rbo(s, t, 1.0)
    with pytest.raises(ValueError):
        rbo(["a", "a"], ["a", "b"], 0.5)
    assert rbo([], [], 0.5) == 1.0


def test_generator_ranking_ties_keep_retriever_order():
    assert generator_ranking(["d0", "d1", "d2"], [0.1, 0.3, 0.1]) == ["d1", "d0", "d2"]


def test_failure_modes_on_hand_made_rankings():
    ret = ["d0", "d1", "d2", "d3", "d4"]
    assert failure_modes(ret, ret) == {"wasted_retrieval": False, "noise_distraction": False}
    # the retriever's top document falls to generator rank 3 (> 2): wasted retrieval
    assert failure_modes(ret, ["d1", "d2", "d4", "d0", "d3"]) == {"wasted_retrieval": True, "noise_distraction": False}
    # the generator's top document was the retriever's rank 4 (> 2): noise distraction
    assert failure_modes(ret, ["d4", "d0", "d1", "d2", "d3"]) == {"wasted_retrieval": False, "noise_distraction": True}
    # both at once; and rank exactly 2 is not a failure
    assert failure_modes(ret, ["d3", "d1", "d2", "d4", "d0"]) == {"wasted_retrieval": True, "noise_distraction": True}
    assert failure_modes(ret, ["d2", "d1", "d0", "d3", "d4"]) == {"wasted_retrieval": False, "noise_distraction": False}


def test_rank_spearman_sign():
    assert rank_spearman([0.5, 0.3, 0.2, 0.1]) == pytest.approx(1.0)  # importance falls with rank: agreement
    assert rank_spearman([0.1, 0.2, 0.3, 0.5]) == pytest.approx(-1.0)
    assert rank_spearman([0.2, 0.2, 0.2]) is None

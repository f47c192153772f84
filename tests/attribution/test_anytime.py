"""The anytime attribution job (issue #24 item 5): a first estimate (marginal contributions in
retriever order — or leave-one-out —, few IG points on the query side) handed over before the
exact refinement, its JSON round trip, and its agreement with exact —
all on hand-worked games (no model is loaded; the real-model case is in test_anytime_models)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragaudit_core.attribution import compute
from ragaudit_core.attribution.alignment import estimate_agreement
from ragaudit_core.attribution.compute import compute_attribution, job_params, leave_one_out
from ragaudit_core.attribution.result import AttributionResult
from ragaudit_core.attribution.saliency import SaliencyResult
from ragaudit_core.attribution.shapley import ESTIMATORS, CachedGame, ExactShapley, RankOrderMarginals, estimator
from ragaudit_core.jobs import partial

W = np.array([1.0, 2.0, 3.0])


def _v(masks: np.ndarray) -> np.ndarray:
    """Three documents, two answer tokens: token 0 is additive (1, 2, 3); token 1 adds 2 more
    when documents 0 and 1 are both present (an interaction) on top of the same weights."""
    masks = np.asarray(masks, bool)
    add = masks @ W
    return np.stack([add, add + 2.0 * (masks[:, 0] & masks[:, 1])], axis=1)


def test_leave_one_out_by_hand():
    """Token 0: φ = (1, 2, 3), the Shapley values of an additive game. Token 1: v(D) = 8,
    v(D∖0) = 5, v(D∖1) = 4, v(D∖2) = 5 → φ = (3, 4, 3) (sum 10 ≠ 8: not efficient), where exact
    Shapley splits the interaction: (2, 3, 3)."""
    game = CachedGame(3, _v)
    res = leave_one_out(game)
    assert res.values[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert res.values[:, 1].tolist() == [3.0, 4.0, 3.0]
    assert res.n_coalitions == 5 and game.n_evaluated == 5
    assert res.efficiency_gap().tolist() == [0.0, 2.0]
    exact = ExactShapley().attribute(game)  # reuses the 5, computes the other 3
    assert game.n_evaluated == 8
    assert exact.values[:, 1] == pytest.approx([2.0, 3.0, 3.0])
    assert np.abs(exact.efficiency_gap()).max() < 1e-12


def test_marginals_in_rank_order_by_hand():
    """Coalitions ∅, {0}, {0, 1}, D. Token 0 (additive): v = 0, 1, 3, 6 → φ = (1, 2, 3), the Shapley
    values. Token 1: v = 0, 1, 5, 8 → φ = (1, 4, 3): the interaction of documents 0 and 1 goes wholly
    to document 1 (the later one), where exact Shapley splits it, (2, 3, 3). Σφ = 8 = v(D) − v(∅)."""
    game = CachedGame(3, _v)
    res = RankOrderMarginals().attribute(game)
    assert res.values[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert res.values[:, 1].tolist() == [1.0, 4.0, 3.0]
    assert res.n_coalitions == 4 and game.n_evaluated == 4 and res.method == "marginal"
    assert res.efficiency_gap().tolist() == [0.0, 0.0]
    assert ExactShapley().attribute(game).values[:, 1] == pytest.approx([2.0, 3.0, 3.0])
    assert game.n_evaluated == 8  # the exact walk reuses the 4
    one = RankOrderMarginals().attribute(CachedGame(1, lambda m: np.asarray(m, float) @ np.array([[5.0, -1.0]])))
    assert one.values.tolist() == [[5.0, -1.0]] and one.n_coalitions == 2


def test_first_estimators_are_registered_and_count_their_coalitions():
    assert ESTIMATORS["marginal"] is RankOrderMarginals and estimator("loo").name == "loo"
    assert compute.FIRST_METHOD in compute.FIRST_METHODS
    assert [compute._coalitions_asked("marginal", n) for n in (1, 3, 5)] == [2, 4, 6]
    assert [compute._coalitions_asked("loo", n) for n in (1, 3, 5)] == [2, 5, 7]


def test_leave_one_out_of_one_document_is_its_shapley_value():
    res = leave_one_out(CachedGame(1, lambda m: np.asarray(m, float) @ np.array([[5.0, -1.0]])))
    assert res.values.tolist() == [[5.0, -1.0]] and res.n_coalitions == 2


def test_estimate_agreement_by_hand():
    """ranks (1, 3, 2) and (2, 3, 1): d = (−1, 0, 1), ρ = 1 − 6·2 / (3·8) = 0.5; top document 1 both."""
    assert estimate_agreement([0.1, 0.5, 0.3], [0.2, 0.6, 0.1]) == {"spearman": 0.5, "top_agrees": True}
    got = estimate_agreement([0.9, 0.5, 0.3], [0.2, 0.6, 0.1])
    assert got["top_agrees"] is False and got["spearman"] == pytest.approx(0.5)
    assert estimate_agreement([1.0, 1.0, 1.0], [0.2, 0.6, 0.1]) == {"spearman": None, "top_agrees": False}
    with pytest.raises(ValueError):
        estimate_agreement([1.0], [1.0, 2.0])


class _FakeGame:
    """Stands in for the generator game: the hand-worked value function above."""

    def __init__(self) -> None:
        self.answer_text, self.answer_tokens = "ab", ["a", "b"]
        self.n_forward_tokens = 0
        self.on_coalition = None

    def values(self, masks: np.ndarray) -> np.ndarray:
        if self.on_coalition:
            for _ in masks:
                self.on_coalition(1)
        self.n_forward_tokens += 10 * len(masks)
        return _v(masks)


class _FakeSaliency:
    """IG whose completeness is 1 − 1/steps (a few points are worse than many)."""

    def __init__(self, _enc: object) -> None:
        pass

    def attribute(self, query: str, text: str, *, side: str, steps: int, baseline: str, method: str):
        beta = np.array([0.5, 0.5]) * (1 - 1 / steps)
        return SaliencyResult(side, ["x", "y"], beta, ["xy"], np.array([beta.sum()]), 1.0, 0.0, steps, baseline, method)


@pytest.fixture()
def fake_models(monkeypatch):
    def answer_games(query, docs, gen, params, conditions, batch_size, clock):
        g = _FakeGame()
        clock.tick("prefill", "Generating the answer: token 1")
        return [compute._Answered("original", [0, 1, 2], g, CachedGame(3, g.values), 0.0)]

    monkeypatch.setattr(compute, "_answer_games", answer_games)
    monkeypatch.setattr("ragaudit_core.attribution.saliency.RetrieverSaliency", _FakeSaliency)


def _params() -> dict:
    return job_params(
        "exact", max_docs=3, max_new_tokens=2, ig_steps=24, ig_baseline="unk", seed=0, n_samples=20, n_fits=200
    )


def test_first_estimate_comes_before_exact_and_exact_is_efficient(fake_models):
    docs = [("d0", "t0"), ("d1", "t1"), ("d2", "t2")]
    events: list[tuple[str, object]] = []
    kw = dict(embedder=object(), generator=object(), method="exact", params=_params())
    (exact,) = compute_attribution(
        "r", "q", "query", docs, **kw,
        progress=lambda label, frac: events.append(("progress", label)),
        on_partial=lambda rs: events.append(("partial", rs)),
    )  # fmt: skip
    kinds = [k for k, _ in events]
    assert kinds.count("partial") == 1
    (first,) = next(x for k, x in events if k == "partial")
    at = kinds.index("partial")
    assert first.estimate_stage == "first" and exact.estimate_stage == "exact"
    assert first.method == "marginal" and first.n_coalitions == 4
    assert np.array(first.values).tolist() == [[1.0, 1.0], [2.0, 4.0], [3.0, 3.0]]
    # the first estimate's IG: the query side only, at FIRST_IG_STEPS points; exact: both sides at 24
    assert first.ig_documents == [] and len(first.ig_query) == 3
    assert first.ig_query[0].steps == compute.FIRST_IG_STEPS and exact.ig_documents[0].steps == 24
    assert first.completeness_max_dev() == pytest.approx(1 / compute.FIRST_IG_STEPS)
    assert exact.completeness_max_dev() == pytest.approx(1 / 24)
    assert first.efficiency_gap() == 0.0  # marginal contributions telescope
    assert exact.efficiency_gap() < 1e-12 and exact.n_coalitions == 8
    assert np.array(exact.values)[:, 1] == pytest.approx([2.0, 3.0, 3.0])
    # every label after the partial is the refinement's; the first estimate's labels come before it
    later = [x for k, x in events[at + 1 :] if k == "progress"]
    assert not any("first estimate" in str(x).lower() for x in later[:-1])
    assert any("First estimate (marginal contributions in retriever order)" in str(x) for k, x in events[:at])
    assert exact.timings_s["first"] <= exact.timings_s["total"]
    assert exact.timings_s["lm_tokens"] == 80.0  # 4 coalitions, then the other 4, 10 "tokens" each
    assert exact.timings_s["first_lm_tokens"] == 40.0


def test_leave_one_out_stays_selectable_as_the_first_estimate(fake_models):
    got: list[AttributionResult] = []
    (exact,) = compute_attribution(
        "r", "q", "query", [("d0", "a"), ("d1", "b"), ("d2", "c")], embedder=object(), generator=object(),
        method="exact", params=_params(), on_partial=got.extend, first_method="loo",
        first_ig_sides=("document", "query"),
    )  # fmt: skip
    (first,) = got
    assert first.method == "loo" and first.n_coalitions == 5
    assert np.array(first.values).tolist() == [[1.0, 3.0], [2.0, 4.0], [3.0, 3.0]]
    assert first.efficiency_gap() == pytest.approx(2.0)
    assert len(first.ig_documents) == 3 and len(first.ig_query) == 3
    assert exact.n_coalitions == 8 and np.array(exact.values)[:, 1] == pytest.approx([2.0, 3.0, 3.0])
    got.clear()
    compute_attribution(
        "r", "q", "query", [("d0", "a"), ("d1", "b"), ("d2", "c")], embedder=object(), generator=object(),
        method="exact", params=_params(), on_partial=got.extend, first_ig_sides=(),
    )  # fmt: skip
    assert got[0].ig_documents == [] and got[0].ig_query == [] and got[0].completeness_max_dev() == 0.0
    with pytest.raises(ValueError, match="first-estimate method"):
        compute_attribution(
            "r", "q", "query", [("d0", "a")], embedder=object(), generator=object(),
            method="exact", params=_params(), on_partial=got.extend, first_method="pmc",
        )  # fmt: skip


def test_without_a_listener_the_job_computes_exact_only(fake_models):
    (exact,) = compute_attribution(
        "r", "q", "query", [("d0", "a"), ("d1", "b"), ("d2", "c")],
        embedder=object(), generator=object(), method="exact", params=_params(),
    )  # fmt: skip
    assert exact.estimate_stage == "exact" and "first" not in exact.timings_s
    assert np.array(exact.values).ravel() == pytest.approx([1.0, 2.0, 2.0, 3.0, 3.0, 3.0])


def test_stage_round_trips_through_json_and_old_payloads_are_exact(fake_models):
    got: list[AttributionResult] = []
    compute_attribution(
        "r", "q", "query", [("d0", "a"), ("d1", "b"), ("d2", "c")],
        embedder=object(), generator=object(), method="exact", params=_params(), on_partial=got.extend,
    )  # fmt: skip
    (first,) = got
    d = first.to_json()
    assert d["estimate_stage"] == "first"
    assert AttributionResult.from_json(d) == first
    old = {k: v for k, v in d.items() if k != "estimate_stage"}
    assert AttributionResult.from_json(old).estimate_stage == "exact"


def test_partial_file_round_trip(tmp_path):
    db = tmp_path / "a.duckdb"
    assert partial.read(db, "j1") is None
    partial.write(db, "j1", [{"estimate_stage": "first", "values": [[1.0]]}])
    assert partial.read(db, "j1") == [{"estimate_stage": "first", "values": [[1.0]]}]
    assert partial.partial_file(db, "j1") == tmp_path / ".a.duckdb.partial" / "j1.json"
    partial.clear(db, "j1")
    assert partial.read(db, "j1") is None
    partial.write(":memory:", "j1", [{}])  # nowhere to keep it: dropped
    assert partial.read(":memory:", "j1") is None


def test_exact_shapley_of_the_fixture_by_enumeration():
    """The hand-worked exact values above, checked against eq. 7 written out."""
    n = 3
    phi = np.zeros((n, 2))
    for i in range(n):
        others = [j for j in range(n) if j != i]
        for r in range(n):
            for s in itertools.combinations(others, r):
                m = np.zeros(n, bool)
                m[list(s)] = True
                w = 1 / (n * len(list(itertools.combinations(others, r))))
                with_i = m.copy()
                with_i[i] = True
                phi[i] += w * (_v(with_i[None])[0] - _v(m[None])[0])
    assert phi[:, 1] == pytest.approx([2.0, 3.0, 3.0])


def test_trie_tokens_by_hand():
    """Prompts (1 2 3), (1 2 4), (5) with 2 answer tokens: 5, then 3 (shares 1 2), then 3 → 11."""
    from ragaudit_core.attribution.generator_game import GeneratorGame

    assert GeneratorGame.trie_tokens([[1, 2, 3], [1, 2, 4], [5]], 2) == 11
    assert GeneratorGame.trie_tokens([[1, 2], [1, 2]], 1) == 3 + 2  # the same prompt: its last token again

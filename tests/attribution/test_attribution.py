"""Attribution on the real packaged models: MiniLM (IG) and SmolLM2 (document Shapley)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ragaudit_core.attribution.generator_game import GeneratorGame
from ragaudit_core.attribution.saliency import RetrieverSaliency
from ragaudit_core.attribution.shapley import CachedGame, ExactShapley, KernelShap, PMCShap
from ragaudit_core.models import load_embedder, load_generator

pytestmark = pytest.mark.slow

QUERY = "Where was Marie Curie born?"
DOCS = [
    "Marie Curie was born in Warsaw in 1867.",
    "Paris is the capital of France and home to many scientists.",
    "Curie won two Nobel prizes, in physics and in chemistry.",
    "The Eiffel tower in Paris was built in 1889.",
    "Warsaw is the capital city of Poland, on the Vistula river.",
]


@pytest.fixture(scope="module")
def saliency():
    return RetrieverSaliency(load_embedder(device="cpu"))


@pytest.fixture(scope="module")
def game():
    return GeneratorGame.generate(load_generator(device="cpu"), QUERY, DOCS, max_new_tokens=16, batch_size=8)


def test_ig_score_is_sentence_transformers_cosine(saliency):
    enc = saliency.st
    ref = float(enc.encode([QUERY], normalize_embeddings=True)[0] @ enc.encode([DOCS[0]], normalize_embeddings=True)[0])
    assert saliency.score(QUERY, DOCS[0]) == pytest.approx(ref, abs=1e-6)


@pytest.mark.parametrize("side", ["query", "document"])
def test_ig_completeness_at_100_steps(saliency, side):
    r = saliency.attribute(QUERY, DOCS[0], side=side, steps=100)
    assert r.completeness == pytest.approx(1.0, abs=0.05)
    assert r.attributions.sum() == pytest.approx(r.score - r.baseline_score, abs=0.05 * abs(r.score - r.baseline_score))
    assert r.tokens[0] == "[CLS]" and r.tokens[-1] == "[SEP]"
    assert r.attributions[0] == 0 and r.attributions[-1] == 0  # special tokens equal in x and x⁰
    text = QUERY if side == "query" else DOCS[0]
    assert " ".join(r.words).replace(" ?", "?").replace(" .", ".") == text
    assert r.word_attributions.sum() == pytest.approx(r.attributions.sum())


def test_ig_baselines_differ_on_the_real_model(saliency):
    """Each baseline x⁰ is a different input: its score s(x⁰) and the attributions differ
    from every other baseline's, while each still satisfies completeness."""
    res = {
        b: saliency.attribute(QUERY, DOCS[0], side="query", baseline=b, steps=50)
        for b in ("unk", "mask", "pad", "zeros")
    }
    for b, r in res.items():
        assert r.baseline == b and r.completeness == pytest.approx(1.0, abs=0.1)
        assert r.attributions[0] == 0 and r.attributions[-1] == 0  # [CLS]/[SEP] kept in every baseline
    names = list(res)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ra, rb = res[a], res[b]
            assert abs(ra.baseline_score - rb.baseline_score) > 1e-3, (a, b)
            assert np.abs(ra.attributions - rb.attributions).max() > 1e-3, (a, b)
            assert ra.score == pytest.approx(rb.score, abs=1e-6)  # the same input x


def test_batched_and_unbatched_coalition_values_agree(game):
    masks = np.array(list(itertools.product([False, True], repeat=5)), dtype=bool)[::3]
    a = game.values(masks)
    b = game.naive_values(masks)
    assert a.shape == (len(masks), len(game.answer_ids))
    np.testing.assert_allclose(a, b, atol=1e-4)
    batched = GeneratorGame(game.gen, QUERY, DOCS, game.answer_ids, strategy="batched", batch_size=4)
    np.testing.assert_allclose(batched.values(masks), b, atol=1e-4)
    single = GeneratorGame(game.gen, QUERY, DOCS, game.answer_ids, strategy="batched", batch_size=1, prefix_cache=False)
    np.testing.assert_allclose(single.values(masks), b, atol=1e-4)


def test_exact_shapley_efficiency_and_estimators_converge(game):
    cached = CachedGame(5, game.values)
    exact = ExactShapley().attribute(cached)
    # efficiency per output token: Σ_i φ_ij = v_j(D) − v_j(∅)
    np.testing.assert_allclose(exact.efficiency_gap(), 0, atol=1e-6)
    assert exact.values.shape == (5, len(game.answer_ids))
    mse = {}
    for cls in (KernelShap, PMCShap):
        for n in (6, 14, 30):
            est = cls(n_samples=n, seed=0) if cls is KernelShap else cls(n_samples=n, n_fits=50, seed=0)
            mse[(cls.name, n)] = float(np.mean((est.attribute(cached).values - exact.values) ** 2))
    assert mse[("kernel", 30)] < 1e-12  # all 30 proper coalitions: exact
    assert mse[("kernel", 6)] > mse[("kernel", 30)]
    assert mse[("pmc", 30)] < mse[("pmc", 6)]


def _log_with_texts(tmp_path):
    from tests.helpers import write_jsonl

    return write_jsonl(
        tmp_path / "run.jsonl",
        [
            {
                "run_id": "base",
                "query_id": "q1",
                "query": QUERY,
                # D0 twice: two chunks of one document are two retrieved items
                "evidence": [{"doc_id": d, "text": t} for d, t in zip(["D0", "D1", "D0"], DOCS[:3])],
            }
        ],
    )


def test_explain_query_stores_and_serves_again(tmp_path, game, saliency):
    import json

    from ragaudit_core.attribution import AttributionResult, batch_tables, explain_query, stored_attribution
    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths

    con = store.connect(tmp_path / "a.duckdb")
    ingest_paths(con, [_log_with_texts(tmp_path)])
    kw = dict(retriever_name="minilm", generator_name="smollm2", ig_steps=20, max_new_tokens=10, shuffle=True)
    orig, shuf = explain_query(con, "base", "q1", embedder=saliency.st, generator=game.gen, **kw)
    assert orig.method == "exact" and orig.doc_ids == ["d0", "d1", "d0"]  # canonical ids
    assert sorted(orig.generator_ranking) == [0, 1, 2]  # retrieved items by position
    assert orig.generator_ranking_doc_ids == [orig.doc_ids[i] for i in orig.generator_ranking]
    values = np.array(orig.values)
    np.testing.assert_allclose(values.sum(axis=0), np.array(orig.v_full) - np.array(orig.v_empty), atol=1e-6)
    assert orig.answer == shuf.answer  # the shuffled run explains the same answer
    assert set(orig.warg) == {0.5, 0.6, 0.7, 0.8, 0.9}
    assert orig.warg_floor[0.5] == pytest.approx(0.125)  # 0.5^3
    assert len(orig.ig_documents) == 3 and all(abs(r.completeness - 1) < 0.1 for r in orig.ig_query)
    # the JSON round trip (what is stored, what --json writes) gives the same result back
    js = orig.to_json()
    assert set(js["warg"]) == {"0.5", "0.6", "0.7", "0.8", "0.9"}
    assert AttributionResult.from_json(json.loads(json.dumps(js))) == orig

    def boom():
        raise AssertionError("a stored result must not load a model")

    again = explain_query(con, "base", "q1", embedder=boom, generator=boom, **kw)
    assert again[0] == orig
    assert len(stored_attribution(con, "base", "q1")) == 2
    tables = batch_tables(con, "base")
    assert set(tables["failure"]["condition"]) == {"original", "shuffled"}
    assert list(tables["failure"]["queries"]) == [1, 1]
    iv = tables["intervals"].set_index(["condition", "metric"])  # one query a condition: Wilson only
    wasted = iv.loc[("original", "wasted_retrieval")]
    assert wasted["method"] == "wilson" and wasted["n"] == 1
    assert iv.loc[("original", "spearman")].isna()[["lo", "hi"]].all()


def test_aipc_prefers_ig_over_its_reverse(saliency):
    from ragaudit_core.attribution.saliency import perturbation_aipc

    doc = "Marie Curie was born in Warsaw in 1867 and later moved to Paris, where she studied physics."
    r = saliency.attribute(QUERY, doc, side="document", steps=50)
    forward = perturbation_aipc(saliency, QUERY, doc, r.attributions)
    backward = perturbation_aipc(saliency, QUERY, doc, -r.attributions)
    assert forward > 0 > backward  # removing IG's top tokens first hurts the match most
    assert forward == pytest.approx(-backward)  # MoRF and LeRF swap places
    assert -1.0 <= backward <= forward <= 1.0


def test_a_recorded_jobs_time_left_never_climbs_by_more_than_a_fifth(game, saliency):
    """Progress as the worker writes it (at most every 0.5 s) on a real five-document explanation:
    the time left the page shows (elapsed / fraction − elapsed, from 5 % done and 3 s in) never
    rises by over 20 % between two updates (a rise under 0.2 s is the clock's grain near a job's
    end, not a climb), and every phase (IG, generation, coalitions) reports."""
    import time

    from ragaudit_core.attribution.compute import compute_attribution, job_params
    from ragaudit_core.jobs.queue import ETA_AFTER_S

    docs = [(f"d{i}", t) for i, t in enumerate(DOCS)]
    t0, seen, last = time.perf_counter(), [], [-1.0]

    labels: list[str] = []

    def progress(label: str, fraction: float) -> None:
        labels.append(label)
        now = time.perf_counter() - t0
        if now - last[0] >= 0.5 and 0.05 <= fraction < 1 and now >= ETA_AFTER_S:  # when a page shows one
            last[0] = now
            seen.append((now, label, now / fraction - now))

    from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS as D

    params = job_params(
        "exact",
        **{k: D[k] for k in ("max_docs", "ig_baseline", "seed", "n_samples", "n_fits")},
        ig_steps=24,
        max_new_tokens=24,
    )
    kw = dict(embedder=saliency.st, generator=game.gen, method="exact", params=params)
    compute_attribution("r", "q", QUERY, docs, **kw)  # a worker's first job: it prices the next ones
    t0 = time.perf_counter()
    compute_attribution(
        "r",
        "q",
        QUERY,
        docs,
        embedder=saliency.st,
        generator=game.gen,
        method="exact",
        params=params,
        progress=progress,
    )
    assert {label.split(":")[0].split(" ")[0] for label in labels} >= {"IG", "Generating", "Shapley"}
    assert len(seen) >= 3  # the job ran long enough to show a time left several times
    lefts = [left for _, _, left in seen]
    rises = [(a, b) for a, b in itertools.pairwise(lefts) if b > 1.2 * a and b - a > 0.2]
    assert not rises, (rises, seen)

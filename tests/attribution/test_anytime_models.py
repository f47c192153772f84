"""The anytime attribution job on the real packaged models (issue #24 item 5): the first estimate
arrives before the exact refinement, the refinement is efficient, and it equals a job without a
first stage up to float rounding (the coalitions are then computed in other chunks of the trie)."""

from __future__ import annotations

import numpy as np
import pytest

from ragaudit_core.attribution.compute import compute_attribution, job_params
from ragaudit_core.models import load_embedder, load_generator

pytestmark = pytest.mark.slow

QUERY = "Where was Marie Curie born?"
DOCS = [
    ("d0", "Marie Curie was born in Warsaw in 1867."),
    ("d1", "Paris is the capital of France and home to many scientists."),
    ("d2", "Warsaw is the capital city of Poland, on the Vistula river."),
]


def test_first_estimate_then_exact_on_the_real_models():
    emb, gen = load_embedder(device="cpu"), load_generator(device="cpu")
    params = job_params(
        "exact", max_docs=3, max_new_tokens=8, ig_steps=8, ig_baseline="unk", seed=0, n_samples=20, n_fits=200
    )
    kw = dict(embedder=emb, generator=gen, method="exact", params=params)
    events: list[str] = []
    firsts = []

    def on_partial(rs):
        events.append("first")
        firsts.extend(rs)

    (exact,) = compute_attribution("r", "q", QUERY, DOCS, **kw, on_partial=on_partial)
    events.append("exact")
    assert events == ["first", "exact"]
    (first,) = firsts
    assert first.estimate_stage == "first" and first.method == "marginal"
    assert first.n_coalitions == 4 and exact.n_coalitions == 8
    assert first.answer == exact.answer and first.v_full == exact.v_full and first.v_empty == exact.v_empty
    assert exact.efficiency_gap() < 1e-4 and first.efficiency_gap() < 1e-4  # marginals telescope
    # the first stage's prompts are prefixes of the full prompt: it computes fewer LM tokens than
    # the rest of the walk
    assert 0 < exact.timings_s["first_lm_tokens"] < exact.timings_s["lm_tokens"] - exact.timings_s["first_lm_tokens"]
    (plain,) = compute_attribution("r", "q", QUERY, DOCS, **kw)  # today's path: no first stage
    assert np.abs(np.array(plain.values) - np.array(exact.values)).max() < 1e-3
    assert exact.timings_s["first"] < exact.timings_s["total"]

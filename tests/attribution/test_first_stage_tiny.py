"""The first estimate's coalitions on a real (tiny, random) causal LM (issue #24 item 5): the marginal
contributions along the retriever order reuse the generation's KV cache of the full prompt (the
anchor), so each coalition computes only what follows its documents, and their values equal the
cache-free reference. A tiny random Llama and a character-level tokenizer built here: plumbing
without a download (the packaged models' case is test_anytime_models, marked slow)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.helpers import CharTokens, tiny_llama  # noqa: E402


class CharChat(CharTokens):
    """One token per character; the chat template writes ``S:``, ``U:`` and ``A:`` turns."""

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join("" if i < 3 else chr(i - 3) for i in ids)

    def apply_chat_template(self, messages: list[dict], tokenize: bool, add_generation_prompt: bool) -> str:
        return "".join(f"{m['role'][0].upper()}:{m['content']}\n" for m in messages) + "A:"


@pytest.fixture(scope="module")
def gen():
    model = tiny_llama(max_position_embeddings=2048, eos_token_id=1, pad_token_id=0)
    return SimpleNamespace(model=model, tokenizer=CharChat(), device="cpu", name="tiny")


DOCS = ["Warsaw is in Poland.", "Paris is in France.", "Curie was born in Warsaw."]
QUERY = "Where was Curie born?"


def _common(a: list[int], b: list[int]) -> int:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return k


def test_marginal_coalitions_start_from_the_generations_cache(gen):
    """Coalition {d1..dk}'s prompt shares the full prompt up to its documents: with the anchor it
    computes len(prompt_k) − lcp(prompt_k, full) prompt tokens and the m answer tokens — the query's
    line, the template's end and the answer; the full coalition only its last prompt token and the
    answer. Their values equal the cache-free reference (1e-5)."""
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.shapley import CachedGame, RankOrderMarginals

    game = GeneratorGame.generate(gen, QUERY, DOCS, max_new_tokens=4)
    m, n = len(game.answer_ids), len(DOCS)
    assert m >= 1 and game.anchor is not None
    full = game.prompt_ids(np.ones(n, bool))
    masks = [np.arange(n) < k for k in range(n + 1)]
    prompts = [game.prompt_ids(mk) for mk in masks]
    expected = sum(len(p) - min(_common(p, full), len(p) - 1) + m for p in prompts)
    tail = len(game.prompt_ids(np.zeros(n, bool))) - len(gen.tokenizer(f"S:{_system()}\nU:")["input_ids"])
    res = RankOrderMarginals().attribute(CachedGame(n, game.values))
    assert game.n_forward_tokens == expected
    # what each computes is the query's line and the template's end ("\nQuery: …\nA:"), not its documents
    assert expected <= (n + 1) * (tail + m + 1)
    assert expected < sum(len(p) + m for p in prompts) / 3
    ref = game.naive_values(np.array(masks))
    assert np.abs(np.diff(ref, axis=0) - res.values).max() < 1e-5
    assert np.abs(res.values.sum(axis=0) - (ref[-1] - ref[0])).max() < 1e-5  # efficient


def _system() -> str:
    from ragaudit_core.prompts import SYSTEM_PROMPT

    return SYSTEM_PROMPT

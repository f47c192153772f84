"""The generator as a cooperative game over its context documents (seed 001, §3.2).

The answer is generated once, greedily, with every document (eq. 9). For a coalition
D′ ⊆ D the prompt is rebuilt with only those documents, in their original order and the
appendix-B format (:func:`ragaudit_core.prompts.build_prompt`), and the value of each answer token is
its log-probability under teacher forcing on the *original* answer (constrained
generation, eq. 10). So ``values`` returns, for k coalitions, a (k, m) matrix over the m
answer tokens — the value function the Shapley estimators (:mod:`shapley`) consume.

Default strategy ``prefix_tree``: the coalition prompts share long token prefixes (the
template, then the documents they have in common at the front). They are visited in
lexicographic token order with a single key/value cache that is cropped back to the
prefix shared with the previous prompt and extended by the rest, so every distinct
prefix is computed once (no padding at all). A game made by :meth:`GeneratorGame.generate` keeps the
generation's KV cache of the full prompt (``anchor``): a coalition whose prompt shares a longer
prefix with the full prompt than with the previous one starts from a copy of it, so the prefixes of
the full prompt are never computed again (and a walk split in two — an anytime job's first
estimate, then the rest — loses little).

Strategy ``batched``: coalitions are sorted by prompt length and run in batches with left padding,
an explicit attention mask and position ids ``cumsum(mask) − 1``. The prompt prefix all
coalitions of a batch share (chat template, system prompt, the first words of the user
turn) is run once and its key/value cache reused, repeated across the batch; the
padding then sits between the cached prefix and each coalition's own tokens, masked
out. Only the logits of the answer positions are computed (``logits_to_keep``). Answer
tokens are appended as ids, never re-tokenised from text.

``naive_values`` is the reference: one coalition at a time, full prompt, no cache.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ragaudit_core.prompts import build_prompt

__all__ = ["GeneratorGame"]


class GeneratorGame:
    """Teacher-forced answer-token log-probabilities of a causal LM per document coalition."""

    def __init__(
        self,
        generator: Any,
        query: str,
        documents: Sequence[str],
        answer_ids: Sequence[int],
        *,
        batch_size: int = 8,
        prefix_cache: bool = True,
        strategy: str = "prefix_tree",
    ) -> None:
        """The game for a fixed answer (``answer_ids``, the tokens teacher-forced in every
        coalition); :meth:`generate` first generates the answer with every document."""
        if strategy not in ("prefix_tree", "batched"):
            raise ValueError("strategy must be 'prefix_tree' or 'batched'")
        self.gen = generator
        self.tok = generator.tokenizer
        self.model = generator.model
        self.query = query
        self.documents = list(documents)
        self.n_players = len(self.documents)
        self.batch_size = batch_size
        self.prefix_cache = prefix_cache
        self.strategy = strategy
        self._prefixes: dict[tuple[int, ...], Any] = {}  # prefix → its KV cache
        self.anchor: tuple[list[int], Any] | None = None  # the full prompt and its KV cache (generate)
        self.n_forward_tokens = 0
        self.on_coalition: Callable[[int], None] | None = (
            None  # called with the number of coalitions just computed (progress)
        )
        self.answer_ids = list(answer_ids)
        if not self.answer_ids:
            raise ValueError("the generator produced an empty answer; nothing to attribute")

    @classmethod
    def generate(
        cls,
        generator: Any,
        query: str,
        documents: Sequence[str],
        *,
        max_new_tokens: int = 64,
        on_token: Callable[[], None] | None = None,
        **options: Any,
    ) -> GeneratorGame:
        """Generate the answer once, greedily, with every document (seed 001, eq. 9; trailing
        end-of-sequence and padding tokens dropped), and return the game over it. ``on_token`` is
        called after each generated token (progress; it may raise to cancel)."""
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        class _Tick(StoppingCriteria):  # never stops generation: it only reports each step
            def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
                if on_token is not None:
                    on_token()
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        tok = generator.tokenizer
        ids = cls.prompt_ids_for(tok, query, list(documents), np.ones(len(documents), bool))
        with torch.no_grad():
            out = generator.model.generate(
                torch.tensor([ids], device=generator.device),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=generator.device),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                pad_token_id=tok.pad_token_id,
                stopping_criteria=StoppingCriteriaList([_Tick()]),
                return_dict_in_generate=True,
            )
        answer = out.sequences[0, len(ids) :].tolist()
        eos = {tok.eos_token_id, tok.pad_token_id}
        while answer and answer[-1] in eos:
            answer.pop()
        game = cls(generator, query, documents, answer, **options)
        cache = getattr(out, "past_key_values", None)
        if cache is not None and hasattr(cache, "crop") and cache.get_seq_length() >= len(ids):
            if cache.get_seq_length() > len(ids):  # keep the prompt's positions: every coalition starts with some
                cache.crop(len(ids) - cache.get_seq_length())
            game.anchor = (list(ids), cache)
        return game

    @property
    def answer_tokens(self) -> list[str]:
        return [self.tok.decode([t]) for t in self.answer_ids]

    @property
    def answer_text(self) -> str:
        return self.tok.decode(self.answer_ids, skip_special_tokens=True)

    @staticmethod
    def prompt_ids_for(tok: Any, query: str, documents: Sequence[str], mask: np.ndarray) -> list[int]:
        """Token ids of the appendix-B prompt holding the documents ``mask`` keeps, in order."""
        docs = [d for d, keep in zip(documents, mask) if keep]
        text = tok.apply_chat_template(build_prompt(query, docs), tokenize=False, add_generation_prompt=True)
        return tok(text, add_special_tokens=False)["input_ids"]

    def prompt_ids(self, mask: np.ndarray) -> list[int]:
        return self.prompt_ids_for(self.tok, self.query, self.documents, mask)

    # ------------------------------------------------------------------ batched, cached

    def values(self, coalitions: np.ndarray) -> np.ndarray:
        coalitions = np.asarray(coalitions, dtype=bool)
        prompts = [self.prompt_ids(m) for m in coalitions]
        if self.strategy == "prefix_tree":
            return self._prefix_tree(prompts)
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        out = np.zeros((len(prompts), len(self.answer_ids)))
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            out[idx] = self._batch([prompts[i] for i in idx])
            if self.on_coalition:
                self.on_coalition(len(idx))
        return out

    def _batch(self, prompts: list[list[int]]) -> np.ndarray:
        import torch

        dev = self.gen.device
        m = len(self.answer_ids)
        seqs = [p + self.answer_ids for p in prompts]
        plen = 0
        if self.prefix_cache and len(seqs) > 1:
            first = seqs[0]
            plen = min(len(s) for s in seqs) - m - 1  # keep ≥ 1 prompt token per row after the prefix
            for s in seqs[1:]:
                k = 0
                while k < plen and s[k] == first[k]:
                    k += 1
                plen = k
        if plen < 8:
            plen = 0
        suffixes = [s[plen:] for s in seqs]
        width = max(len(s) for s in suffixes)
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(suffixes):
            ids[r, width - len(s) :] = torch.tensor(s)
            mask[r, width - len(s) :] = 1
        kwargs = {}
        if plen:
            prefix = tuple(seqs[0][:plen])
            cache = self._prefixes.get(prefix)
            if cache is None:
                with torch.no_grad():
                    cache = self.model(
                        torch.tensor([list(prefix)], device=dev), use_cache=True, logits_to_keep=1
                    ).past_key_values
                self._prefixes = {prefix: cache}  # keep one: batches share the same prefix
                self.n_forward_tokens += plen
            batch_cache = copy.deepcopy(cache)
            batch_cache.batch_repeat_interleave(len(seqs))
            kwargs["past_key_values"] = batch_cache
            full_mask = torch.cat([torch.ones((len(seqs), plen), dtype=torch.long), mask], dim=1)
        else:
            full_mask = mask
        pos = (plen + mask.cumsum(dim=1) - 1).clamp(min=plen)
        self.n_forward_tokens += int(mask.sum())
        with torch.no_grad():
            logits = self.model(
                input_ids=ids.to(dev),
                attention_mask=full_mask.to(dev),
                position_ids=pos.to(dev),
                use_cache=bool(plen),
                logits_to_keep=m + 1,
                **kwargs,
            ).logits
        logp = torch.log_softmax(logits[:, :m, :].float(), dim=-1)
        target = torch.tensor(self.answer_ids, device=logp.device).expand(len(seqs), m)
        return logp.gather(-1, target.unsqueeze(-1)).squeeze(-1).cpu().numpy()

    def _prefix_tree(self, prompts: list[list[int]]) -> np.ndarray:
        """Walk the prompts in lexicographic token order with one KV cache, cropped back to
        the common prefix with the previous prompt and extended by the rest: every distinct
        prompt prefix is computed once (the token trie of the coalitions). In sorted order the
        common prefix with any earlier prompt is never longer than with the previous one, so
        cropping loses nothing a later prompt needs."""
        import torch

        dev = self.gen.device
        m = len(self.answer_ids)
        seqs = [p + self.answer_ids for p in prompts]
        order = sorted(range(len(seqs)), key=lambda i: seqs[i])
        out = np.zeros((len(seqs), m))
        cache = None
        prev: list[int] = []
        for i in order:
            seq = seqs[i]
            lcp = _common(prev, seq, len(seq) - m - 1)  # recompute at least the answer's predecessors
            if self.anchor is not None and self.prefix_cache:
                ids, kv = self.anchor
                a = _common(ids, seq, len(seq) - m - 1)
                if a > lcp:  # the full prompt's cache (from generation) holds a longer prefix
                    cache, lcp = copy.deepcopy(kv), a
            if cache is not None and cache.get_seq_length() > lcp:
                cache.crop(lcp - cache.get_seq_length())  # keep the first lcp positions
            new = torch.tensor([seq[lcp:]], device=dev)
            with torch.no_grad():
                res = self.model(input_ids=new, past_key_values=cache, use_cache=True, logits_to_keep=m + 1)
            cache = res.past_key_values
            self.n_forward_tokens += len(seq) - lcp
            logp = torch.log_softmax(res.logits[0, :m, :].float(), dim=-1)
            out[i] = logp.gather(-1, torch.tensor(self.answer_ids, device=logp.device)[:, None])[:, 0].cpu().numpy()
            prev = seq
            if self.on_coalition:
                self.on_coalition(1)
        return out

    @staticmethod
    def trie_tokens(prompts: Sequence[Sequence[int]], m: int) -> int:
        """Tokens the prefix-tree walk computes for ``prompts`` (each followed by ``m`` answer
        tokens) without the anchor: the distinct prefixes of the token trie — the compute floor's
        numerator for these coalitions."""
        seqs = sorted(list(p) + [-1] * m for p in prompts)  # the answer never shares a prefix position
        total, prev = 0, list[int]()
        for seq in seqs:
            total += len(seq) - _common(prev, seq, len(seq) - m - 1)
            prev = seq
        return total

    # ------------------------------------------------------------------ reference

    def naive_values(self, coalitions: np.ndarray) -> np.ndarray:
        """One coalition at a time, full prompt, no padding, no cache (the benchmark's reference)."""
        import torch

        m = len(self.answer_ids)
        out = []
        for mask in np.asarray(coalitions, dtype=bool):
            seq = self.prompt_ids(mask) + self.answer_ids
            with torch.no_grad():
                logits = self.model(torch.tensor([seq], device=self.gen.device)).logits[0]
            logp = torch.log_softmax(logits[len(seq) - m - 1 : len(seq) - 1].float(), dim=-1)
            out.append(logp.gather(-1, torch.tensor(self.answer_ids, device=logp.device)[:, None])[:, 0].cpu().numpy())
            self.n_forward_tokens += len(seq)
        return np.array(out)


def _common(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """Length of the common prefix of ``a`` and ``b``, at most ``limit``."""
    k, top = 0, min(len(a), len(b), limit)
    while k < top and a[k] == b[k]:
        k += 1
    return k

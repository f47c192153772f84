"""Judge backends for Pattern 4 (:mod:`.judge`): a local causal LM with JSON enforced by
constrained decoding, or any OpenAI-compatible chat endpoint with the JSON validated and retried.

Both answer ``verdicts(prompt, chunk_ids, seeds) -> [JudgeVerdict | None]``: one verdict per
seed, each seed one judge of the panel (seed 0 decodes greedily — the seed's temperature 0 —,
other seeds sample, so n seeds are n judges).

**Local** (:class:`LocalJudge`): the prompt goes in as the system turn of the model's chat
template and is computed once for all seeds, and so is every later step the seeds share (they
walk the same skeleton until their picks differ; :class:`_Shared`). The answer is decoded *inside* the verdict's
JSON skeleton: every fixed part (``{"verdict": "``, ``", "confidence": ``…) is fed as given;
each slot is chosen among its legal values by the model's log-probability of the value
(``verdict`` among the four verdicts, ``matching_chunk_id`` among the context's chunk ids and
``null``, the two scores among 0, 0.25, 0.5, 0.75, 1), greedily for seed 0 and by sampling
∝ exp(log p) for the others; the explanation is generated freely (at most
``explanation_tokens`` tokens, stopped at a quote). The output is valid JSON by
construction.

*Batched* (the default, ``batch_options=True``): fixed parts are not fed until logits are needed
(the chosen option and the next fixed part go in with the next slot), and a slot's options are
scored in the same forward pass, as a token tree on one row — the options' tokens follow the
pending fixed part, each attends to the cache, the pending tokens and its own earlier tokens
(a 4-D attention mask; position ids restart after the pending part for each option) — so a slot
costs one pass however many options it has, and a judge about 4 + the explanation's tokens. The
log-probabilities equal the sequential walk's (one pass per multi-token option,
``batch_options=False``, the reference) up to float rounding.

The same loading path as the generator (``models.load_generator``): any local folder, model id or
``.gguf`` a user names.

**Endpoint** (:class:`EndpointJudge`, called under the rules of :mod:`.endpoint`): POST
``{base_url}/chat/completions`` (vLLM, Ollama, a hosted API) with the prompt as the system
message, ``response_format: json_object``, temperature 0 for seed 0 (the seed's setting) and
``temperature`` otherwise, and ``seed``.
The reply's first JSON object is validated against :class:`JudgeVerdict`; an invalid or
failed reply is retried ``retries`` times, then the judge casts no vote (None).
"""

from __future__ import annotations

import json
import re
import urllib.error
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragaudit_core.errors import RagAuditError
from ragaudit_core.fidelity.judge import VERDICTS, JudgeVerdict

__all__ = ["SCORE_CHOICES", "EndpointJudge", "JudgeUnreachable", "LocalJudge"]

SCORE_CHOICES = ("0.0", "0.25", "0.5", "0.75", "1.0")


class LocalJudge:
    """A local Hugging Face causal LM (``models.Generator``) as a judge, decoded in the schema."""

    def __init__(
        self,
        generator: Any,
        *,
        explanation_tokens: int = 16,
        temperature: float = 1.0,
        batch_options: bool = True,
    ) -> None:
        self.gen, self.tok, self.model = generator, generator.tokenizer, generator.model
        self.explanation_tokens = explanation_tokens
        self.temperature = temperature
        self.batch_options = batch_options
        self.name = f"local:{getattr(generator, 'name', 'model')}"
        self.n_forward_calls = 0  # forward passes after the prompt for the last citation (bench)
        self.scores: list[list[float]] = []  # each slot's option log-probabilities, last citation (tests)

    def verdicts(self, prompt: str, chunk_ids: Sequence[str], seeds: Sequence[int]) -> list[JudgeVerdict | None]:
        import torch

        ids = self.tok.apply_chat_template(
            [{"role": "system", "content": prompt}], add_generation_prompt=True, tokenize=True
        )
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        with torch.no_grad():
            out = self.model(torch.tensor([list(ids)], device=self.gen.device), use_cache=True, logits_to_keep=1)
        shared = _Shared(out.past_key_values, len(ids))
        self.scores = []
        verdicts: list[JudgeVerdict | None] = []
        for seed in seeds:
            state = _State(self, shared, out.logits[0, -1].float(), np.random.default_rng(seed), greedy=seed == 0)
            verdicts.append(state.decode(list(chunk_ids)))
        self.n_forward_calls = shared.n_calls
        return verdicts


def _crop(cache: Any, length: int) -> None:  # a transformers KV cache
    """Keep the first ``length`` positions of a KV cache."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)


class _Shared:
    """What the judges of one citation share: the prompt's KV cache (computed once) and every
    forward pass already made after it, keyed by (tokens written before, tokens fed, branches scored) after the prompt.
    Judges walk the same JSON skeleton, so until their picks differ they feed the same tokens: a
    later judge reads those logits from ``memo`` instead of running the model again. The cache
    holds the prompt and ``path`` (the tokens fed last); a miss crops it back to the part of
    ``path`` the judge shares and feeds the rest in one pass."""

    def __init__(self, cache: Any, base: int) -> None:
        self.cache, self.base = cache, base
        self.path: list[int] = []
        self.memo: dict[tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, ...], ...]], Any] = {}
        self.n_calls = 0

    def feed(self, model: Any, device: Any, path: list[int], tokens: list[int]) -> Any:
        """Logits (float, one row per token of ``tokens``) after the prompt, ``path`` and ``tokens``."""
        return self.feed_tree(model, device, path, tokens, [])[0]

    def feed_tree(
        self, model: Any, device: Any, path: list[int], tokens: list[int], branches: Sequence[list[int]]
    ) -> tuple[Any, list[Any]]:
        """One forward pass: the logits of ``tokens`` after the prompt and ``path``, and of each of
        ``branches`` after the prompt, ``path`` and ``tokens`` (each branch sees those and its own
        earlier tokens, not the other branches: a 4-D mask on one row, position ids restarting
        after ``tokens`` per branch). The cache then holds the prompt, ``path`` and ``tokens``."""
        import torch

        key = (tuple(path), tuple(tokens), tuple(tuple(b) for b in branches))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        lcp = 0
        while lcp < min(len(self.path), len(path)) and self.path[lcp] == path[lcp]:
            lcp += 1
        _crop(self.cache, self.base + lcp)
        new = path[lcp:] + tokens
        past = self.base + lcp
        kw: dict[str, Any] = {}
        if branches:
            flat = [t for b in branches for t in b]
            pos = list(range(past, past + len(new)))
            n, width = len(new), len(new) + len(flat)
            mask = torch.zeros((1, 1, width, past + width), dtype=torch.bool)
            mask[0, 0, :, :past] = True
            mask[0, 0, :n, past : past + n] = torch.ones(n, n, dtype=torch.bool).tril()  # causal
            mask[0, 0, n:, past : past + n] = True  # every branch sees all of ``tokens``
            at = n
            for b in branches:
                mask[0, 0, at : at + len(b), past + at : past + at + len(b)] = torch.ones(len(b), len(b)).tril().bool()
                pos += list(range(past + n, past + n + len(b)))
                at += len(b)
            new = new + flat
            kw = {"attention_mask": mask.to(device), "position_ids": torch.tensor([pos], device=device)}
        with torch.no_grad():
            out = model(torch.tensor([new], device=device), past_key_values=self.cache, use_cache=True, **kw)
        self.n_calls += 1
        self.path = path + tokens
        if branches:
            _crop(self.cache, self.base + len(self.path))  # drop the branches: no later step extends them
        logits = out.logits[0].float()
        end = len(path) - lcp + len(tokens)
        heads, at = [], end
        for b in branches:
            heads.append(logits[at : at + len(b)])
            at += len(b)
        got = (logits[end - len(tokens) : end], heads)
        self.memo[key] = got
        return got


class _State:
    """One seed's walk through the JSON skeleton over the citation's shared cache (:class:`_Shared`).

    Batched (``judge.batch_options``): text to write waits in ``pending`` until logits are needed,
    and a slot's options are scored in that pass (:meth:`_Shared.feed_tree`); sequential: every
    text is fed when written and every multi-token option gets its own pass (the reference)."""

    def __init__(
        self, judge: LocalJudge, shared: _Shared, last_logits: Any, rng: np.random.Generator, greedy: bool
    ) -> None:
        self.j, self.shared, self.last, self.rng, self.greedy = judge, shared, last_logits, rng, greedy
        self.path: list[int] = []  # the tokens this judge has written after the prompt (fed)
        self.pending: list[int] = []  # written, not fed yet (batched)

    def _ids(self, text: str) -> list[int]:
        return list(self.j.tok(text, add_special_tokens=False)["input_ids"])

    def _feed(self, token_ids: list[int], keep: bool = True) -> Any:
        """Logits after ``token_ids``; ``keep`` adds them to what this judge wrote (else a look-ahead)."""
        logits = self.shared.feed(self.j.model, self.j.gen.device, self.path, token_ids)
        if keep:
            self.path = self.path + token_ids
        return logits

    def _flush(self, branches: Sequence[list[int]] = ()) -> list[Any]:
        """Feed what is pending (and score ``branches`` after it) in one pass; ``self.last`` becomes
        the logits after it. Nothing pending and no branches: no pass."""
        if self.pending or branches:
            logits, heads = self.shared.feed_tree(self.j.model, self.j.gen.device, self.path, self.pending, branches)
            self.path, self.pending = self.path + self.pending, []
            if len(logits):
                self.last = logits[-1]
            return heads
        return []

    def emit(self, text: str) -> None:
        if self.j.batch_options:
            self.pending += self._ids(text)
            return
        logits = self._feed(self._ids(text))
        self.last = logits[-1]

    def option_scores(self, options: Sequence[str]) -> np.ndarray:
        """log p(option) after what is written, for each option (the sum over its tokens)."""
        import torch

        toks = [self._ids(opt) for opt in options]
        if self.j.batch_options:
            heads = iter(self._flush([t[:-1] for t in toks if len(t) > 1]))
        first = torch.log_softmax(self.last, -1)
        scores = []
        for t in toks:
            logp = first[t[0]].item()
            if len(t) > 1:
                lg = torch.log_softmax(next(heads) if self.j.batch_options else self._feed(t[:-1], keep=False), -1)
                logp += float(sum(lg[i, x] for i, x in enumerate(t[1:])))
            scores.append(logp)
        return np.asarray(scores)

    def choose(self, options: Sequence[str]) -> int:
        s = self.option_scores(options)
        self.j.scores.append(s.tolist())
        if self.greedy:
            pick = int(np.argmax(s))
        else:
            p = np.exp((s - s.max()) / self.j.temperature)
            pick = int(self.rng.choice(len(options), p=p / p.sum()))
        self.emit(options[pick])
        return pick

    def generate_text(self) -> str:
        import torch

        out: list[int] = []
        for _ in range(self.j.explanation_tokens):
            self._flush()  # batched: what is pending, the last token included (a no-op otherwise)
            logp = torch.log_softmax(self.last, -1)
            if self.greedy:
                t = int(torch.argmax(logp))
            else:
                p = torch.softmax(self.last / self.j.temperature, -1).cpu().numpy().astype(float)
                t = int(self.rng.choice(len(p), p=p / p.sum()))
            piece = self.j.tok.decode([t])
            if '"' in piece or "\n" in piece or t == self.j.tok.eos_token_id:
                break
            out.append(t)
            if self.j.batch_options:
                self.pending.append(t)  # the budget's last token goes in with the next fixed part
            else:
                self.last = self._feed([t])[-1]
        return self.j.tok.decode(out).replace("\\", "")

    def decode(self, chunk_ids: list[str]) -> JudgeVerdict:
        self.emit('{"verdict": "')
        verdict = VERDICTS[self.choose([f'{v}"' for v in VERDICTS])]
        self.emit(', "confidence": ')
        confidence = float(SCORE_CHOICES[self.choose(list(SCORE_CHOICES))])
        self.emit(', "matching_chunk_id": ')
        opts = [json.dumps(c) for c in chunk_ids] + ["null"]
        picked = opts[self.choose(opts)]
        self.emit(', "explanation": "')
        explanation = self.generate_text()
        self.emit('", "coordinate_fidelity": ')
        fidelity = float(SCORE_CHOICES[self.choose(list(SCORE_CHOICES))])
        return JudgeVerdict(
            verdict=verdict,
            confidence=confidence,
            matching_chunk_id=json.loads(picked),
            explanation=explanation.strip(),
            coordinate_fidelity=fidelity,
        )


_JSON_OBJECT = re.compile(r"\{.*\}", re.S)


class EndpointJudge:
    """An OpenAI-compatible chat-completions endpoint as a judge, called under the rules of
    :mod:`.endpoint` (http(s) only, no redirects, no key in the URL, a bounded, cancellable wait).

    ``check_cancel()`` (optional, set by the job) is called while a request is waiting; it
    stops the job by raising."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.7,
        retries: int = 2,
        timeout_s: float | None = None,
    ) -> None:
        from ragaudit_core.fidelity import endpoint

        self.url = endpoint.check_url(base_url) + "/chat/completions"
        self.model, self.api_key, self.temperature = model, api_key, temperature
        self.retries = retries
        self.timeout_s = endpoint.timeout_s() if timeout_s is None else timeout_s
        self.name = f"endpoint:{model}"
        self.n_invalid = 0  # replies that failed validation or the request (retried)
        self.check_cancel: Any = None

    def _ask(self, prompt: str, seed: int) -> str:
        from ragaudit_core.fidelity.endpoint import post_json

        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": prompt}],
            "response_format": {"type": "json_object"},
            "temperature": 0.0 if seed == 0 else self.temperature,
            "seed": seed,
        }
        reply = post_json(self.url, body, key=self.api_key, timeout=self.timeout_s, check_cancel=self.check_cancel)
        return reply["choices"][0]["message"]["content"]

    def verdicts(self, prompt: str, chunk_ids: Sequence[str], seeds: Sequence[int]) -> list[JudgeVerdict | None]:
        """One verdict per seed; an invalid reply is retried, then casts no vote. An endpoint that
        cannot be reached (or answers with an HTTP error, or not within the time limit) on every
        attempt raises ``JudgeUnreachable``: that is a failed job, not a judge's abstention. A
        redirect raises ``EndpointRedirected`` at once (never retried, never followed)."""
        from ragaudit_core.fidelity.endpoint import mask

        out = []
        for seed in seeds:
            verdict, reached, last_error = None, False, ""
            for _attempt in range(1 + self.retries):
                try:
                    content = self._ask(prompt, seed)
                except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError, TypeError) as e:
                    last_error = mask(f"{type(e).__name__}: {getattr(e, 'reason', None) or e}", self.api_key)
                    self.n_invalid += 1
                    continue
                reached = True
                m = _JSON_OBJECT.search(content or "")
                try:
                    verdict = JudgeVerdict.model_validate_json(m.group(0) if m else "")
                    break
                except ValueError:
                    self.n_invalid += 1
            if not reached:
                raise JudgeUnreachable(
                    f"the judge endpoint {self.url} gave no usable reply in {1 + self.retries} "
                    f"attempt(s) ({last_error}); check the URL, the model name and the API key "
                    "(RAGAUDIT_JUDGE_API_KEY or --key-file)"
                )
            out.append(verdict)
        return out


class JudgeUnreachable(RagAuditError, RuntimeError):
    """The endpoint could not be reached or did not answer in the chat-completions shape."""

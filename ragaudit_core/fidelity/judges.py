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

*Batched* (the default, ``batch_options=True``; :mod:`.judge_panel`): the judges of a citation walk
the skeleton together, in rounds of one forward pass each for all of them, and a slot's options are
scored in the pass that feeds the text before them (a token tree in one growing KV cache, with a 4-D
attention mask): about 4 + the longest explanation's tokens passes per citation. The sequential walk
(``batch_options=False``: one pass per fixed part and per multi-token option, judge after judge,
sharing the steps they have in common) is the reference: the same verdicts and option
log-probabilities up to float rounding.

The same loading path as the generator (``models.load_generator``): any local folder, model id or
``.gguf`` a user names.

**Endpoint** (:class:`EndpointJudge`, called under the rules of :mod:`.endpoint`): POST
``{base_url}/chat/completions`` (vLLM, Ollama, a hosted API) with the prompt as the system
message, ``response_format: json_object``, temperature 0 for seed 0 (the seed's setting) and
``temperature`` otherwise, and ``seed``.
The reply's first JSON object is validated against :class:`JudgeVerdict` with the context's chunk
ids (its ``matching_chunk_id`` must name one of them or be null); an invalid or failed reply is
retried ``retries`` times, then the judge casts no vote (None).
"""

from __future__ import annotations

import http.client
import logging
import urllib.error
from collections.abc import Sequence
from typing import Any

import numpy as np

from ragaudit_core.errors import RagAuditError
from ragaudit_core.fidelity.judge import JudgeVerdict
from ragaudit_core.fidelity.judge_panel import SCORE_CHOICES, TokenTree, decode_panel, pick, skeleton
from ragaudit_core.wording import counted

__all__ = ["SCORE_CHOICES", "EndpointJudge", "JudgeUnreachable", "LocalJudge"]

log = logging.getLogger("ragaudit.judge")


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
        self.scores = []
        if self.batch_options:
            tree = TokenTree(self.model, self.gen.device, out.past_key_values, len(ids), out.logits[0, -1].float())
            lanes = decode_panel(self, tree, list(chunk_ids), seeds)
            self.n_forward_calls = tree.n_calls
            self.scores = [s for lane in lanes for s in lane.scores]
            return [lane.verdict for lane in lanes]
        shared = _Shared(out.past_key_values, len(ids))
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
    forward pass already made after it, keyed by (tokens written before, tokens fed) after the prompt.
    Judges walk the same JSON skeleton, so until their picks differ they feed the same tokens: a
    later judge reads those logits from ``memo`` instead of running the model again. The cache
    holds the prompt and ``path`` (the tokens fed last); a miss crops it back to the part of
    ``path`` the judge shares and feeds the rest in one pass."""

    def __init__(self, cache: Any, base: int) -> None:
        self.cache, self.base = cache, base
        self.path: list[int] = []
        self.memo: dict[tuple[tuple[int, ...], tuple[int, ...]], Any] = {}
        self.n_calls = 0

    def feed(self, model: Any, device: Any, path: list[int], tokens: list[int]) -> Any:
        """Logits (float, one row per token of ``tokens``) after the prompt, ``path`` and ``tokens``."""
        import torch

        key = (tuple(path), tuple(tokens))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        lcp = 0
        while lcp < min(len(self.path), len(path)) and self.path[lcp] == path[lcp]:
            lcp += 1
        _crop(self.cache, self.base + lcp)
        new = path[lcp:] + tokens
        with torch.no_grad():
            out = model(torch.tensor([new], device=device), past_key_values=self.cache, use_cache=True)
        self.n_calls += 1
        self.path = path + tokens
        logits = out.logits[0, len(new) - len(tokens) :].float()
        self.memo[key] = logits
        return logits


class _State:
    """One seed's walk through the JSON skeleton over the citation's shared cache (:class:`_Shared`)."""

    def __init__(
        self, judge: LocalJudge, shared: _Shared, last_logits: Any, rng: np.random.Generator, greedy: bool
    ) -> None:
        self.j, self.shared, self.last, self.rng, self.greedy = judge, shared, last_logits, rng, greedy
        self.path: list[int] = []  # the tokens this judge has written after the prompt

    def _feed(self, token_ids: list[int], keep: bool = True) -> Any:
        """Logits after ``token_ids``; ``keep`` adds them to what this judge wrote (else a look-ahead)."""
        logits = self.shared.feed(self.j.model, self.j.gen.device, self.path, token_ids)
        if keep:
            self.path = self.path + token_ids
        return logits

    def emit(self, text: str) -> None:
        logits = self._feed(self.j.tok(text, add_special_tokens=False)["input_ids"])
        self.last = logits[-1]

    def choose(self, options: Sequence[str]) -> int:
        import torch

        scores = []
        for opt in options:
            toks = self.j.tok(opt, add_special_tokens=False)["input_ids"]
            logp = torch.log_softmax(self.last, -1)[toks[0]].item()
            if len(toks) > 1:
                lg = torch.log_softmax(self._feed(toks[:-1], keep=False), -1)
                logp += float(sum(lg[i, t] for i, t in enumerate(toks[1:])))
            scores.append(logp)
        self.j.scores.append(scores)
        i = pick(np.asarray(scores), self.rng, self.greedy, self.j.temperature)
        self.emit(options[i])
        return i

    def generate_text(self) -> str:
        import torch

        out: list[int] = []
        for _ in range(self.j.explanation_tokens):
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
            self.last = self._feed([t])[-1]
        return self.j.tok.decode(out).replace("\\", "")

    def decode(self, chunk_ids: list[str]) -> JudgeVerdict:
        """Walk the skeleton (:func:`.judge_panel.skeleton`), feeding each step as it comes."""
        walk = skeleton(chunk_ids)
        answer: int | str | None = None
        try:
            while True:
                step = walk.send(answer)
                if step[0] == "emit":
                    self.emit(step[1])
                    answer = None
                elif step[0] == "choose":
                    answer = self.choose(step[1])
                else:
                    answer = self.generate_text()
        except StopIteration as done:
            return done.value


def _json_object(content: object) -> str:
    """The reply's text from its first ``{`` to its last ``}`` ("" when none, or not text): what
    ``\\{.*\\}`` (re.S) matched, in linear time — the regex was quadratic in open braces without a
    close, hours for a 4 MB reply, with no cancel polled."""
    if not isinstance(content, str):
        return ""
    i = content.find("{")
    j = content.rfind("}")
    return content[i : j + 1] if 0 <= i < j else ""


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

        self.url = endpoint.call_url(endpoint.check_url(base_url), "chat/completions")
        self.model, self.api_key, self.temperature = model, api_key, temperature
        self.retries = retries
        self.timeout_s = endpoint.timeout_s() if timeout_s is None else timeout_s
        self.name = f"endpoint:{model}"
        self.n_invalid = 0  # replies that failed validation or the request (retried)
        self.check_cancel: Any = None

    def _ask(self, prompt: str, seed: int) -> object:
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
        from ragaudit_core.fidelity.endpoint import EndpointRedirected, mask

        out = []
        shown = {"chunk_ids": list(chunk_ids)}  # a verdict names one of these or none (judge module doc)
        for seed in seeds:
            verdict, reached, last_error = None, False, ""
            for _attempt in range(1 + self.retries):
                try:
                    content = self._ask(prompt, seed)
                except (
                    urllib.error.URLError,
                    OSError,
                    ValueError,
                    KeyError,
                    IndexError,
                    TypeError,
                    http.client.HTTPException,  # a malformed status line (it may echo the request: masked)
                ) as e:
                    last_error = mask(f"{type(e).__name__}: {getattr(e, 'reason', None) or e}", self.api_key)
                    self.n_invalid += 1
                    continue
                except EndpointRedirected as e:  # its target may echo what it got: the key
                    raise EndpointRedirected(mask(str(e), self.api_key)) from None
                reached = True
                try:
                    verdict = JudgeVerdict.model_validate_json(_json_object(content), context=shown)
                    break
                except ValueError as e:
                    self.n_invalid += 1
                    _refused(self.url, e, self.api_key)
            if not reached:
                raise JudgeUnreachable(
                    f"the judge endpoint {self.url} gave no usable reply in {counted(1 + self.retries, 'attempt')} "
                    f"({last_error}); check the URL, the model name and the API key "
                    "(RAGAUDIT_JUDGE_API_KEY or --key-file)"
                )
            out.append(verdict)
        return out


def _refused(url: str, error: ValueError, key: str | None) -> None:
    """Log why a reply was not taken as a verdict (the worker's log): the schema's reason for the
    first field it refused (an over-long ``matching_chunk_id`` or one naming a chunk outside the
    context, a verdict outside the four), without the value."""
    from ragaudit_core.fidelity.endpoint import mask

    errors = getattr(error, "errors", None)
    first = errors(include_input=False, include_url=False)[0] if callable(errors) and errors() else None
    why = f"{'.'.join(map(str, first['loc'])) or 'reply'}: {first['msg']}" if first else str(error)[:200]
    log.warning(
        "the judge endpoint %s sent a reply that is not a verdict (%s): an invalid vote, asked again while retries "
        "are left",
        url,
        mask(why, key),
    )


class JudgeUnreachable(RagAuditError, RuntimeError):
    """The endpoint could not be reached or did not answer in the chat-completions shape."""

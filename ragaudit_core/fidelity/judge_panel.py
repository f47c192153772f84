"""The local judges of one citation decoded together (issue #24 item 5): every forward pass serves
every judge, and a slot's options are scored in the pass that feeds the text before them.

The verdict's JSON skeleton (:func:`skeleton`) is one walk of steps — write a fixed part, choose
among a slot's options, write the explanation token by token — that each judge (a :class:`Lane`:
its seed, its random generator, what it has written) follows. Written text is not fed at once: a
lane asks for logits only where it must pick something, and then for the node that ends what it
has written and, for a slot, for the options' tokens (all but each option's last).

:class:`TokenTree` holds every token any lane asked for after the prompt as a node of a token trie
(its path: the tokens after the prompt up to and including it), each computed once, in one KV
cache of one row that only grows. A pass feeds the nodes missing for all lanes' requests at once;
a node attends to the prompt and to its own ancestors (a 4-D attention mask), at the position its
path gives (position ids), so its logits are those of the path fed alone, up to float rounding.
Judges that have written the same share their nodes (until their picks differ), and the option
branches of a slot share the nodes of their common beginnings.

So a citation costs one pass per round: about 4 slots + the longest explanation's tokens, however
many judges and options (against one pass per fixed part and per multi-token option and judge in
the sequential walk, :class:`ragaudit_core.fidelity.judges.LocalJudge` with
``batch_options=False``, the reference: the same verdicts and option log-probabilities up to float
rounding)."""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from ragaudit_core.fidelity.judge import VERDICTS, JudgeVerdict

__all__ = ["SCORE_CHOICES", "Lane", "TokenTree", "decode_panel", "skeleton"]

SCORE_CHOICES = ("0.0", "0.25", "0.5", "0.75", "1.0")

Step = tuple  # ("emit", text) | ("choose", options) -> index | ("text",) -> str


def skeleton(chunk_ids: Sequence[str]) -> Generator[Step, Any, JudgeVerdict]:
    """The verdict's JSON skeleton as steps: a driver answers ``("choose", options)`` with the
    index picked and ``("text",)`` with the explanation; the walk returns the verdict."""
    yield ("emit", '{"verdict": "')
    verdict = VERDICTS[(yield ("choose", [f'{v}"' for v in VERDICTS]))]
    yield ("emit", ', "confidence": ')
    confidence = float(SCORE_CHOICES[(yield ("choose", list(SCORE_CHOICES)))])
    yield ("emit", ', "matching_chunk_id": ')
    opts = [json.dumps(c) for c in chunk_ids] + ["null"]
    picked = opts[(yield ("choose", opts))]
    yield ("emit", ', "explanation": "')
    explanation = yield ("text",)
    yield ("emit", '", "coordinate_fidelity": ')
    fidelity = float(SCORE_CHOICES[(yield ("choose", list(SCORE_CHOICES)))])
    return JudgeVerdict.model_validate(
        {
            "verdict": verdict,
            "confidence": confidence,
            "matching_chunk_id": json.loads(picked),
            "explanation": explanation.strip(),
            "coordinate_fidelity": fidelity,
        },
        context={"chunk_ids": list(chunk_ids)},  # always passes: the slot offers only these and null
    )


def pick(scores: np.ndarray, rng: np.random.Generator, greedy: bool, temperature: float) -> int:
    """Greedy: the best; else drawn ∝ exp((s − max s) / temperature)."""
    if greedy:
        return int(np.argmax(scores))
    p = np.exp((scores - scores.max()) / temperature)
    return int(rng.choice(len(scores), p=p / p.sum()))


class TokenTree:
    """Every token path fed after the prompt, each once, in one growing KV cache (module doc)."""

    def __init__(self, model: Any, device: Any, cache: Any, base: int, last_logits: Any) -> None:
        self.model, self.device, self.cache, self.base = model, device, cache, base
        self.index: dict[tuple[int, ...], int] = {}  # path → its position in the cache
        self.logits: dict[tuple[int, ...], Any] = {(): last_logits}  # path → logits after it
        self.n_calls = 0

    def feed(self, wanted: Sequence[tuple[int, ...]]) -> None:
        """Compute, in one pass, every node on the way to each path in ``wanted`` that is not in
        the tree yet (parents before children)."""
        import torch

        new: list[tuple[int, ...]] = []
        seen = set(self.index)
        for path in wanted:
            for k in range(1, len(path) + 1):
                if path[:k] not in seen:
                    seen.add(path[:k])
                    new.append(path[:k])
        if not new:
            return
        past = self.base + len(self.index)
        at = {p: past + i for i, p in enumerate(new)}
        mask = torch.zeros((1, 1, len(new), past + len(new)), dtype=torch.bool)
        mask[0, 0, :, : self.base] = True
        for row, p in enumerate(new):
            for k in range(1, len(p) + 1):
                mask[0, 0, row, self.index.get(p[:k], at.get(p[:k], -1))] = True
        ids = torch.tensor([[p[-1] for p in new]], device=self.device)
        pos = torch.tensor([[self.base + len(p) - 1 for p in new]], device=self.device)
        with torch.no_grad():
            out = self.model(
                ids, past_key_values=self.cache, use_cache=True, attention_mask=mask.to(self.device), position_ids=pos
            )
        self.n_calls += 1
        for i, p in enumerate(new):
            self.index[p] = past + i
            self.logits[p] = out.logits[0, i].float()


class Lane:
    """One judge walking the skeleton over the tree: ``need()`` is the paths whose logits its next
    pick needs (None when it needs none), ``advance()`` makes that pick and walks on."""

    def __init__(
        self,
        tok: Any,
        chunk_ids: Sequence[str],
        rng: np.random.Generator,
        greedy: bool,
        temperature: float,
        budget: int,
    ) -> None:
        self.tok, self.rng, self.greedy, self.temperature, self.budget = tok, rng, greedy, temperature, budget
        self.walk = skeleton(chunk_ids)
        self.path: tuple[int, ...] = ()  # written after the prompt
        self.step: Step | None = None
        self.text: list[int] = []
        self.verdict: JudgeVerdict | None = None
        self.scores: list[list[float]] = []
        self._go(None)

    def _ids(self, text: str) -> tuple[int, ...]:
        return tuple(self.tok(text, add_special_tokens=False)["input_ids"])

    def _go(self, answer: Any) -> None:
        """Send ``answer`` to the walk and write fixed parts until it needs the model."""
        try:
            step = self.walk.send(answer)
            while step[0] == "emit" or (step[0] == "text" and self.budget <= 0):
                if step[0] == "emit":
                    self.path += self._ids(step[1])
                step = self.walk.send(None if step[0] == "emit" else "")  # no token allowed: no text
            self.step = step
        except StopIteration as done:
            self.step, self.verdict = None, done.value

    def need(self) -> list[tuple[int, ...]] | None:
        if self.step is None:
            return None
        if self.step[0] == "text":
            return [self.path]
        return [self.path] + [self.path + t[:k] for t in map(self._ids, self.step[1]) for k in range(1, len(t))]

    def advance(self, logits: dict[tuple[int, ...], Any]) -> None:
        import torch

        assert self.step is not None
        if self.step[0] == "choose":
            options = self.step[1]
            scores = []
            for toks in map(self._ids, options):
                s = 0.0
                for k, t in enumerate(toks):
                    s += float(torch.log_softmax(logits[self.path + toks[:k]], -1)[t])
                scores.append(s)
            self.scores.append(scores)
            i = pick(np.asarray(scores), self.rng, self.greedy, self.temperature)
            self.path += self._ids(options[i])
            self._go(i)
            return
        last = logits[self.path]
        if self.greedy:
            t = int(torch.argmax(torch.log_softmax(last, -1)))
        else:
            p = torch.softmax(last / self.temperature, -1).cpu().numpy().astype(float)
            t = int(self.rng.choice(len(p), p=p / p.sum()))
        piece = self.tok.decode([t])
        if '"' in piece or "\n" in piece or t == self.tok.eos_token_id:
            self._end_text()
            return
        self.text.append(t)
        self.path += (t,)
        if len(self.text) >= self.budget:
            self._end_text()

    def _end_text(self) -> None:
        text, self.text = self.tok.decode(self.text).replace("\\", ""), []
        self._go(text)


def decode_panel(judge: Any, tree: TokenTree, chunk_ids: Sequence[str], seeds: Sequence[int]) -> list[Lane]:
    """Walk every seed's lane in rounds, one pass per round for all of them (module doc)."""
    lanes = [
        Lane(judge.tok, chunk_ids, np.random.default_rng(s), s == 0, judge.temperature, judge.explanation_tokens)
        for s in seeds
    ]
    while True:
        needs = [(lane, n) for lane in lanes if (n := lane.need()) is not None]
        if not needs:
            return lanes
        tree.feed([p for _, n in needs for p in n if p not in tree.logits])
        for lane, _ in needs:
            lane.advance(tree.logits)

"""Retriever token saliency by Integrated Gradients (seed 001, RAG-E §3.1, Fig. 3).

The score is the retriever's own similarity. For a sentence-transformers bi-encoder the
score of a (query, document) pair is the cosine of the two pooled embeddings — what the harness
computes (``encode(normalize_embeddings=True)`` + dot product) — with the encoder's own pooling
(``mean``, ``cls``, ``max`` or ``mean_sqrt_len_tokens``, read from its ``Pooling`` module: the
default all-MiniLM-L6-v2 pools the mean over the attention mask; DRAGON-style retrievers take the
CLS token) and its own input length (``max_seq_length``: 256 word pieces for MiniLM; a longer text
is cut there, as ``encode`` cuts it). An encoder with other modules between the transformer and the
embedding (a ``Dense`` projection, several poolings, weighted or last-token pooling) is refused with
a sentence rather than explained as a function it does not compute. One side is explained at a
time, the other held fixed (its embedding is a constant).

IG (Sundararajan et al. 2017) over the input token embeddings x of the explained side::

    β_t = (x_t − x⁰_t) · (1/L) Σ_{l=1..L} ∂s(x⁰ + (l/L)(x − x⁰)) / ∂x_t      (right Riemann sum)

summed over the embedding dimension. Baselines x⁰ (same length, special tokens kept):
every non-special token replaced by ``[UNK]`` (default), ``[MASK]`` or ``[PAD]``, or the
all-zero embedding. Completeness: Σ_t β_t should equal s(x) − s(x⁰); every result
reports the ratio Σβ / (s(x) − s(x⁰)). Captum's ``IntegratedGradients`` does the
path integral (``method="riemann_right"`` by default, ``"gausslegendre"`` as an option;
not ``riemann_trapezoid``, whose weights sum to (L−1)/L).

Word pieces are aggregated to words for display (sum of their attributions), using the
tokenizer's word ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragaudit_core.defaults import IG_BASELINES

__all__ = ["BASELINES", "RetrieverSaliency", "SaliencyResult", "perturbation_aipc", "pooling_of"]

BASELINES = IG_BASELINES


@dataclass
class SaliencyResult:
    side: str  # "query" or "document"
    tokens: list[str]  # word pieces, special tokens included
    attributions: np.ndarray  # β per token
    words: list[str]
    word_attributions: np.ndarray
    score: float  # s(x)
    baseline_score: float  # s(x⁰)
    steps: int
    baseline: str
    method: str

    @property
    def completeness(self) -> float:
        """Σβ / (s(x) − s(x⁰)); 1 for an exact path integral (nan when the scores are equal)."""
        gap = self.score - self.baseline_score
        return float(self.attributions.sum() / gap) if gap != 0 else float("nan")


_POOLINGS = ("mean", "mean_sqrt_len_tokens", "cls", "max")  # mean_sqrt_len differs from mean by a scale: cosine equal
_AFTER_POOLING = ("Normalize",)  # the cosine normalises anyway


def pooling_of(encoder: Any) -> str:
    """The encoder's pooling (:data:`_POOLINGS`), or ValueError naming what IG here cannot follow."""
    modules = list(encoder.children())
    names = [type(m).__name__ for m in modules[1:]]
    pools = [m for m in modules[1:] if type(m).__name__ == "Pooling"]
    mode = getattr(pools[0], "pooling_mode", None) if len(pools) == 1 else None
    if hasattr(pools[0] if pools else None, "get_pooling_mode_str"):  # sentence-transformers before 6
        mode = pools[0].get_pooling_mode_str()
    extra = [n for n in names if n not in ("Pooling", *_AFTER_POOLING)]
    if extra or len(pools) != 1 or mode not in _POOLINGS:
        raise ValueError(
            "token saliency follows a sentence-transformers encoder of a transformer, one pooling "
            f"({', '.join(_POOLINGS)}) and an optional normalisation; this one has "
            f"{' → '.join(['Transformer', *[f'Pooling({mode})' if n == 'Pooling' else n for n in names]])}: "
            "explain its documents with the generator's Shapley values, or pick such an encoder"
        )
    return str(mode)


class RetrieverSaliency:
    """IG on a sentence-transformers bi-encoder (its own pooling and input length; cosine)."""

    def __init__(self, encoder: Any, *, max_length: int | None = None) -> None:
        self.st = encoder
        self.hf = encoder[0].auto_model
        self.tok = encoder.tokenizer
        self.pooling = pooling_of(encoder)
        self.max_length = int(max_length or getattr(encoder, "max_seq_length", None) or 512)
        self.device = next(self.hf.parameters()).device
        self.hf.eval()

    def _encode_ids(self, text: str) -> dict:
        return self.tok(text, return_tensors="pt", truncation=True, max_length=self.max_length).to(self.device)

    def _pooled(self, inputs_embeds: Any, attention_mask: Any) -> Any:
        import torch

        out = self.hf(inputs_embeds=inputs_embeds, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(out.dtype)
        if self.pooling == "cls":
            pooled = out[:, 0]
        elif self.pooling == "max":
            pooled = out.masked_fill(m == 0, torch.finfo(out.dtype).min).max(dim=1).values
        else:  # mean (and mean / sqrt(length), the same direction)
            pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)

    def embed(self, text: str) -> Any:
        import torch

        enc = self._encode_ids(text)
        with torch.no_grad():
            emb = self.hf.get_input_embeddings()(enc["input_ids"])
            return self._pooled(emb, enc["attention_mask"])[0]

    def score(self, query: str, document: str) -> float:
        return float(self.embed(query) @ self.embed(document))

    def attribute(
        self,
        query: str,
        document: str,
        *,
        side: str = "query",
        baseline: str = "unk",
        steps: int = 100,
        method: str = "riemann_right",
        internal_batch_size: int = 16,
    ) -> SaliencyResult:
        import torch
        from captum.attr import IntegratedGradients

        if side not in ("query", "document"):
            raise ValueError("side must be 'query' or 'document'")
        if baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {', '.join(BASELINES)}")
        text, other = (query, document) if side == "query" else (document, query)
        fixed = self.embed(other).detach()
        enc = self._encode_ids(text)
        ids, mask = enc["input_ids"], enc["attention_mask"]
        emb_layer = self.hf.get_input_embeddings()
        special = torch.tensor(
            self.tok.get_special_tokens_mask(ids[0].tolist(), already_has_special_tokens=True),
            dtype=torch.bool,
            device=ids.device,
        )
        with torch.no_grad():
            x = emb_layer(ids)
            if baseline == "zeros":
                x0 = torch.where(special[None, :, None], x, torch.zeros_like(x))
            else:
                repl = {"unk": self.tok.unk_token_id, "mask": self.tok.mask_token_id, "pad": self.tok.pad_token_id}[
                    baseline
                ]
                if repl is None:
                    raise ValueError(f"the tokenizer has no {baseline} token")
                x0 = emb_layer(torch.where(special[None, :], ids, torch.full_like(ids, repl)))

        def forward(e: Any) -> Any:
            m = mask.expand(e.shape[0], -1)
            return self._pooled(e, m) @ fixed

        ig = IntegratedGradients(forward)
        attr = ig.attribute(x, baselines=x0, n_steps=steps, method=method, internal_batch_size=internal_batch_size)
        beta = attr.sum(-1)[0].detach().cpu().numpy().astype(float)
        with torch.no_grad():
            s, s0 = float(forward(x)[0]), float(forward(x0)[0])
        tokens = self.tok.convert_ids_to_tokens(ids[0].tolist())
        words, wattr = self._words(text, beta)
        return SaliencyResult(side, tokens, beta, words, wattr, s, s0, steps, baseline, method)

    def _words(self, text: str, beta: np.ndarray) -> tuple[list[str], np.ndarray]:
        enc = self.tok(text, truncation=True, max_length=self.max_length, return_offsets_mapping=True)
        word_ids = enc.word_ids()
        offsets = enc["offset_mapping"]
        words: list[str] = []
        vals: list[float] = []
        spans: dict[int, list[int]] = {}
        for i, w in enumerate(word_ids):
            if w is None:
                continue
            if w not in spans:
                spans[w] = [offsets[i][0], offsets[i][1]]
                words.append("")
                vals.append(0.0)
            spans[w][1] = offsets[i][1]
            vals[list(spans).index(w)] += float(beta[i])
        for j, (a, b) in enumerate(spans.values()):
            words[j] = text[a:b]
        return words, np.array(vals)


def perturbation_aipc(
    sal: RetrieverSaliency,
    query: str,
    document: str,
    attributions: np.ndarray,
    *,
    n_points: int = 21,
    mode: str = "delete",
) -> float:
    """Area Inside the Perturbation Curves for a document-side explanation (seed 001, app. D, eq. 14).

    Non-special tokens are removed (``mode="delete"``) or replaced by ``[MASK]``
    (``mode="mask"``) in order of attribution — most relevant first (MoRF) and least
    relevant first (LeRF) — at ``n_points`` evenly spaced fractions from 0 to all tokens
    (the paper steps one token at a time; ``n_points = n + 1`` does that). With
    s = the retriever similarity::

        AIPC = ∫₀¹ [s(q, d) − s(q, MoRF(d, t))] dt − ∫₀¹ [s(q, d) − s(q, LeRF(d, t))] dt

    (trapezoid rule), min-max normalised per sample by the range of every similarity
    observed on both curves, so it lies in [−1, 1]; higher is more faithful. Deletion is
    the default so that no IG baseline token is favoured by the perturbation itself.
    """
    import torch

    enc = sal.tok(document, truncation=True, max_length=sal.max_length)
    ids = enc["input_ids"]
    special = sal.tok.get_special_tokens_mask(ids, already_has_special_tokens=True)
    body = [i for i, s in enumerate(special) if not s]
    if len(attributions) != len(ids):
        raise ValueError("attributions must have one value per token of the document (special tokens included)")
    fixed = sal.embed(query)
    morf = sorted(body, key=lambda i: -attributions[i])
    lerf = sorted(body, key=lambda i: attributions[i])
    counts = sorted({round(f * len(body)) for f in np.linspace(0, 1, n_points)})
    variants = []
    for order in (morf, lerf):
        for c in counts:
            gone = set(order[:c])
            if mode == "delete":
                variants.append([t for i, t in enumerate(ids) if i not in gone])
            else:
                variants.append([sal.tok.mask_token_id if i in gone else t for i, t in enumerate(ids)])
    width = max(len(v) for v in variants)
    pad = sal.tok.pad_token_id
    x = torch.full((len(variants), width), pad, dtype=torch.long)
    m = torch.zeros((len(variants), width), dtype=torch.long)
    for r, v in enumerate(variants):
        x[r, : len(v)] = torch.tensor(v)
        m[r, : len(v)] = 1
    scores = []
    with torch.no_grad():
        for s in range(0, len(variants), 16):
            xb, mb = x[s : s + 16].to(sal.device), m[s : s + 16].to(sal.device)
            scores.append((sal._pooled(sal.hf.get_input_embeddings()(xb), mb) @ fixed).cpu().numpy())
    sc = np.concatenate(scores)
    k = len(counts)
    base = sc[0]
    t = np.array(counts, dtype=float) / max(1, len(body))
    drop_morf = base - sc[:k]
    drop_lerf = base - sc[k:]
    span = float(sc.max() - sc.min()) or 1.0
    return float((np.trapezoid(drop_morf, t) - np.trapezoid(drop_lerf, t)) / span)

"""Seed 002, Pattern 4: an LLM judge verifies each citation against the retrieved context.

The judge reads the seed's prompt (:data:`JUDGE_PROMPT`, verbatim) with the citation string,
the context chunks with their provenance and the query, and returns the seed's structured
verdict (:class:`JudgeVerdict`): ACCURATE / PARTIAL / HALLUCINATED / UNVERIFIABLE, a
confidence, the matching chunk, a short explanation and the coordinate fidelity. Backends
(:mod:`.judges`) are any local causal LM or any OpenAI-compatible endpoint.

**Consensus** (seed: "inter-judge consensus (n=3, majority vote)"): n judges — different
seeds or models — vote; the majority verdict wins. A tie (e.g. three different verdicts)
goes to the most conservative verdict among the tied ones, in the order HALLUCINATED,
UNVERIFIABLE, PARTIAL, ACCURATE (a reading the seed leaves open: an audit should not round
a split vote up). A judge whose output stays invalid after its retries casts no vote.

**Disagreement rate** (seed: "12–18 % disagreement rate on PARTIAL vs. ACCURATE"): by
default the share of citations whose valid votes are not unanimous; ``pairwise`` — the
share of judge pairs, over all citations, that voted differently — is reported beside it.

**Agreement with Pattern 3**: the rule-based score maps to a verdict — 1.0 ACCURATE, 0.3
(right document, wrong or missing page) PARTIAL, 0.0 HALLUCINATED — and is compared with the
majority verdict.

**Bounded ids**: a chunk id is at most :data:`MAX_CHUNK_ID_CHARS` characters in a judge's context
and in a verdict. One read from the logs is text (an integer as its decimal string) and, when
longer, cut by :func:`bounded_chunk_id` (kept distinct, the cut shown) before any judge sees it; a
verdict naming a longer ``matching_chunk_id`` — only an endpoint's reply can — is invalid like any
reply outside the schema (retried, then no vote), with the reason.

**Ids in the context**: a verdict's ``matching_chunk_id`` is null or, exactly, the id of a chunk of
the context the judge was shown. A verdict validated with the context's ids
(``JudgeVerdict.model_validate_json(text, context={"chunk_ids": ids})``, as the endpoint judge
validates each reply) naming any other chunk — one of another query, or none at all — is invalid
like any reply outside the schema: a judge must not credit a citation to evidence it never saw. The
local judge picks the id among the context's by construction (:mod:`.judge_panel`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from ragaudit_core.intervals import wilson
from ragaudit_core.wording import counted

if TYPE_CHECKING:
    from ragaudit_core.fidelity.graph import QueryGraph

__all__ = [
    "CONSERVATIVE_ORDER",
    "JUDGE_PROMPT",
    "MAX_CHUNK_ID_CHARS",
    "MIN_RATE_N",
    "SMALL_JUDGE_PARAMS",
    "VERDICTS",
    "JudgeVerdict",
    "agreement",
    "bounded_chunk_id",
    "context_chunks",
    "disagreement",
    "judge_caveat",
    "judge_parameters",
    "judge_prompt",
    "majority",
    "rule_verdict",
]

VERDICTS = ("ACCURATE", "PARTIAL", "HALLUCINATED", "UNVERIFIABLE")
CONSERVATIVE_ORDER = ("HALLUCINATED", "UNVERIFIABLE", "PARTIAL", "ACCURATE")

JUDGE_PROMPT = """You are a citation verification system. Evaluate whether
the generated citation accurately represents a source in the provided context.

INPUT:
- Generated citation string: {citation_string}
- Retrieved context chunks with provenance: {context_json}
- Original user query: {query}

RULES:
1. A citation is ACCURATE only if the cited content appears in the retrieved context
   AND the source coordinates (document ID, page, section) match the context metadata.
2. A citation is PARTIAL if the content is correct but coordinates are imprecise
   (e.g., "the report" instead of "Q3 Earnings, p.12").
3. A citation is HALLUCINATED if the content or coordinates cannot be verified
   against retrieved context.
4. A citation is UNVERIFIABLE if the context is insufficient to check.

OUTPUT JSON:
{{
  "verdict": "ACCURATE|PARTIAL|HALLUCINATED|UNVERIFIABLE",
  "confidence": 0.0-1.0,
  "matching_chunk_id": "string or null",
  "explanation": "max 100 chars",
  "coordinate_fidelity": 0.0-1.0  # how precisely coordinates match
}}
"""
"""Seed 002, Pattern 4's ``CITATION_JUDGE_PROMPT``, word for word."""


MAX_CHUNK_ID_CHARS = 256
"""Characters of a chunk id in a judge's context and verdict (module doc, "Bounded ids"); chunk ids
are names (a UUID is 36, ``doc#chunk-12`` a few more), so a longer one is a mistake or an attack."""

_CUT_HASH = 15  # hex digits of the SHA-256 that keep cut ids apart (60 bits)


def bounded_chunk_id(chunk_id: object) -> str | None:
    """A chunk id from the logs as a judge sees it and a verdict stores it: text — an integer as
    its decimal string, anything else None (the caller falls back to the node's id) — of at most
    :data:`MAX_CHUNK_ID_CHARS` characters; a longer one keeps its beginning, then ``…`` and
    15 hex digits of the SHA-256 of the whole id, so two long ids stay apart and the cut shows."""
    if isinstance(chunk_id, bool) or not isinstance(chunk_id, (str, int)):
        return None
    s = str(chunk_id)
    if len(s) <= MAX_CHUNK_ID_CHARS:
        return s
    digest = hashlib.sha256(s.encode("utf-8", "surrogatepass")).hexdigest()[:_CUT_HASH]
    return s[: MAX_CHUNK_ID_CHARS - 1 - _CUT_HASH] + "…" + digest


class JudgeVerdict(BaseModel):
    """The seed's structured verdict; an explanation longer than 100 characters is cut, a
    ``matching_chunk_id`` longer than :data:`MAX_CHUNK_ID_CHARS` makes the verdict invalid, and so
    does one outside the context's ids when validated with them (``context={"chunk_ids": ids}``,
    module doc, "Ids in the context"). The reasons never quote the id: it is the judge's text."""

    verdict: Literal["ACCURATE", "PARTIAL", "HALLUCINATED", "UNVERIFIABLE"]
    confidence: float = Field(ge=0.0, le=1.0)
    matching_chunk_id: str | None = None
    explanation: str = ""
    coordinate_fidelity: float = Field(ge=0.0, le=1.0)

    @field_validator("explanation")
    @classmethod
    def _short(cls, v: str) -> str:
        return v[:100]

    @field_validator("matching_chunk_id")
    @classmethod
    def _bounded(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        if len(v) > MAX_CHUNK_ID_CHARS:
            raise ValueError(
                f"matching_chunk_id is {len(v):,} characters long, over the {MAX_CHUNK_ID_CHARS}-character limit "
                "of a chunk id (the context's ids are never longer), so this verdict is not taken"
            )
        shown = (info.context or {}).get("chunk_ids")
        if shown is not None and v not in shown:
            raise ValueError(
                f"matching_chunk_id is not one of the {counted(len(shown), 'chunk')} of the context the judge was "
                "shown, so this verdict is not taken (a judge cannot credit a citation to evidence it never saw)"
            )
        return v


def context_chunks(g: QueryGraph, max_chars: int = 400) -> list[dict]:
    """The context the generator saw (stage-4 elements, in context order) with provenance:
    chunk id (:func:`bounded_chunk_id`), document, page and the chunk text (first ``max_chars``
    characters, to bound the judge's prompt). ``g`` is a ``fidelity.graph.QueryGraph``."""
    out = []
    elements = sorted(
        (n for n in g.nodes.values() if n.stage == 4), key=lambda n: (n.metadata.get("context_index") or 0, n.node_id)
    )
    for n in elements:
        doc, page = g.resolve(n.node_id)
        text, chunk_id = _text_of(g, n.node_id)
        cid = bounded_chunk_id(chunk_id) or bounded_chunk_id(n.node_id)
        out.append({"chunk_id": cid, "doc_id": doc, "page": page, "text": (text or "")[:max_chars]})
    return out


def _text_of(g: QueryGraph, node_id: str, seen: frozenset = frozenset()) -> tuple[str | None, str | None]:
    """The nearest text (and chunk id) on a node or its ancestors."""
    n = g.nodes.get(node_id)
    if n is None:
        return None, None
    if n.metadata.get("text"):
        return n.metadata["text"], n.metadata.get("chunk_id") or n.node_id
    for p in n.derived_from:
        if p not in seen:
            t, c = _text_of(g, p, seen | {node_id})
            if t:
                return t, c
    return None, None


def judge_prompt(citation: str, context: Sequence[dict], query: str | None) -> str:
    return JUDGE_PROMPT.format(
        citation_string=citation, context_json=json.dumps(list(context), ensure_ascii=False), query=query or ""
    )


def rule_verdict(score: float | None) -> str:
    """Pattern 3's score as a verdict: 1.0 ACCURATE, 0 < s < 1 PARTIAL, 0 HALLUCINATED."""
    if score is None:
        return "UNVERIFIABLE"
    return "ACCURATE" if score >= 1.0 else ("PARTIAL" if score > 0 else "HALLUCINATED")


def majority(votes: Sequence[str | None]) -> str | None:
    """The majority verdict of the valid votes; ties go to the most conservative (module doc)."""
    valid = [v for v in votes if v is not None]
    if not valid:
        return None
    counts = Counter(valid)
    top = max(counts.values())
    return next(v for v in CONSERVATIVE_ORDER if counts.get(v) == top)


def disagreement(votes_per_citation: Sequence[Sequence[str | None]]) -> dict:
    """Both readings of the judges' disagreement (module doc) over citations with ≥ 2 valid votes."""
    judged = [[v for v in vs if v is not None] for vs in votes_per_citation]
    judged = [vs for vs in judged if len(vs) >= 2]
    if not judged:
        return {"n_citations": 0, "rate": None, "pairwise": None}
    pairs = [a != b for vs in judged for a, b in itertools.combinations(vs, 2)]
    k = sum(len(set(vs)) > 1 for vs in judged)
    return {
        "n_citations": len(judged),
        "rate": k / len(judged),
        "ci": wilson(k, len(judged)),
        "pairwise": sum(pairs) / len(pairs),
    }


def agreement(majorities: Sequence[str | None], rules: Sequence[str]) -> dict:
    """Share of citations where the judges' majority equals Pattern 3's verdict, and the
    confusion counts (rule verdict → judge verdict), over citations with a majority."""
    pairs = [(r, m) for m, r in zip(majorities, rules) if m is not None]
    if not pairs:
        return {"n_citations": 0, "rate": None, "confusion": {}}
    confusion = Counter(f"{r} → {m}" for r, m in pairs)
    k = sum(r == m for r, m in pairs)
    return {
        "n_citations": len(pairs),
        "rate": k / len(pairs),
        "ci": wilson(k, len(pairs)),
        "confusion": dict(sorted(confusion.items())),
    }


MIN_RATE_N = 20
"""Judged citations below which a judge rate is shown with a caveat (its 95 % interval is then
wider than about ±0.2)."""
SMALL_JUDGE_PARAMS = 1e9
"""Judge models below this many parameters get a caveat: the seed's judge figures come from far
larger models."""

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([MB])(?![A-Za-z])", re.IGNORECASE)


def judge_parameters(model: str) -> float | None:
    """Parameters of a judge model read from its name (``SmolLM2-135M-Instruct`` → 1.35e8,
    ``Qwen2.5-0.5B`` → 5e8, ``llama-3-8b`` → 8e9); None when the name does not say."""
    m = _SIZE.search(model.replace("_", "-"))
    if m is None:
        return None
    return float(m.group(1)) * (1e6 if m.group(2).upper() == "M" else 1e9)


def judge_caveat(n: int, models: Sequence[str]) -> str | None:
    """One sentence when judge rates rest on fewer than :data:`MIN_RATE_N` citations or on a judge
    model under :data:`SMALL_JUDGE_PARAMS` parameters (by its name), else None."""
    parts = []
    if 0 < n < MIN_RATE_N:
        parts.append(f"these rates rest on {counted(n, 'citation')} — fewer than {MIN_RATE_N}, so read their intervals")
    small = [
        f"{m} (about {p / 1e6:,.0f}M parameters)"
        for m in models
        if (p := judge_parameters(m)) and p < SMALL_JUDGE_PARAMS
    ]
    if small:
        parts.append(
            f"the judge model {', '.join(small)} is under 1B parameters: its verdicts screen citations, they do not "
            "settle them (the seed's figures come from far larger judges)"
        )
    return ("; ".join(parts)[:1].upper() + "; ".join(parts)[1:] + ".") if parts else None

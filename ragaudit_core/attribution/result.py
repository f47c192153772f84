"""One query's attribution as a typed result, with a JSON round trip.

The JSON form is what a job returns (it crosses process boundaries on Ray), what the database
stores, and what ``ragaudit attribute --json`` writes; pages, the report and the gate read it
back as an :class:`AttributionResult`. JSON objects have string keys, so ``warg`` (keyed by the
float ``p``) is written with ``str(p)`` keys (``"0.9"``) and read back as floats.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["AttributionResult", "TokenSaliency"]


@dataclass(frozen=True)
class TokenSaliency:
    """Integrated Gradients of one side of one (query, document) pair (seed 001, eq. 3–5):
    per word-piece and per word attributions, the retriever's score ``s`` and its value at the
    baseline ``s⁰``, and completeness ``Σβ / (s − s⁰)`` (1 for an exact path integral; None where
    ``s = s⁰`` — an empty text, whose baseline is itself — and the ratio is undefined)."""

    tokens: list[str]
    attributions: list[float]
    words: list[str]
    word_attributions: list[float]
    score: float
    baseline_score: float
    completeness: float | None
    baseline: str
    steps: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TokenSaliency:
        return cls(**{f.name: d[f.name] for f in fields(cls)})


def _float_keys(d: dict[str, float]) -> dict[float, float]:
    return {float(k): v for k, v in d.items()}


def _str_keys(d: dict[float, float]) -> dict[str, float]:
    return {str(k): v for k, v in d.items()}


@dataclass(frozen=True)
class AttributionResult:
    """RAG-E for one query and one document order (``condition``): the generator's answer,
    each document's Shapley value for each answer token (``values``, documents × tokens, in
    retriever order), their mean ``importance``, the generator ranking (eq. 11), WARG(p) (eq. 12,
    truncated and extrapolated, with the identical-lists floor), Spearman between retriever rank
    and importance, the two failure modes, and the retriever's IG saliency of each pair."""

    run_id: str
    query_id: str
    query: str
    doc_ids: list[str]
    doc_texts: list[str]
    order: list[int]  # the documents' order in the prompt (retriever order, or the shuffle)
    answer: str
    answer_tokens: list[str]
    values: list[list[float]]
    importance: list[float]
    v_empty: list[float]
    v_full: list[float]
    generator_ranking: list[int]
    generator_ranking_doc_ids: list[str]
    warg: dict[float, float]
    warg_extrapolated: dict[float, float]
    warg_floor: dict[float, float]
    spearman: float | None
    wasted_retrieval: bool
    noise_distraction: bool
    ig_documents: list[TokenSaliency]
    ig_query: list[TokenSaliency]
    n_coalitions: int
    method: str
    timings_s: dict[str, float] = field(default_factory=dict)
    estimate_stage: str = "exact"  # "first": an anytime job's first estimate (compute.FIRST_METHODS, few IG points)

    @property
    def n_documents(self) -> int:
        return len(self.doc_ids)

    def efficiency_gap(self) -> float:
        """max over answer tokens of |Σ_i φ_i − (v(D) − v(∅))|: 0 up to float rounding for exact
        Shapley (and the sampling estimators, which impose it); leave-one-out does not have it."""
        if not self.values or not self.v_full:
            return 0.0
        sums = [sum(col) for col in zip(*self.values)]
        return max(abs(s - (f - e)) for s, f, e in zip(sums, self.v_full, self.v_empty))

    def completeness_max_dev(self) -> float:
        """max over the IG sides of |Σβ / (s − s⁰) − 1| (0 for an exact path integral)."""
        sides = self.ig_documents + self.ig_query
        return max((abs(s.completeness - 1) for s in sides if s.completeness is not None), default=0.0)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (``warg`` keys as strings)."""
        d = asdict(self)
        for k in ("warg", "warg_extrapolated", "warg_floor"):
            d[k] = _str_keys(getattr(self, k))
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AttributionResult:
        """The result a :meth:`to_json` dict (or a stored payload) describes; keys beyond the
        fields (a stored row's ``condition``, ``params`` …) are ignored; a payload from before
        ``estimate_stage`` existed is an exact one."""
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        for k in ("warg", "warg_extrapolated", "warg_floor"):
            kw[k] = _float_keys(d[k])
        kw["ig_documents"] = [TokenSaliency.from_json(x) for x in d["ig_documents"]]
        kw["ig_query"] = [TokenSaliency.from_json(x) for x in d["ig_query"]]
        return cls(**kw)

"""The headline figures of a stability computation, typed (seed 000, §3).

:class:`StabilitySummary` is what pages, the report and the CLI read; :meth:`StabilitySummary.to_json`
is the ``summary`` object of ``ragaudit stability --json`` (its keys and nesting are the contract),
:meth:`StabilitySummary.from_json` reads it back (the stored cache).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ragaudit_core.defaults import FLIP_THRESHOLD

__all__ = ["LevelStats", "StabilitySummary"]


@dataclass(frozen=True)
class LevelStats:
    """One level (``doc`` or ``span``) over every (query, pair) cell: mean ``J``, the share of
    cells with ``J < τ`` (flip rate), cells where one side is empty and the other not (null
    transitions), the share of queries collapsed (some pair at ``J = 0`` with both sides
    non-empty) and the median worst-pair ``J_min``. ``available`` is False when no pair has this
    level (no span information): every figure is then None, never 0."""

    available: bool
    mean_j: float | None = None
    flip_rate: float | None = None
    null_transitions: int | None = None
    n_cells: int | None = None
    collapse_rate: float | None = None
    median_j_min: float | None = None
    n_pairs: int | None = None

    def to_json(self) -> dict[str, Any]:
        if not self.available:
            return {"available": False}
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LevelStats:
        kw: dict[str, Any] = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        return cls(**kw)


@dataclass(frozen=True)
class StabilitySummary:
    """Headline figures over the compared runs: per level (:class:`LevelStats`), the gap ratio
    ``mean J_doc / mean J_span`` over cells with both levels (None with a note when undefined),
    the pairs whose documents agree while their spans differ, and the settings it was computed
    with."""

    n_queries: int
    n_pairs: int
    doc: LevelStats
    span: LevelStats
    gap_ratio: float | None
    gap_ratio_note: str | None
    same_docs_diff_spans: int | None
    warnings: list[str] = field(default_factory=list)
    span_unavailable_runs: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    flip_threshold: float = FLIP_THRESHOLD
    topk: int | None = None
    baseline: str | None = None

    @property
    def mean_j_doc(self) -> float | None:
        return self.doc.mean_j

    @property
    def mean_j_span(self) -> float | None:
        return self.span.mean_j if self.span.available else None

    @property
    def collapse_rate(self) -> float | None:
        """Collapse is a span-level event (seed 000): the span level's rate."""
        return self.span.collapse_rate if self.span.available else None

    @property
    def flip_rate(self) -> dict[str, float | None]:
        return {"doc": self.doc.flip_rate, "span": self.span.flip_rate if self.span.available else None}

    @property
    def null_transitions(self) -> int | None:
        return self.doc.null_transitions

    def to_json(self) -> dict[str, Any]:
        """The ``summary`` object of the CLI's JSON (unchanged keys)."""
        return {
            "n_queries": self.n_queries,
            "n_pairs": self.n_pairs,
            "doc": self.doc.to_json(),
            "span": self.span.to_json(),
            "mean_j_doc": self.mean_j_doc,
            "mean_j_span": self.mean_j_span,
            "gap_ratio": self.gap_ratio,
            "gap_ratio_note": self.gap_ratio_note,
            "collapse_rate": self.collapse_rate,
            "doc_collapse_rate": self.doc.collapse_rate,
            "flip_rate": self.flip_rate,
            "null_transitions": self.null_transitions,
            "same_docs_diff_spans": self.same_docs_diff_spans,
            "warnings": list(self.warnings),
            "span_unavailable_runs": list(self.span_unavailable_runs),
            "runs": list(self.runs),
            "flip_threshold": self.flip_threshold,
            "topk": self.topk,
            "baseline": self.baseline,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StabilitySummary:
        return cls(
            n_queries=d["n_queries"],
            n_pairs=d["n_pairs"],
            doc=LevelStats.from_json(d["doc"]),
            span=LevelStats.from_json(d["span"]),
            gap_ratio=d["gap_ratio"],
            gap_ratio_note=d["gap_ratio_note"],
            same_docs_diff_spans=d["same_docs_diff_spans"],
            warnings=list(d.get("warnings", [])),
            span_unavailable_runs=list(d.get("span_unavailable_runs", [])),
            runs=list(d.get("runs", [])),
            flip_threshold=d.get("flip_threshold", FLIP_THRESHOLD),
            topk=d.get("topk"),
            baseline=d.get("baseline"),
        )

"""Display labels of column keys: applied only where a table is drawn (dashboard, PDF).

Metric and column keys (``j_span``, ``first_failed_stage``) travel between modules unchanged;
a reader sees ``J_span`` (the notation of the charts and seed 000) and ``ground truth lost at``.
:func:`column_label` falls back to the key with underscores as spaces, so a new column is
readable before it gets an entry here.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "CHANGE_LABELS",
    "COLUMN_LABELS",
    "METRIC_LABELS",
    "SHARE_KEYS",
    "change_label",
    "column_label",
    "is_share",
    "metric_label",
    "rule_label",
]

COLUMN_LABELS: dict[str, str] = {
    "run_id": "run",
    "citation_rate": "citation rate (queries with evidence)",  # the seed's term (000, null diagnostics)
    "run_a": "run A",
    "run_b": "run B",
    "query_id": "query id",
    "doc_id": "document",
    "doc_id_raw": "document (as logged)",
    "span_hash": "span hash",
    "chunk_id": "chunk",
    "j_doc": "J_doc",
    "j_span": "J_span",
    "j_min": "J_min",
    "j_avg": "J_avg",
    "j_avg_doc": "J_avg, doc",
    "j_avg_span": "J_avg, span",
    "flip_rate": "flip rate",
    "flip_rate_doc": "flip rate, doc",
    "flip_rate_span": "flip rate, span",
    "collapse_rate": "collapse rate",
    "collapse_rate_doc": "collapse rate, doc",
    "collapse_rate_span": "collapse rate, span",
    "null_loss_doc": "null loss, doc",
    "null_loss_span": "null loss, span",
    "null_gain_doc": "null gain, doc",
    "null_gain_span": "null gain, span",
    "null_change": "null transition",
    "null_loss": "null loss",
    "null_gain": "null gain",
    "same_docs_diff_spans": "same docs, different spans",
    "spearman": "mean Spearman",
    "changed": "what changed",
    "n_pairs": "run pairs",
    "n_queries": "queries",
    "n_entries": "entries",
    "n_records": "records",
    "n_answers": "answers",
    "n_a": "entries, A",
    "n_b": "entries, B",
    "n_citations": "citations",
    "n_parse_failures": "parse failures",
    "n_findings": "failure-mode findings",
    "top_k": "top-k",
    "chunk_size": "chunk size",
    "chunk_overlap": "chunk overlap",
    "cfs": "CFS",
    "cfs_product": "product CFS",
    "first_failed_stage": "ground truth lost at",
    "survived_chunking": "survived chunking",
    "survived_retrieval": "survived retrieval",
    "survived_reranking": "survived reranking",
    "survived_compression": "survived compression",
    "survived_generation": "survived generation",
    "staleness_s": "staleness (s)",
    "sim": "answer similarity",
    "answer_a": "baseline answer",
    "answer_b": "candidate answer",
    "position": "rank",
    "has_spans": "has spans",
    "line_no": "line",
    "offset_start": "start",
    "offset_end": "end",
}


def column_label(key: str) -> str:
    """The label a table header shows for ``key``."""
    return COLUMN_LABELS.get(key, str(key).replace("_", " "))


CHANGE_LABELS: dict[str, str] = {
    "top_k": "top-k",
    "chunk_size": "chunk size",
    "chunk_overlap": "overlap",
    "several": "several",
    "none": "nothing",
    "unknown": "unknown (no config)",
}
"""What changed between two runs (a pair's ``changed`` key) as the scatter's legend, the pages'
tables and the report write it."""


def change_label(key: object) -> str:
    """The words for a pair's ``changed`` key (``chunk_size`` → ``chunk size``)."""
    return CHANGE_LABELS.get(str(key), str(key).replace("_", " "))


SHARE_KEYS = frozenset(
    {
        "flip_rate",
        "collapse_rate",
        "null_loss",
        "null_gain",
        "null_rate",
        "citation_rate",
        "null_transition_rate",
        "share",
        "conditional",
    }
)
"""Keys of shares (0–1) that tables write as percentages (``94.3%``, :func:`palette.percent`), the
way the charts and the report do; a ``_doc`` / ``_span`` suffix names the same share at a level."""


def is_share(key: object) -> bool:
    """Whether the column or metric ``key`` is a share written as a percentage."""
    k = str(key)
    base = k.removesuffix("_doc").removesuffix("_span")
    return k in SHARE_KEYS or base in SHARE_KEYS or base.endswith("_rate")


METRIC_LABELS: dict[str, str] = {
    "j_avg": "J_avg",
    "flip_rate": "flip rate",
    "collapse_rate": "collapse rate",
    "null_loss": "null loss",
    "null_gain": "null gain",
    "cfs_p95_tail": "CFS p95 (tail reading)",
    "cfs_p95": "CFS p95",
    "cfs_median": "CFS median",
    "cfs_mean": "CFS mean",
    "stage_survival": "stage survival",
    "parse_failure_rate": "parse-failure rate",
    "wasted_retrieval": "wasted retrieval",
    "noise_distraction": "noise distraction",
    "spearman": "mean Spearman",  # a run's: the mean over its explained queries (seed 001, §5)
    "warg": "WARG",
    "ndcg": "nDCG",
    "recall": "recall",
    "precision": "precision",
    "hit": "hit rate",
    "mrr": "MRR",
    "map": "MAP",
}
"""Gate and quality metrics by key (``ndcg@10``, ``j_avg``) as the report writes them."""

_AT = re.compile(r"([a-z]+)@(\d+)")


def metric_label(metric: str, level: str | None = None) -> str:
    """The words for a metric key, with its level or stage (``j_avg``, ``span`` → ``J_avg, span``;
    ``ndcg@10`` → ``nDCG@10``; ``stage_survival``, ``every`` → ``stage survival, every stage``)."""
    m = _AT.fullmatch(metric)
    text = f"{METRIC_LABELS.get(m[1], m[1])}@{m[2]}" if m else METRIC_LABELS.get(metric, metric.replace("_", " "))
    if level:
        text += f", {'every stage' if level == 'every' else level}"
    return text


def _minus(x: float) -> str:
    return f"{x:g}".replace("-", "−")


def rule_label(rule: Any) -> str:
    """A gate rule as a reader reads it (``J_avg, span ≥ 0.5``, ``Δ nDCG@10 ≥ −0.02 (significant)``);
    a name the rule was given by its author is kept as it is."""
    where = f",{rule.level}" if rule.level else (f"({rule.p})" if rule.p else "")
    sig = " (significant)" if rule.significant else ""
    auto = f"{'Δ ' if rule.relative else ''}{rule.metric}{where} {rule.op} {rule.threshold:g}{sig}"
    if rule.name and rule.name != auto:
        return str(rule.name)
    what = f"WARG({rule.p:g})" if rule.metric == "warg" and rule.p else metric_label(rule.metric, rule.level)
    op = {">=": "≥", "<=": "≤"}.get(rule.op, rule.op)
    return f"{'Δ ' if rule.relative else ''}{what} {op} {_minus(rule.threshold)}{sig}"

"""Gate rules and policies as data: what they say, the presets, and their TOML form.

A :class:`Rule` names a metric, where it applies (a level — ``doc``/``span`` — a pipeline stage,
or WARG's ``p``), a comparison and a threshold. It is **absolute** (the candidate's value, or the
pair's value for metrics that compare the two runs, against the threshold: ``J_avg,span ≥ 0.5``) or
**relative** (the change ``candidate − baseline``: "nDCG@10 drops by at most 0.02" is ``ndcg@10``,
relative, ``>= -0.02``). ``significant = true`` asks the rule to decide on the figure's 95 %
bootstrap interval instead of its point value (pass when the whole interval satisfies the
comparison, fail when the whole interval violates it, *inconclusive* otherwise); ``min_queries``
asks for at least that many queries behind the figure (fewer: inconclusive). ``required`` fails
the rule when its data is absent instead of leaving it *not applicable*.

A :class:`GatePolicy` is the rules plus what the verdict must rest on: ``min_applicable`` rules at
least, and ``require`` — the questions (``stability``, ``fidelity``, ``attribution``, ``quality``)
each of which needs an applicable rule — so a verdict resting on 3 of 9 rules can be refused.

Metrics (``metric`` / where):

=====================  ==================  =============================================
metric                 level / stage       value
=====================  ==================  =============================================
j_avg                  doc, span           mean Jaccard between the two runs (seed 000)
flip_rate              doc, span           share of queries with J < τ
collapse_rate          span                share of queries with J_span = 0, both non-empty
null_loss, null_gain   doc, span           share of queries losing / gaining all evidence
cfs_p95_tail           —                   the CFS 95 % of queries reach (seed 002; the
                                           reading the fidelity page recommends)
cfs_p95, cfs_median,   —                   CFS p95 as the fidelity rules read it (the 95th
cfs_mean                                   percentile by default), median, mean
stage_survival         a stage or "every"  conditional survival rate of the stage(s)
parse_failure_rate     —                   unparsable citation-like strings
warg                   p (e.g. 0.9)        mean WARG(p) of stored attributions (seed 001)
wasted_retrieval,      —                   share of explained queries
noise_distraction
ndcg@k, recall@k,      —                   ranking quality from relevance labels (mean over
precision@k, hit@k,                        labelled queries; trec_eval's definitions)
mrr, map, ndcg, recall
=====================  ==================  =============================================
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragaudit_core import tomlfile
from ragaudit_core.fidelity.graph import FIDELITY_STAGES
from ragaudit_core.stability.compare import OVERLAP_METRICS, PAIR_METRIC_LABELS

__all__ = [
    "AREAS",
    "DEFAULT_RULES",
    "MIN_ATTRIBUTION_QUERIES",
    "MIN_QUERIES",
    "MIN_SIGNIFICANCE_QUERIES",
    "OVERLAP_METRICS",
    "PAIR_METRICS",
    "PRESETS",
    "QUALITY_METRIC",
    "RULE_FIELDS",
    "RUN_METRICS",
    "STRICT_RULES",
    "Area",
    "GatePolicy",
    "Rule",
    "area_of",
    "dump_policy",
    "dump_rules",
    "load_policy",
    "load_rules",
    "policy_from_dict",
    "policy_from_toml",
    "quality_cutoffs",
    "rule_rows",
    "rules_from_dict",
    "rules_from_rows",
    "rules_from_toml",
    "save_rules",
]

PAIR_METRICS = frozenset(PAIR_METRIC_LABELS)
FIDELITY_METRICS = frozenset(
    {"cfs_p95", "cfs_p95_tail", "cfs_median", "cfs_mean", "stage_survival", "parse_failure_rate"}
)
ATTRIBUTION_METRICS = frozenset({"warg", "wasted_retrieval", "noise_distraction"})
RUN_METRICS = FIDELITY_METRICS | ATTRIBUTION_METRICS
QUALITY_METRIC = re.compile(r"(ndcg|recall|precision|hit)@[1-9][0-9]*|mrr|map|ndcg|recall")
"""Ranking-quality metric keys (:func:`ragaudit_core.quality.metric_names`)."""

Area = Literal["stability", "fidelity", "attribution", "quality"]
AREAS: tuple[Area, ...] = ("stability", "fidelity", "attribution", "quality")
STAGES = tuple(FIDELITY_STAGES.values())  # chunking … generation


def area_of(metric: str) -> Area:
    """Which question a metric answers."""
    if metric in PAIR_METRICS:
        return "stability"
    if metric in FIDELITY_METRICS:
        return "fidelity"
    if metric in ATTRIBUTION_METRICS:
        return "attribution"
    return "quality"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = ""
    metric: str
    level: str | None = None
    p: float | None = Field(None, gt=0, lt=1, allow_inf_nan=False)
    op: Literal[">=", "<=", ">", "<"]
    threshold: float = Field(allow_inf_nan=False)
    relative: bool = False
    required: bool = False  # absent data fails the rule instead of making it not applicable
    significant: bool = False  # decide on the 95 % interval: pass / fail / inconclusive
    min_queries: int | None = Field(None, ge=1)  # fewer queries behind the figure: inconclusive

    @property
    def area(self) -> Area:
        return area_of(self.metric)

    @field_validator("metric")
    @classmethod
    def _known(cls, metric: str) -> str:
        if not (metric in PAIR_METRICS or metric in RUN_METRICS or QUALITY_METRIC.fullmatch(metric)):
            raise ValueError(
                f"unknown metric {metric!r}; metrics are: {', '.join(sorted(PAIR_METRICS | RUN_METRICS))}, "
                "and ranking quality (ndcg@10, recall@5, precision@k, hit@k, mrr, map, ndcg, recall)"
            )
        return metric

    @model_validator(mode="after")
    def _where(self) -> Rule:
        if self.metric in PAIR_METRICS:
            if self.level not in ("doc", "span"):
                raise ValueError(f"{self.metric} needs level 'doc' or 'span'")
            if self.relative:
                raise ValueError(f"{self.metric} already compares the two runs; it cannot be relative")
        if self.metric == "stage_survival" and self.level not in (*STAGES, "every"):
            raise ValueError(f"stage_survival needs level = one of {', '.join(STAGES)} or 'every'")
        if self.metric == "warg" and self.p is None:
            raise ValueError("warg needs p (e.g. 0.9)")
        if not self.name:
            where = f",{self.level}" if self.level else (f"({self.p})" if self.p else "")
            sig = " (significant)" if self.significant else ""
            self.name = f"{'Δ ' if self.relative else ''}{self.metric}{where} {self.op} {self.threshold:g}{sig}"
        return self


class GatePolicy(BaseModel):
    """The rules and what a verdict must rest on (``min_applicable`` rules, every ``require``d
    question answered by an applicable rule)."""

    model_config = ConfigDict(extra="forbid")
    rules: list[Rule] = []
    min_applicable: int = Field(0, ge=0)
    require: list[Area] = []


MIN_QUERIES = 30
"""The default presets' stability and ranking-quality rules decide on at least this many queries
behind the figure (the queries both runs logged; the labelled queries for quality); on fewer they
are *inconclusive* and say so. Without it the default preset passed two runs sharing one to three
queries as readily as two sharing 300, and a percentile bootstrap interval of a mean over a handful
of queries is too narrow to be read as 95 % (our reading; a ``[[rule]]`` with its own
``min_queries``, or ``preset = "none"``, sets another floor)."""

MIN_SIGNIFICANCE_QUERIES = 5
"""A rule asking for significance decides on its 95 % interval only when at least this many queries
stand behind it; on fewer it is inconclusive, whatever its own ``min_queries``. A percentile
bootstrap over one query is a point ([−1.000, −1.000] for a stage lost on the one query that
reached it), and over a handful it covers far less than 95 % (0.75 at 3 queries, 0.85 at 5, for
the mean of normal values; see :data:`MIN_ATTRIBUTION_QUERIES`)."""

MIN_ATTRIBUTION_QUERIES = 10
"""The default presets' attribution rule decides on at least this many queries both runs explained.
An attribution costs about 30 s a query on two CPU cores, so batches are small, and a percentile
bootstrap interval is narrower than its name on few queries: for a mean of normal values it covers
P(|t_{n−1}| < 1.96·√((n−1)/n)) — 0.75 at 3 queries, 0.85 at 5, 0.90 at 10, 0.94 at 30 (our reading;
the stability rules ask for :data:`MIN_QUERIES`, which attribution batches rarely reach)."""

# The default preset: document-level rules work on any log (RagCiteCheck format too); span,
# fidelity, attribution and quality rules apply when their data is present. Fidelity, alignment
# and quality rules are relative, so a run compared with itself passes whatever its absolute
# quality; the seed's absolute alert thresholds are the STRICT preset. The quality rule and the
# stage-survival rule ask for significance: a drop of nDCG@10 fails only when its whole interval lies
# below −0.02, a stage's survival only when its change's whole interval lies below −0.05 (a rate over
# the few dozen queries that reach a stage moves by 0.05 with two or three queries). So does the WARG
# rule: a rise of WARG(0.9) fails only when the paired interval of the change over the queries both
# runs explained lies wholly above +0.05, on at least MIN_ATTRIBUTION_QUERIES of them. Stability
# and quality rules need MIN_QUERIES queries behind their figure.
DEFAULT_RULES: list[Rule] = [
    Rule(metric="j_avg", level="doc", op=">=", threshold=0.5, min_queries=MIN_QUERIES),
    Rule(metric="flip_rate", level="doc", op="<=", threshold=0.5, min_queries=MIN_QUERIES),
    Rule(metric="null_loss", level="doc", op="<=", threshold=0.01, min_queries=MIN_QUERIES),
    Rule(metric="j_avg", level="span", op=">=", threshold=0.5, min_queries=MIN_QUERIES),
    Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2, min_queries=MIN_QUERIES),
    Rule(metric="cfs_p95_tail", op=">=", threshold=-0.15, relative=True),
    Rule(metric="stage_survival", level="every", op=">=", threshold=-0.05, relative=True, significant=True),
    Rule(metric="parse_failure_rate", op="<=", threshold=0.005, relative=True),
    Rule(
        metric="warg",
        p=0.9,
        op="<=",
        threshold=0.05,
        relative=True,
        significant=True,
        min_queries=MIN_ATTRIBUTION_QUERIES,
    ),
    Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True, min_queries=MIN_QUERIES),
]
STRICT_RULES: list[Rule] = [
    *DEFAULT_RULES[:5],
    Rule(metric="cfs_p95_tail", op=">=", threshold=0.85),
    Rule(metric="stage_survival", level="every", op=">=", threshold=0.9),
    Rule(metric="parse_failure_rate", op="<=", threshold=0.005),
    DEFAULT_RULES[-2],  # WARG(0.9), relative with significance
    DEFAULT_RULES[-1],
]

PRESETS: dict[str, GatePolicy] = {
    "default": GatePolicy(rules=DEFAULT_RULES),
    "strict": GatePolicy(rules=STRICT_RULES),
    # a product review: the default rules, and a verdict only when all three questions are answered
    "review": GatePolicy(rules=DEFAULT_RULES, require=["stability", "fidelity", "attribution"]),
    "none": GatePolicy(),
}


def quality_cutoffs(policy: GatePolicy | list[Rule]) -> tuple[int, ...]:
    """The cut-offs the policy's ranking-quality rules name (``ndcg@3`` → 3), sorted: the gate
    computes these beside the default ones, so a rule at any cut-off reads its figure."""
    rules = policy.rules if isinstance(policy, GatePolicy) else policy
    return tuple(sorted({int(r.metric.split("@", 1)[1]) for r in rules if r.area == "quality" and "@" in r.metric}))


def load_policy(path: str | os.PathLike[str]) -> GatePolicy:
    """A policy from a TOML file (:func:`policy_from_toml`); ``ValueError`` says what is wrong."""
    return policy_from_dict(tomlfile.load_toml_file(path))


def policy_from_toml(data: bytes) -> GatePolicy:
    """A policy from TOML: ``preset = "default" | "strict" | "review" | "none"``, any ``[[rule]]``
    tables (added to the preset; with ``[[rule]]`` tables and no preset, only those rules),
    ``min_applicable = N`` and ``require = ["stability", "fidelity", "attribution", "quality"]``
    (both override the preset's).

    Bad input is a ``ValueError`` naming the key: what :func:`tomlfile.load_toml` refuses (over
    1 MiB, not UTF-8, not TOML, nested deeper than 4 levels), an unknown key, metric or operator,
    a threshold or ``p`` that is not a finite number (TOML allows ``inf`` and ``nan``; a rule
    against ``nan`` could never fail)."""
    return policy_from_dict(tomlfile.load_toml(data))


def policy_from_dict(data: dict[str, Any]) -> GatePolicy:
    unknown = set(data) - {"preset", "rule", "fidelity", "min_applicable", "require"}
    if unknown:
        raise ValueError(
            f"unknown top-level keys: {', '.join(sorted(unknown))} (use preset, [[rule]], min_applicable, require)"
        )
    preset = data.get("preset", "none" if data.get("rule") else "default")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ValueError(f"preset: must be one of {', '.join(PRESETS)}, not {preset!r}")
    tables = data.get("rule", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ValueError("rule: must be an array of tables, written [[rule]]")
    base = PRESETS[preset]
    rules = list(base.rules)
    for i, r in enumerate(tables):
        try:
            rules.append(Rule.model_validate(r))
        except ValidationError as e:
            raise ValueError(f"[[rule]] number {i + 1}: {_why(e)}") from None
    try:
        return GatePolicy(
            rules=rules,
            min_applicable=data.get("min_applicable", base.min_applicable),
            require=data.get("require", base.require),
        )
    except ValidationError as e:
        raise ValueError(_why(e)) from None


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """The rules of a TOML file (:func:`load_policy` without the verdict settings)."""
    return load_policy(path).rules


def rules_from_toml(data: bytes) -> list[Rule]:
    return policy_from_toml(data).rules


def rules_from_dict(data: dict[str, Any]) -> list[Rule]:
    return policy_from_dict(data).rules


def _why(e: ValidationError) -> str:
    return "; ".join(
        (f"{'.'.join(map(str, err['loc']))}: " if err["loc"] else "") + err["msg"].removeprefix("Value error, ")
        for err in e.errors()
    )


def dump_policy(policy: GatePolicy) -> str:
    """TOML text that :func:`load_policy` reads back to the same policy (``preset = "none"``)."""
    lines = ["# RagAudit gate rules (see ragaudit_core/review/gate/rules.py for the metrics)", 'preset = "none"']
    if policy.min_applicable:
        lines.append(f"min_applicable = {policy.min_applicable}")
    if policy.require:
        lines.append("require = [" + ", ".join(f'"{a}"' for a in policy.require) + "]")
    lines.append("")
    for r in policy.rules:
        lines.append("[[rule]]")
        for k, v in r.model_dump(exclude_none=True).items():
            if k in ("relative", "required", "significant") and not v:
                continue
            lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
    return "\n".join(lines)


def dump_rules(rules: list[Rule]) -> str:
    return dump_policy(GatePolicy(rules=rules))


def save_rules(rules: list[Rule] | GatePolicy, path: str | os.PathLike[str]) -> None:
    """Write the rules (or a whole policy) as TOML to ``path``, creating its folder."""
    from pathlib import Path

    policy = rules if isinstance(rules, GatePolicy) else GatePolicy(rules=rules)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_policy(policy) + "\n", encoding="utf-8")


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    import json

    return json.dumps(str(v), ensure_ascii=False)  # a TOML basic string is a JSON string


RULE_FIELDS = ["metric", "level", "p", "op", "threshold", "relative", "significant", "min_queries", "required"]


def rule_rows(rules: list[Rule]) -> list[dict]:
    """Rules as plain rows (for a table editor); names are left out and rebuilt on the way back."""
    return [{k: getattr(r, k) for k in RULE_FIELDS} for r in rules]


def rules_from_rows(rows: list[dict]) -> tuple[list[Rule], list[str]]:
    """Rules from edited rows; rows that do not validate are reported (``row N: why``) and left out.
    Blank cells (None, NaN, "") are absent fields; a row with no metric is skipped."""
    rules, errors = [], []
    for i, row in enumerate(rows, start=1):
        clean = {k: v for k, v in row.items() if k in RULE_FIELDS and v is not None and v == v and v != ""}
        if not clean.get("metric"):
            continue
        for flag in ("relative", "required", "significant"):
            clean[flag] = bool(clean.get(flag, False))
        if "min_queries" in clean:
            clean["min_queries"] = int(clean["min_queries"])
        try:
            rules.append(Rule.model_validate(clean))
        except ValidationError as e:
            errors.append(f"row {i}: {_why(e)}")
    return rules, errors

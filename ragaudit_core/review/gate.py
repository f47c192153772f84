"""Deploy gate: may a candidate configuration replace the baseline? Rules as data.

A :class:`Rule` names a metric, where it applies (a level — ``doc``/``span`` — or a
pipeline stage), a comparison and a threshold. It is either

* **absolute** — the candidate's value (or the pair's value, for metrics that compare the
  two runs, such as ``j_avg``) is compared with the threshold: ``J_avg,span ≥ 0.5``; or
* **relative** — the change from baseline to candidate, ``candidate − baseline``, is
  compared with the threshold: "CFS p95 drops by at most 0.15" is ``cfs_p95``,
  relative, ``>= -0.15``.

Evaluating a rule gives a :class:`RuleResult`: ``pass`` / ``fail`` / ``not applicable``
(the data is absent: no spans, no provenance, no stored attributions), the value, and
one sentence that says why. The verdict fails when any applicable rule fails. A rule
marked ``required`` fails when its data is absent (for a CI gate that must not pass
just because, say, the span hashes disappeared from the logs).

Metrics (``metric`` / where):

=====================  ==================  =============================================
metric                 level / stage       value
=====================  ==================  =============================================
j_avg                  doc, span           mean Jaccard between the two runs (seed 000)
flip_rate              doc, span           share of queries with J < τ
collapse_rate          doc, span           share of queries with J = 0, both non-empty
null_loss, null_gain   doc                 share of queries losing / gaining all evidence
cfs_p95, cfs_mean      —                   citation fidelity of a run (seed 002)
stage_survival         a stage or "every"  conditional survival rate of the stage(s)
parse_failure_rate     —                   unparsable citation-like strings
warg                   p (e.g. 0.9)        mean WARG(p) of stored attributions (seed 001)
wasted_retrieval       —                   share of explained queries
noise_distraction      —                   share of explained queries
=====================  ==================  =============================================
"""

from __future__ import annotations

import operator
import os
from dataclasses import dataclass, field
from typing import Literal

import duckdb
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ragaudit_core import tomlfile
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.fidelity.graph import FIDELITY_STAGES
from ragaudit_core.stability.compare import PAIR_METRIC_LABELS, CompareResult

__all__ = [
    "DEFAULT_RULES",
    "PAIR_METRICS",
    "PRESETS",
    "RUN_METRICS",
    "STRICT_RULES",
    "GateInputs",
    "Rule",
    "RuleResult",
    "Verdict",
    "collect",
    "dump_rules",
    "evaluate",
    "load_rules",
    "review",
    "rule_rows",
    "rules_from_dict",
    "rules_from_rows",
    "rules_from_toml",
    "save_rules",
    "verdict_rows",
    "verdict_table",
]

PAIR_METRICS = frozenset(PAIR_METRIC_LABELS)
RUN_METRICS = {
    "cfs_p95",
    "cfs_mean",
    "stage_survival",
    "parse_failure_rate",
    "warg",
    "wasted_retrieval",
    "noise_distraction",
}
_STAGES = tuple(FIDELITY_STAGES.values())  # chunking … generation
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_WORDS = {">=": "at least", "<=": "at most", ">": "above", "<": "below"}


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = ""
    metric: Literal[
        "j_avg",
        "flip_rate",
        "collapse_rate",
        "null_loss",
        "null_gain",
        "cfs_p95",
        "cfs_mean",
        "stage_survival",
        "parse_failure_rate",
        "warg",
        "wasted_retrieval",
        "noise_distraction",
    ]
    level: str | None = None
    p: float | None = Field(None, gt=0, lt=1, allow_inf_nan=False)
    op: Literal[">=", "<=", ">", "<"]
    threshold: float = Field(allow_inf_nan=False)
    relative: bool = False
    required: bool = False  # absent data fails the rule instead of making it not applicable

    @model_validator(mode="after")
    def _where(self) -> Rule:
        if self.metric in PAIR_METRICS:
            if self.level not in ("doc", "span"):
                raise ValueError(f"{self.metric} needs level 'doc' or 'span'")
            if self.relative:
                raise ValueError(f"{self.metric} already compares the two runs; it cannot be relative")
        if self.metric == "stage_survival" and self.level not in (*_STAGES, "every"):
            raise ValueError(f"stage_survival needs level = one of {', '.join(_STAGES)} or 'every'")
        if self.metric == "warg" and self.p is None:
            raise ValueError("warg needs p (e.g. 0.9)")
        if not self.name:
            where = f",{self.level}" if self.level else (f"({self.p})" if self.p else "")
            self.name = f"{'Δ ' if self.relative else ''}{self.metric}{where} {self.op} {self.threshold:g}"
        return self


class RuleResult(BaseModel):
    rule: Rule
    status: Literal["pass", "fail", "not applicable"]
    value: float | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    message: str


class Verdict(BaseModel):
    baseline: str
    candidate: str
    status: Literal["pass", "fail"]
    results: list[RuleResult]

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "fail"]

    def sorted_results(self) -> list[RuleResult]:
        """Failed rules first, then passed, then not applicable."""
        order = {"fail": 0, "pass": 1, "not applicable": 2}
        return sorted(self.results, key=lambda r: order[r.status])


# The default preset: document-level rules work on any log (RagCiteCheck format too); span,
# fidelity and attribution rules apply when their data is present. Fidelity and alignment
# rules are relative, so a run compared with itself passes whatever its absolute quality;
# the seed's absolute alert thresholds are the STRICT preset.
DEFAULT_RULES: list[Rule] = [
    Rule(metric="j_avg", level="doc", op=">=", threshold=0.5),
    Rule(metric="flip_rate", level="doc", op="<=", threshold=0.5),
    Rule(metric="null_loss", level="doc", op="<=", threshold=0.01),
    Rule(metric="j_avg", level="span", op=">=", threshold=0.5),
    Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2),
    Rule(metric="cfs_p95", op=">=", threshold=-0.15, relative=True),
    Rule(metric="stage_survival", level="every", op=">=", threshold=-0.05, relative=True),
    Rule(metric="parse_failure_rate", op="<=", threshold=0.005, relative=True),
    Rule(metric="warg", p=0.9, op="<=", threshold=0.05, relative=True),
]
STRICT_RULES: list[Rule] = [
    *DEFAULT_RULES[:5],
    Rule(metric="cfs_p95", op=">=", threshold=0.85),
    Rule(metric="stage_survival", level="every", op=">=", threshold=0.9),
    Rule(metric="parse_failure_rate", op="<=", threshold=0.005),
    Rule(metric="warg", p=0.9, op="<=", threshold=0.05, relative=True),
]


PRESETS: dict[str, list[Rule]] = {"default": DEFAULT_RULES, "strict": STRICT_RULES, "none": []}


def load_rules(path: str | os.PathLike[str]) -> list[Rule]:
    """Rules from a TOML file (:func:`rules_from_toml`); ``ValueError`` says what is wrong."""
    return rules_from_dict(tomlfile.load_toml_file(path))


def rules_from_toml(data: bytes) -> list[Rule]:
    """Rules from TOML: ``preset = "default" | "strict" | "none"`` and/or ``[[rule]]`` tables
    (added to the preset; with ``[[rule]]`` tables and no preset, only those rules).

    Bad input is a ``ValueError`` naming the key: what :func:`tomlfile.load_toml` refuses (over
    1 MiB, not UTF-8, not TOML, nested deeper than 4 levels), an unknown key, metric or operator,
    a threshold or ``p`` that is not a finite number (TOML allows ``inf`` and ``nan``; a rule
    against ``nan`` could never fail)."""
    return rules_from_dict(tomlfile.load_toml(data))


def rules_from_dict(data: dict) -> list[Rule]:
    unknown = set(data) - {"preset", "rule", "fidelity"}
    if unknown:
        raise ValueError(f"unknown top-level keys: {', '.join(sorted(unknown))} (use preset and [[rule]])")
    preset = data.get("preset", "none" if data.get("rule") else "default")
    if not isinstance(preset, str) or preset not in PRESETS:
        raise ValueError(f"preset: must be default, strict or none, not {preset!r}")
    tables = data.get("rule", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ValueError("rule: must be an array of tables, written [[rule]]")
    out = list(PRESETS[preset])
    for i, r in enumerate(tables):
        try:
            out.append(Rule.model_validate(r))
        except ValidationError as e:
            raise ValueError(f"[[rule]] number {i + 1}: {_why(e)}") from None
    return out


def _why(e: ValidationError) -> str:
    return "; ".join(
        (f"{'.'.join(map(str, err['loc']))}: " if err["loc"] else "") + err["msg"].removeprefix("Value error, ")
        for err in e.errors()
    )


def dump_rules(rules: list[Rule]) -> str:
    """TOML text that :func:`load_rules` reads back to the same rules (``preset = "none"``)."""
    lines = ["# RagAudit gate rules (see ragaudit_core/review/gate.py for the metrics)", 'preset = "none"', ""]
    for r in rules:
        lines.append("[[rule]]")
        for k, v in r.model_dump(exclude_none=True).items():
            if k in ("relative", "required") and not v:
                continue
            lines.append(f"{k} = {_toml_value(v)}")
        lines.append("")
    return "\n".join(lines)


def save_rules(rules: list[Rule], path: str | os.PathLike[str]) -> None:
    """Write ``rules`` as TOML (:func:`dump_rules`) to ``path``, creating its folder."""
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_rules(rules) + "\n", encoding="utf-8")


def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v))
    import json

    return json.dumps(str(v), ensure_ascii=False)  # a TOML basic string is a JSON string


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


RunMetricKey = str | tuple[str, str] | tuple[str, float]
"""A run metric: ``metric``, ``("stage_survival", stage)`` or ``("warg", p)``."""


@dataclass
class GateInputs:
    """The metric values a verdict is computed from.

    ``pair[(metric, level)]``: the pair metrics between baseline and candidate (absent keys:
    not applicable). ``runs[run][key]``: each run's own metrics (absent or None: not
    applicable). ``pair_note``: why pair metrics are absent, when they are.
    """

    baseline: str
    candidate: str
    pair: dict[tuple[str, str], float] = field(default_factory=dict)
    runs: dict[str, dict[RunMetricKey, float | None]] = field(default_factory=dict)
    pair_note: str | None = None


def evaluate(rules: list[Rule], inputs: GateInputs) -> Verdict:
    """Evaluate rules on precomputed metric values (:class:`GateInputs`)."""
    baseline, candidate, pair, runs = inputs.baseline, inputs.candidate, inputs.pair, inputs.runs
    results = []
    for rule in rules:
        cmp = _OPS[rule.op]
        if rule.metric in PAIR_METRICS:
            v = pair.get((rule.metric, rule.level or ""))
            if v is None:
                note = inputs.pair_note
                results.append(
                    RuleResult(
                        rule=rule,
                        status="not applicable",
                        message=(
                            f"{rule.metric} at {rule.level} level is unavailable for {baseline} vs {candidate}"
                            + (
                                f": {note}"
                                if note
                                else " (the logs carry no span information)"
                                if rule.level == "span"
                                else ""
                            )
                        ),
                    )
                )
                continue
            ok = cmp(v, rule.threshold)
            results.append(
                RuleResult(
                    rule=rule,
                    status="pass" if ok else "fail",
                    value=v,
                    message=(
                        f"{rule.metric} ({rule.level}) between {baseline} and {candidate} is {_fmt(v)}, "
                        f"{'' if ok else 'not '}{_WORDS[rule.op]} {rule.threshold:g}"
                    ),
                )
            )
            continue
        stages = list(_STAGES) if rule.level == "every" else [rule.level or ""]
        keys: list[str | tuple[str, str] | tuple[str, float]] = (
            [("stage_survival", s) for s in stages]
            if rule.metric == "stage_survival"
            else [("warg", float(rule.p or 0.0))]
            if rule.metric == "warg"
            else [rule.metric]
        )
        worst: RuleResult | None = None
        applicable = False
        for key in keys:
            b = runs.get(baseline, {}).get(key)
            c = runs.get(candidate, {}).get(key)
            if c is None or (rule.relative and b is None):
                continue
            applicable = True
            v = c - b if rule.relative and b is not None else c
            ok = cmp(v, rule.threshold)
            label = f"{key[0]} ({key[1]})" if isinstance(key, tuple) else key
            if rule.relative:
                msg = (
                    f"{label} goes from {_fmt(b)} ({baseline}) to {_fmt(c)} ({candidate}), a change of {v:+.3f}, "
                    f"{'' if ok else 'not '}{_WORDS[rule.op]} {rule.threshold:+g}"
                )
            else:
                msg = f"{label} of {candidate} is {_fmt(c)}, {'' if ok else 'not '}{_WORDS[rule.op]} {rule.threshold:g}"
            res = RuleResult(
                rule=rule, status="pass" if ok else "fail", value=v, baseline_value=b, candidate_value=c, message=msg
            )
            lower_is_worse = rule.op in (">=", ">")
            if (
                worst is None
                or (res.status == "fail" and worst.status == "pass")
                or (
                    res.status == worst.status
                    and worst.value is not None
                    and (v < worst.value if lower_is_worse else v > worst.value)
                )
            ):
                worst = res  # "every": report the stage closest to (or furthest past) the threshold
        if not applicable:
            what = {
                "cfs_p95": "citation fidelity (provenance logs)",
                "cfs_mean": "citation fidelity (provenance logs)",
                "stage_survival": "stage survival (provenance logs with ground truth)",
                "parse_failure_rate": "citation parsing (provenance logs)",
                "warg": "stored attributions",
                "wasted_retrieval": "stored attributions",
                "noise_distraction": "stored attributions",
            }[rule.metric]
            results.append(
                RuleResult(
                    rule=rule,
                    status="not applicable",
                    message=(f"no {what} for {candidate if not rule.relative else baseline + ' and ' + candidate}"),
                )
            )
        elif worst is not None:
            results.append(worst)
    for i, r in enumerate(results):
        if r.status == "not applicable" and r.rule.required:
            results[i] = r.model_copy(update={"status": "fail", "message": r.message + " — and the rule is required"})
    status = "fail" if any(r.status == "fail" for r in results) else "pass"
    return Verdict(baseline=baseline, candidate=candidate, status=status, results=results)


RULE_FIELDS = ["metric", "level", "p", "op", "threshold", "relative", "required"]


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
        clean["relative"] = bool(clean.get("relative", False))
        clean["required"] = bool(clean.get("required", False))
        try:
            rules.append(Rule.model_validate(clean))
        except ValidationError as e:
            errors.append(f"row {i}: {_why(e)}")
    return rules, errors


def verdict_rows(verdict: Verdict) -> list[dict]:
    """One row per rule, failed first: status, rule, value, baseline, candidate, why."""
    return [
        {
            "status": r.status,
            "rule": r.rule.name,
            "value": r.value,
            "baseline": r.baseline_value,
            "candidate": r.candidate_value,
            "why": r.message,
        }
        for r in verdict.sorted_results()
    ]


def verdict_table(verdict: Verdict) -> str:
    """The verdict as a plain-text table, failed rules first."""
    rows = [
        (r.status.upper() if r.status != "not applicable" else "n/a", r.rule.name, _fmt(r.value), r.message)
        for r in verdict.sorted_results()
    ]
    w0 = max(6, *(len(a) for a, *_ in rows)) if rows else 6
    w1 = max(4, *(len(b) for _, b, *_ in rows)) if rows else 4
    out = [
        f"gate: {verdict.candidate} against baseline {verdict.baseline}: {verdict.status.upper()}"
        f" ({len(verdict.failed)} of {sum(r.status != 'not applicable' for r in verdict.results)} applicable "
        f"rules failed)",
        "",
        f"{'status':{w0}}  {'rule':{w1}}  {'value':>7}  why",
    ]
    out += [f"{a:{w0}}  {b:{w1}}  {c:>7}  {d}" for a, b, c, d in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------- from the database


def collect(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    candidate: str,
    *,
    tau: float = FLIP_THRESHOLD,
    comparison: CompareResult | None = None,
) -> GateInputs:
    """The metric values :func:`evaluate` needs, computed from an ingested database.

    Pair metrics come from :func:`compare.compare_runs` (the compare page's numbers,
    over the queries both runs logged); run metrics from :func:`fidelity.fidelity_runs`
    (runs with provenance logs) and from stored attributions (condition ``original``,
    mean over the queries explained in *both* runs when both have any, so a relative
    rule compares like with like; over all of a run's explained queries otherwise).
    """
    from ragaudit_core.fidelity.score import fidelity_runs, provenance_runs
    from ragaudit_core.stability.compare import compare_runs
    from ragaudit_core.stability.metrics import StabilityError, list_runs, span_capable_runs

    evidence_runs = set(list_runs(con))
    have_prov = set(provenance_runs(con))
    known = sorted(evidence_runs | have_prov)
    for r in (baseline, candidate):
        if r not in known:
            raise StabilityError(f"run {r!r} not found; runs are: {', '.join(map(repr, known))}")
    pair: dict[tuple[str, str], float] = {}
    cmp = None
    if not {baseline, candidate} <= evidence_runs:
        pass  # provenance-only run(s): no evidence lists to compare, pair rules are not applicable
    elif baseline == candidate:
        # A run against itself: every J is 1 (both-empty counts as 1 too), so nothing flips,
        # collapses, or changes null state; span level where the run carries spans.
        levels = ["doc"] + (["span"] if span_capable_runs(con, [baseline]) else [])
        for level in levels:
            pair |= {
                ("j_avg", level): 1.0,
                ("flip_rate", level): float(tau > 1.0),
                ("null_loss", level): 0.0,
                ("null_gain", level): 0.0,
            }
        if "span" in levels:
            pair[("collapse_rate", "span")] = 0.0
    else:
        cmp = comparison if comparison is not None else compare_runs(con, baseline, candidate, tau=tau)
    if cmp is not None:
        for metric in PAIR_METRIC_LABELS:
            if metric == "collapse_rate" and cmp.summary.n_collapsed is None:
                continue  # collapse is defined on spans only
            for level in ("doc", "span"):
                v = cmp.pair_value(metric, level)
                if v is not None:
                    pair[(metric, level)] = v
    inputs = GateInputs(baseline, candidate, pair, {baseline: {}, candidate: {}})
    if not {baseline, candidate} <= evidence_runs:
        inputs.pair_note = (
            f"no evidence logs for {' and '.join(sorted({baseline, candidate} - evidence_runs))} (provenance only)"
        )
    runs = inputs.runs
    for run, fid in fidelity_runs(con, [r for r in (baseline, candidate) if r in have_prov]).items():
        s = fid.summary
        m = runs[run]
        m["cfs_p95"], m["cfs_mean"], m["parse_failure_rate"] = s["cfs_p95"], s["cfs_mean"], s["parse_failure_rate"]
        for stage, v in s["stage_survival"].items():
            m[("stage_survival", stage)] = v
    for run, vals in _attribution_means(con, baseline, candidate).items():
        runs[run].update(vals)
    return inputs


def _attribution_means(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str) -> dict[str, dict]:
    import json

    cur = con.cursor()
    try:
        if not cur.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'attributions'"
        ).fetchall()[0][0]:
            return {}
        rows = cur.execute(
            """SELECT run_id, query_id, wasted_retrieval, noise_distraction, payload FROM attributions
               WHERE condition = 'original' AND list_contains(?, run_id) ORDER BY created_at""",
            [[baseline, candidate]],
        ).fetchall()
    finally:
        cur.close()
    by_run: dict[str, dict[str, tuple]] = {}
    for run, qid, wr, nd, payload in rows:  # the latest result per query wins
        by_run.setdefault(run, {})[qid] = (wr, nd, json.loads(payload)["warg"])
    if baseline in by_run and candidate in by_run:
        shared = set(by_run[baseline]) & set(by_run[candidate])
        if shared:
            by_run = {r: {q: v for q, v in d.items() if q in shared} for r, d in by_run.items()}
    out = {}
    for run, d in by_run.items():
        vals = list(d.values())
        m: dict[str | tuple[str, float], float] = {
            "wasted_retrieval": sum(bool(v[0]) for v in vals) / len(vals),
            "noise_distraction": sum(bool(v[1]) for v in vals) / len(vals),
            "n_explained": len(vals),
        }
        for p in {p for v in vals for p in v[2]}:
            ws = [v[2][p] for v in vals if p in v[2]]
            m[("warg", float(p))] = sum(ws) / len(ws)
        out[run] = m
    return out


def review(
    con: duckdb.DuckDBPyConnection, rules: list[Rule], baseline: str, candidate: str, *, tau: float = FLIP_THRESHOLD
) -> Verdict:
    """:func:`collect` then :func:`evaluate`: the verdict for a pair of ingested runs."""
    return evaluate(rules, collect(con, baseline, candidate, tau=tau))

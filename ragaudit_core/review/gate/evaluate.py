"""Evaluating a policy on metric values: each rule's status, and a verdict that says what it rests on.

A rule's result is ``pass``, ``fail``, ``inconclusive`` (its figure's interval straddles the
threshold under ``significant``, or fewer queries than ``min_queries`` stand behind it) or ``not
applicable`` (its data is absent: no spans, no provenance, no stored attributions, no relevance
labels), with the value, its 95 % interval where one exists, and one sentence saying why.

The verdict **fails** when any rule fails, or when it is thin — fewer applicable rules than the
policy's ``min_applicable``, or a ``require``d question without an applicable rule; otherwise it
is **inconclusive** when some rule is or when none could be judged (every rule not applicable, or
no rules: nothing was checked), and **passes** when every applicable rule passed. A relative rule
whose runs share none of the queries behind its figure is inconclusive (two means over different
queries are not a change). Its
headline says what it rests on: "PASS: of 9 rules, 3 passed, 6 not applicable (no provenance logs,
no attributions)".
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from ragaudit_core.intervals import Estimate
from ragaudit_core.review.gate.rules import (
    AREAS,
    MIN_SIGNIFICANCE_QUERIES,
    OVERLAP_METRICS,
    PAIR_METRICS,
    STAGES,
    Area,
    GatePolicy,
    Rule,
)
from ragaudit_core.review.labels import metric_label, rule_label
from ragaudit_core.wording import bracket

__all__ = [
    "BEHIND",
    "SHARE_ADVICE",
    "GateInputs",
    "RuleResult",
    "RunMetricKey",
    "Verdict",
    "evaluate",
    "verdict_lines",
    "verdict_rows",
    "verdict_table",
]

_RAW_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
EQUAL_WITHIN = 1e-6
"""A value within this (relative to the threshold, at least absolute) of a rule's threshold counts as
equal to it: six queries of precision exactly 0.1 average to 0.09999999999999999 in floating point,
the stability intervals resample per-query values kept as float32 (a bound of 0.10000000149 for a
J of 0.1 on every query), and a verdict must not turn on rounding ("≥ 0.1" holds for them, "> 0.1"
does not). No rule's threshold is meant to a millionth."""


def _tolerant(cmp: Callable[[float, float], bool]) -> Callable[[float, float], bool]:
    def holds(v: float, t: float) -> bool:
        return cmp(t, t) if abs(v - t) <= EQUAL_WITHIN * max(1.0, abs(t)) else cmp(v, t)

    return holds


_OPS = {op: _tolerant(cmp) for op, cmp in _RAW_OPS.items()}
_WORDS = {">=": "at least", "<=": "at most", ">": "above", "<": "below"}
Status = Literal["pass", "fail", "inconclusive", "not applicable"]
_COUNTED: list[tuple[Status, str]] = [
    ("pass", "passed"),
    ("fail", "failed"),
    ("inconclusive", "inconclusive"),
    ("not applicable", "not applicable"),
]

RunMetricKey = str | tuple[str, str] | tuple[str, float]
"""A run metric: ``metric``, ``("stage_survival", stage)`` or ``("warg", p)``."""

_MISSING = {
    "stability": "no span information",
    "fidelity": "no provenance logs",
    "attribution": "no stored attributions",
    "quality": "no relevance labels",
}


@dataclass
class GateInputs:
    """The metric values a verdict is computed from.

    ``pair[(metric, level)]``: the pair metrics between baseline and candidate (absent keys: not
    applicable). ``runs[run][key]``: each run's own metrics (absent or None: not applicable).
    ``pair_note``: why pair metrics are absent, when they are. Intervals (95 %, with the number of
    queries behind them) where they exist: ``pair_ci[(metric, level)]``, ``run_ci[run][key]``, and
    ``delta_ci[key]`` for the change candidate − baseline over the queries both runs have.
    ``run_n[run][key]``: the queries behind a run metric that has no interval (records with
    citations behind a CFS figure, with a ground-truth source behind stage survival, explained
    queries behind WARG), so that ``min_queries`` holds for every rule whose count is known.
    ``quality_note``: why relevance labels that are loaded label no query of a run (its query ids
    are not theirs), said instead of "no relevance labels". ``level_notes[level]``: why that level's
    Jaccard figures are left out (a run that logged no document ids: passage hashes)."""

    baseline: str
    candidate: str
    pair: dict[tuple[str, str], float] = field(default_factory=dict)
    runs: dict[str, dict[RunMetricKey, float | None]] = field(default_factory=dict)
    pair_note: str | None = None
    pair_ci: dict[tuple[str, str], Estimate] = field(default_factory=dict)
    run_ci: dict[str, dict[RunMetricKey, Estimate]] = field(default_factory=dict)
    delta_ci: dict[RunMetricKey, Estimate] = field(default_factory=dict)
    run_n: dict[str, dict[RunMetricKey, int]] = field(default_factory=dict)
    quality_note: str | None = None
    level_notes: dict[str, str] = field(default_factory=dict)  # why a level's J figures are left out
    have: dict[str, set[str]] = field(default_factory=dict)  # area → the runs holding its data (provenance logs)


class RuleResult(BaseModel):
    rule: Rule
    status: Status
    value: float | None = None
    baseline_value: float | None = None
    candidate_value: float | None = None
    ci: tuple[float, float] | None = None
    n_queries: int | None = None
    message: str

    @property
    def apart(self) -> bool:
        """A relative rule whose runs share none of the queries behind its figure
        (:func:`_no_shared_queries`): no change can be taken, more of the same will not help."""
        return self.status == "inconclusive" and self.n_queries == 0 and self.value is None


BEHIND: dict[Area, str] = {
    "stability": "queries",
    "fidelity": "queries with provenance logs",
    "attribution": "explained queries",
    "quality": "labelled queries",
}
"""The queries a question's figures are means over, as a sentence names them."""

SHARE_ADVICE: dict[Area, str] = {
    "stability": "give both runs the same questions",
    "fidelity": "give both runs provenance logs of the same questions",
    "attribution": "explain the same queries in both runs",
    "quality": "load labels for queries both runs answered, or give both runs the same labelled questions",
}
"""What lets a relative rule of a question be judged when its runs share none of the queries
behind its figure (:attr:`RuleResult.apart`)."""


class Verdict(BaseModel):
    baseline: str
    candidate: str
    status: Literal["pass", "fail", "inconclusive"]
    results: list[RuleResult]
    min_applicable: int = 0
    require: list[Area] = []
    thin: list[str] = []  # why the verdict rests on too little (each fails it)
    unjudged: list[str] = []  # why a verdict with nothing failed cannot pass (each makes it inconclusive)
    absent: dict[str, str] = {}  # what a question's not-applicable rules lacked, where not _MISSING's words

    def _lacked(self, area: str) -> str:
        return self.absent.get(area, _MISSING[area])

    @property
    def failed(self) -> list[RuleResult]:
        return [r for r in self.results if r.status == "fail"]

    @property
    def applicable(self) -> list[RuleResult]:
        return [r for r in self.results if r.status != "not applicable"]

    def sorted_results(self) -> list[RuleResult]:
        """Failed rules first, then inconclusive, passed, not applicable."""
        order = {"fail": 0, "inconclusive": 1, "pass": 2, "not applicable": 3}
        return sorted(self.results, key=lambda r: order[r.status])

    def missing(self) -> list[str]:
        """What the not-applicable rules lacked, one phrase per question."""
        areas = [r.rule.area for r in self.results if r.status == "not applicable"]
        return [self._lacked(a) for a in AREAS if a in areas]

    def _unsure(self) -> str:
        """Why the inconclusive rules could not decide, in a few words per kind."""
        unsure = [r for r in self.results if r.status == "inconclusive"]
        kinds = ["interval across the threshold, or too few queries"] if any(not r.apart for r in unsure) else []
        apart = list(dict.fromkeys(r.rule.area for r in unsure if r.apart))
        if apart:
            kinds.append(f"the runs share none of the {' or '.join(BEHIND[a] for a in apart)} behind a figure")
        return "; ".join(kinds)

    def headline(self) -> str:
        """One sentence: the status, then every rule counted by outcome (so "FAIL" is never read as
        the number of failures) and why the not-applicable ones do not count:
        "FAIL: of 10 rules, 6 passed, 3 failed, 1 not applicable (no stored attributions)"."""
        n = len(self.results)
        parts = []
        for status, word in _COUNTED:
            k = sum(r.status == status for r in self.results)
            if not k:
                continue
            why = {
                "inconclusive": f" ({self._unsure()})",
                "not applicable": f" ({', '.join(self.missing())})",
            }.get(status, "")
            parts.append(f"{k} {word}{why}")
        counted = f"of {n} rule{'s' if n != 1 else ''}, " + ", ".join(parts) if n else "no rules"
        s = f"{self.status.upper()}: {counted}"
        if self.thin:
            said = [f" ({m})" for m in self.missing()]  # already given after "not applicable"
            s += "; " + "; ".join(next((t[: -len(m)] for m in said if t.endswith(m)), t) for t in self.thin)
        if self.unjudged:
            s += "; " + "; ".join(self.unjudged)
        return s


def _decide(rule: Rule, v: float, ci: Estimate | None, n: int | None = None, exact: bool = False) -> tuple[Status, str]:
    """The status of an applicable value, and the clause that explains it. The queries behind the
    value are the interval's, else ``n``; a count that is not known leaves ``min_queries`` unchecked.
    An ``exact`` value (a relative rule on a run against itself: no change at all) is decided on the
    value alone, with neither significance nor a query floor."""
    cmp, word = _OPS[rule.op], _WORDS[rule.op]
    t = f"{rule.threshold:+g}" if rule.relative else f"{rule.threshold:g}"
    if exact:
        ok = cmp(v, rule.threshold)
        return ("pass" if ok else "fail"), f"{'' if ok else 'not '}{word} {t} (a run against itself: exact)"
    count = ci.n if ci is not None else n
    if rule.min_queries is not None and count is not None and count < rule.min_queries:
        return (
            "inconclusive",
            f"it rests on {count} quer{'y' if count == 1 else 'ies'}; the rule asks for at least {rule.min_queries}",
        )
    if not rule.significant:
        ok = cmp(v, rule.threshold)
        crosses = ci is not None and ci.lo == ci.lo and cmp(ci.lo, rule.threshold) != cmp(ci.hi, rule.threshold)
        said = "; its 95 % interval crosses the threshold (the rule decides on the value, not asking for significance)"
        return ("pass" if ok else "fail"), f"{'' if ok else 'not '}{word} {t}{said if crosses else ''}"
    if ci is None or ci.lo != ci.lo:
        return "inconclusive", f"{word} {t} asked with significance, but the figure has no interval"
    if ci.n < MIN_SIGNIFICANCE_QUERIES:
        return (
            "inconclusive",
            f"{word} {t} asked with significance, but its interval rests on {ci.n} quer{'y' if ci.n == 1 else 'ies'} "
            f"(a bootstrap over fewer than {MIN_SIGNIFICANCE_QUERIES} is no test: one query's interval is a point)",
        )
    lo_ok, hi_ok = cmp(ci.lo, rule.threshold), cmp(ci.hi, rule.threshold)
    span = f"95 % interval {bracket(ci.lo, ci.hi)}"
    if lo_ok and hi_ok:
        return "pass", f"{span} lies {word} {t}"
    if not lo_ok and not hi_ok:
        return "fail", f"{span} lies wholly beyond {t} (not {word} {t})"
    return "inconclusive", f"{span} straddles {t}: the data cannot tell"


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _result(
    rule: Rule,
    v: float,
    ci: Estimate | None,
    what: str,
    n: int | None = None,
    *,
    exact: bool = False,
    **values: float | None,
) -> RuleResult:
    status, why = _decide(rule, v, ci, n, exact)
    interval = None if ci is None or ci.lo != ci.lo else (ci.lo, ci.hi)
    ci_text = f" [{ci.lo:.3f}, {ci.hi:.3f}]" if interval and ci is not None and not rule.significant else ""
    return RuleResult(
        rule=rule,
        status=status,
        value=v,
        ci=interval,
        n_queries=ci.n if ci is not None else n,
        message=f"{what}{ci_text}, {why}",
        **values,
    )


def _pair_rule(rule: Rule, inputs: GateInputs) -> RuleResult:
    key = (rule.metric, rule.level or "")
    v = inputs.pair.get(key)
    b, c = inputs.baseline, inputs.candidate
    if v is None:
        note = (
            inputs.level_notes.get(rule.level or "")
            or inputs.pair_note
            or ("the logs carry no span information" if rule.level == "span" else "")
        )
        return RuleResult(
            rule=rule,
            status="not applicable",
            message=f"{metric_label(rule.metric)} at {rule.level} level is unavailable for {b!r} vs {c!r}"
            + (f": {note}" if note else ""),
        )
    return _result(
        rule,
        v,
        inputs.pair_ci.get(key),
        f"{metric_label(rule.metric)} ({rule.level}) between {b!r} and {c!r} is {_fmt(v)}",
    )


def _worse(worst: RuleResult | None, res: RuleResult, rule: Rule) -> RuleResult:
    """Of two results of one rule (``every`` stage), the one to report: the worse status, then the
    value closest to (or furthest past) the threshold."""
    order = {"fail": 0, "inconclusive": 1, "pass": 2}
    if worst is None or order[res.status] < order[worst.status]:
        return res
    if res.status != worst.status or worst.value is None or res.value is None:
        return worst
    lower_is_worse = rule.op in (">=", ">")
    return res if (res.value < worst.value if lower_is_worse else res.value > worst.value) else worst


def _no_shared_queries(rule: Rule, label: str, b: float, c: float, b_run: str, c_run: str) -> RuleResult:
    """A relative rule whose runs each have the figure, over queries the other run does not have:
    their means are not a change (each covers other queries), so the rule cannot be judged."""
    return RuleResult(
        rule=rule,
        status="inconclusive",
        baseline_value=b,
        candidate_value=c,
        n_queries=0,
        message=f"{label} is {_fmt(b)} ({b_run!r}) and {_fmt(c)} ({c_run!r}) over each run's own {BEHIND[rule.area]}, "
        "and the runs share none of them: no change can be taken",
    )


def _run_keys(rule: Rule) -> list[RunMetricKey]:
    if rule.metric == "stage_survival":
        return [("stage_survival", s) for s in (STAGES if rule.level == "every" else [rule.level or ""])]
    if rule.metric == "warg":
        return [("warg", float(rule.p or 0.0))]
    return [rule.metric]


def _run_rule(rule: Rule, inputs: GateInputs) -> RuleResult:
    b_run, c_run = inputs.baseline, inputs.candidate
    worst: RuleResult | None = None
    for key in _run_keys(rule):
        b = inputs.runs.get(b_run, {}).get(key)
        c = inputs.runs.get(c_run, {}).get(key)
        if c is None or (rule.relative and b is None):
            continue
        label = f"{metric_label(key[0])} ({key[1]})" if isinstance(key, tuple) else metric_label(key)
        if isinstance(key, tuple) and key[0] == "warg":
            label = f"WARG({key[1]:g})"  # as the report's tables and the rule's label write it
        n_c = inputs.run_n.get(c_run, {}).get(key)
        exact = False
        if rule.relative and b is not None:
            v = c - b
            what = f"{label} goes from {_fmt(b)} ({b_run!r}) to {_fmt(c)} ({c_run!r}), a change of {v:+.3f}"
            ci = inputs.delta_ci.get(key)
            if ci is not None and ci.n == 0 and b_run != c_run:
                worst = _worse(worst, _no_shared_queries(rule, label, b, c, b_run, c_run), rule)
                continue
            if ci is not None and ci.value == ci.value and abs(ci.value - v) >= 5e-4:
                # the runs' own means cover different queries: decide on the paired change, the
                # figure the interval is of, and say over which queries it is taken
                v = ci.value
                what = (
                    f"{label} is {_fmt(b)} ({b_run!r}) and {_fmt(c)} ({c_run!r}) over each run's own queries; "
                    f"a change of {v:+.3f} over the {ci.n} queries both runs have"
                )
            n_b = inputs.run_n.get(b_run, {}).get(key)
            n = None if n_b is None or n_c is None else min(n_b, n_c)  # the thinner side
            exact = b_run == c_run  # a run against itself: the change is exactly 0
        else:
            v = c
            what = f"{label} of {c_run!r} is {_fmt(c)}"
            ci = inputs.run_ci.get(c_run, {}).get(key)
            n = n_c
        worst = _worse(worst, _result(rule, v, ci, what, n, exact=exact, baseline_value=b, candidate_value=c), rule)
    if worst is not None:
        return worst
    if rule.area == "quality" and inputs.quality_note:  # labels are loaded: say why they label nothing here
        return RuleResult(rule=rule, status="not applicable", message=inputs.quality_note)
    return RuleResult(rule=rule, status="not applicable", message=_lacking(rule, inputs))


def _lacking(rule: Rule, inputs: GateInputs) -> str:
    """Why a run rule has no figure: the runs that lack its data (only those: a baseline with
    provenance logs is not said to lack them), or, when each run has some of it, that no figure
    is there for both."""
    b_run, c_run = inputs.baseline, inputs.candidate
    needed = [c_run] if not rule.relative else list(dict.fromkeys((b_run, c_run)))
    keys = _run_keys(rule)
    lacking = [r for r in needed if all(inputs.runs.get(r, {}).get(k) is None for k in keys)]
    if lacking:
        held = inputs.have.get(rule.area, set())
        without = [r for r in lacking if r not in held]
        said = [f"{_MISSING[rule.area]} for {' and '.join(without)}"] if without else []
        said += [
            f"the provenance logs of {r!r} give no {metric_label(rule.metric)} figure" for r in lacking if r in held
        ]
        return "; ".join(said)
    return f"no {metric_label(rule.metric)} figure that {b_run!r} and {c_run!r} both have"


def evaluate(policy: GatePolicy | list[Rule], inputs: GateInputs) -> Verdict:
    """Evaluate a policy (or a plain list of rules) on precomputed metric values."""
    pol = policy if isinstance(policy, GatePolicy) else GatePolicy(rules=list(policy))
    results = [_pair_rule(r, inputs) if r.metric in PAIR_METRICS else _run_rule(r, inputs) for r in pol.rules]
    for i, r in enumerate(results):
        if r.status == "not applicable" and r.rule.required:
            results[i] = r.model_copy(update={"status": "fail", "message": r.message + " — and the rule is required"})
    thin = []
    applicable = [r for r in results if r.status != "not applicable"]
    if len(applicable) < pol.min_applicable:
        thin.append(
            f"it rests on {len(applicable)} applicable rule{'s' if len(applicable) != 1 else ''}; "
            f"the policy asks for at least {pol.min_applicable}"
        )
    answered = {r.rule.area for r in applicable}
    absent = {"quality": "no labelled query"} if inputs.quality_note else {}
    if {inputs.baseline, inputs.candidate} <= inputs.have.get("fidelity", set()):  # both hold provenance logs
        absent["fidelity"] = "no fidelity figures"
    if inputs.level_notes:
        absent["stability"] = "no document ids"
    if inputs.pair_note and not inputs.pair:  # no pair figure at all: why (provenance only, no shared query)
        absent["stability"] = inputs.pair_note
    for area in pol.require:
        if area not in answered:
            thin.append(
                f"no applicable {area} rule, and the policy requires {area} ({absent.get(area, _MISSING[area])})"
            )
    unjudged = _unjudged(results, inputs)
    if thin or any(r.status == "fail" for r in results):
        status: Literal["pass", "fail", "inconclusive"] = "fail"
    elif unjudged or any(r.status == "inconclusive" for r in results):
        status = "inconclusive"
    else:
        status = "pass"
    return Verdict(
        baseline=inputs.baseline,
        candidate=inputs.candidate,
        status=status,
        results=results,
        min_applicable=pol.min_applicable,
        require=list(pol.require),
        thin=thin,
        unjudged=unjudged,
        # what the not-applicable rules lacked, for the questions that have one (a fidelity rule judged
        # on both runs' figures is not said to lack them)
        absent={
            a: w for a, w in absent.items() if any(r.rule.area == a and r.status == "not applicable" for r in results)
        },
    )


def _unjudged(results: list[RuleResult], inputs: GateInputs) -> list[str]:
    """Why nothing failed and the verdict still cannot pass: no rule could be judged at all (every
    one not applicable, or no rules: a verdict resting on nothing checked nothing); or the policy
    asks how much the evidence
    overlaps (a rule reading Jaccard) and no such rule could be judged because the runs' ids cannot
    be compared (``level_notes``: one run logged document ids, the other passage hashes). That is
    not data left out — both runs retrieved — but a comparison the logs do not allow, so the verdict
    is inconclusive instead of passing on what remains (null loss, say)."""
    if not any(r.status != "not applicable" for r in results):
        return ["no rule could be judged on these runs" if results else "the policy holds no rules"]
    overlap = [r for r in results if r.rule.metric in OVERLAP_METRICS]
    if not overlap or any(r.status != "not applicable" for r in overlap):
        return []
    notes = {inputs.level_notes[r.rule.level] for r in overlap if r.rule.level in inputs.level_notes}
    if not notes:
        return []
    return [f"how much the evidence overlaps cannot be judged: {n}" for n in sorted(notes)]


def verdict_rows(verdict: Verdict) -> list[dict]:
    """One row per rule, failed first: status, rule (its label), value, interval, baseline, candidate, why."""
    return [
        {
            "status": r.status,
            "rule": rule_label(r.rule),  # as the report and the CLI draw it; the key stays in the verdict
            "value": r.value,
            "interval": f"[{r.ci[0]:.3f}, {r.ci[1]:.3f}]" if r.ci else None,
            "baseline": r.baseline_value,
            "candidate": r.candidate_value,
            "why": r.message,
        }
        for r in verdict.sorted_results()
    ]


def verdict_lines(verdict: Verdict) -> list[str]:
    """The verdict as the lines of a plain-text table, failed rules first, under its headline (each
    line its own, so a terminal writer can show each one inert: run ids come from the logs). Rules are
    drawn by their labels (``J_avg, doc ≥ 0.5``) as the report draws them; the keys stay in the
    verdict (its JSON)."""
    short = {"not applicable": "n/a", "inconclusive": "?"}
    rows = [
        (short.get(r.status, r.status.upper()), rule_label(r.rule), _fmt(r.value), r.message)
        for r in verdict.sorted_results()
    ]
    w0 = max(6, *(len(a) for a, *_ in rows)) if rows else 6
    w1 = max(4, *(len(b) for _, b, *_ in rows)) if rows else 4
    out = [
        f"gate: {verdict.candidate} against baseline {verdict.baseline}: {verdict.headline()}",
        "",
        f"{'status':{w0}}  {'rule':{w1}}  {'value':>7}  why",
    ]
    out += [f"{a:{w0}}  {b:{w1}}  {c:>7}  {d}" for a, b, c, d in rows]
    return out


def verdict_table(verdict: Verdict) -> str:
    """The verdict as a plain-text table, failed rules first, under its headline."""
    return "\n".join(verdict_lines(verdict))

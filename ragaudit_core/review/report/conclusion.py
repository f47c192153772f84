"""The executive summary's last paragraph: the verdict in plain words, with a recommendation and
where in the report its evidence is.

From the gate's rule results only (nothing is computed here): a failed rule becomes a phrase a
product owner can read ("span-level evidence collapsed on 94.0% of queries"), each phrase
points at the numbered section that shows it (§n, numbered as the contents number them), and
the recommendation follows the verdict:

* fail — "Do not deploy <candidate>: <failed rules as phrases>, see §…";
* inconclusive — do not decide yet; which rules could not tell and what would settle them;
* pass — the candidate may replace the baseline, with the questions no rule could check named
  (a pass on 3 of 10 rules is not a pass on all of them).

Run ids are isolated for bidi (:func:`~ragaudit_core.review.logtext.isolate`).
"""

from __future__ import annotations

from ragaudit_core.review.gate import SHARE_ADVICE, RuleResult, Verdict
from ragaudit_core.review.labels import rule_label
from ragaudit_core.review.logtext import isolate
from ragaudit_core.wording import counted

__all__ = ["AREA_SECTIONS", "conclusion", "plain_reason"]

AREA_SECTIONS = {
    "stability": "Evidence stability",
    "fidelity": "Citation fidelity",
    "attribution": "Attributions",
    "quality": "Ranking quality",
}


# the failures a reader grasps first lead the sentence
_PRIORITY = {m: i for i, m in enumerate(("collapse_rate", "j_avg", "null_loss", "flip_rate", "stage_survival"))}


def _pct(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.1%}"


def _num(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.3f}"


def plain_reason(r: RuleResult, baseline: str) -> str:
    """One failed (or inconclusive) rule as a phrase without jargon beyond the metric's name."""
    m, level, v = r.rule.metric, r.rule.level or "", r.value
    base = isolate(baseline)
    if m == "collapse_rate":
        return f"span-level evidence collapsed (no cited span kept) on {_pct(v)} of queries"
    if m == "j_avg":
        return (
            f"its {level}-level evidence barely overlaps {base}'s (mean Jaccard {_num(v)}; "
            f"the rule asks at least {r.rule.threshold:g})"
        )
    if m == "flip_rate":
        return f"the {level}-level evidence changed on {_pct(v)} of queries"
    if m == "null_loss":
        return f"{_pct(v)} of queries lost all their evidence"
    if m == "null_gain":
        return f"{_pct(v)} of queries that had no evidence now have some"
    if m.startswith("cfs"):
        return f"citation fidelity ({m}) moved from {_num(r.baseline_value)} to {_num(r.candidate_value)}"
    if m == "stage_survival":
        return (
            "fewer queries keep their ground-truth source through the pipeline "
            f"({_pct(r.baseline_value)} → {_pct(r.candidate_value)} at the weakest stage)"
        )
    if m == "parse_failure_rate":
        return f"more citations cannot be parsed ({_pct(r.candidate_value)} against {_pct(r.baseline_value)})"
    if m in ("warg", "wasted_retrieval", "noise_distraction"):
        return "the generator leans on different documents than the retriever ranks first"
    if r.baseline_value is not None and r.candidate_value is not None:
        return f"{m} moved from {_num(r.baseline_value)} to {_num(r.candidate_value)}"
    return f"{m} is {_num(v)}"


def _too_few(r: RuleResult) -> bool:
    """Inconclusive because fewer queries stand behind the figure than the rule asks for."""
    return r.rule.min_queries is not None and r.n_queries is not None and r.n_queries < r.rule.min_queries


def _unsure(unsure: list[RuleResult]) -> tuple[str, str]:
    """Why the inconclusive rules could not decide, and what would let them: too few queries (the
    numbers they rest on and the floor asked), a 95 % interval across the threshold (each named
    with its interval, at most three), significance asked of a figure without an interval, or a
    relative rule whose runs share none of the queries behind its figure."""
    apart = [r for r in unsure if r.apart]  # :func:`evaluate._no_shared_queries`
    unsure = [r for r in unsure if r not in apart]
    few = [r for r in unsure if _too_few(r)]
    wide = [r for r in unsure if not _too_few(r) and r.ci is not None]
    blind = [r for r in unsure if not _too_few(r) and r.ci is None]
    why, todo = [], []
    if apart:
        names = ", ".join(rule_label(r.rule) for r in apart[:3])
        why.append(
            f"{len(apart)} relative rule{'s' if len(apart) != 1 else ''} whose runs share none of the queries "
            f"behind {'their figures' if len(apart) != 1 else 'its figure'} ({names})"
        )
        todo += list(dict.fromkeys(SHARE_ADVICE[r.rule.area] for r in apart))
    if few:
        lo, hi = min(r.n_queries or 0 for r in few), max(r.n_queries or 0 for r in few)
        need = max(r.rule.min_queries or 0 for r in few)
        on = f"{lo}" if lo == hi else f"{lo}–{hi}"
        why.append(
            f"{len(few)} rule{'s' if len(few) != 1 else ''} rest{'' if len(few) != 1 else 's'} on {on} "
            f"quer{'y' if hi == 1 else 'ies'}, where {'they ask' if len(few) != 1 else 'it asks'} for at least {need}"
        )
        todo.append(f"evaluate both runs on at least {counted(need, 'shared query')}")
    if wide:
        named = "; ".join(
            f"{r.rule.metric}{f' ({r.rule.level})' if r.rule.level else ''} {_num(r.value)}, interval "
            f"[{_num(r.ci[0])}, {_num(r.ci[1])}] across {r.rule.threshold:{'+g' if r.rule.relative else 'g'}}"
            for r in wide[:3]
            if r.ci is not None
        )
        why.append(
            f"{len(wide)} rule{'s' if len(wide) != 1 else ''} with a 95 % interval across the threshold ({named})"
        )
        todo.append("add queries until the intervals clear the thresholds")
    if blind:
        names = ", ".join(rule_label(r.rule) for r in blind[:3])
        why.append(f"{len(blind)} rule{'s' if len(blind) != 1 else ''} asking for significance of a figure "
                   f"without an interval ({names})")  # fmt: skip
        todo.append("drop significance from those rules or give their figures intervals")
    return "; ".join(why), " and ".join(todo)


def _failed(k: int, app: int) -> str:
    """The ``k`` rules failed of the ``app`` checked: ``the only rule``, ``all 4 rules``, ``1 of the 3 rules``."""
    if app == 1:
        return "the only rule"
    return f"all {app} rules" if k == app else f"{k} of the {app} rules"


def _passed(app: int, n: int) -> str:
    """The rules a passing candidate passes: ``the only rule``, ``all 3 rules``, ``the only one of
    the 5 rules``, ``all 3 of the 5 rules``."""
    if n == 1:
        return "the only rule"
    if app == n:
        return f"all {n} rules"
    return f"the only one of the {n} rules" if app == 1 else f"all {app} of the {n} rules"


def _refs(results: list[RuleResult], numbers: dict[str, int]) -> str:
    sections = []
    for r in results:
        n = numbers.get(AREA_SECTIONS.get(r.rule.area, ""))
        if n is not None and n not in sections:
            sections.append(n)
    n_verdict = numbers.get("Verdict")
    if n_verdict is not None and n_verdict not in sections:
        sections.append(n_verdict)
    return ", ".join(f"§{n}" for n in sorted(sections))


def conclusion(
    v: Verdict | None, numbers: dict[str, int], n_runs: int, no_verdict: str | None = None, *, of: int | None = None
) -> tuple[str, str]:
    """(conclusion, recommendation) sentences. ``numbers``: section title → its number;
    ``n_runs``: the runs the figures describe, ``of`` the runs loaded (when more);
    ``no_verdict``: why a chosen pair got no verdict (the cover's sentence)."""
    if v is None and no_verdict:
        return (
            f"No verdict: {no_verdict}.",
            "none until the two runs are evaluated on the same queries.",
        )
    if v is None and n_runs == 1 and not (of is not None and of > 1):
        return (
            "No pair was reviewed, so there is no verdict: a verdict compares two runs, and this report holds one.",
            "none yet: load the run that would replace it (the candidate) beside it, and name both.",
        )
    if v is None:
        return (
            "No pair was reviewed, so there is no verdict; the figures above describe "
            + (
                f"{n_runs} of the {of} runs (the others are named where they were left out)."
                if of is not None and of > n_runs
                else {1: "the one run.", 2: "both runs."}.get(n_runs, f"all {n_runs} runs.")
            ),
            "none yet: name the run in production (baseline) and the one that would replace it (candidate) to get one.",
        )
    cand, base = isolate(v.candidate), isolate(v.baseline)
    n, app = len(v.results), len(v.applicable)
    missing = v.missing()
    unchecked = f" Not checked: {', '.join(missing)}." if missing else ""
    if v.status == "fail":
        failed = sorted(v.failed, key=lambda r: _PRIORITY.get(r.rule.metric, len(_PRIORITY)))
        reasons = "; ".join(plain_reason(r, v.baseline) for r in failed[:3])
        more = f"; and {counted(len(failed) - 3, 'more failed rule')}" if len(failed) > 3 else ""
        thin = ("; " + "; ".join(v.thin)) if v.thin and not failed else ""
        refs = _refs(failed, numbers)
        return (
            f"{cand} fails {_failed(len(failed), app)} that could be checked against {base}.{unchecked}",
            f"Do not deploy {cand}: {reasons or 'the verdict rests on too little evidence'}{more}{thin}"
            + (f", see {refs}." if refs else "."),
        )
    if v.status == "inconclusive":
        unsure = [r for r in v.results if r.status == "inconclusive"]
        refs = _refs(unsure, numbers)
        why, todo = _unsure(unsure)
        if v.unjudged:  # nothing failed, but no rule could be judged, or the overlap not by how runs were logged
            why = "; ".join([*filter(None, [why]), *v.unjudged])
            if any(u.startswith("how much the evidence overlaps") for u in v.unjudged):
                extra = "load both runs with their document ids"
            elif missing:
                extra = f"load what the rules need ({', '.join(missing)})"
            else:
                extra = "give the gate rules to check"
            todo = " and ".join(filter(None, [todo, extra]))
        return (
            f"The data cannot yet tell whether {cand} may replace {base}: {why}.{unchecked}",
            f"Do not decide yet on {cand}: {todo}" + (f", see {refs}." if refs else "."),
        )
    refs = _refs(v.applicable, numbers)
    return (
        f"{cand} passes {_passed(app, n)} that could be checked against {base}.{unchecked}",
        f"{cand} may replace {base}"
        + (
            f"; before relying on it, add what the unchecked rules need ({', '.join(missing)})"
            if missing
            else ": no rule objects"
        )
        + (f", see {refs}." if refs else "."),
    )

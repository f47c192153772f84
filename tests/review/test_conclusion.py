"""The report's conclusion and headline for verdicts that cannot decide yet: too few queries, or
an interval across the threshold — each said with its numbers, and what would decide it."""

from __future__ import annotations

import pandas as pd

from ragaudit_core.intervals import Estimate
from ragaudit_core.review.gate import DEFAULT_RULES, GateInputs, Rule, evaluate
from ragaudit_core.review.logtext import strip_isolates
from ragaudit_core.review.report.conclusion import conclusion as _conclusion
from ragaudit_core.review.report.layout import fmt


def conclusion(*args) -> tuple[str, str]:
    """The conclusion's two sentences without the bidi isolates around run names."""
    return tuple(strip_isolates(s) for s in _conclusion(*args))  # type: ignore[return-value]


PAIR = {("j_avg", "doc"): 0.5, ("flip_rate", "doc"): 1 / 3, ("null_loss", "doc"): 0.0}


def test_too_few_queries_is_said_with_the_count_and_the_floor():
    """Three shared queries behind each doc-level figure, the default floor of 30: three rules
    inconclusive; the conclusion names both numbers and never calls J = 0.5 'barely overlapping'."""
    ci = {k: Estimate(v, 0.0, 1.0, 3) for k, v in PAIR.items()}
    v = evaluate(DEFAULT_RULES, GateInputs("a", "b", PAIR, {}, pair_ci=ci))
    assert v.status == "inconclusive"
    assert v.headline().startswith("INCONCLUSIVE: of 10 rules, 3 inconclusive (interval across the threshold, or too")
    found, recommend = conclusion(v, {}, 2)
    assert found.startswith("The data cannot yet tell whether b may replace a: 3 rules rest on 3 queries, where they ")
    assert "ask for at least 30." in found and "barely" not in found
    assert recommend == "Do not decide yet on b: evaluate both runs on at least 30 shared queries."


def test_an_interval_across_the_threshold_is_named_with_its_bounds():
    """Enough queries, but nDCG@10's change of -0.010 has the interval [-0.050, +0.030] across -0.02."""
    rule = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True, min_queries=30)
    inputs = GateInputs(
        "a",
        "b",
        {},
        {"a": {"ndcg@10": 0.6}, "b": {"ndcg@10": 0.59}},
        delta_ci={"ndcg@10": Estimate(-0.01, -0.05, 0.03, 300)},
    )
    v = evaluate([rule], inputs)
    assert v.status == "inconclusive" and v.headline().startswith("INCONCLUSIVE: of 1 rule, 1 inconclusive")
    found, recommend = conclusion(v, {}, 2)
    assert (
        "1 rule with a 95 % interval across the threshold (ndcg@10 -0.010, interval [-0.050, 0.030] across -0.02)"
        in found
    )
    assert recommend == "Do not decide yet on b: add queries until the intervals clear the thresholds."


def test_every_rule_is_counted_in_the_headline():
    """FAIL with 6 passed, 3 failed and 1 not applicable reads as counts of each, not as '9 failed'."""
    pair = {("j_avg", "doc"): 0.2, ("flip_rate", "doc"): 0.9, ("null_loss", "doc"): 0.0}
    v = evaluate(DEFAULT_RULES[:3], GateInputs("a", "b", pair, {}))
    assert v.headline() == "FAIL: of 3 rules, 1 passed, 2 failed"


def test_missing_values_of_nullable_columns_read_n_a():
    assert [fmt(x) for x in pd.array([1, None], dtype="Int64")] == ["1", "n/a"]
    assert fmt(None) == fmt(float("nan")) == "n/a"


def test_counts_that_differ_are_given_as_a_range_and_blind_significance_is_named():
    """The doc-level figures rest on 3 queries, the quality change on 12; a significant rule on a
    figure without an interval is named as such, not as an interval across its threshold."""
    ci = {k: Estimate(v, 0.0, 1.0, 3) for k, v in PAIR.items()}
    quality = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True, min_queries=30)
    blind = Rule(metric="cfs_mean", op=">=", threshold=-0.1, relative=True, significant=True)
    runs = {"a": {"ndcg@10": 0.6, "cfs_mean": 0.5}, "b": {"ndcg@10": 0.6, "cfs_mean": 0.5}}
    inputs = GateInputs("a", "b", PAIR, runs, pair_ci=ci, delta_ci={"ndcg@10": Estimate(0.0, -0.1, 0.1, 12)})
    v = evaluate([*DEFAULT_RULES[:3], quality, blind], inputs)
    found, recommend = conclusion(v, {}, 2)
    assert "4 rules rest on 3–12 queries, where they ask for at least 30" in found
    assert "1 rule asking for significance of a figure without an interval (Δ CFS mean ≥ −0.1 (significant))" in found
    assert recommend == (
        "Do not decide yet on b: evaluate both runs on at least 30 shared queries and drop significance from "
        "those rules or give their figures intervals."
    )


def test_counts_of_rules_read_in_the_singular_for_one():
    """One rule checked reads 'the only rule', not 'all 1 of the 1 rules'; the summary's pointer
    and the rules past the third read '1 failed rule' and '2 failed rules'."""
    import pandas as pd

    from ragaudit_core.review.report.gather import ReportData
    from ragaudit_core.review.report.summary import _pointers

    def pointers(v):
        return _pointers(
            ReportData("t", "v", "db", "1", pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), 0, 0, verdict=v)
        )

    bad = {("j_avg", "doc"): 0.2, ("flip_rate", "doc"): 0.9, ("null_loss", "doc"): 0.0}
    one = evaluate(DEFAULT_RULES[:1], GateInputs("a", "b", bad, {}))
    assert conclusion(one, {}, 2)[0] == "b fails the only rule that could be checked against a."
    assert pointers(one)[0] == "Verdict: 1 failed rule with its values and reasons."
    two = evaluate(DEFAULT_RULES[:3], GateInputs("a", "b", bad, {}))
    assert conclusion(two, {}, 2)[0] == "b fails 2 of the 3 rules that could be checked against a."
    assert pointers(two)[0] == "Verdict: 2 failed rules with their values and reasons."
    for k, more in ((4, "; and 1 more failed rule."), (5, "; and 2 more failed rules.")):
        rules = [Rule(metric="j_avg", level="doc", op=">=", threshold=0.3 + 0.1 * i) for i in range(k)]
        v = evaluate(rules, GateInputs("a", "b", {("j_avg", "doc"): 0.2}, {}))
        found, recommend = conclusion(v, {}, 2)
        assert found == f"b fails all {k} rules that could be checked against a." and recommend.endswith(more)
    good = {("j_avg", "doc"): 0.9, ("flip_rate", "doc"): 0.0, ("null_loss", "doc"): 0.0}
    assert conclusion(evaluate(DEFAULT_RULES[:1], GateInputs("a", "b", good, {})), {}, 2)[0] == (
        "b passes the only rule that could be checked against a."
    )
    assert conclusion(evaluate(DEFAULT_RULES[:3], GateInputs("a", "b", good, {})), {}, 2)[0] == (
        "b passes all 3 rules that could be checked against a."
    )
    assert conclusion(evaluate(DEFAULT_RULES, GateInputs("a", "b", good, {})), {}, 2)[0].startswith(
        "b passes all 3 of the 10 rules that could be checked against a. Not checked:"
    )
    assert conclusion(None, {}, 1)[0] == (  # not "the figures above describe the one run" over an empty table
        "No pair was reviewed, so there is no verdict: a verdict compares two runs, and this report holds one."
    )
    assert conclusion(None, {}, 3)[0].endswith("the figures above describe all 3 runs.")
    assert conclusion(None, {}, 2)[0].endswith("the figures above describe both runs.")  # not "all 2 runs"


def test_overlap_that_cannot_be_compared_is_not_a_pass():
    """One run logged document ids, the other passage hashes: the J rules are left out at both
    levels (``level_notes``), null loss passes. Nothing failed, yet the policy's question — how much
    the evidence overlaps — went unanswered by how the runs were logged: inconclusive, saying why and
    what would answer it, not 'b may replace a' on null loss alone."""
    note = "'b' logged no document ids and 'a' did"
    inputs = GateInputs("a", "b", {("null_loss", "doc"): 0.0}, {}, level_notes={"doc": note, "span": note})
    v = evaluate(DEFAULT_RULES[:5], inputs)
    assert [r.status for r in v.results].count("pass") == 1 and v.status == "inconclusive"
    assert v.headline() == (
        "INCONCLUSIVE: of 5 rules, 1 passed, 4 not applicable (no document ids); how much the evidence "
        "overlaps cannot be judged: 'b' logged no document ids and 'a' did"
    )
    found, recommend = conclusion(v, {}, 2)
    assert found.startswith(
        "The data cannot yet tell whether b may replace a: how much the evidence overlaps cannot be judged: "
        "'b' logged no document ids and 'a' did."
    ), found
    assert recommend == "Do not decide yet on b: load both runs with their document ids."


def test_the_summary_titles_what_could_be_checked_when_the_overlap_could_not_be():
    """The PDF's summary put the one passing rule (null loss) under 'What decided it:' for a verdict
    left inconclusive because the overlap could not be judged; it is what could be checked."""
    from ragaudit_core.review.report.summary import _decided_by

    note = "'b' logged no document ids and 'a' did"
    unmet = GateInputs("a", "b", {("null_loss", "doc"): 0.0}, {}, level_notes={"doc": note, "span": note})
    assert _decided_by(evaluate(DEFAULT_RULES[:5], unmet)).startswith("What could be checked (the overlap could not")
    failing = evaluate(DEFAULT_RULES[:3], GateInputs("a", "b", {("j_avg", "doc"): 0.2, ("flip_rate", "doc"): 0.9}, {}))
    assert _decided_by(failing) == "What decided it (failed rules first):"


def test_a_verdict_that_judged_no_rule_asks_for_what_the_rules_need():
    from ragaudit_core.review.gate import Rule

    v = evaluate([Rule(metric="ndcg@10", op=">=", threshold=0.5)], GateInputs("a", "b", {}, {}))
    said, todo = conclusion(v, {}, 2)
    assert said.endswith("no rule could be judged on these runs. Not checked: no relevance labels.")
    assert todo.endswith("load what the rules need (no relevance labels).") and "document ids" not in todo


def test_a_rule_on_runs_sharing_no_labelled_query_is_not_said_to_ask_for_significance():
    from ragaudit_core.review.gate import Rule

    rule = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True)
    inputs = GateInputs("a", "b", {}, {"a": {"ndcg@10": 0.9}, "b": {"ndcg@10": 0.5}})
    from ragaudit_core.intervals import Estimate

    inputs.delta_ci["ndcg@10"] = Estimate(float("nan"), float("nan"), float("nan"), 0)
    said, todo = conclusion(evaluate([rule], inputs), {}, 2)
    assert "whose runs share none of the queries behind its figure (Δ nDCG@10 ≥ −0.02)" in said
    assert "significance" not in said + todo and "load labels for queries both runs answered" in todo

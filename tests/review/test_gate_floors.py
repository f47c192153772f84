"""A significance test needs queries behind it, and runs that hold provenance logs are not said
to lack them."""

from __future__ import annotations

from ragaudit_core.intervals import Estimate
from ragaudit_core.review.gate import MIN_SIGNIFICANCE_QUERIES, GateInputs, Rule, evaluate


def test_an_interval_over_too_few_queries_decides_no_significant_rule():
    """One query that reached the reranker lost its source: the change's bootstrap interval is the
    point [-1, -1], which 'lay wholly beyond -0.05' and failed the gate."""
    rule = Rule(metric="stage_survival", level="reranking", op=">=", threshold=-0.05, relative=True, significant=True)
    key = ("stage_survival", "reranking")
    runs = {"b": {key: 1.0}, "c": {key: 0.0}}
    for n, status in (
        (1, "inconclusive"),
        (MIN_SIGNIFICANCE_QUERIES - 1, "inconclusive"),
        (MIN_SIGNIFICANCE_QUERIES, "fail"),
    ):
        inputs = GateInputs("b", "c", {}, runs, delta_ci={key: Estimate(-1.0, -1.0, -1.0, n)})
        (r,) = evaluate([rule], inputs).results
        assert r.status == status, n
    (r,) = evaluate([rule], GateInputs("b", "c", {}, runs, delta_ci={key: Estimate(-1.0, -1.0, -1.0, 1)})).results
    assert "its interval rests on 1 query (a bootstrap over fewer than 5 is no test" in r.message


def test_a_run_with_provenance_but_no_figure_is_not_said_to_have_no_provenance():
    rule = Rule(metric="cfs_mean", op=">=", threshold=0.5)
    inputs = GateInputs("a", "b", {}, {"a": {"cfs_mean": 0.9}, "b": {"cfs_mean": None}}, have={"fidelity": {"a", "b"}})
    v = evaluate([rule], inputs)
    assert v.results[0].message == "the provenance logs of 'b' give no CFS mean figure"
    assert "no provenance logs" not in v.headline() and v.headline().endswith(
        "(no fidelity figures); no rule could be judged on these runs"
    )


def test_the_headline_names_missing_provenance_when_one_run_has_none():
    rule = Rule(metric="cfs_mean", op=">=", threshold=-0.1, relative=True)
    inputs = GateInputs("b", "c", {}, {"b": {"cfs_mean": 0.9}, "c": {}}, have={"fidelity": {"b"}})
    v = evaluate([rule], inputs)
    assert v.results[0].message == "no provenance logs for c"
    assert "(no provenance logs)" in v.headline()

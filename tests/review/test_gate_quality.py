"""The gate's ranking-quality rules on a labelled fixture worked by hand: a run against itself,
a cut-off the defaults do not compute, runs whose labelled queries differ; and a verdict that
rests on no rule at all."""

from __future__ import annotations

import math

import pytest

from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.logs.qrels import load_qrels
from ragaudit_core.quality.summary import compute_quality
from ragaudit_core.review import gate
from ragaudit_core.review.gate import DEFAULT_RULES, GateInputs, Rule, evaluate, review
from tests.helpers import ev, write_jsonl


@pytest.fixture
def runs(con, tmp_path):
    """A: q1 → d1, d2, d3; q2 → d7; q5 → d9.  B: q3 → d3, d1; q4 → d8; q5 → d9.
    Labels: q1: d1 = 1; q2: d7 = 1; q3: d1 = 1; q4: d8 = 1 (q5 unlabelled: the one query both ask)."""
    write_jsonl(
        tmp_path / "A.jsonl",
        [
            {"run_id": "A", "query_id": "q1", "evidence": [ev("d1"), ev("d2"), ev("d3")]},
            {"run_id": "A", "query_id": "q2", "evidence": [ev("d7")]},
            {"run_id": "A", "query_id": "q5", "evidence": [ev("d9")]},
        ],
    )
    write_jsonl(
        tmp_path / "B.jsonl",
        [
            {"run_id": "B", "query_id": "q3", "evidence": [ev("d3"), ev("d1")]},
            {"run_id": "B", "query_id": "q4", "evidence": [ev("d8")]},
            {"run_id": "B", "query_id": "q5", "evidence": [ev("d9")]},
        ],
    )
    ingest_paths(con, [tmp_path / "A.jsonl", tmp_path / "B.jsonl"])
    (tmp_path / "q.tsv").write_text("q1\td1\t1\nq2\td7\t1\nq3\td1\t1\nq4\td8\t1\n")
    load_qrels(con, [tmp_path / "q.tsv"])
    return con


def test_a_run_against_itself_with_labels_gets_a_verdict(runs):
    """The run was named twice to the quality kernel, whose columns then collided (IndexError)."""
    q = compute_quality(runs, ["A", "A"])
    assert [r.run_id for r in q.runs] == ["A"] and q.runs[0].metrics["ndcg@10"].value == pytest.approx(1.0)
    v = review(runs, DEFAULT_RULES, "A", "A")
    (r,) = [r for r in v.results if r.rule.metric == "ndcg@10"]
    assert r.status == "pass" and r.message.endswith("(a run against itself: exact)")


def test_a_rule_at_a_cut_off_the_defaults_do_not_compute_reads_its_figure(runs):
    """nDCG@3 of B: q3 finds its one relevant document second (1/log2(3) over an ideal 1), q4 first."""
    expected = (1 / math.log2(3) + 1.0) / 2
    v = review(runs, [Rule(metric="ndcg@3", op=">=", threshold=0.9)], "A", "B")
    (r,) = v.results
    assert r.status == "fail" and r.value == pytest.approx(expected)  # 0.815: was "no relevance labels"
    assert v.status == "fail"


def test_a_relative_rule_on_runs_sharing_no_labelled_query_is_inconclusive(runs):
    """A's labelled queries are q1, q2 and B's q3, q4: their means (1.0 and 0.815) are over other
    questions, so their difference is no change — whatever the rule's floor."""
    for rule in (
        Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True),
        Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, min_queries=30),
        Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True),
    ):
        v = review(runs, [rule], "A", "B")
        (r,) = v.results
        assert r.status == "inconclusive" and v.status == "inconclusive", rule
        assert r.n_queries == 0 and r.value is None
        assert r.message == (
            "nDCG@10 is 1.000 ('A') and 0.815 ('B') over each run's own labelled queries, and the runs share none of "
            "them: no change can be taken"
        )
        assert r.apart
        # the headline says why it is inconclusive in these words, not "interval across the threshold"
        assert v.headline() == (
            "INCONCLUSIVE: of 1 rule, 1 inconclusive (the runs share none of the labelled queries behind a figure)"
        )
        assert gate.SHARE_ADVICE[rule.area].startswith("load labels for queries both runs answered")


def test_the_queries_behind_a_quality_figure_hold_its_floor(runs):
    v = review(runs, [Rule(metric="ndcg@10", op=">=", threshold=0.5, min_queries=3)], "A", "B")
    assert v.results[0].status == "inconclusive" and v.results[0].n_queries == 2


def test_a_verdict_resting_on_no_rule_is_not_a_pass():
    rules = [
        Rule(metric="cfs_mean", op=">=", threshold=-0.1, relative=True),
        Rule(metric="ndcg@10", op=">=", threshold=0.5),
    ]
    v = evaluate(rules, GateInputs("b", "c", {}, {}))
    assert [r.status for r in v.results] == ["not applicable", "not applicable"]
    assert v.status == "inconclusive"
    assert v.headline() == (
        "INCONCLUSIVE: of 2 rules, 2 not applicable (no provenance logs, no relevance labels); "
        "no rule could be judged on these runs"
    )
    empty = evaluate([], GateInputs("b", "c", {}, {}))
    assert empty.status == "inconclusive" and empty.headline() == "INCONCLUSIVE: no rules; the policy holds no rules"


def test_a_rule_without_data_names_only_the_runs_that_lack_it():
    """The baseline has provenance logs and the candidate none: the report said "no provenance logs
    for base and cand", which the baseline's own fidelity section contradicted."""
    rule = Rule(metric="cfs_p95_tail", op=">=", threshold=-0.15, relative=True)
    one = evaluate([rule], GateInputs("base", "cand", {}, {"base": {"cfs_p95_tail": 0.9}, "cand": {}}))
    assert one.results[0].message == "no provenance logs for cand"
    both = evaluate([rule], GateInputs("base", "cand", {}, {"base": {}, "cand": {}}))
    assert both.results[0].message == "no provenance logs for base and cand"
    absolute = Rule(metric="cfs_p95_tail", op=">=", threshold=0.85)
    assert evaluate([absolute], GateInputs("base", "cand", {}, {})).results[0].message == "no provenance logs for cand"


def test_a_rule_decided_on_its_value_says_when_its_interval_crosses_the_threshold():
    from ragaudit_core.intervals import Estimate

    rule = Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2)
    inputs = GateInputs(
        "b",
        "c",
        {("collapse_rate", "span"): 0.194},
        {},
        pair_ci={("collapse_rate", "span"): Estimate(0.194, 0.083, 0.333, 36)},
    )
    (r,) = evaluate([rule], inputs).results
    assert r.status == "pass"  # decided on the value, as the rule asks
    assert r.message == (
        "collapse rate (span) between 'b' and 'c' is 0.194 [0.083, 0.333], at most 0.2; its 95 % interval crosses the "
        "threshold (the rule decides on the value, not asking for significance)"
    )
    inside = GateInputs(
        "b",
        "c",
        {("collapse_rate", "span"): 0.1},
        {},
        pair_ci={("collapse_rate", "span"): Estimate(0.1, 0.05, 0.15, 36)},
    )
    assert "crosses" not in evaluate([rule], inside).results[0].message


def test_runs_sharing_no_query_get_an_inconclusive_verdict_not_an_error(con, tmp_path):
    """The gate stopped with 'the runs have no query in common' (exit 2, no JSON) where the README
    promises an inconclusive verdict (exit 3): the pair rules are not applicable, saying why."""
    write_jsonl(tmp_path / "A.jsonl", [{"run_id": "A", "query_id": "q1", "evidence": [ev("d1")]}])
    write_jsonl(tmp_path / "B.jsonl", [{"run_id": "B", "query_id": "q2", "evidence": [ev("d1")]}])
    ingest_paths(con, [tmp_path / "A.jsonl", tmp_path / "B.jsonl"])
    v = review(con, DEFAULT_RULES, "A", "B")
    assert v.status == "inconclusive"
    pair = [r for r in v.results if r.rule.area == "stability"]
    assert pair and all(r.status == "not applicable" and r.message.endswith(": the runs share no query") for r in pair)
    assert "not applicable (the runs share no query," in v.headline()


def test_a_question_whose_rules_were_judged_is_not_said_to_lack_its_figures():
    """The gate's JSON said "absent": {"fidelity": "no fidelity figures"} beside a CFS rule that
    passed on both runs' figures: what a question lacked is said only where a rule of it was not
    applicable."""
    rule = Rule(metric="cfs_mean", op=">=", threshold=-0.1, relative=True)
    inputs = GateInputs("b", "c", {}, {"b": {"cfs_mean": 0.8}, "c": {"cfs_mean": 0.8}})
    inputs.have = {"fidelity": {"b", "c"}}
    inputs.run_n = {"b": {"cfs_mean": 40}, "c": {"cfs_mean": 40}}
    v = evaluate([rule], inputs)
    assert v.results[0].status == "pass" and "fidelity" not in v.absent


def test_a_figure_equal_to_its_threshold_is_decided_as_equal_not_by_rounding(con, tmp_path):
    """Six queries of precision@10 exactly 0.1 (one relevant document in ten): the mean is
    0.09999999999999999 in floating point and the bootstrap's float32 products gave an interval
    [0.10000000397, 0.10000000397], wholly above the mean — "≤ 0.1 (significant)" failed and
    "≥ 0.1 (significant)" was inconclusive. Both pass; "> 0.1" and "< 0.1" fail."""
    rows = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [ev("rel"), *(ev(f"n{j}") for j in range(9))]}
        for r in ("B", "C")
        for i in range(6)
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "runs.jsonl", rows)])
    (tmp_path / "q.tsv").write_text("".join(f"q{i}\trel\t1\n" for i in range(6)))
    load_qrels(con, [tmp_path / "q.tsv"])
    rules = [
        Rule(metric="precision@10", op=op, threshold=0.1, significant=True, min_queries=5)
        for op in ("<=", ">=", "<", ">")
    ]
    v = review(con, rules, "B", "C")
    assert [r.status for r in v.results] == ["pass", "pass", "fail", "fail"]
    for r in v.results:
        assert r.ci is not None and r.value is not None and r.ci[0] <= r.value <= r.ci[1]


def test_a_stability_figure_equal_to_its_threshold_is_decided_as_equal(con, tmp_path):
    """J_span exactly 0.1 on six queries (one span of ten shared): the stability intervals resample
    per-query values kept as float32, and the bound 0.10000000149 made "≤ 0.1 (significant)"
    inconclusive (it straddled 0.1). Both "≤ 0.1" and "≥ 0.1" pass; the interval holds its figure."""

    def ev_of(run, i, spans):
        return {
            "run_id": run,
            "query_id": f"q{i}",
            "evidence": [{"doc_id": f"d{s}", "text": f"span {s}"} for s in spans],
        }

    rows = [ev_of("A", i, range(6)) for i in range(6)] + [ev_of("B", i, range(5, 10)) for i in range(6)]
    ingest_paths(con, [write_jsonl(tmp_path / "runs.jsonl", rows)])
    rules = [
        Rule(metric="j_avg", level="span", op=op, threshold=0.1, significant=True, min_queries=5) for op in ("<=", ">=")
    ]
    v = review(con, rules, "A", "B")
    assert [r.status for r in v.results] == ["pass", "pass"], [r.message for r in v.results]
    for r in v.results:
        assert r.value == pytest.approx(0.1) and r.ci is not None and r.ci[0] <= r.value <= r.ci[1]

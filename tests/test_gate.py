"""Gate rules on hand-made metric values: absolute, relative, not applicable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragaudit_core.gate import DEFAULT_RULES, STRICT_RULES, Rule, evaluate, load_rules


def test_absolute_pair_rules():
    rules = [Rule(metric="j_avg", level="span", op=">=", threshold=0.5),
             Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2)]
    v = evaluate(rules, "base", "cand", {("j_avg", "span"): 0.62, ("collapse_rate", "span"): 0.35}, {})
    assert [r.status for r in v.results] == ["pass", "fail"] and v.status == "fail"
    assert v.results[1].message == "collapse_rate (span) between base and cand is 0.350, not at most 0.2"
    assert [r.status for r in v.sorted_results()] == ["fail", "pass"]


def test_relative_rules_use_the_change_from_baseline():
    rule = Rule(metric="cfs_p95", op=">=", threshold=-0.15, relative=True)
    ok = evaluate([rule], "b", "c", {}, {"b": {"cfs_p95": 0.90}, "c": {"cfs_p95": 0.80}})
    assert ok.results[0].status == "pass" and ok.results[0].value == pytest.approx(-0.10)
    bad = evaluate([rule], "b", "c", {}, {"b": {"cfs_p95": 0.90}, "c": {"cfs_p95": 0.70}})
    assert bad.results[0].status == "fail" and bad.results[0].value == pytest.approx(-0.20)
    assert bad.results[0].message == ("cfs_p95 goes from 0.900 (b) to 0.700 (c), a change of -0.200, "
                                      "not at least -0.15")


def test_every_stage_reports_the_worst_stage():
    rule = Rule(metric="stage_survival", level="every", op=">=", threshold=0.9)
    runs = {"c": {("stage_survival", s): v for s, v in
                  zip(["chunking", "retrieval", "reranking", "compression", "generation"], [1, 0.95, 0.8, None, 0.92])}}
    r = evaluate([rule], "b", "c", {}, runs).results[0]
    assert r.status == "fail" and r.value == 0.8 and "reranking" in r.message


def test_not_applicable_when_data_is_absent():
    v = evaluate(DEFAULT_RULES, "b", "c", {("j_avg", "doc"): 0.8, ("flip_rate", "doc"): 0.1,
                                           ("null_loss", "doc"): 0.0}, {})
    status = {r.rule.name: r.status for r in v.results}
    assert status["j_avg,doc >= 0.5"] == "pass"
    assert status["j_avg,span >= 0.5"] == "not applicable"           # a doc-only log
    assert status["Δ cfs_p95 >= -0.15"] == "not applicable"
    assert v.status == "pass"                                        # a doc-only log still gets a verdict


def test_a_run_against_itself_passes_the_default_preset():
    pair = {("j_avg", "doc"): 1.0, ("flip_rate", "doc"): 0.0, ("null_loss", "doc"): 0.0, ("j_avg", "span"): 1.0,
            ("collapse_rate", "span"): 0.0}
    run = {"cfs_p95": 0.3, "parse_failure_rate": 0.2, ("warg", 0.9): 0.7,
           **{("stage_survival", s): 0.1 for s in ["chunking", "retrieval", "reranking", "compression", "generation"]}}
    assert evaluate(DEFAULT_RULES, "a", "a", pair, {"a": run}).status == "pass"
    assert evaluate(STRICT_RULES, "a", "a", pair, {"a": run}).status == "fail"     # absolute seed thresholds


def test_rule_validation_and_toml(tmp_path):
    with pytest.raises(ValidationError, match="needs level"):
        Rule(metric="j_avg", op=">=", threshold=0.5)
    with pytest.raises(ValidationError, match="cannot be relative"):
        Rule(metric="j_avg", level="doc", op=">=", threshold=0.5, relative=True)
    with pytest.raises(ValidationError, match="warg needs p"):
        Rule(metric="warg", op="<=", threshold=0.5)
    p = tmp_path / "rules.toml"
    p.write_text('preset = "none"\n[[rule]]\nmetric = "j_avg"\nlevel = "span"\nop = ">="\nthreshold = 0.4\n')
    (r,) = load_rules(p)
    assert (r.metric, r.level, r.threshold, r.name) == ("j_avg", "span", 0.4, "j_avg,span >= 0.4")
    p.write_text('preset = "strict"\n')
    assert len(load_rules(p)) == len(STRICT_RULES)
    p.write_text('presets = "strict"\n')
    with pytest.raises(ValueError, match="unknown top-level keys: presets"):
        load_rules(p)

"""Gate rules on hand-made metric values: absolute, relative, not applicable."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ragaudit_core.review.gate import DEFAULT_RULES, STRICT_RULES, GateInputs, Rule, evaluate, load_rules, review


def test_absolute_pair_rules():
    rules = [
        Rule(metric="j_avg", level="span", op=">=", threshold=0.5),
        Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2),
    ]
    v = evaluate(rules, GateInputs("base", "cand", {("j_avg", "span"): 0.62, ("collapse_rate", "span"): 0.35}, {}))
    assert [r.status for r in v.results] == ["pass", "fail"] and v.status == "fail"
    assert v.results[1].message == "collapse rate (span) between 'base' and 'cand' is 0.350, not at most 0.2"
    assert [r.status for r in v.sorted_results()] == ["fail", "pass"]


def test_relative_rules_use_the_change_from_baseline():
    rule = Rule(metric="cfs_p95", op=">=", threshold=-0.15, relative=True)
    ok = evaluate([rule], GateInputs("b", "c", {}, {"b": {"cfs_p95": 0.90}, "c": {"cfs_p95": 0.80}}))
    assert ok.results[0].status == "pass" and ok.results[0].value == pytest.approx(-0.10)
    bad = evaluate([rule], GateInputs("b", "c", {}, {"b": {"cfs_p95": 0.90}, "c": {"cfs_p95": 0.70}}))
    assert bad.results[0].status == "fail" and bad.results[0].value == pytest.approx(-0.20)
    assert bad.results[0].message == (
        "CFS p95 goes from 0.900 ('b') to 0.700 ('c'), a change of -0.200, not at least -0.15"
    )


def test_every_stage_reports_the_worst_stage():
    rule = Rule(metric="stage_survival", level="every", op=">=", threshold=0.9)
    runs = {
        "c": {
            ("stage_survival", s): v
            for s, v in zip(
                ["chunking", "retrieval", "reranking", "compression", "generation"], [1, 0.95, 0.8, None, 0.92]
            )
        }
    }
    r = evaluate([rule], GateInputs("b", "c", {}, runs)).results[0]
    assert r.status == "fail" and r.value == 0.8 and "reranking" in r.message


def test_not_applicable_when_data_is_absent():
    v = evaluate(
        DEFAULT_RULES,
        GateInputs("b", "c", {("j_avg", "doc"): 0.8, ("flip_rate", "doc"): 0.1, ("null_loss", "doc"): 0.0}, {}),
    )
    status = {r.rule.name: r.status for r in v.results}
    assert status["j_avg,doc >= 0.5"] == "pass"
    assert status["j_avg,span >= 0.5"] == "not applicable"  # a doc-only log
    assert status["Δ cfs_p95_tail >= -0.15"] == "not applicable"
    assert v.status == "pass"  # a doc-only log still gets a verdict
    assert v.headline() == (
        "PASS: of 10 rules, 3 passed, 7 not applicable (no span information, no provenance logs, "
        "no stored attributions, no relevance labels)"
    )


def test_a_run_against_itself_passes_the_default_preset():
    pair = {
        ("j_avg", "doc"): 1.0,
        ("flip_rate", "doc"): 0.0,
        ("null_loss", "doc"): 0.0,
        ("j_avg", "span"): 1.0,
        ("collapse_rate", "span"): 0.0,
    }
    run = {
        "cfs_p95_tail": 0.3,
        "parse_failure_rate": 0.2,
        ("warg", 0.9): 0.7,
        **{("stage_survival", s): 0.1 for s in ["chunking", "retrieval", "reranking", "compression", "generation"]},
    }
    assert evaluate(DEFAULT_RULES, GateInputs("a", "a", pair, {"a": run})).status == "pass"
    assert evaluate(STRICT_RULES, GateInputs("a", "a", pair, {"a": run})).status == "fail"  # absolute seed thresholds


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


# --------------------------------------------------------------------------- from a database


def _evidence_and_provenance(d):
    """Evidence runs base/cand (2 queries each) and provenance for both (prov_fixtures)."""
    from tests.helpers import ev, pipeline, write_jsonl

    write_jsonl(
        d / "base.jsonl",
        [
            {"run_id": "base", "query_id": "q1", "evidence": [ev("D1", "s1"), ev("D2", "s2")]},
            {"run_id": "base", "query_id": "q2", "evidence": [ev("D1", "s3")]},
        ],
    )
    write_jsonl(
        d / "cand.jsonl",
        [
            {"run_id": "cand", "query_id": "q1", "evidence": [ev("D1", "s1"), ev("D2", "s2b")]},
            {"run_id": "cand", "query_id": "q2", "evidence": [ev("D3", "s4")]},
        ],
    )
    write_jsonl(
        d / "prov.jsonl",
        [
            pipeline("base", "q1", text="[Source: D1, p. 2]"),
            pipeline("base", "q2", strip_rerank=True, text="[Document 2] [Source: D1]"),
            pipeline("cand", "q1", text="[Source: D9, p. 1]"),
            pipeline("cand", "q2", text="[Source: D1, p. 3]"),
        ],
    )
    return d


def _no_floor(rules: list[Rule]) -> list[Rule]:
    """The rules without their ``min_queries``: their arithmetic on a two-query fixture."""
    return [r.model_copy(update={"min_queries": None}) for r in rules]


def test_collect_pair_and_run_metrics_by_hand(con, tmp_path):
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import collect

    ingest_paths(con, [_evidence_and_provenance(tmp_path)])
    inputs = collect(con, "base", "cand")
    pair, runs = inputs.pair, inputs.runs
    # doc:  q1 {D1,D2} vs {D1,D2} → 1;  q2 {D1} vs {D3} → 0
    assert pair[("j_avg", "doc")] == pytest.approx((1 + 0) / 2)
    assert pair[("flip_rate", "doc")] == pytest.approx(1 / 2)
    # span: q1 {s1,s2} vs {s1,s2b} → 1/3;  q2 {s3} vs {s4} → 0, both non-empty: collapsed
    assert pair[("j_avg", "span")] == pytest.approx((1 / 3 + 0) / 2)
    assert pair[("collapse_rate", "span")] == pytest.approx(1 / 2)
    assert pair[("null_loss", "doc")] == 0
    # fidelity (as in test_cli): base CFS {1, 1}, cand {0, 0.3}; base loses q2's source at reranking
    assert runs["base"]["cfs_mean"] == 1.0 and runs["cand"]["cfs_mean"] == pytest.approx(0.15)
    assert runs["base"][("stage_survival", "reranking")] == 0.5
    assert runs["cand"][("stage_survival", "reranking")] == 1.0
    assert ("warg", 0.9) not in runs["base"]  # no stored attributions

    # the CFS read both ways, with the median: cand {0, 0.3} → p95 0.285 (linear), tail 0.0 (the 5th
    # percentile as a value of the data: the score both queries reach), median 0.15
    assert runs["cand"]["cfs_p95"] == pytest.approx(0.285) and runs["cand"]["cfs_p95_tail"] == 0.0
    assert runs["cand"]["cfs_median"] == pytest.approx(0.15) and inputs.run_ci["cand"]["cfs_mean"].n == 2
    # pair figures carry their bootstrap intervals over the two queries
    e = inputs.pair_ci[("j_avg", "doc")]
    assert e.lo <= pair[("j_avg", "doc")] <= e.hi and e.n == 2

    # two queries are too few for the default preset's stability rules (MIN_QUERIES): inconclusive
    floor = {r.rule.name: r for r in review(con, DEFAULT_RULES, "base", "cand").results}
    assert floor["j_avg,doc >= 0.5"].status == "inconclusive"
    assert floor["j_avg,doc >= 0.5"].message.endswith("it rests on 2 queries; the rule asks for at least 30")
    v = review(con, _no_floor(DEFAULT_RULES), "base", "cand")  # the rules' arithmetic on two queries
    status = {r.rule.name: r for r in v.results}
    assert status["Δ cfs_p95_tail >= -0.15"].status == "fail"
    # the default rule reads the tail: cand's 0.0 against base's 1
    assert status["Δ cfs_p95_tail >= -0.15"].value == pytest.approx(0.0 - 1.0)
    assert status["Δ warg(0.9) <= 0.05 (significant)"].status == "not applicable"
    assert status["j_avg,doc >= 0.5"].status == "pass"  # exactly 0.5
    assert status["collapse_rate,span <= 0.2"].status == "fail"
    assert v.status == "fail" and v.sorted_results()[0].status == "fail"


def test_a_run_against_itself_from_the_database(con, three_runs):
    from ragaudit_core.logs.ingest import ingest_paths

    ingest_paths(con, [three_runs])
    v = review(con, DEFAULT_RULES, "C", "C")
    assert v.status == "pass"
    got = {r.rule.name: r.value for r in v.results if r.status == "pass"}
    assert got["j_avg,doc >= 0.5"] == 1.0 and got["j_avg,span >= 0.5"] == 1.0 and got["flip_rate,doc <= 0.5"] == 0


def test_doc_only_logs_get_a_real_verdict(con, tmp_path):
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    # RagCiteCheck-style: document ids only
    write_jsonl(
        tmp_path / "a.jsonl",
        [{"run_id": "a", "query_id": "q1", "cited": ["x", "y"]}, {"run_id": "a", "query_id": "q2", "cited": ["z"]}],
    )
    write_jsonl(
        tmp_path / "b.jsonl",
        [{"run_id": "b", "query_id": "q1", "cited": ["x"]}, {"run_id": "b", "query_id": "q2", "cited": []}],
    )
    ingest_paths(con, [tmp_path])
    v = review(con, _no_floor(DEFAULT_RULES), "a", "b")  # two queries: below the default floor of 30
    by = {r.rule.name: r for r in v.results}
    assert by["j_avg,doc >= 0.5"].value == pytest.approx((1 / 2 + 0) / 2) and by["j_avg,doc >= 0.5"].status == "fail"
    assert by["null_loss,doc <= 0.01"].value == pytest.approx(1 / 2)  # q2 lost all evidence
    assert by["j_avg,span >= 0.5"].status == "not applicable"
    assert by["collapse_rate,span <= 0.2"].status == "not applicable"
    assert v.status == "fail"


def test_labels_that_name_none_of_the_runs_queries_are_not_called_absent(con, tmp_path):
    """Relevance labels keyed by a benchmark's query ids beside Ragas rows (whose query ids hash their
    questions): the quality rule said "no relevance labels for a and b" right after the labels had
    loaded; it says why they label nothing, and the headline does not deny they are there."""
    from ragaudit_core.workspace import load_paths
    from tests.helpers import write_jsonl

    qs = ["Does aspirin prevent stroke?", "Is coffee harmful?"]
    for run in ("a", "b"):
        write_jsonl(tmp_path / f"{run}.jsonl", [{"user_input": q, "retrieved_contexts": [q + run]} for q in qs])
    (tmp_path / "test.tsv").write_text("1\tD1\t1\n2\tD2\t1\n")
    load_paths(con, [tmp_path / "a.jsonl", tmp_path / "b.jsonl"], qrels=[tmp_path / "test.tsv"])
    v = review(con, DEFAULT_RULES, "a", "b")
    (q,) = [r for r in v.results if r.rule.metric == "ndcg@10"]
    assert q.status == "not applicable"
    assert q.message.startswith(
        "relevance labels are loaded for 2 queries ('1', '2') but label no query of runs 'a', 'b'"
    )
    assert "hashes of the question texts" in q.message
    assert "no relevance labels" not in v.headline() and v.headline().endswith("no labelled query)")


def test_document_rules_are_not_judged_on_passage_hashes(con, tmp_path):
    """Two Ragas exports without ids (chunk 256 vs 128): the gate failed 'J_avg (doc) 0.056' and the
    report concluded that the candidate's 'doc-level evidence barely overlaps' — but their document ids
    are passage hashes, so that figure is the span figure again; the documents may well be the same.
    Beside a run with real ids, J is 0 at both levels by how they were logged. The rules that read J
    there are not applicable, and say why; null loss (no ids needed) and the span rules still decide."""
    from ragaudit_core.workspace import load_paths
    from tests.helpers import write_jsonl

    qs = [f"Question {i}?" for i in range(4)]
    write_jsonl(tmp_path / "c256.jsonl", [{"user_input": q, "retrieved_contexts": [q + " long chunk"]} for q in qs])
    write_jsonl(tmp_path / "c128.jsonl", [{"user_input": q, "retrieved_contexts": [q + " short"]} for q in qs])
    ids = [{"user_input": q, "retrieved_contexts": [q + " long chunk"], "retrieved_context_ids": ["d"]} for q in qs]
    write_jsonl(tmp_path / "ids.jsonl", ids)
    load_paths(con, [tmp_path / f for f in ("c256.jsonl", "c128.jsonl", "ids.jsonl")])
    by = {r.rule.name: r for r in review(con, _no_floor(DEFAULT_RULES), "c256", "c128").results}
    assert by["j_avg,doc >= 0.5"].status == "not applicable"
    assert "'c128' and 'c256' logged no document ids" in by["j_avg,doc >= 0.5"].message
    assert by["flip_rate,doc <= 0.5"].status == "not applicable"
    assert by["null_loss,doc <= 0.01"].status == "pass"  # whatever the ids, no query lost its evidence
    assert by["j_avg,span >= 0.5"].status == "fail" and by["collapse_rate,span <= 0.2"].status == "fail"
    v = review(con, _no_floor(DEFAULT_RULES), "ids", "c256")
    by = {r.rule.name: r for r in v.results}
    for rule in ("j_avg,doc >= 0.5", "flip_rate,doc <= 0.5", "j_avg,span >= 0.5", "collapse_rate,span <= 0.2"):
        assert by[rule].status == "not applicable", rule
        assert "'c256' logged no document ids and 'ids' did" in by[rule].message, by[rule].message
    assert by["null_loss,doc <= 0.01"].status == "pass" and "no document ids" in v.headline()
    # nothing failed, but the overlap the rules ask about cannot be judged: not a pass on null loss alone
    assert v.status == "inconclusive", v.headline()
    assert v.headline().endswith(
        "how much the evidence overlaps cannot be judged: 'c256' logged no document ids and 'ids' did: they "
        "share no document and no span by how they were logged, not by what they retrieved (load 'c256' with "
        "its document ids)"
    ), v.headline()
    # between the two runs without ids the span rules judge the overlap: no such clause
    both = review(con, _no_floor(DEFAULT_RULES), "c256", "c128")
    assert both.unjudged == [] and both.status == "fail"
    # a policy that does not ask about overlap is not made inconclusive by it
    null_only = [r for r in DEFAULT_RULES if r.metric == "null_loss"]
    assert review(con, _no_floor(null_only), "ids", "c256").status == "pass"


def test_attribution_means_compare_the_queries_both_runs_explained(con, three_runs):
    import json

    from ragaudit_core.attribution.storage import ATTRIBUTIONS_SCHEMA
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import collect

    ingest_paths(con, [three_runs])
    con.execute(ATTRIBUTIONS_SCHEMA)

    def put(run, q, warg, wasted, cond="original"):
        con.execute(
            "INSERT INTO attributions VALUES (?, ?, ?, 'r', 'g', 'exact', '{}', ?, ?, false, 0.5, ?, now())",
            [f"{run}/{q}/{cond}", run, q, cond, wasted, json.dumps({"warg": {"0.9": warg}})],
        )

    put("A", "q1", 0.6, True)
    put("A", "q2", 0.8, False)
    put("B", "q1", 0.7, False)
    put("B", "q1", 0.1, True, cond="shuffled")  # another condition: ignored
    runs = collect(con, "A", "B").runs
    # only q1 is explained in both runs: A 0.6 vs B 0.7
    assert runs["A"][("warg", 0.9)] == pytest.approx(0.6) and runs["B"][("warg", 0.9)] == pytest.approx(0.7)
    assert runs["A"]["wasted_retrieval"] == 1.0 and runs["B"]["wasted_retrieval"] == 0.0
    runs = collect(con, "A", "C").runs  # C has none: A over all its queries
    assert runs["A"][("warg", 0.9)] == pytest.approx((0.6 + 0.8) / 2) and ("warg", 0.9) not in runs["C"]
    r = review(con, [Rule(metric="warg", p=0.9, op="<=", threshold=0.05, relative=True)], "A", "B").results[0]
    assert r.status == "fail" and r.value == pytest.approx(0.1)


def test_the_default_warg_rule_decides_on_the_paired_change_over_enough_queries(con, three_runs):
    """WARG(0.9) rises by 0.1 on every one of 12 queries both runs explained: the paired change is
    0.1 with interval [0.1, 0.1], wholly above +0.05: fail. Rises of 0.1 and 0.0 alternating: mean
    0.05, its interval straddles +0.05: inconclusive (without significance the mean alone decided).
    On 4 shared queries: inconclusive, fewer than MIN_ATTRIBUTION_QUERIES.
    The failure rates get Wilson intervals: 3 of 12 wasted → [0.089, 0.532]."""
    import json

    from ragaudit_core.attribution.storage import ATTRIBUTIONS_SCHEMA
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import DEFAULT_RULES, MIN_ATTRIBUTION_QUERIES, collect

    ingest_paths(con, [three_runs])
    con.execute(ATTRIBUTIONS_SCHEMA)
    rule = next(r for r in DEFAULT_RULES if r.metric == "warg")
    assert rule.significant and rule.min_queries == MIN_ATTRIBUTION_QUERIES == 10

    def put(run, q, warg, wasted=False):
        con.execute(
            "INSERT INTO attributions VALUES (?, ?, ?, 'r', 'g', 'exact', '{}', 'original', ?, false, 0.5, ?, now())",
            [f"{run}/{q}", run, q, wasted, json.dumps({"warg": {"0.9": warg}})],
        )

    for i in range(12):
        put("A", f"q{i}", 0.5, wasted=i < 3)
        put("B", f"q{i}", 0.6)
        put("C", f"q{i}", 0.6 if i % 2 else 0.5)
    inputs = collect(con, "A", "B")
    e = inputs.delta_ci[("warg", 0.9)]
    assert (e.value, e.lo, e.hi, e.n) == (pytest.approx(0.1), pytest.approx(0.1), pytest.approx(0.1), 12)
    w = inputs.run_ci["A"]["wasted_retrieval"]
    assert (w.value, round(w.lo, 3), round(w.hi, 3), w.n) == (0.25, 0.089, 0.532, 12)
    r = review(con, [rule], "A", "B").results[0]
    assert r.status == "fail" and r.message == (
        "WARG(0.9) goes from 0.500 ('A') to 0.600 ('B'), a change of +0.100, "
        "95 % interval [0.100, 0.100] lies wholly beyond +0.05 (not at most +0.05)"
    )
    r = review(con, [rule], "A", "C").results[0]
    assert r.value == pytest.approx(0.05) and r.status == "inconclusive" and "straddles +0.05" in r.message
    con.execute("DELETE FROM attributions WHERE run_id = 'A' AND query_id NOT IN ('q0', 'q1', 'q2', 'q3')")
    r = review(con, [rule], "A", "B").results[0]
    assert r.status == "inconclusive" and r.message.endswith("it rests on 4 queries; the rule asks for at least 10")


def test_rules_round_trip_through_toml(tmp_path):
    from ragaudit_core.review.gate import dump_rules

    rules = [*STRICT_RULES, Rule(name='ü ≥ "quoted"', metric="null_gain", level="doc", op="<", threshold=0.1)]
    f = tmp_path / "r.toml"
    f.write_text(dump_rules(rules), encoding="utf-8")
    assert load_rules(f) == rules
    f.write_text('[[rule]]\nmetric = "j_avg"\nop = ">="\nthreshold = 0.5\n')
    with pytest.raises(ValueError, match=r"\[\[rule\]\] number 1: j_avg needs level 'doc' or 'span'"):
        load_rules(f)


def test_a_required_rule_fails_when_its_data_is_absent(tmp_path):
    rule = Rule(metric="j_avg", level="span", op=">=", threshold=0.5, required=True)
    v = evaluate([rule], GateInputs("b", "c", {("j_avg", "doc"): 0.9}, {}))
    assert v.status == "fail" and v.results[0].status == "fail" and v.results[0].value is None
    assert v.results[0].message.endswith(": the logs carry no span information — and the rule is required")
    assert evaluate([rule], GateInputs("b", "c", {("j_avg", "span"): 0.7}, {})).status == "pass"
    from ragaudit_core.review.gate import dump_rules

    f = tmp_path / "r.toml"
    f.write_text(dump_rules([rule]))
    assert "required = true" in f.read_text() and load_rules(f) == [rule]


def test_provenance_only_runs_get_a_fidelity_verdict(con, tmp_path):
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import pipeline, write_jsonl

    write_jsonl(
        tmp_path / "p.jsonl",
        [pipeline("base", "q1", text="[Source: D1, p. 2]"), pipeline("cand", "q1", text="[Source: D9, p. 1]")],
    )
    ingest_paths(con, [tmp_path])
    v = review(con, DEFAULT_RULES, "base", "cand")
    by = {r.rule.name: r for r in v.results}
    assert by["j_avg,doc >= 0.5"].status == "not applicable"
    assert by["j_avg,doc >= 0.5"].message.endswith("no evidence logs for base and cand (provenance only)")
    # base CFS {1.0}, cand {0.0}: p95 drops by 1
    key = "Δ cfs_p95_tail >= -0.15"
    assert by[key].status == "fail" and by[key].value == pytest.approx(-1.0)
    assert v.status == "fail"


# --------------------------------------------------------------------------- noise, and what a verdict rests on


def _quality_inputs(delta, lo, hi, n=60):
    from ragaudit_core.intervals import Estimate

    return GateInputs(
        "b",
        "c",
        {},
        {"b": {"ndcg@10": 0.60}, "c": {"ndcg@10": 0.60 + delta}},
        delta_ci={"ndcg@10": Estimate(delta, lo, hi, n)},
    )


def test_a_significant_rule_passes_fails_or_is_inconclusive_on_its_interval():
    rule = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True)
    within = evaluate([rule], _quality_inputs(-0.01, -0.015, -0.005))
    beyond = evaluate([rule], _quality_inputs(-0.05, -0.08, -0.03))
    straddle = evaluate([rule], _quality_inputs(-0.01, -0.04, 0.02))
    assert [v.results[0].status for v in (within, beyond, straddle)] == ["pass", "fail", "inconclusive"]
    assert [v.status for v in (within, beyond, straddle)] == ["pass", "fail", "inconclusive"]
    assert straddle.results[0].message == (
        "nDCG@10 goes from 0.600 ('b') to 0.590 ('c'), a change of -0.010, "
        "95 % interval [-0.040, 0.020] straddles -0.02: the data cannot tell"
    )
    assert straddle.results[0].ci == (-0.04, 0.02) and straddle.results[0].n_queries == 60
    # the same point value without significance decides on the point: -0.01 >= -0.02
    plain = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True)
    assert evaluate([plain], _quality_inputs(-0.01, -0.04, 0.02)).results[0].status == "pass"
    # no interval at all: a significant rule cannot decide
    assert evaluate([rule], GateInputs("b", "c", {}, {"b": {"ndcg@10": 0.6}, "c": {"ndcg@10": 0.5}})).status == (
        "inconclusive"
    )


def test_min_queries_makes_a_thin_figure_inconclusive():
    rule = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, min_queries=100)
    r = evaluate([rule], _quality_inputs(0.01, 0.0, 0.02, n=60)).results[0]
    assert r.status == "inconclusive" and r.message.endswith("it rests on 60 queries; the rule asks for at least 100")


def test_a_thin_verdict_fails_under_min_applicable_and_require():
    from ragaudit_core.review.gate import GatePolicy

    pair = {("j_avg", "doc"): 0.9, ("flip_rate", "doc"): 0.1, ("null_loss", "doc"): 0.0}
    inputs = GateInputs("b", "c", pair, {})
    assert evaluate(DEFAULT_RULES, inputs).status == "pass"
    thin = evaluate(GatePolicy(rules=DEFAULT_RULES, min_applicable=5), inputs)
    assert thin.status == "fail" and thin.thin == ["it rests on 3 applicable rules; the policy asks for at least 5"]
    assert thin.headline().startswith("FAIL: of 10 rules, 3 passed, 7 not applicable")
    req = evaluate(GatePolicy(rules=DEFAULT_RULES, require=["stability", "fidelity"]), inputs)
    assert req.status == "fail"
    assert req.thin == ["no applicable fidelity rule, and the policy requires fidelity (no provenance logs)"]
    # the headline gives each reason once: "(no provenance logs, …)" already follows "not applicable"
    assert req.headline().count("no provenance logs") == 1
    assert req.headline().endswith("; no applicable fidelity rule, and the policy requires fidelity")


def test_the_review_preset_requires_the_three_questions(tmp_path):
    from ragaudit_core.review.gate import PRESETS, load_policy

    assert PRESETS["review"].require == ["stability", "fidelity", "attribution"]
    f = tmp_path / "r.toml"
    f.write_text('preset = "review"\nmin_applicable = 6\n[[rule]]\nmetric = "recall@10"\nop = ">="\nthreshold = -0.05\n'
                 'relative = true\nsignificant = true\nmin_queries = 30\n')  # fmt: skip
    pol = load_policy(f)
    assert pol.min_applicable == 6 and pol.require == ["stability", "fidelity", "attribution"]
    assert pol.rules[-1].name == "Δ recall@10 >= -0.05 (significant)" and pol.rules[-1].min_queries == 30
    f.write_text('require = ["speed"]\n')
    with pytest.raises(ValueError, match="require"):
        load_policy(f)
    with pytest.raises(ValidationError, match="unknown metric 'ndcg@0'"):
        Rule(metric="ndcg@0", op=">=", threshold=0.5)


def test_min_queries_holds_for_run_metrics_without_an_interval():
    """A relative CFS rule asks for 30 queries: the baseline's figure rests on 40 records with
    citations, the candidate's on 12, so the change rests on 12 (the thinner side): inconclusive,
    said with the count. Without a known count the rule decides on its value."""
    rule = Rule(metric="cfs_p95_tail", op=">=", threshold=-0.15, relative=True, min_queries=30)
    runs = {"b": {"cfs_p95_tail": 0.9}, "c": {"cfs_p95_tail": 0.95}}
    counted = GateInputs("b", "c", {}, runs, run_n={"b": {"cfs_p95_tail": 40}, "c": {"cfs_p95_tail": 12}})
    (r,) = evaluate([rule], counted).results
    assert r.status == "inconclusive" and r.n_queries == 12
    assert r.message.endswith("it rests on 12 queries; the rule asks for at least 30")
    enough = GateInputs("b", "c", {}, runs, run_n={"b": {"cfs_p95_tail": 40}, "c": {"cfs_p95_tail": 30}})
    assert evaluate([rule], enough).results[0].status == "pass"
    assert evaluate([rule], GateInputs("b", "c", {}, runs)).results[0].status == "pass"  # count unknown


def test_collect_counts_the_queries_behind_fidelity_figures(con, tmp_path):
    """The fixture's two provenance records per run: q1 and q2 both cite (2 with citations), both
    have a ground-truth source. Survival is conditional: base loses q2's source at reranking, so
    its compression and generation rates rest on q1 alone, and the "every" rule reports the stage
    it decides on (generation, 1 query behind base's side)."""
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import collect

    ingest_paths(con, [_evidence_and_provenance(tmp_path)])
    inputs = collect(con, "base", "cand")
    assert inputs.run_n["cand"]["cfs_p95_tail"] == 2 and inputs.run_n["cand"]["parse_failure_rate"] == 2
    assert inputs.run_n["base"][("stage_survival", "reranking")] == 2
    assert inputs.run_n["base"][("stage_survival", "generation")] == 1  # q2 never reached it
    assert inputs.run_n["cand"][("stage_survival", "generation")] == 2
    rule = Rule(metric="stage_survival", level="every", op=">=", threshold=-0.05, relative=True, min_queries=30)
    (r,) = evaluate([rule], inputs).results
    assert r.status == "inconclusive" and r.n_queries == 1
    assert r.message.endswith("it rests on 1 query; the rule asks for at least 30")


def test_a_run_against_itself_passes_relative_rules_whatever_their_floor(con, tmp_path):
    """Relative rules on a run against itself see a change of exactly 0: decided on the value,
    with neither a query floor nor significance (which has no interval to read)."""
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import collect

    ingest_paths(con, [_evidence_and_provenance(tmp_path)])
    rules = [
        Rule(metric="cfs_p95_tail", op=">=", threshold=-0.15, relative=True, min_queries=30),
        Rule(metric="stage_survival", level="every", op=">=", threshold=-0.05, relative=True, min_queries=30),
        Rule(metric="cfs_mean", op=">=", threshold=-0.1, relative=True, significant=True),
    ]
    v = evaluate(rules, collect(con, "base", "base"))
    assert [r.status for r in v.results] == ["pass", "pass", "pass"] and v.status == "pass"
    assert v.results[0].message.endswith("at least -0.15 (a run against itself: exact)")


def test_a_relative_quality_rule_decides_on_the_paired_change_its_interval_belongs_to():
    """Runs labelled on different queries (300 vs 40): the change is the paired one over the 40
    both have, the figure its interval is of, not the difference of the two runs' own means."""
    from ragaudit_core.intervals import Estimate

    inputs = GateInputs(
        "b",
        "c",
        {},
        {"b": {"ndcg@10": 0.651}, "c": {"ndcg@10": 0.569}},
        delta_ci={"ndcg@10": Estimate(-0.047, -0.086, -0.012, 40)},
    )
    plain = Rule(metric="ndcg@10", op=">=", threshold=-0.05, relative=True)
    r = evaluate([plain], inputs).results[0]
    assert r.value == pytest.approx(-0.047) and r.status == "pass"  # -0.082 would have failed it
    assert "a change of -0.047 over the 40 queries both runs have" in r.message
    assert "-0.082" not in r.message
    sig = Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True)
    s = evaluate([sig], inputs).results[0]
    assert s.value == pytest.approx(-0.047) and s.status == "inconclusive"


def test_a_stage_survival_drop_fails_only_when_its_whole_interval_lies_past_the_threshold(con, tmp_path):
    """The default preset's stage-survival rule asks for significance: a review of the sample pair's
    PDF found a FAIL on Δ stage survival −0.053 against −0.05 over ~45 queries reaching the stage —
    two or three queries. ``collect`` gives the change its paired interval; a change whose interval
    straddles the threshold is inconclusive, one wholly below it fails."""
    from ragaudit_core.intervals import Estimate
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.review.gate import collect
    from ragaudit_core.review.gate.rules import DEFAULT_RULES

    (rule,) = [r for r in DEFAULT_RULES if r.metric == "stage_survival"]
    assert rule.significant and rule.relative and rule.threshold == -0.05
    ingest_paths(con, [_evidence_and_provenance(tmp_path)])
    inputs = collect(con, "base", "cand")
    e = inputs.delta_ci[("stage_survival", "generation")]  # base reached it with q1 only
    assert e.n == 1 and e.lo <= e.value <= e.hi
    key = ("stage_survival", "generation")
    runs = {"b": {key: 0.16}, "c": {key: 0.106}}
    straddles = GateInputs("b", "c", {}, runs, delta_ci={key: Estimate(-0.054, -0.17, 0.07, 44)})
    (r,) = evaluate([rule], straddles).results
    assert r.status == "inconclusive" and "straddles -0.05: the data cannot tell" in r.message
    below = GateInputs("b", "c", {}, runs, delta_ci={key: Estimate(-0.054, -0.09, -0.06, 44)})
    assert evaluate([rule], below).results[0].status == "fail"

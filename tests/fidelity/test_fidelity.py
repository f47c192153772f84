"""Citation fidelity (seed 002) on hand-made graphs: every number worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from ragaudit_core.fidelity.score import (
    DEFAULT_PATTERNS,
    CitationPattern,
    FidelityRules,
    canary,
    compute_query,
    extract_citations,
    fidelity_runs,
    load_graphs,
    summarise_run,
    survival_table,
    tail_comment,
)
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import TEXT, node, pipeline, write_jsonl


def _load(con, tmp_path, *records, name="prov.jsonl"):
    rep = ingest_paths(con, [write_jsonl(tmp_path / name, list(records))])
    return rep


# --- extraction ----------------------------------------------------------------------------------


def test_every_default_pattern_and_parse_failures():
    cits, failures = extract_citations(TEXT)
    assert [(c.pattern, c.doc_id, c.page, c.index) for c in cits] == [
        ("source_page", "D1", 2, None),
        ("document_index", None, None, 2),
        ("source_page", "D1", 3, None),
        ("source_page", "D1", 9, None),
        ("source_page", "D9", 1, None),
        ("bracket_index", None, None, 7),
    ]
    assert failures == ["[Source: D1]"]
    cits, _ = extract_citations("as shown (Document 3) and [Document 12]")
    assert [c.index for c in cits] == [3, 12]
    assert [c.string for c in cits] == ["(Document 3)", "[Document 12]"]


def test_text_without_citations():
    assert extract_citations("No citations here, only [brackets] and (parens).") == ([], [])
    assert extract_citations(None) == ([], [])
    assert extract_citations("") == ([], [])


def test_custom_patterns_replace_the_defaults():
    pats = (CitationPattern("ref", r"<<(?P<doc>\w+)#(?P<page>\d+)>>"),)
    cits, failures = extract_citations("see <<D1#2>> and [Source: D1, p. 2]", pats)
    assert [(c.doc_id, c.page) for c in cits] == [("D1", 2)]
    assert failures == ["[Source: D1, p. 2]"]  # citation-like, but no configured pattern takes it


# --- verification and CFS -----------------------------------------------------------------------


def test_verification_outcomes_and_cfs_by_hand(con, tmp_path):
    _load(con, tmp_path, pipeline())
    (g,) = load_graphs(con, "base")
    r = compute_query(g)
    assert [(c["citation"], c["score"], c["diagnostic"]) for c in r.citations] == [
        ("[Source: D1, p. 2]", 1.0, "exact_context_match"),
        ("[Document 2]", 1.0, "exact_context_match"),  # context element 2 = D2 p. 1
        ("[Source: D1, p. 3]", 0.3, "valid_doc_invalid_page_or_unretrieved"),
        ("[Source: D1, p. 9]", 0.0, "hallucinated_page_exceeds_document_bounds"),  # D1 has 3 pages
        ("[Source: D9, p. 1]", 0.0, "hallucinated_document_id"),
        ("[7]", 0.0, "context_index_out_of_range"),  # 2 context elements
    ]
    assert r.cfs == pytest.approx((1 + 1 + 0.3 + 0 + 0 + 0) / 6)
    assert r.parse_failures == ["[Source: D1]"]
    assert r.survival == {1: 1, 2: 1, 3: 1, 4: 1, 5: 1}
    assert (r.cfs_product, r.first_failed_stage) == (1, None)
    assert r.findings == []


def test_doc_ids_are_canonicalised_on_both_sides(con, tmp_path):
    _load(con, tmp_path, pipeline(text="[Source:  d1 , p. 2]"))
    (g,) = load_graphs(con, "base")
    assert compute_query(g).citations[0]["diagnostic"] == "exact_context_match"  # "d1" == "D1"


def test_no_citations_gives_no_cfs_and_fails_generation(con, tmp_path):
    _load(con, tmp_path, pipeline(text="An answer without any citation."))
    r = compute_query(load_graphs(con, "base")[0])
    assert r.cfs is None and r.diagnostic == "no_citations_found"
    assert r.survival == {1: 1, 2: 1, 3: 1, 4: 1, 5: 0}
    assert (r.cfs_product, r.first_failed_stage) == (0, 5)


def test_reranker_coordinate_loss_is_localised(con, tmp_path):
    _load(con, tmp_path, pipeline(strip_rerank=True, text="[Document 1] and [Document 2]"))
    r = compute_query(load_graphs(con, "base")[0])
    assert [c["diagnostic"] for c in r.citations] == ["context_element_without_coordinates", "exact_context_match"]
    assert r.cfs == pytest.approx(0.5)
    # retrieval still holds D1; after reranking only D2 (not ground truth) is linkable
    assert r.survival == {1: 1, 2: 1, 3: 0, 4: None, 5: None}
    assert (r.cfs_product, r.first_failed_stage) == (0, 3)


def test_missing_stage_is_skipped_not_failed(con, tmp_path):
    rec = pipeline(text="[Document 1]")
    rec["nodes"] = [n for n in rec["nodes"] if n["stage"] != 3]
    for n in rec["nodes"]:
        if n["node_id"] == "x1":
            n["derived_from"] = ["r1"]
        if n["node_id"] == "x2":
            n["derived_from"] = ["r2"]
    _load(con, tmp_path, rec)
    r = compute_query(load_graphs(con, "base")[0])
    assert r.survival == {1: 1, 2: 1, 3: None, 4: 1, 5: 1} and r.cfs_product == 1


def test_no_ground_truth_no_survival(con, tmp_path):
    _load(con, tmp_path, pipeline(gt=()))
    r = compute_query(load_graphs(con, "base")[0])
    assert r.cfs_product is None and set(r.survival.values()) == {None}
    assert r.cfs == pytest.approx(2.3 / 6)


# --- failure modes ------------------------------------------------------------------------------


def test_failure_mode_checks(con, tmp_path):
    _load(con, tmp_path, pipeline(mutate=True, stale=True, bad_offsets=True))
    r = compute_query(load_graphs(con, "base")[0])
    by_check = {f["check"]: f for f in r.findings}
    assert set(by_check) == {"offset_length_mismatch", "reranker_text_mutation", "stale_chunk"}
    assert by_check["offset_length_mismatch"]["node_id"] == "c1"
    assert by_check["offset_length_mismatch"]["detail"] == "offsets span 12 characters, text has 10"
    assert by_check["reranker_text_mutation"]["node_id"] == "k1"
    assert by_check["stale_chunk"]["node_id"] == "c2"
    assert by_check["stale_chunk"]["staleness_s"] == 31 * 86400  # indexed Jan 1, document version Feb 1


# --- run level ----------------------------------------------------------------------------------


def test_run_summary_survival_rates_and_alerts(con, tmp_path):
    _load(
        con,
        tmp_path,
        pipeline(qid="q1", text="[Source: D1, p. 2]"),
        pipeline(qid="q2", strip_rerank=True, text="[Document 2] [Source: D1]"),
    )
    res = fidelity_runs(con)["base"]
    s = res.summary
    # q1: CFS 1.0, product 1; q2: CFS 1.0 (one exact citation), fails at reranking
    assert s["n_queries"] == 2 and s["n_citations"] == 2 and s["n_parse_failures"] == 1
    assert s["parse_failure_rate"] == pytest.approx(1 / 3)
    assert s["cfs_mean"] == 1.0 and s["cfs_p95"] == 1.0
    assert s["cfs_product_mean"] == 0.5
    assert s["stage_survival"] == {
        "chunking": 1.0,
        "retrieval": 1.0,
        "reranking": 0.5,
        "compression": 1.0,
        "generation": 1.0,
    }
    status = {a["rule"]: a["status"] for a in res.alerts}
    assert status["p95 CFS"] == "ok"
    assert status["reranking survival"] == "alert" and status["retrieval survival"] == "ok"
    assert status["parse-failure rate"] == "alert"  # 33 % > 0.5 %
    assert s["n_alerts"] == 2
    msg = next(a["message"] for a in res.alerts if a["rule"] == "reranking survival")
    assert msg == (
        "50.0% of the queries that reached reranking with a ground-truth source keep one through it "
        "(conditional survival; below 90%)"
    )
    # the funnel's reading: the running product of the conditional rates (1 · 1 · 0.5 · 1 · 1)
    assert s["stage_share"] == {
        "chunking": 1.0,
        "retrieval": 1.0,
        "reranking": 0.5,
        "compression": 0.5,
        "generation": 0.5,
    }
    table = survival_table(s)
    assert table["stage"].tolist() == ["chunking", "retrieval", "reranking", "compression", "generation"]
    assert table["conditional"].tolist() == [1.0, 1.0, 0.5, 1.0, 1.0]
    assert table["share"].tolist() == [1.0, 1.0, 0.5, 0.5, 0.5]
    assert list(res.queries["first_failed_stage"].fillna("-")) == ["-", "reranking"]


def test_tail_comment_when_the_upper_p95_hides_a_failing_majority():
    # 20 queries, 18 score 0 and two score 1. Upper p95 (linear): position 0.95 · 19 = 18.05, between
    # values[18] = 1 and values[19] = 1 → 1.0. Tail (5th percentile): position 0.95, between two zeros → 0.0
    cfs = [0.0] * 18 + [1.0, 1.0]
    upper = float(np.percentile(cfs, 95))
    tail = float(np.percentile(cfs, 5))
    assert upper == 1.0 and tail == 0.0
    s = {"percentile_convention": "upper", "cfs_p95": upper, "cfs_p95_other": tail, "cfs_p50": 0.0}
    msg = tail_comment(s, 0.85)
    assert msg.startswith(
        "p95 CFS read as the 95th percentile is 1.00, but the median is 0.00: half of the queries with citations "
        "score 0.00 or less"
    )
    # the same run read with the tail convention: the figures swap places, the sentence is the same
    assert (
        tail_comment({"percentile_convention": "tail", "cfs_p95": tail, "cfs_p95_other": upper, "cfs_p50": 0.0}, 0.85)
        == msg
    )
    # both readings close and above the threshold: no comment
    assert (
        tail_comment({"percentile_convention": "upper", "cfs_p95": 1.0, "cfs_p95_other": 0.9, "cfs_p50": 1.0}, 0.85)
        is None
    )
    # close (0.2 apart) but the tail falls below the threshold while the upper clears it: a comment
    assert (
        tail_comment({"percentile_convention": "upper", "cfs_p95": 0.9, "cfs_p95_other": 0.7, "cfs_p50": 0.8}, 0.85)
        is not None
    )
    assert (
        tail_comment({"percentile_convention": "upper", "cfs_p95": None, "cfs_p95_other": None, "cfs_p50": None}, 0.85)
        is None
    )


def test_percentile_conventions():
    from ragaudit_core.fidelity.score import QueryFidelity

    def q(i, cfs):
        return QueryFidelity(
            "r", f"q{i}", cfs, None, [{"score": cfs, "diagnostic": "x", "citation": "[1]"}], [], {}, None, None, []
        )

    res = [q(i, v) for i, v in enumerate([0.0, 0.5, 1.0])]
    upper = summarise_run("r", res).summary
    assert upper["cfs_p50"] == 0.5 and upper["cfs_p95"] == pytest.approx(0.95)  # 0.5 + 0.9 × 0.5
    tail = summarise_run("r", res, FidelityRules(percentile="tail")).summary
    assert tail["cfs_p95"] == 0.0  # the 5th percentile, a value of the data: every query reaches 0.0
    assert tail["cfs_p50"] == 0.5
    assert upper["cfs_p95_other"] == 0.0  # the tail reading beside the upper one


def test_the_tail_reading_is_a_score_that_95_percent_of_queries_reach():
    """9 queries at 1.0 and one at 0.0: linear interpolation read 0.45 at the 5th percentile, which
    only 9 of the 10 queries (90 %) reach; the tail reading is 0.0, which all reach."""
    from ragaudit_core.fidelity.score import QueryFidelity

    def q(i, v):
        return QueryFidelity(
            "r", f"q{i}", v, None, [{"score": v, "diagnostic": "x", "citation": "[1]"}], [], {}, None, None, []
        )

    res = [q(i, v) for i, v in enumerate([1.0] * 9 + [0.0])]
    s = summarise_run("r", res, FidelityRules(percentile="tail")).summary
    assert s["cfs_p95"] == 0.0 and s["cfs_p95_other"] == 1.0
    lo, hi = s["intervals"]["cfs_p95"]
    assert lo <= 0.0 <= hi and lo in (0.0, 1.0)  # the bootstrap's quantiles are values of the data too
    # 19 at 1.0 and one at 0.0: 95 % of the queries reach 1.0, so the tail reading is 1.0
    res = [q(i, v) for i, v in enumerate([1.0] * 19 + [0.0])]
    s = summarise_run("r", res, FidelityRules(percentile="tail")).summary
    assert s["cfs_p95"] == 1.0 and s["cfs_p50"] == 1.0


def test_rules_from_toml(tmp_path):
    p = tmp_path / "rules.toml"
    p.write_text("[fidelity]\np95_cfs_min = 0.7\nstage_survival_min = 0.8\n")
    r = FidelityRules.from_toml(p)
    assert (r.p95_cfs_min, r.stage_survival_min, r.parse_failure_max) == (0.7, 0.8, 0.005)
    p.write_text("[fidelity]\np95_cfs_minimum = 0.7\n")
    with pytest.raises(ValueError, match="p95_cfs_minimum"):
        FidelityRules.from_toml(p)
    # a gate rules file (the README passes one rules.toml to both commands): its keys are the gate's,
    # the fidelity rules its [fidelity] table or, without one, its other top-level keys
    p.write_text('preset = "strict"\nmin_applicable = 2\n[[rule]]\nmetric = "j_avg"\nop = ">="\nthreshold = 0.5\n')
    assert FidelityRules.from_toml(p) == FidelityRules()
    p.write_text('preset = "none"\np95_cfs_min = 0.6\n')
    assert FidelityRules.from_toml(p).p95_cfs_min == 0.6


def test_canary_mann_whitney():
    same = canary([1.0, 0.5, 1.0, 0.3], [1.0, 0.5, 1.0, 0.3])
    assert same["significant"] is False and same["p_value"] == pytest.approx(1.0)
    a, b = [1.0] * 30 + [0.3] * 2, [0.0] * 25 + [0.3] * 7
    diff = canary(a, b)
    assert diff["significant"] is True and diff["p_value"] < 1e-6
    # U counts the pairs where a beats b (ties count half): here every a ≥ every b
    assert diff["u"] == pytest.approx(30 * 32 + 2 * (25 + 7 * 0.5))
    assert canary([1.0], [0.5])["p_value"] is None


# --- malformed graphs are rejected with a reason --------------------------------------------------


@pytest.mark.parametrize(
    "mutate, reason",
    [
        (
            lambda r: r["nodes"][2].update(derived_from=["nope"]),
            "node 'c1' is derived from 'nope', which is not a node of this record (dangling derived_from)",
        ),
        (
            lambda r: r["nodes"][2].update(stage=3),
            "node 'r1' claims stage 2 (retrieval) but its parent 'c1' is at the later stage 3 (reranking)",
        ),
        (
            lambda r: r["nodes"][0].update(derived_from=["g"], stage=5),  # a loop back from generation to source
            "node 'c1' claims stage 1 (chunking) but its parent 'd1' is at the later stage 5 (generation)",
        ),
        (
            lambda r: r["nodes"].append(dict(r["nodes"][0])),
            "node id 'd1' appears twice; node ids must be unique within a record",
        ),
        (lambda r: r["nodes"][0].update(stage=9), "stage must be an integer 0–6 (or a stage name), got 9"),
        (lambda r: r["nodes"][0].update(artifact_type="blob"), "artifact_type must be one of"),
        (lambda r: r.update(nodes=[]), "nodes: List should have at least 1 item after validation, not 0"),
    ],
)
def test_malformed_graphs_are_quarantined(con, tmp_path, mutate, reason):
    bad = pipeline(qid="bad")
    mutate(bad)
    rep = _load(con, tmp_path, pipeline(qid="good"), bad)
    assert rep.n_provenance == 1  # the good record is kept
    assert len(rep.rejected) == 1 and rep.rejected[0].line_no == 2
    assert reason in rep.rejected[0].message
    assert con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0] == 1


def test_cycle_is_reported(con, tmp_path):
    rec = {
        "run_id": "r",
        "query_id": "q",
        "nodes": [
            node("a", 2, "rank_result", ["b"]),
            node("b", 2, "rank_result", ["c"]),
            node("c", 2, "rank_result", ["a"]),
        ],
    }
    rep = _load(con, tmp_path, rec)
    assert rep.rejected[0].message.startswith("the provenance graph has a cycle: ")
    assert "'a'" in rep.rejected[0].message and "'c'" in rep.rejected[0].message


def test_provenance_and_evidence_files_in_one_ingest(con, tmp_path):
    write_jsonl(tmp_path / "logs" / "ev.jsonl", [{"run_id": "base", "query_id": "q1", "evidence": ["D1"]}])
    write_jsonl(tmp_path / "logs" / "prov.jsonl", [pipeline()])
    rep = ingest_paths(con, [tmp_path / "logs"])
    assert rep.n_records == 1 and rep.n_provenance == 1
    kinds = dict(con.execute("SELECT path, kind FROM files").fetchall())
    assert sorted(kinds.values()) == ["evidence", "provenance"]
    again = ingest_paths(con, [tmp_path / "logs"])  # content-hash dedupe applies too
    assert again.n_provenance == 0 and con.execute("SELECT count(*) FROM prov_records").fetchall()[0][0] == 1
    assert DEFAULT_PATTERNS[0].name == "source_page"


def test_bad_lines_in_a_provenance_file_are_named_and_the_good_kept(con, tmp_path):
    import json as _json

    good = _json.dumps(pipeline(qid="good")).encode()
    bad_utf8 = (
        _json.dumps(pipeline(qid="latin1")).replace("what?", "caf\\u00e9").encode().replace(b"caf\\u00e9", b"caf\xe9")
    )
    f = write_jsonl(tmp_path / "p.jsonl", [good, bad_utf8, b"[1, 2]", _json.dumps(pipeline(qid="good")).encode()])
    rep = ingest_paths(con, [f])
    assert rep.n_provenance == 1
    assert [(i.line_no, i.message.split(";")[0].split(" (")[0]) for i in rep.rejected] == [
        (2, "line is not valid UTF-8"),
        (3, "expected a JSON object per line, got array"),
        (4, "duplicate provenance record for run 'base', query 'good': already loaded from " + str(f) + " line 1"),
    ]

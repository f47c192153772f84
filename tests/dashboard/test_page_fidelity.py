"""AppTest: the citation-fidelity page (numbers equal the core's; thresholds are live)."""

from __future__ import annotations

import json

import pytest

from ragaudit_core.fidelity.score import canary, fidelity_runs
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import app_test, pipeline, plain, verdict_rows, write_jsonl

pytestmark = pytest.mark.slow
PAGE = "pages/4_Citation_fidelity.py"


@pytest.fixture
def prov_db(app_env, tmp_path):
    path = app_env()
    logs = tmp_path / "prov"
    write_jsonl(
        logs / "base.jsonl",
        [
            pipeline("base", "q1", text="[Source: D1, p. 2]"),
            pipeline("base", "q2", strip_rerank=True, text="[Document 2] [Source: D1]"),
        ],
    )
    write_jsonl(
        logs / "cand.jsonl",
        [
            pipeline("cand", "q1", text="[Source: D9, p. 1]"),
            pipeline("cand", "q2", text="[Source: D1, p. 3]", mutate=True),
        ],
    )
    ingest_paths(store.connect(path), [logs])
    return path


def test_no_provenance_says_what_to_do(app_env):
    app_env()
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("No provenance logs are loaded" in i.value for i in at.info)


def test_figures_alerts_graph_and_canary(prov_db):
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    res = fidelity_runs(store.connect(prov_db))
    means = [m.value for m in at.metric if m.label == "mean CFS"]
    assert means == [f"{res['base'].summary['cfs_mean']:.3f}", f"{res['cand'].summary['cfs_mean']:.3f}"]
    assert means == ["1.000", "0.150"]
    # each run's CFS figures with their intervals, over its queries with citations
    for run in ("base", "cand"):
        lo, hi = res[run].summary["intervals"]["cfs_mean"]
        assert any(f"queries with citations: mean [{lo:.3f}, {hi:.3f}]" in c.value for c in at.caption), run
    alerts = at.dataframe[0].value
    assert alerts["status"].iloc[0] == "alert"  # failing rules first
    assert set(alerts.loc[alerts.status == "alert", "rule"]) == {"reranking survival", "parse-failure rate"}
    # the worst query of run base opens by default: q2 lost its ground truth at reranking
    assert any(m.value == "**Query q2**" for m in at.markdown)
    # the question and the generated answer, each under its name (before: two unlabelled texts)
    captions = [c.value for c in at.caption]
    assert captions.index("Question") + 1 == captions.index("Generated answer")
    assert [t.value for t in at.text][:2] == ["what?", "[Document 2] [Source: D1]"]  # q2 of run base
    assert len(at.get("plotly_chart")) == 3  # funnel, histogram, graph
    c = canary([1.0, 1.0], [0.0, 0.3])
    assert {m.label: m.value for m in at.metric}["Mann–Whitney U"] == f"{c['u']:.1f}" == "4.0"
    # 2 queries a side: no difference found, said as that and not shown green as if sameness were shown
    assert not c["significant"] and not [s for s in at.success if "CFS distributions" in s.value]
    [said] = [i.value for i in at.info if "CFS distributions" in i.value]
    assert said.endswith("no difference was found, which does not show they are the same.")


def test_thresholds_are_live(prov_db):
    at = app_test(PAGE).run()
    at.sidebar.slider[1].set_value(0.4).run()  # stage survival ≥ 0.4: 0.5 passes
    alerts = at.dataframe[0].value
    assert alerts.set_index("rule").loc["reranking survival", "status"] == "ok"
    next(s for s in at.selectbox if s.label == "Run").select("cand").run()
    assert not at.exception
    # the open query (q2) stays open across runs; in cand its reranker mutated the chunk text
    assert any(m.value == "**Query q2**" for m in at.markdown)
    # the question and the generated answer, each under its name (before: two unlabelled texts)
    captions = [c.value for c in at.caption]
    assert captions.index("Question") + 1 == captions.index("Generated answer")
    assert [t.value for t in at.text][:2] == ["what?", "[Source: D1, p. 3]"]  # q2 of run cand
    cits = next(df.value for df in at.dataframe if "diagnostic" in df.value.columns and "citation" in df.value.columns)
    assert list(cits["diagnostic"]) == ["valid_doc_invalid_page_or_unretrieved"] and list(cits["score"]) == [0.3]
    finds = next(df.value for df in at.dataframe if "check" in df.value.columns)
    assert list(finds["check"]) == ["reranker_text_mutation"] and list(finds["node_id"]) == ["k1"]


def test_a_run_of_one_query_reads_in_the_singular(app_env, tmp_path):
    """One query with one citation: "1 query", "1 citation" — not "1 queries"."""
    path = app_env()
    write_jsonl(tmp_path / "one.jsonl", [pipeline("one", "q1", text="[Source: D1, p. 2]")])
    ingest_paths(store.connect(path), [tmp_path / "one.jsonl"])
    at = app_test(PAGE).run()
    assert not at.exception
    (summary,) = [c.value for c in at.caption if "with citations · " in c.value]
    assert summary.startswith("1 query · 1 with citations · 1 citation · product-form CFS ")
    assert summary.endswith(" · 0 alerts") and "queries" not in summary


def test_tail_reading_survival_readings_and_blank_cells(app_env, tmp_path):
    """A run where one query of three cites its source: CFS 1, 0, 0. Upper p95 (linear) sits at
    position 0.95 · 2 = 1.9 → 0 + 0.9 · (1 − 0) = 0.90, the median 0, the tail p95 (position 0.1) 0.00.
    The upper reading clears 0.85 while most queries fail: the page says so beside it."""
    path = app_env()
    write_jsonl(
        tmp_path / "tail.jsonl",
        [
            pipeline("tail", "q1", text="[Source: D1, p. 2]"),
            pipeline("tail", "q2", text="[Source: D9, p. 1]"),
            pipeline("tail", "q3", text="[Source: D9, p. 1]"),
        ],
    )
    ingest_paths(store.connect(path), [tmp_path / "tail.jsonl"])
    at = app_test(PAGE).run()
    assert not at.exception
    assert any(c.value == "median 0.000 · p95 0.900 · tail p95 0.000" for c in at.caption)
    (warning,) = [w.value for w in at.warning]
    assert plain(warning).startswith(
        "p95 CFS read as the 95th percentile is 0.90, but the median is 0.00: half of the queries with citations "
        "score 0.00 or less"
    )
    # the two readings of survival, labelled: D1 survives every stage up to generation in all three
    # queries; only q1's citation resolves to it, so generation keeps 1 of 3 (conditional and share alike)
    surv = next(df for df in at.dataframe if "conditional" in df.value.columns)
    assert surv.value["conditional"].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0, 1 / 3])
    assert surv.value["share"].tolist() == pytest.approx([1.0, 1.0, 1.0, 1.0, 1 / 3])
    cols = json.loads(surv.proto.columns)
    assert cols["conditional"]["label"] == "survival (of queries reaching the stage)"
    assert cols["share"]["label"] == "share of all queries with ground truth"
    # every table: blanks for missing values, readable titles (keys stay the data's)
    assert all(df.proto.placeholder == "" for df in at.dataframe)
    queries = next(df for df in at.dataframe if "first_failed_stage" in df.value.columns)
    lost = queries.value.set_index("query_id")["first_failed_stage"]
    assert lost.isna()["q1"] and lost["q2"] == lost["q3"] == "generation"  # q1's cell shows blank
    assert json.loads(queries.proto.columns)["first_failed_stage"]["label"] == "ground truth lost at"


def test_many_runs_a_handful_side_by_side_every_run_in_a_table(app_env, tmp_path):
    """A log with a run per record (40 one-record runs): six runs' metrics and charts, chosen in
    a multiselect; every run's figures in a table, equal to the core's."""
    path = app_env()
    texts = ["[Source: D1, p. 2]", "[Source: D9, p. 1]", "[Source: D1, p. 3]", "no citation"]
    write_jsonl(tmp_path / "req.jsonl", [pipeline(f"req-{i:02d}", "q", text=texts[i % 4]) for i in range(40)])
    ingest_paths(store.connect(path), [tmp_path / "req.jsonl"])
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    pick = next(m for m in at.multiselect if m.label == "Runs in the overview")
    assert pick.value == [f"req-{i:02d}" for i in range(6)]
    assert [m.value for m in at.metric if m.label == "mean CFS"] == ["1.000", "0.000", "0.300", "n/a", "1.000", "0.000"]
    table = next(df.value for df in at.dataframe if "n_alerts" in df.value.columns)
    res = fidelity_runs(store.connect(path))
    assert table["run_id"].tolist() == [f"req-{i:02d}" for i in range(40)]
    assert table["n_alerts"].tolist() == [res[r].summary["n_alerts"] for r in table["run_id"]]
    assert table["cfs_mean"].tolist()[:3] == [1.0, 0.0, 0.3]
    pick.set_value(["req-07", "req-30"]).run()
    assert not at.exception
    assert [m.value for m in at.metric if m.label == "mean CFS"] == ["n/a", "0.300"]


def test_judge_verdicts_sit_beside_the_rules(app_env, tmp_path, monkeypatch):
    """Verdicts of a judge job (three judges over an OpenAI-compatible server started here) on
    the page: q1's citation is right (rules ACCURATE) and the judges agree; q2's is wrong (rules
    HALLUCINATED) and one judge dissents. Agreement 2/2, disagreement 1/2."""
    from ragaudit_core.jobs import plan_judge, run_batch
    from tests.fidelity.test_judge import GOOD, _Server

    def reply(body):
        cited = body["messages"][0]["content"].split("Generated citation string: ")[1].split("\n")[0]
        return json.dumps(
            {**GOOD, "verdict": "ACCURATE" if "D1" in cited else ("PARTIAL" if body["seed"] == 2 else "HALLUCINATED")}
        )

    path = app_env()
    server = _Server(reply)
    monkeypatch.setenv("RAGAUDIT_JUDGE_ENDPOINTS", server.url)  # the operator allows it (issue #24)
    try:
        with store.connect(path) as con:
            ingest_paths(
                con,
                [
                    write_jsonl(
                        tmp_path / "p.jsonl",
                        [
                            pipeline("base", "q1", text="[Source: D1, p. 2]"),
                            pipeline("base", "q2", text="[Source: D9, p. 1]"),
                        ],
                    )
                ],
            )
            run_batch(con, [plan_judge(con, "base", q, model="m", endpoint=server.url) for q in ("q1", "q2")])
    finally:
        server.close()
    at = app_test(PAGE).run()
    assert not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert shown["citations judged"] == "2" and shown["agreement with the rules"] == "100.0%"
    assert shown["judges disagree"] == "50.0%" and shown["invalid votes"] == "0"
    deltas = {m.label: plain(m.proto.delta) for m in at.metric if m.proto.delta}
    assert deltas["agreement with the rules"].startswith("n = 2, 95 % [")  # Wilson's interval at n = 2
    assert any("These rates rest on 2 citations — fewer than 20" in plain(w.value) for w in at.warning)
    table = next(df.value for df in at.dataframe if "majority" in df.value.columns)
    assert table["rule"].tolist() == ["ACCURATE", "HALLUCINATED"]
    assert table["majority"].tolist() == ["ACCURATE", "HALLUCINATED"]
    assert any(b.label.startswith("Judge the citations of base") for b in at.button)


def test_queued_judge_jobs_show_progress_and_cancel(app_env, tmp_path):
    """Two judge jobs queued (no worker has taken them): the page shows 0 of 2 done and no start
    button; cancelling ends both, and the start button is back."""
    from ragaudit_core.jobs import plan_judge, queue

    path = app_env()
    with store.connect(path) as con:
        ingest_paths(
            con,
            [
                write_jsonl(
                    tmp_path / "p.jsonl",
                    [
                        pipeline("base", "q1", text="[Source: D1, p. 2]"),
                        pipeline("base", "q2", text="[Source: D9, p. 1]"),
                    ],
                )
            ],
        )
        for q in ("q1", "q2"):
            queue.enqueue(con, *plan_judge(con, "base", q))
    at = app_test(PAGE).run()
    assert not at.exception
    (bar,) = at.get("progress")
    assert plain(bar.proto.text) == "0 of 2 judge jobs done, 2 queued or running"
    assert not any(b.label.startswith("Judge the citations") for b in at.button)
    next(b for b in at.button if b.label == "Cancel judging").click().run()
    at.run()
    with store.connect(path) as con:
        assert sorted(j.status for j in queue.jobs(con)) == ["cancelled", "cancelled"]
    # judging a whole run asks first, with how many jobs and about how long
    next(b for b in at.button if b.label.startswith("Judge the citations of base")).click().run()
    assert any("Queue 2 judge jobs (2 citations) for base?" in plain(w.value) for w in at.warning)
    at.button(key="fid.judge.no").click().run()
    assert not any("Queue 2 judge jobs" in plain(w.value) for w in at.warning)
    with store.connect(path) as con:
        assert sorted(j.status for j in queue.jobs(con)) == ["cancelled", "cancelled"]  # nothing queued


def test_a_bf16_panel_is_shown_apart_from_the_reference(app_env, tmp_path):
    """q1 judged by the reference panel (3 × ACCURATE) and by a bf16 panel (3 × HALLUCINATED): the
    page offers the panel to show and counts each alone — agreement with the rules (ACCURATE)
    100 % for the reference, 0 % for bf16; never six votes for one citation."""
    from ragaudit_core.fidelity.judging import store_verdicts

    path = app_env()
    with store.connect(path) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
        store_verdicts(con, "judge-ref", "base", "q1", verdict_rows("local:m", "ACCURATE"))
        store_verdicts(con, "judge-half", "base", "q1", verdict_rows("local:m (bf16)", "HALLUCINATED"))
    at = app_test(PAGE).run()
    assert not at.exception
    panel = at.radio(key="fid.judge.panel")
    assert panel.options == ["reference weights", "bf16 weights"] and panel.value == "auto"
    shown = {m.label: m.value for m in at.metric}
    assert shown["citations judged"] == "1" and shown["agreement with the rules"] == "100.0%"
    table = next(df.value for df in at.dataframe if "majority" in df.value.columns)
    assert table["votes"].tolist() == ["ACCURATE · ACCURATE · ACCURATE"]
    at = panel.set_value("bf16").run()
    shown = {m.label: m.value for m in at.metric}
    assert shown["citations judged"] == "1" and shown["agreement with the rules"] == "0.0%"
    table = next(df.value for df in at.dataframe if "majority" in df.value.columns)
    assert table["votes"].tolist() == ["HALLUCINATED · HALLUCINATED · HALLUCINATED"]


def test_a_run_without_ground_truth_is_named_beside_the_funnel(app_env, tmp_path):
    """A provenance run naming no ground-truth source (Phoenix reranker traces) has no stage survival:
    the funnel leaves it out, and the page says so (the walk: a run's bars simply missing)."""
    path = app_env()
    logs = tmp_path / "prov"
    write_jsonl(logs / "base.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])
    write_jsonl(logs / "traced.jsonl", [pipeline("traced", "q1", text="[Source: D1, p. 2]", gt=())])
    ingest_paths(store.connect(path), [logs])
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    (note,) = [c.value for c in at.caption if "Not in the funnel" in c.value]
    assert "traced" in note and "base" not in note


def test_the_query_opened_before_any_pick_says_why_it_is_the_one_shown(prov_db):
    """Seen in a browser walk on the sample logs: the table's first row is query 1, but under it the
    page showed "Query 100" with nothing saying why that one. It is the worst query (lowest
    product-form CFS, then CFS); the page now says so, and stops saying it once another query is open."""
    at = app_test(PAGE).run()
    assert not at.exception
    assert any(m.value == "**Query q2**" for m in at.markdown)
    why = "The worst query of the run (lowest product-form CFS, then CFS): select a row to open another."
    assert why in [c.value for c in at.caption]
    at.session_state["ragaudit.query.fidelity"] = "q1"  # as a pick leaves it
    at.run()
    assert any(m.value == "**Query q1**" for m in at.markdown)
    assert why not in [c.value for c in at.caption]


def test_long_run_ids_read_apart_in_the_run_picker(app_env, tmp_path):
    """The full-width "Run" picker cut ids past ~100 characters at their end, so two runs differing
    only there read alike; each now reads as its beginning, "…" and its end, named in full below."""
    stem = "provenance_" + "scifact_bm25_top10_chunk256_overlap32_reranker_bge_base_generator_smollm2_" * 2
    a, b = stem + "2026-11-20", stem + "2026-11-21"
    path = app_env()
    write_jsonl(tmp_path / "p" / "a.jsonl", [pipeline(a, "q1", text="[Source: D1, p. 2]")])
    write_jsonl(tmp_path / "p" / "b.jsonl", [pipeline(b, "q1", text="[Source: D9, p. 1]")])
    ingest_paths(store.connect(path), [tmp_path / "p"])
    at = app_test(PAGE).run()
    assert not at.exception
    (box,) = [s for s in at.selectbox if s.label == "Run"]
    assert box.value == a and len(set(box.options)) == 2
    # the cut (what the widget shows) and then the whole id, which its type-to-search matches
    cuts = [o.removesuffix(f" ({r})") for o, r in zip(box.options, (a, b))]
    assert all(len(c) <= 88 and c.endswith(("11-20", "11-21")) and "…" in c for c in cuts)
    assert all(o.endswith(f" ({r})") for o, r in zip(box.options, (a, b)))
    assert any(plain(c.value) == f"In full: {a}" for c in at.caption)

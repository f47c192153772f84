"""AppTest: the citation-fidelity page (numbers equal the core's; thresholds are live)."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from ragaudit_core.fidelity.score import canary, fidelity_runs
from ragaudit_core.logs.ingest import ingest_paths

from tests.helpers import app_test, write_jsonl
from tests.helpers import pipeline

pytestmark = pytest.mark.slow
PAGE = "pages/4_Citation_fidelity.py"


@pytest.fixture
def prov_db(app_env, tmp_path):
    path = app_env()
    logs = tmp_path / "prov"
    write_jsonl(logs / "base.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]"),
                                      pipeline("base", "q2", strip_rerank=True, text="[Document 2] [Source: D1]")])
    write_jsonl(logs / "cand.jsonl", [pipeline("cand", "q1", text="[Source: D9, p. 1]"),
                                      pipeline("cand", "q2", text="[Source: D1, p. 3]", mutate=True)])
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
    alerts = at.dataframe[0].value
    assert alerts["status"].iloc[0] == "alert"                       # failing rules first
    assert set(alerts.loc[alerts.status == "alert", "rule"]) == {"reranking survival", "parse-failure rate"}
    # the worst query of run base opens by default: q2 lost its ground truth at reranking
    assert any(m.value == "**Query q2**" for m in at.markdown)
    assert len(at.get("plotly_chart")) == 3                          # funnel, histogram, graph
    c = canary([1.0, 1.0], [0.0, 0.3])
    assert {m.label: m.value for m in at.metric}["Mann–Whitney U"] == f"{c['u']:.1f}" == "4.0"


def test_thresholds_are_live(prov_db):
    at = app_test(PAGE).run()
    at.sidebar.slider[1].set_value(0.4).run()                         # stage survival ≥ 0.4: 0.5 passes
    alerts = at.dataframe[0].value
    assert alerts.set_index("rule").loc["reranking survival", "status"] == "ok"
    next(s for s in at.selectbox if s.label == "Run").select("cand").run()
    assert not at.exception
    # the open query (q2) stays open across runs; in cand its reranker mutated the chunk text
    assert any(m.value == "**Query q2**" for m in at.markdown)
    cits = next(df.value for df in at.dataframe if "diagnostic" in df.value.columns and "citation" in df.value.columns)
    assert list(cits["diagnostic"]) == ["valid_doc_invalid_page_or_unretrieved"] and list(cits["score"]) == [0.3]
    finds = next(df.value for df in at.dataframe if "check" in df.value.columns)
    assert list(finds["check"]) == ["reranker_text_mutation"] and list(finds["node_id"]) == ["k1"]

"""AppTest: the compare page (deltas, flipped queries, the answer probe on the real MiniLM)."""

from __future__ import annotations

import pytest

from ragaudit_core import models, store
from ragaudit_core.compare import compare_runs
from ragaudit_core.probe import probe_pair

from conftest import app_test

pytestmark = pytest.mark.slow
PAGE = "pages/3_Compare.py"


def test_needs_two_runs(app_env, tmp_path):
    app_env()
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("No logs are loaded yet" in i.value for i in at.info)


def test_deltas_and_probe_match_the_core(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("k10-c256-o32").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("k10-c256-o0").run()
    assert not at.exception and not at.error
    con = store.connect(sample_db)
    cmp = compare_runs(con, "k10-c256-o32", "k10-c256-o0")
    shown = {m.label: m.value for m in at.metric}
    pair = cmp.pair.set_index("metric")
    assert shown["J_avg, doc"] == f"{pair.loc['J_avg', 'doc']:.3f}"
    assert shown["J_avg, span"] == f"{pair.loc['J_avg', 'span']:.3f}"
    assert shown["queries flipped"] == f"{cmp.summary['n_flipped']} / 300"
    runs = next(df.value for df in at.dataframe if "delta" in df.value.columns).set_index("metric")
    assert runs.loc["mean distinct documents", "delta"] == pytest.approx(
        cmp.runs.set_index("metric").loc["mean distinct documents", "delta"])
    flipped = next(df.value for df in at.dataframe if "collapsed" in df.value.columns)
    assert len(flipped) == int((cmp.queries.flipped | cmp.queries.collapsed | (cmp.queries.null_change != "")).sum())

    # the probe: 60 answered queries, similarity by the real packaged MiniLM
    next(b for b in at.button if b.label.startswith("Compute answer similarity")).click().run()
    assert not at.exception
    ps = probe_pair(con, "k10-c256-o32", "k10-c256-o0", models.load_embedder).summary
    shown = {m.label: m.value for m in at.metric}
    assert shown["answered queries"] == "60" == str(ps["n_queries"])
    assert shown["mean answer similarity"] == f"{ps['mean_sim']:.3f}"
    assert shown["Spearman ρ"] == f"{ps['spearman_rho']:.3f}"
    assert shown["drift < 0.9"] == f"{ps['drift_0.9']} ({ps['drift_rate_0.9']:.0%})"

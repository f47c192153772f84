"""The dashboard's and report's figures: trace types, category labels, escaped log text."""

from __future__ import annotations

import pytest

from ragaudit_core.review import charts


def test_influence_bars_use_document_ids_as_categories():
    """Ids like "3" and "12" stay categories in rank order (a numeric axis would reorder and
    space them by value); shares are |importance| / total, hand-worked: 1/(1+3) → 25 %."""
    fig = charts.influence_bars([1.0, -3.0], ["3", "12 <b>x</b>"], ["#000", "#111"], title="doc <i>q</i>")
    (bar,) = fig.data
    assert bar.type == "bar" and bar.orientation == "h"
    assert list(bar.y) == ["3", "12 &lt;b&gt;x&lt;/b&gt;"] and fig.layout.yaxis.type == "category"
    assert list(bar.x) == [25.0, 75.0] and list(bar.text) == ["25.0% (+1.000)", "75.0% (-3.000)"]
    assert fig.layout.title.text == "doc &lt;i&gt;q&lt;/i&gt;"


def test_cfs_histogram_merges_equal_percentiles_and_gives_each_label_its_own_row():
    """p95 = p99 = 1.0 (the sample's case) share one line and one label; no two labels share a row."""
    s = {"cfs_p50": 0.0, "cfs_p95": 1.0, "cfs_p99": 1.0}
    t = {"cfs_p50": 0.5, "cfs_p95": 0.9, "cfs_p99": 0.99}
    fig = charts.cfs_histogram(
        {"a": [0.0, 0.0, 1.0], "b<i>": [0.5, 0.9]}, summaries={"a": s, "b<i>": t}, threshold=0.85
    )
    assert [tr.type for tr in fig.data] == ["bar", "bar"]
    labels = [(a.text, a.y) for a in fig.layout.annotations]
    assert labels[:2] == [("p50 0.00 (a)", 1.0), ("p95 = p99 1.00 (a)", 0.925)]
    assert [t for t, _ in labels[2:5]] == ["p50 0.50 (b&lt;i&gt;)", "p95 0.90 (b&lt;i&gt;)", "p99 0.99 (b&lt;i&gt;)"]
    assert labels[5] == ("alert below 0.85", 0.0)
    rows = [y for _, y in labels]
    assert len(set(rows)) == len(rows)  # one row per label: none overlap
    assert len(fig.layout.shapes) == 6  # 2 + 3 percentile lines + threshold


def test_survival_funnel_shows_the_cumulative_share_outside_the_bars():
    """Conditional rates 1, 0.5, 0.8 → shares 100 %, 50 %, 40 % (the running product); the stage
    no query reached (None) is left out; the conditional rate rides in the hover's customdata."""
    s = {
        "stage_survival": {
            "chunking": 1.0,
            "retrieval": 0.5,
            "reranking": None,
            "compression": 0.8,
            "generation": None,
        },
        "stage_share": {"chunking": 1.0, "retrieval": 0.5, "reranking": None, "compression": 0.4, "generation": None},
    }
    fig = charts.survival_funnel({"run": s})
    (f,) = fig.data
    assert f.type == "bar" and f.orientation == "h" and list(f.y) == ["chunking", "retrieval", "compression"]
    assert list(f.x) == [100.0, 50.0, 40.0] and list(f.customdata) == [100.0, 50.0, 80.0]
    assert f.textposition == "outside"
    assert "share of all queries with ground truth" in fig.layout.title.text


def test_cfs_histogram_draws_perfect_scores_inside_the_axis():
    """CFS = 1 (every citation verified) sits in the last bin, 0.95–1, inside the 0–1 axis: Plotly's own
    bins are closed on the left, so 1.0 fell in a bin 1.00–1.05 drawn past the axis, and a run whose
    queries all score 1 showed no bar at all (seen on a workspace with Phoenix reranker traces)."""
    fig = charts.cfs_histogram({"perfect": [1.0, 1.0, 1.0], "mixed": [0.0, 0.5, 1.0, float("nan")]})
    perfect, mixed = (next(t for t in fig.data if t.name == n) for n in ("perfect", "mixed"))
    assert sum(perfect.y) == 3 and sum(mixed.y) == 3  # a query without a score is not counted
    x_max = max(x for tr in fig.data for x, y in zip(tr.x, tr.y) if y)
    assert x_max < fig.layout.xaxis.range[1]
    assert list(perfect.y).index(3) == len(perfect.y) - 1  # the last bin, 0.95–1


def test_histogram_hovers_count_queries_in_words():
    """A bar of one query hovers '1 query', not '%{y} queries' read as '1 queries'."""
    import pandas as pd

    fig = charts.cfs_histogram({"mixed": [0.0, 1.0, 1.0]})
    (bar,) = fig.data
    assert "%{customdata[2]}" in bar.hovertemplate and "queries" not in bar.hovertemplate
    assert [c[2] for c in bar.customdata] == ["1 query", *["0 queries"] * 18, "2 queries"]
    assert bar.customdata[-1][:2] == pytest.approx([0.95, 1.0])
    queries = pd.DataFrame({"level": ["doc", "doc", "span"], "j_min": [0.5, 0.52, 0.0]})
    doc, span = charts.jmin_histogram(queries).data
    assert [c[2] for c in doc.customdata if c[2] != "0 queries"] == ["2 queries"]
    assert [c[2] for c in span.customdata if c[2] != "0 queries"] == ["1 query"]


def test_count_axes_tick_whole_numbers():
    """One (query, pair) drew the density's colour bar from 0.6 to 1.4 and the histograms' count
    axes in steps of 0.2; counts tick at whole numbers (every one up to 10)."""
    import pandas as pd

    one = pd.DataFrame({"doc_bin": [3], "span_bin": [2], "n": [1]})
    heat = charts.pair_density(one, 10).data[0]
    assert (heat.zmin, heat.zmax, heat.colorbar.dtick, heat.colorbar.tick0) == (0, 1.0, 1, 0)
    q = pd.DataFrame({"level": ["doc", "span"], "j_min": [0.5, 0.25]})
    assert charts.jmin_histogram(q).layout.yaxis.dtick == 1
    assert charts.cfs_histogram({"r": [0.5, 0.5, 1.0]}).layout.yaxis.dtick == 1
    many = charts.cfs_histogram({"r": [0.5] * 40})
    assert many.layout.yaxis.dtick is None and many.layout.yaxis.tickformat == ",d"


def test_a_rank_correlation_that_rounds_to_zero_reads_0_00():
    import pandas as pd

    from ragaudit_core.intervals import Estimate
    from ragaudit_core.quality.jitter import JitterCost
    from ragaudit_core.review.quality_charts import jitter_scatter

    qs = pd.DataFrame(
        {
            "query_id": ["1", "2"],
            "j": [0.2, 0.9],
            "delta": [0.1, -0.1],
            "outcome": ["kept", "kept"],
            "collapsed": [0, 0],
        }
    )
    cost = JitterCost("a", "b", 10, "span", qs, Estimate(-0.0004, -0.2, 0.001, 2))
    title = jitter_scatter(cost).layout.title.text
    assert "Spearman ρ = 0.00 [-0.20, 0.00]" in title and "-0.00" not in title


def test_jitter_scatter_marks_uncollapsed_queries_by_shape_and_its_subtitle_is_legible():
    """A walk of the report (p15): "not collapsed" (blue) and "relevant kept" (sky blue) dots read
    as one colour in print, and the subtitle in <sup> was too small to read. Uncollapsed queries
    are rings now, collapsed ones filled dots; the subtitle is set at 12 px."""
    import pandas as pd

    from ragaudit_core.intervals import Estimate
    from ragaudit_core.quality.jitter import JitterCost
    from ragaudit_core.review.quality_charts import jitter_scatter

    qs = pd.DataFrame(
        {
            "query_id": ["1", "2", "3"],
            "j": [0.2, 0.0, 0.0],
            "delta": [0.1, 0.0, -0.5],
            "outcome": [None, "relevant kept", "relevant lost"],
        }
    )
    fig = jitter_scatter(JitterCost("a", "b", 10, "span", qs, Estimate(0.5, -1.0, 1.0, 3)))
    symbols = {t.name: t.marker.symbol for t in fig.data}
    assert symbols == {"not collapsed (1)": "circle-open", "relevant kept (1)": "circle", "relevant lost (1)": "circle"}
    assert "<sup>" not in fig.layout.title.text and 'font-size:12px">Δ nDCG@10 against J_span' in fig.layout.title.text


def test_survival_funnel_legend_does_not_sit_on_an_axis_title():
    """In the PDF report (seen in a walk of the sample's report, page 12) the legend under the funnel,
    "run ■ k10-c128-o32 ■ k10-c256-o32", was drawn over the x-axis title "queries with ground truth
    still holding a source": the legend's place is a fraction of the plot's height, the title's a
    fixed offset below the ticks, so they met at the report's size. The axis title repeated the
    chart's title word for word; without it the legend has the space under the ticks to itself."""
    s = {"stage_survival": {"chunking": 1.0}, "stage_share": {"chunking": 1.0}}
    for n in (1, 2, 4):
        fig = charts.survival_funnel({f"run{i}": s for i in range(n)})
        assert fig.layout.legend.y < 0  # under the plot
        assert not fig.layout.xaxis.title.text  # nothing else there
        assert "holding a source (%)" in fig.layout.title.text  # what the axis title said


def test_the_quality_chart_names_its_metric_in_words():
    """nDCG@10 on the axis and in the title, as the tables above it write it, not the key ndcg@10."""
    import pandas as pd

    from ragaudit_core.intervals import Estimate
    from ragaudit_core.quality.summary import QualityResult, RunQuality
    from ragaudit_core.review.quality_charts import quality_intervals

    runs = [RunQuality(r, 40, 0, {"ndcg@10": Estimate(0.6, 0.5, 0.7, 40)}) for r in ("a", "b")]
    fig = quality_intervals(QualityResult((10,), ["ndcg@10"], pd.DataFrame(), runs))
    assert fig.layout.xaxis.title.text == "nDCG@10"
    assert fig.layout.title.text.startswith("nDCG@10 per run")


def test_cfs_histogram_legend_sits_under_the_plot_so_long_run_ids_leave_it_its_width():
    """With the legend at the right, two 80-character run ids squeezed the plot to a sliver and
    its percentile labels ran off its left edge (PDF, long run ids): the legend goes under it."""
    long_a, long_b = "a" * 80, "b" * 80
    fig = charts.cfs_histogram(
        {long_a: [0.0, 1.0], long_b: [0.5]}, summaries={long_a: {"cfs_p50": 0.0}, long_b: {"cfs_p50": 0.5}}
    )
    legend = fig.layout.legend
    assert legend.orientation == "h" and legend.y is not None and legend.y < 0 and legend.title.text == "run"


def test_warg_curves_name_a_lone_curve_in_a_legend():
    """The report's attribution chart with one run explained drew one dashed line and no legend
    (Plotly hides a legend of one trace): nothing said which run and condition it was."""
    fig = charts.warg_curves({}, run_means={"k10-c256-o32, original": {"0.5": 0.6, "0.9": 0.8}})
    assert fig.layout.showlegend is True and [t.name for t in fig.data] == ["k10-c256-o32, original"]


def test_long_run_ids_are_cut_in_the_middle_on_the_quality_axis():
    """A 90-character id took most of the quality chart's width: it is cut in the middle there,
    whole in the hover (the jitter chart's title cuts it the same way)."""
    import pandas as pd

    from ragaudit_core.intervals import Estimate
    from ragaudit_core.quality.summary import QualityResult, RunQuality
    from ragaudit_core.review.quality_charts import quality_intervals

    long_id = "production-retriever-bge-large-en-v1.5-hybrid-bm25-rerank-cohere-v3-topk10-chunk512-overlap64"
    runs = [RunQuality(r, 40, 0, {"ndcg@10": Estimate(0.6, 0.5, 0.7, 40)}) for r in (long_id, "b")]
    fig = quality_intervals(QualityResult((10,), ["ndcg@10"], pd.DataFrame(), runs))
    shown = list(fig.data[0].y)
    assert shown[0] == "b" and len(shown[1]) <= 40 and "…" in shown[1]  # natural order: b first
    assert fig.data[0].customdata[1][3] == long_id

"""Every figure of the dashboard and the report, read as a Plotly object: 0–1 metrics on [0, 1]
axes, colours only from the Okabe–Ito palette (set on each trace, so an export keeps them, and
never a red-green pair), runs in natural order, titles wrapped, annotations apart."""

from __future__ import annotations

import itertools
import json
import re

import numpy as np
import pandas as pd
import pytest

from ragaudit_core.review import charts, palette

RUNS = ["k10", "k20", "k5"]  # lexical order; natural is k5, k10, k20
ALLOWED = {c.lower() for c in palette.OKABE_ITO} | {palette.GREY.lower(), palette.LIGHT_GREY.lower()}
ALLOWED |= {"#bbbbbb", "#999", "black", "white", "rgba(0,0,0,0)", "rgba(213,94,0,0.12)", "rgba(255,255,255,0.8)"}
OLD_RED_GREEN = {"#d62728", "#2ca02c", "#a00", "#e15759", "#59a14f"}


def _summary(share: list[float]) -> dict:
    stages = ["chunking", "retrieval", "reranking", "compression", "generation"]
    cond = [share[0]] + [b / a if a else 0.0 for a, b in itertools.pairwise(share)]
    return {"stage_survival": dict(zip(stages, cond)), "stage_share": dict(zip(stages, share))}


def _figures() -> dict:
    pairs = pd.DataFrame(
        [
            {"run_a": a, "run_b": b, "changed": "top_k", "level": lvl, "j_avg": j}
            for (a, b), j in ((("k10", "k20"), 0.5), (("k10", "k5"), 0.0), (("k20", "k5"), 1.0))
            for lvl in ("doc", "span")
        ]
    )
    queries = pd.DataFrame({"level": ["doc", "span", "span"], "j_min": [0.0, 0.5, 1.0]})
    matrix = pd.DataFrame(np.eye(3), index=RUNS, columns=RUNS)
    probe = pd.DataFrame({"j_span": [0.0, 1.0], "sim": [0.95, 1.0], "query_id": ["q1", "q2"], "silent_jitter": [1, 0]})
    funnel = {r: _summary([1.0, 0.9, 0.5, 0.317, 0.1]) for r in RUNS}
    pct = {"cfs_p50": 0.0, "cfs_p95": 1.0, "cfs_p99": 1.0}
    return {
        "stability_scatter": charts.stability_scatter(pairs, gap_ratio=2.0, highlight=("k10", "k20")),
        "jmin_histogram": charts.jmin_histogram(queries),
        "matrix_heatmap": charts.matrix_heatmap(matrix, title="J_span between every two runs for query 1282"),
        "probe_scatter": charts.probe_scatter(probe, title="k10 vs k5"),
        "survival_funnel": charts.survival_funnel(funnel),
        "cfs_histogram": charts.cfs_histogram(
            {r: [0.0, 1.0] for r in RUNS}, summaries=dict.fromkeys(RUNS, pct), threshold=0.85
        ),
        "warg_curves": charts.warg_curves(
            {"WARG, original": {"0.5": 0.2, "0.9": 0.4}}, run_means={"run mean": {"0.5": 0.3, "0.9": 0.5}}
        ),
        "influence_bars": charts.influence_bars([1.0, -1.0], ["d1", "d2"], palette.OKABE_ITO[:2], title="q"),
    }


def _colours(obj, key=None, out=None) -> set[str]:
    """Every colour string set anywhere in a figure's JSON (traces, shapes, annotations)."""
    out = set() if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k != "template":  # Plotly's theme (axes, grid), not the data's colours
                _colours(v, k, out)
    elif isinstance(obj, (list, tuple, np.ndarray)):
        for v in obj:
            _colours(v, key, out)
    elif isinstance(obj, str) and key in ("color", "fillcolor", "bgcolor") and obj:
        out.add(obj.replace(" ", "").lower())
    return out


@pytest.fixture(scope="module")
def figures():
    return _figures()


def test_zero_to_one_metrics_sit_on_zero_to_one_axes(figures):
    unit = [0, 1]
    assert list(figures["stability_scatter"].layout.xaxis.range) == unit
    assert list(figures["stability_scatter"].layout.yaxis.range) == unit
    assert list(figures["jmin_histogram"].layout.xaxis.range) == unit
    assert list(figures["probe_scatter"].layout.xaxis.range) == unit
    assert list(figures["probe_scatter"].layout.yaxis.range) == unit  # similarities 0.95, 1.0: no 1.02
    assert list(figures["cfs_histogram"].layout.xaxis.range) == unit
    assert list(figures["warg_curves"].layout.yaxis.range) == unit
    assert list(figures["survival_funnel"].layout.xaxis.range) == [0, 100]  # a percentage
    assert list(figures["influence_bars"].layout.xaxis.range) == [0, 100]
    # markers on the edge (J = 0 or 1) are drawn past the axis, not cut in half
    for name in ("stability_scatter", "probe_scatter"):
        assert all(t.cliponaxis is False for t in figures[name].data if t.mode == "markers")


def test_square_plots_keep_their_unit_ranges_as_drawn(figures):
    """The axis ranges Plotly actually draws (its full figure, computed by Kaleido's Chromium):
    a square J_doc × J_span plot keeps [0, 1] on both axes — with ``scaleanchor`` alone the
    wider plot area stretched x to about −0.11…1.11 (the issue's "−0.2…1.2")."""
    full = figures["stability_scatter"].full_figure_for_development(warn=False)
    assert tuple(full.layout.xaxis.range) == (0, 1) and tuple(full.layout.yaxis.range) == (0, 1)


def test_one_colour_blind_safe_palette_set_on_every_trace(figures):
    for name, fig in figures.items():
        used = _colours(fig.to_plotly_json())
        assert used <= ALLOWED, f"{name}: {used - ALLOWED}"
        assert not used & OLD_RED_GREEN, name
    assert figures["matrix_heatmap"].data[0].colorscale == charts.go.Heatmap(colorscale="Cividis").colorscale
    # the PDF's export keeps each run's colour: it is set on the trace, not left to the template
    funnel = figures["survival_funnel"]
    assert [t.marker.color for t in funnel.data] == list(palette.OKABE_ITO[:3])
    assert all(t.marker.color for t in figures["cfs_histogram"].data)
    assert all(t.line.color for t in figures["warg_curves"].data)


def test_a_two_run_heatmap_has_room_for_its_rows():
    """Its height minus its margins is the plot: two runs once left 4 pixels for both rows."""
    matrix = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["a", "b"], columns=["a", "b"])
    for m in (matrix, pd.DataFrame(1.0, index=list("abcdefghijkl"), columns=list("abcdefghijkl"))):
        lay = charts.matrix_heatmap(m, title="t").layout
        assert lay.height - lay.margin.t - lay.margin.b >= max(200, 34 * len(m))


def test_runs_in_natural_order(figures):
    assert list(figures["matrix_heatmap"].data[0].x) == ["k5", "k10", "k20"]
    assert list(figures["matrix_heatmap"].data[0].y) == ["k5", "k10", "k20"]
    assert [t.name for t in figures["survival_funnel"].data] == ["k5", "k10", "k20"]
    assert [t.name for t in figures["cfs_histogram"].data] == ["k5", "k10", "k20"]
    assert palette.natural_order(["k10-c256", "k5-c128", "k20-c64", "k10-c128"]) == [
        "k5-c128",
        "k10-c128",
        "k10-c256",
        "k20-c64",
    ]


def test_titles_wrap(figures):
    for name, fig in figures.items():
        for line in fig.layout.title.text.split("<br>"):
            visible = re.sub(r"<[^>]+>", "", line)
            assert len(visible) <= 70, f"{name}: {visible!r}"
    assert "<br>" in figures["survival_funnel"].layout.title.text  # the long one is wrapped
    assert palette.wrap_title("a " * 5 + "b" * 80, width=10).split("<br>")[-1] == "b" * 80  # never mid-word


def _boxes(fig, width=700):
    """Approximate pixel boxes of a figure's paper-anchored annotations (x in data units on the
    figure's x range; text 0.6 em wide per character, 1.3 em high)."""
    lay = fig.layout
    w = width - lay.margin.l - lay.margin.r
    h = lay.height - lay.margin.t - lay.margin.b
    x0, x1 = lay.xaxis.range
    out = []
    for a in lay.annotations:
        size = a.font.size or 12
        bw, bh = 0.6 * size * len(a.text), 1.3 * size
        px = (a.x - x0) / (x1 - x0) * w
        left = px - bw if a.xanchor == "right" else px - bw / 2 if a.xanchor in (None, "center", "auto") else px
        py = (1 - a.y) * h
        top = py - bh if a.yanchor == "bottom" else py - bh / 2 if a.yanchor in (None, "middle", "auto") else py
        out.append((a.text, left, top, left + bw, top + bh))
    return out


def test_cfs_annotations_do_not_overlap(figures):
    """Three runs with p50 = 0, p95 = p99 = 1: three labels per run edge to edge and the alert
    threshold — seven boxes, no two intersecting."""
    boxes = _boxes(figures["cfs_histogram"])
    assert len(boxes) == 7
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = a[3] <= b[1] or b[3] <= a[1] or a[4] <= b[2] or b[4] <= a[2]
            assert apart, f"{a[0]!r} overlaps {b[0]!r}"


def test_funnel_labels_outside_grouped_bars_and_not_clipped(figures):
    """Grouped bars from 0: each run's bar has its own row within a stage, so two runs' labels
    never meet ("3ŀ1.7%"); 100.0% is drawn past the axis end with room in the right margin."""
    fig = figures["survival_funnel"]
    assert fig.layout.barmode == "group"
    for t in fig.data:
        assert t.textposition == "outside" and t.cliponaxis is False
        assert list(t.text) == ["100.0%", "90.0%", "50.0%", "31.7%", "10.0%"]  # one percentage format
    assert fig.layout.margin.r >= 60


def test_percent_is_one_format():
    assert palette.percent(0.943) == "94.3%" and palette.percent(None) == "n/a"
    from ragaudit_core.review.report.layout import pct

    assert pct(0.943) == palette.percent(0.943)


def test_histograms_of_two_series_stand_side_by_side_in_distinct_colours():
    """Overlaid translucent bars blended into a colour the legend does not show (seen in the walk)."""
    import pandas as pd

    from ragaudit_core.review.charts import cfs_histogram, jmin_histogram

    q = pd.DataFrame({"level": ["doc", "span", "doc", "span"], "j_min": [0.0, 0.0, 0.5, 0.2]})
    for fig in (jmin_histogram(q), cfs_histogram({"k5": [0.0, 1.0], "k10": [0.0, 0.5]})):
        assert fig.layout.barmode == "group"
        colours = [t.marker.color for t in fig.data]
        assert len(set(colours)) == len(colours) == 2
        assert all(t.opacity in (None, 1) for t in fig.data)


def test_the_jmin_histogram_is_counted_before_it_is_drawn():
    """20 bars per level, not every query's value sent to the browser; J = 1 in the last bin."""
    import pandas as pd

    from ragaudit_core.review.charts import jmin_histogram

    q = pd.DataFrame({"level": ["doc"] * 4 + ["span"] * 3, "j_min": [0.0, 0.04, 0.5, 1.0, 0.0, 0.05, 0.999]})
    fig = jmin_histogram(q)
    doc, span = fig.data
    assert len(doc.x) == len(span.x) == 20
    assert list(doc.y[:2]) == [2, 0] and doc.y[10] == 1 and doc.y[19] == 1 and sum(doc.y) == 4
    assert list(span.y[:2]) == [1, 1] and span.y[19] == 1 and sum(span.y) == 3


def test_a_long_run_id_is_cut_on_the_matrix_axes_and_whole_in_its_hover():
    """A 100-character run id on the axes squeezed a query's J matrix to a few pixels at 900 px and
    was cut at the chart's edge: the ticks show it cut in its middle, the cells (hover) whole."""
    long = "retrieval-sweep-2026-11-27-bge-large-en-v1.5-top10-chunk512-overlap64-hybrid-bm25-reranker-off-final"
    m = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=["k5", long], columns=["k5", long])
    fig = charts.matrix_heatmap(m, title="t")
    assert list(fig.data[0].x) == ["k5", long] and list(fig.data[0].y) == ["k5", long]
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.tickvals) == ["k5", long]
        assert axis.ticktext[0] == "k5" and len(axis.ticktext[1]) == charts.MATRIX_RUN_CHARS
        assert axis.ticktext[1].startswith("retriev") and axis.ticktext[1].endswith("off-final")


def test_log_text_reaches_plotly_with_its_quotes_and_its_markup_escaped():
    """Plotly draws ``&lt;``, ``&gt;``, ``&amp;`` and numeric entities as characters but ``&quot;``
    literally: a run id ``half "x"`` read ``half &quot;x&quot;`` on the heatmap and in titles."""
    assert palette.plot_text('half "x" <b>it\'s</b> & more') == 'half "x" &lt;b&gt;it\'s&lt;/b&gt; &amp; more'
    runs = ['half A "x"', "it's <b>B</b>"]
    matrix = pd.DataFrame([[1.0, 0.5], [0.5, 1.0]], index=runs, columns=runs)
    fig = charts.matrix_heatmap(matrix, title=f"J_span of {runs[0]} and {runs[1]}").to_plotly_json()
    text = json.dumps(fig, ensure_ascii=False, default=str)
    assert "&quot;" not in text and "&#x27;" not in text and "<b>" not in text
    assert 'half A \\"x\\"' in text and "it's &lt;b&gt;B&lt;/b&gt;" in text

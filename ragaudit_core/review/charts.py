"""Plotly figures shared by the dashboard and the PDF report (same data, same chart).

Figures only draw what the metric modules computed; no metric is computed here. Hover
texts that carry log strings (run ids, query ids) go through Plotly's own text
rendering, which escapes HTML.

Every figure takes its colours from :mod:`ragaudit_core.review.palette` (Okabe–Ito, no
red-green pair) and sets them explicitly on each trace (so the PDF's export keeps them); 0–1
metrics sit on [0, 1] axes with markers drawn past the edge rather than clipped; runs are in
natural order (k5, k10, k20); titles wrap (:func:`~ragaudit_core.review.palette.wrap_title`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.fidelity.score import FIDELITY_STAGES
from ragaudit_core.review.labels import change_label
from ragaudit_core.review.palette import (
    BLACK,
    BLUE,
    GREY,
    ORANGE,
    REDDISH_PURPLE,
    SEQUENTIAL,
    SKY_BLUE,
    VERMILLION,
    bin_hover,
    colour,
    count_ticks,
    natural_order,
    plot_text,
    wrap_title,
)
from ragaudit_core.review.runlabels import run_labels

__all__ = [
    "CHANGE_COLOURS",
    "cfs_histogram",
    "influence_bars",
    "jmin_histogram",
    "matrix_heatmap",
    "pair_density",
    "probe_scatter",
    "provenance_graph",
    "stability_scatter",
    "survival_funnel",
    "warg_curves",
]

CHANGE_COLOURS = {
    "top_k": BLUE,
    "chunk_size": ORANGE,
    "chunk_overlap": SKY_BLUE,
    "several": REDDISH_PURPLE,
    "none": GREY,
    "unknown": BLACK,
}
_BEHIND = ("several", "none", "unknown")  # drawn first, under the pairs that changed one setting
UNIT = [0, 1]  # the axis range of a 0–1 metric
# tick labels kept clear of markers drawn on the axis line (a point at J = 0 sits on it)
_CLEAR = dict(ticks="outside", ticklen=8, tickcolor="rgba(0,0,0,0)")


def _esc(values: Iterable[object]) -> list[str]:
    return [plot_text(v) for v in values]


def stability_scatter(
    pairs: pd.DataFrame, *, gap_ratio: float | None = None, highlight: tuple[str, str] | None = None
) -> go.Figure:
    """One point per run pair at (mean ``J_doc``, mean ``J_span``), coloured by what changed.

    ``pairs`` is :attr:`StabilityResult.pairs` (both levels). Points below the diagonal
    are pairs whose spans moved more than their documents: the Stability Gap.
    ``customdata`` = (run_a, run_b) for selection events.
    """
    wide = pairs.pivot_table(index=["run_a", "run_b", "changed"], columns="level", values="j_avg").reset_index()
    # Rounded so the figure is byte-identical across reruns (DuckDB's parallel averages may
    # differ in the last bit); Streamlit keeps a chart's selection only while its spec is unchanged.
    wide[[c for c in ("doc", "span") if c in wide]] = wide[[c for c in ("doc", "span") if c in wide]].round(9)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            line=dict(color="#999", dash="dash"),
            name="J_span = J_doc",
            legendrank=1,
            hoverinfo="skip",
        )
    )
    if "span" not in wide:
        wide["span"] = np.nan
    present = [c for c in CHANGE_COLOURS if c in set(wide["changed"])]
    # the pairs that changed one setting are drawn last (on top): 'several' pairs, the most numerous,
    # hid them (2 of 6 chunk-size points showed); the legend keeps the settings' order
    for change in sorted(present, key=lambda c: c not in _BEHIND):
        sub = wide[wide["changed"] == change]
        fig.add_trace(
            go.Scatter(
                x=sub["doc"],
                y=sub["span"],
                mode="markers",
                name=change_label(change),
                legendrank=10 + present.index(change),
                marker=dict(size=11, color=CHANGE_COLOURS[change], opacity=0.85, line=dict(width=1, color="white")),
                cliponaxis=False,
                customdata=np.column_stack([sub["run_a"], sub["run_b"]]),
                text=[f"{a} vs {b}" for a, b in zip(_esc(sub["run_a"]), _esc(sub["run_b"]))],
                hovertemplate="%{text}<br>J_doc %{x:.3f}<br>J_span %{y:.3f}<extra>" + change_label(change) + "</extra>",
            )
        )
    if highlight is not None:
        row = wide[(wide["run_a"] == highlight[0]) & (wide["run_b"] == highlight[1])]
        if len(row):
            fig.add_trace(
                go.Scatter(
                    x=row["doc"],
                    y=row["span"],
                    mode="markers",
                    name="selected",
                    legendrank=100,
                    marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(width=3, color="black")),
                    cliponaxis=False,
                    hoverinfo="skip",
                )
            )
    n_runs = len(set(wide["run_a"]) | set(wide["run_b"]))
    title = f"Document vs span stability, every pair of the {n_runs} compared runs"
    if gap_ratio is not None:
        title += f" — gap ratio {gap_ratio:.2f}"
    fig.update_layout(
        title=wrap_title(plot_text(title)),
        xaxis_title="mean J_doc",
        yaxis_title="mean J_span",
        # square plot on [0, 1] × [0, 1]: the plot area shrinks to keep the aspect ("domain"),
        # the ranges stay (with scaleanchor alone Plotly widened x to −0.2…1.2)
        xaxis=dict(range=UNIT, constrain="domain", **_CLEAR),
        yaxis=dict(range=UNIT, scaleanchor="x", constrain="domain", **_CLEAR),
        legend_title="changed",
        height=520,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


def pair_density(density: pd.DataFrame, bins: int) -> go.Figure:
    """Per-(query, pair) points counted on a grid (:attr:`StabilityResult.density`)."""
    grid = np.zeros((bins, bins))
    for d, s, n in zip(density["doc_bin"], density["span_bin"], density["n"]):
        grid[int(s), int(d)] = n
    centres = (np.arange(bins) + 0.5) / bins
    fig = go.Figure(
        go.Heatmap(
            x=centres,
            y=centres,
            z=np.where(grid > 0, grid, np.nan),
            zmin=0,
            zmax=max(float(grid.max()), 1.0),
            colorscale=SEQUENTIAL,
            colorbar=dict(title="(query, pair)", **count_ticks(grid.max())),
            hovertemplate="J_doc ≈ %{x:.2f}<br>J_span ≈ %{y:.2f}<br>%{z:.0f} (query, pair) points<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"), showlegend=False, hoverinfo="skip"
        )
    )
    fig.update_layout(
        title=wrap_title("Every (query, pair) of the compared runs: J_doc vs J_span"),
        xaxis_title="J_doc",
        yaxis_title="J_span",
        xaxis=dict(range=UNIT, constrain="domain"),
        yaxis=dict(range=UNIT, scaleanchor="x", constrain="domain"),
        height=520,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


def jmin_histogram(queries: pd.DataFrame) -> go.Figure:
    """Distribution of each query's worst-pair Jaccard ``J_min``, span and document level side by
    side in each bin (orange and blue: overlaid translucent bars blended into colours not in the
    legend)."""
    fig, top = go.Figure(), 0
    edges = np.linspace(0.0, 1.0, 21)  # bins of 0.05, J = 1 in the last; counted here: 20 bars, not 208k values
    for level, c in (("doc", ORANGE), ("span", BLUE)):
        if len(q := queries[queries["level"] == level]):
            counts, _ = np.histogram(np.clip(q["j_min"].to_numpy(float), 0.0, 1.0), bins=edges)
            top = max(top, int(counts.max()))
            hover = f"J_min,{level} " + "%{customdata[0]:.2f}–%{customdata[1]:.2f}<br>%{customdata[2]}<extra></extra>"
            fig.add_trace(
                go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, name=f"J_min,{level}", marker_color=c,
                       customdata=bin_hover(edges, counts), hovertemplate=hover)
            )  # fmt: skip
    fig.update_layout(
        title=wrap_title("Worst-case stability per query (J_min over every pair of the compared runs)"),
        xaxis_title="J_min",
        xaxis=dict(range=UNIT),
        yaxis_title="queries",
        yaxis=count_ticks(top),
        barmode="group",
        height=360,
        bargap=0.05,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


MATRIX_RUN_CHARS = 20
"""Characters of a run's label on a query's J matrix axes (what its 120 px margins hold)."""


def matrix_heatmap(matrix: pd.DataFrame, *, title: str) -> go.Figure:
    """A run × run Jaccard matrix (one query) as a heatmap with the values written in, runs in
    natural order, on the colour-blind-safe sequential scale (dark = different, yellow = the same); a
    NaN cell (a pair not compared: :func:`ragaudit_core.stability.drilldown.query_matrix`) reads n/a.
    A long run id is cut in its middle on the axes (a whole one squeezed the plot to a few pixels and
    was cut at the chart's edge), whole in the hover."""
    order = natural_order([str(r) for r in matrix.index])
    matrix = matrix.rename(index=str, columns=str).loc[order, order]
    names = _esc(matrix.index)
    cut = run_labels(order, MATRIX_RUN_CHARS)
    ticks = dict(tickmode="array", tickvals=names, ticktext=_esc(cut[r] for r in order), automargin=True)
    z = matrix.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=names,
            y=names,
            zmin=0,
            zmax=1,
            colorscale=SEQUENTIAL,
            text=np.where(np.isnan(z), "n/a", np.round(z, 2).astype(object)),  # n/a: a pair not compared
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}<br>J = %{z:.3f}<extra></extra>",
            hoverongaps=False,
        )
    )
    fig.update_layout(  # 60 px of title, 120 for the run names below; a plot of 34 px a run, 200 at least
        title=wrap_title(plot_text(title)),
        height=60 + 120 + max(200, 34 * len(names)),
        xaxis=ticks,
        yaxis=dict(autorange="reversed", **ticks),
        margin=dict(l=120, r=20, t=60, b=120),
    )
    return fig


def probe_scatter(
    rows: pd.DataFrame, *, tau: float = FLIP_THRESHOLD, sim_threshold: float = 0.9, title: str = ""
) -> go.Figure:
    """Answer similarity vs ``J_span`` per query (seed 000, figures 2–3).

    The silent-jitter quadrant — evidence changed (``J_span < τ``) while the answer
    stayed (``Sim ≥ threshold``) — is shaded.
    """
    fig = go.Figure()
    fig.add_shape(
        type="rect",
        x0=0,
        x1=tau,
        y0=sim_threshold,
        y1=1.0,
        fillcolor="rgba(213,94,0,0.12)",  # vermillion, faint
        line=dict(width=0),
        layer="below",
    )
    fig.add_annotation(
        x=tau / 2, y=min(1.0, sim_threshold + 0.04), text="silent jitter", showarrow=False, font=dict(color=VERMILLION)
    )
    silent = rows["silent_jitter"].fillna(False).astype(bool) if "silent_jitter" in rows else False
    fig.add_trace(
        go.Scatter(
            x=rows["j_span"],
            y=rows["sim"],
            mode="markers",
            marker=dict(size=9, color=np.where(silent, VERMILLION, BLUE)),
            cliponaxis=False,
            customdata=np.column_stack([rows["query_id"]]),
            text=_esc(rows["query_id"]),
            hovertemplate="query %{text}<br>J_span %{x:.3f}<br>answer similarity %{y:.3f}<extra></extra>",
            name="queries",
        )
    )
    fig.update_layout(
        title=wrap_title(plot_text(title or "Answer similarity vs span stability")),
        xaxis_title="J_span",
        yaxis_title="answer similarity (SBERT cosine)",
        xaxis=dict(range=UNIT, **_CLEAR),
        # cosine can be negative: the axis then reaches below 0, never above 1
        yaxis=dict(
            range=[min(0.0, float(np.floor(np.nanmin(rows["sim"]) * 10) / 10)) if len(rows) else 0, 1], **_CLEAR
        ),
        height=460,
        showlegend=False,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


# --------------------------------------------------------------------------- citation fidelity

_STAGE_NAMES = list(FIDELITY_STAGES.values())


def survival_funnel(summaries: dict[str, dict]) -> go.Figure:
    """Per run: the share of queries with ground truth still holding a ground-truth source
    after each stage (``stage_share``, counted per query: a stage its pipeline skips loses nothing), as a
    percentage on a 0–100 axis; the conditional rate of each stage is in the hover. Drawn as
    grouped horizontal bars from 0 (one per run and stage, runs in natural order, each its own
    Okabe–Ito colour set on the trace), the value outside the bar's end — bars of different runs
    sit in different rows, so no two labels meet, and 100.0% is drawn past the axis, not clipped."""
    fig = go.Figure()
    for i, run in enumerate(natural_order(summaries)):
        s = summaries[run]
        xs, ys, cond = [], [], []
        for name in _STAGE_NAMES:
            rate = s["stage_survival"].get(name)
            if rate is None:
                continue
            xs.append(round(s["stage_share"][name] * 100, 1))
            ys.append(name)
            cond.append(rate * 100)
        fig.add_trace(
            go.Bar(
                name=plot_text(run),
                orientation="h",
                y=ys,
                x=xs,
                marker=dict(color=colour(i)),
                customdata=cond,
                text=[f"{x:.1f}%" for x in xs],
                textposition="outside",
                cliponaxis=False,
                hovertemplate="%{y}: %{x:.1f}% of all queries with ground truth still hold a source; "
                "%{customdata:.1f}% of those reaching this stage keep one<extra>" + plot_text(run) + "</extra>",
            )
        )
    fig.update_layout(
        title=wrap_title("Stage survival: share of all queries with ground truth still holding a source (%)"),
        barmode="group",
        # no axis title: it repeated the chart's title, and the legend below was drawn over it in the PDF
        xaxis=dict(range=[0, 100], ticksuffix="%"),
        yaxis=dict(autorange="reversed", type="category"),
        height=170 + 36 * len(_STAGE_NAMES) * max(1, len(summaries)) // 2,
        margin=dict(l=110, r=70, t=70, b=50),
        # the legend under the plot: at the right it would cover the labels drawn past 100%
        legend=dict(title="run", orientation="h", yanchor="top", y=-0.18, x=0),
    )
    return fig


_PCT_DASH = {"cfs_p50": "dot", "cfs_p95": "dash", "cfs_p99": "longdash"}


def cfs_histogram(
    cfs_by_run: dict[str, Sequence[float]], *, summaries: dict[str, dict] | None = None, threshold: float | None = None
) -> go.Figure:
    """Per-query CFS distributions, with each run's p50/p95/p99 and the alert threshold drawn.

    Counted here, as ``jmin_histogram``: Plotly's bins are closed on the left, so a CFS of 1 fell past
    the axis. Percentiles of one run that fall on the same value share one line and one label
    (``p95 = p99 1.00``); every label has its own row at the top of the plot, so none overlap."""
    fig, row, edges, top = go.Figure(), 0, np.linspace(0.0, 1.0, 21), 0  # bins of 0.05, CFS = 1 in the last (0.95–1)
    for i, run in enumerate(natural_order(cfs_by_run)):
        values, c = np.asarray(list(cfs_by_run[run]), dtype=float), colour(i)
        counts, _ = np.histogram(np.clip(values[np.isfinite(values)], 0.0, 1.0), bins=edges)
        top = max(top, int(counts.max()))
        hover = "CFS %{customdata[0]:.2f}–%{customdata[1]:.2f}<br>%{customdata[2]}<extra>" + plot_text(run)
        hover += "</extra>"
        fig.add_trace(
            go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=counts, name=plot_text(run), marker_color=c,
                   customdata=bin_hover(edges, counts), hovertemplate=hover)
        )  # fmt: skip
        s = (summaries or {}).get(run) or {}
        at: dict[float, list[str]] = {}
        for key in _PCT_DASH:
            if s.get(key) is not None:
                at.setdefault(round(float(s[key]), 2), []).append(key)
        for x, keys in sorted(at.items()):
            fig.add_vline(x=x, line=dict(color=c, dash=_PCT_DASH[keys[-1]], width=1.5))
            label = (
                " = ".join(k[4:] for k in keys) + f" {x:.2f}" + (f" ({plot_text(run)})" if len(cfs_by_run) > 1 else "")
            )
            fig.add_annotation(
                x=x,
                y=1.0 - 0.075 * row,
                xref="x",
                yref="paper",
                text=label,
                showarrow=False,
                xanchor="right" if x > 0.6 else "left",
                font=dict(color=c, size=11),
                bgcolor="rgba(255,255,255,0.8)",
            )
            row += 1
    if threshold is not None:
        fig.add_vline(x=threshold, line=dict(color="black", width=2))
        fig.add_annotation(
            x=threshold,
            y=0.0,
            xref="x",
            yref="paper",
            text=f"alert below {threshold:.2f}",
            showarrow=False,
            xanchor="right",
            yanchor="bottom",
            font=dict(size=11),
            bgcolor="rgba(255,255,255,0.8)",
        )
    fig.update_layout(
        title=wrap_title("Citation Fidelity Score per query"),
        xaxis_title="CFS (mean verification score)",
        yaxis_title="queries",
        # headroom over the tallest bar for the label rows at the top: a label covered the bar it named
        yaxis=dict(count_ticks(top), range=[0, max(1, top) / max(0.3, 0.93 - 0.075 * row)]),
        barmode="group",
        height=400,
        xaxis=dict(range=UNIT),  # a line at CFS 0 or 1 on the plot's edge, as every 0–1 axis here
        margin=dict(l=50, r=20, t=60, b=50),
        # the legend under the plot: at the right, long run ids squeezed the plot to a sliver
        legend=dict(title="run", orientation="h", yanchor="top", y=-0.2, x=0),
    )
    return fig


def provenance_graph(nodes: pd.DataFrame, edges: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One query's provenance graph, stage by stage: nodes on the ground-truth path in blue,
    the others grey, the broken edge (where the ground-truth source is lost) in vermillion,
    dashed; every colour has its legend entry and every node its label (cut to 24 characters,
    the full label on hover)."""
    pos = {n: (x, y) for n, x, y in zip(nodes["node_id"], nodes["x"], nodes["y"])}
    fig = go.Figure()
    for broken, c, width, dash in ((False, "#bbbbbb", 1, "solid"), (True, VERMILLION, 3, "dash")):
        xs, ys = [], []
        for p, ch in zip(edges.loc[edges.broken == broken, "parent"], edges.loc[edges.broken == broken, "child"]):
            if p not in pos:
                continue
            x0, y0 = pos[p]
            x1, y1 = pos[ch] if ch in pos else (x0 + 0.6, y0)
            xs += [x0, x1, None]
            ys += [y0, y1, None]
        if xs:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line=dict(color=c, width=width, dash=dash),
                    hoverinfo="skip",
                    name="broken link (source lost)" if broken else "derived from",
                )
            )
    stubs = edges[edges.broken & edges.child.isna()]
    for p, label in zip(stubs["parent"], stubs["label"]):
        if p in pos:
            fig.add_annotation(
                x=pos[p][0] + 0.6,
                y=pos[p][1],
                text=plot_text(str(label)[:60]),  # cut, then escaped: never half an entity
                showarrow=False,
                xanchor="left",
                font=dict(color=VERMILLION, size=10),
            )
    for on_path, c, name in ((True, BLUE, "on the ground-truth path"), (False, GREY, "other node")):
        sub = nodes[nodes["on_path"].astype(bool) == on_path]
        if sub.empty:
            continue
        labels = _esc(sub["label"])
        shown = _esc(t if len(t) <= 24 else t[:23] + "…" for t in sub["label"].astype(str))
        fig.add_trace(
            go.Scatter(
                x=sub["x"],
                y=sub["y"],
                mode="markers+text",
                marker=dict(size=12, color=c),
                text=shown,
                textposition="top center",
                textfont=dict(size=9),
                cliponaxis=False,
                customdata=np.column_stack([_esc(sub["node_id"]), labels]),
                hovertemplate="%{customdata[0]}: %{customdata[1]}<extra></extra>",
                name=name,
            )
        )
    fig.update_layout(
        title=wrap_title(plot_text(title or "Provenance graph")),
        height=max(360, 40 * int(-nodes["y"].min() + 2)),
        xaxis=dict(
            tickmode="array",
            tickvals=list(range(7)),
            ticktext=["source", "chunking", "retrieval", "reranking", "compression", "generation", "post-processing"],
            range=[-0.5, 7],
        ),
        yaxis=dict(visible=False),
        margin=dict(l=20, r=20, t=60, b=40),
        legend=dict(orientation="h"),
    )
    return fig


def influence_bars(
    importance: Sequence[float], labels: Sequence[str], colours: Sequence[str], *, title: str
) -> go.Figure:
    """Each document's share of the total |importance| (seed 001, Fig. 1), signed value in the label."""
    total = sum(abs(x) for x in importance) or 1.0
    share = [100 * abs(x) / total for x in importance]
    fig = go.Figure(
        go.Bar(
            x=share,
            y=_esc(labels),
            orientation="h",
            marker_color=list(colours),
            text=[f"{s:.1f}% ({x:+.3f})" for s, x in zip(share, importance)],
            textposition="auto",
            cliponaxis=False,
            hovertemplate="%{y}: %{x:.1f}%<extra></extra>",
        )
    )
    # the documents are categories (an id like "3" must not become a number on a numeric axis)
    fig.update_layout(
        title=wrap_title(plot_text(title)),
        xaxis_title="share of |importance| (%)",
        xaxis=dict(range=[0, 100], ticksuffix="%"),
        yaxis=dict(autorange="reversed", type="category"),
        height=80 + 40 * len(labels),
        margin=dict(l=140, r=20, t=50, b=40),
    )
    return fig


def warg_curves(
    curves: dict[str, dict],
    *,
    dashed: dict[str, dict] | None = None,
    floor: tuple[str, dict] | None = None,
    run_means: dict[str, dict] | None = None,
    title: str = "WARG(p) = 1 − RBO(retriever ranking, generator ranking; p)",
) -> go.Figure:
    """WARG against p (seed 001, eq. 12; Table 3).

    ``curves``: name → {p: WARG} drawn as lines with markers (one query's conditions);
    ``dashed``: further curves (e.g. the extrapolated-RBO reading); ``floor``: (label,
    {p: p^k}) — the value identical lists get under the truncated definition;
    ``run_means``: name → {p: mean WARG} over a run's stored results, drawn thin and translucent
    under the query's own curves (a mean never hides the one curve a reader looks at). Lower is
    better (the generator uses the documents the retriever ranks first); the y axis says so.
    """
    fig = go.Figure()
    styled: list[tuple[str, dict, dict]] = []
    for name, c in (run_means or {}).items():
        styled.append((name, c, dict(mode="lines", opacity=0.55, line=dict(width=2, dash="longdash"))))
    for name, c in curves.items():
        styled.append((name, c, dict(mode="lines+markers", line=dict(width=3), marker=dict(size=8))))
    for name, c in (dashed or {}).items():
        styled.append((name, c, dict(mode="lines", line=dict(dash="dot"))))
    for k, (name, c, style) in enumerate(styled):
        for part in ("line", "marker"):
            if part in style:
                style[part]["color"] = colour(k)
        fig.add_trace(_p_curve(name, c, **style))
    if floor is not None:
        fig.add_trace(_p_curve(floor[0], floor[1], mode="lines", line=dict(color=GREY, dash="dash")))
    fig.update_layout(
        title=wrap_title(plot_text(title)),
        xaxis_title="p",
        yaxis_title="WARG (lower is better)",
        yaxis=dict(range=[0, 1]),
        height=380,
        margin=dict(l=50, r=20, t=60, b=50),
        # named even when alone (Plotly hides a one-trace legend), under the plot as long ids need
        showlegend=True,
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
    )
    return fig


def _p_curve(name: str, c: dict, **style: Any) -> go.Scatter:
    """One curve of a value against p, its points in the order of p (keys may be strings)."""
    ps = sorted(c, key=float)
    return go.Scatter(x=[float(p) for p in ps], y=[c[p] for p in ps], name=plot_text(name), **style)

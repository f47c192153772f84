"""Plotly figures shared by the dashboard and the PDF report (same data, same chart).

Figures only draw what the metric modules computed; no metric is computed here. Hover
texts that carry log strings (run ids, query ids) go through Plotly's own text
rendering, which escapes HTML.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.fidelity.score import FIDELITY_STAGES

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
    "top_k": "#1f77b4",
    "chunk_size": "#d62728",
    "chunk_overlap": "#2ca02c",
    "several": "#9467bd",
    "none": "#7f7f7f",
    "unknown": "#8c564b",
}
_LABELS = {
    "top_k": "top-k",
    "chunk_size": "chunk size",
    "chunk_overlap": "overlap",
    "several": "several",
    "none": "nothing",
    "unknown": "unknown (no config)",
}


def _esc(values: Iterable[object]) -> list[str]:
    # Plotly renders a subset of HTML in hover labels; log strings are escaped first.
    return [html.escape(str(v)) for v in values]


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
            hoverinfo="skip",
        )
    )
    if "span" not in wide:
        wide["span"] = np.nan
    for change in [c for c in CHANGE_COLOURS if c in set(wide["changed"])]:
        sub = wide[wide["changed"] == change]
        fig.add_trace(
            go.Scatter(
                x=sub["doc"],
                y=sub["span"],
                mode="markers",
                name=_LABELS[change],
                marker=dict(size=11, color=CHANGE_COLOURS[change], line=dict(width=1, color="white")),
                customdata=np.column_stack([sub["run_a"], sub["run_b"]]),
                text=[f"{a} vs {b}" for a, b in zip(_esc(sub["run_a"]), _esc(sub["run_b"]))],
                hovertemplate="%{text}<br>J_doc %{x:.3f}<br>J_span %{y:.3f}<extra>" + _LABELS[change] + "</extra>",
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
                    marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(width=3, color="black")),
                    hoverinfo="skip",
                )
            )
    title = "Document vs span stability per run pair"
    if gap_ratio is not None:
        title += f" — gap ratio {gap_ratio:.2f}"
    fig.update_layout(
        title=html.escape(title),
        xaxis_title="mean J_doc",
        yaxis_title="mean J_span",
        xaxis=dict(range=[-0.02, 1.02]),
        yaxis=dict(range=[-0.02, 1.02], scaleanchor="x"),
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
            colorscale="Blues",
            colorbar=dict(title="(query, pair)"),
            hovertemplate="J_doc ≈ %{x:.2f}<br>J_span ≈ %{y:.2f}<br>%{z:.0f} (query, pair) points<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"), showlegend=False, hoverinfo="skip"
        )
    )
    fig.update_layout(
        title="Every (query, pair): J_doc vs J_span",
        xaxis_title="J_doc",
        yaxis_title="J_span",
        xaxis=dict(range=[0, 1]),
        yaxis=dict(range=[0, 1], scaleanchor="x"),
        height=520,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


def jmin_histogram(queries: pd.DataFrame) -> go.Figure:
    """Distribution of each query's worst-pair Jaccard ``J_min``, span and document level overlaid."""
    fig = go.Figure()
    for level, colour in (("doc", "#9ecae1"), ("span", "#1f5f8b")):
        q = queries[queries["level"] == level]
        if len(q):
            fig.add_trace(
                go.Histogram(
                    x=q["j_min"],
                    xbins=dict(start=0, end=1.0001, size=0.05),
                    name=f"J_min,{level}",
                    marker_color=colour,
                    opacity=0.75,
                    hovertemplate=f"J_min,{level} " + "%{x}<br>%{y} queries<extra></extra>",
                )
            )
    fig.update_layout(
        title="Worst-case stability per query (J_min over every pair)",
        xaxis_title="J_min",
        yaxis_title="queries",
        barmode="overlay",
        height=360,
        bargap=0.05,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


def matrix_heatmap(matrix: pd.DataFrame, *, title: str) -> go.Figure:
    """A run × run Jaccard matrix (one query) as a heatmap with the values written in."""
    names = _esc(matrix.index)
    z = matrix.to_numpy(dtype=float)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=names,
            y=names,
            zmin=0,
            zmax=1,
            colorscale="RdYlGn",
            text=np.round(z, 2),
            texttemplate="%{text}",
            hovertemplate="%{y} vs %{x}<br>J = %{z:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=html.escape(title),
        height=120 + 32 * len(names),
        yaxis=dict(autorange="reversed"),
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
        fillcolor="rgba(214,39,40,0.12)",
        line=dict(width=0),
        layer="below",
    )
    fig.add_annotation(
        x=tau / 2, y=min(1.0, sim_threshold + 0.04), text="silent jitter", showarrow=False, font=dict(color="#a00")
    )
    silent = rows["silent_jitter"].fillna(False).astype(bool) if "silent_jitter" in rows else False
    fig.add_trace(
        go.Scatter(
            x=rows["j_span"],
            y=rows["sim"],
            mode="markers",
            marker=dict(size=9, color=np.where(silent, "#d62728", "#1f5f8b")),
            customdata=np.column_stack([rows["query_id"]]),
            text=_esc(rows["query_id"]),
            hovertemplate="query %{text}<br>J_span %{x:.3f}<br>answer similarity %{y:.3f}<extra></extra>",
            name="queries",
        )
    )
    fig.update_layout(
        title=html.escape(title or "Answer similarity vs span stability"),
        xaxis_title="J_span",
        yaxis_title="answer similarity (SBERT cosine)",
        xaxis=dict(range=[-0.02, 1.02]),
        yaxis=dict(range=[min(0.0, float(np.nanmin(rows["sim"])) - 0.02) if len(rows) else 0, 1.02]),
        height=460,
        showlegend=False,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


# --------------------------------------------------------------------------- citation fidelity

_STAGE_NAMES = list(FIDELITY_STAGES.values())


def survival_funnel(summaries: dict[str, dict]) -> go.Figure:
    """Per run: the share of queries with ground truth still holding a ground-truth source
    after each stage (``stage_share``, the running product of the conditional rates), as a
    percentage; the conditional rate of each stage is in the hover. Labels sit outside the bars
    so the last (narrowest) stage stays readable."""
    fig = go.Figure()
    for run, s in summaries.items():
        xs, ys, cond = [], [], []
        for name in _STAGE_NAMES:
            rate = s["stage_survival"].get(name)
            if rate is None:
                continue
            xs.append(round(s["stage_share"][name] * 100, 1))
            ys.append(name)
            cond.append(rate * 100)
        fig.add_trace(
            go.Funnel(
                name=html.escape(run),
                y=ys,
                x=xs,
                customdata=cond,
                textposition="outside",
                texttemplate="%{x:.1f}%",
                cliponaxis=False,
                connector=dict(visible=False),
                hovertemplate="%{y}: %{x:.1f}% of all queries with ground truth still hold a source; "
                "%{customdata:.1f}% of those reaching this stage keep one<extra>" + html.escape(run) + "</extra>",
            )
        )
    fig.update_layout(
        title="Stage survival: share of all queries with ground truth still holding a source (%)",
        height=420,
        margin=dict(l=110, r=60, t=60, b=40),
        legend_title="run",
    )
    return fig


_PCT_DASH = {"cfs_p50": "dot", "cfs_p95": "dash", "cfs_p99": "longdash"}


def cfs_histogram(
    cfs_by_run: dict[str, Sequence[float]], *, summaries: dict[str, dict] | None = None, threshold: float | None = None
) -> go.Figure:
    """Per-query CFS distributions, with each run's p50/p95/p99 and the alert threshold drawn.

    Percentiles of one run that fall on the same value share one line and one label
    (``p95 = p99 1.00``); every label has its own row at the top of the plot, so none overlap."""
    fig = go.Figure()
    palette = ["#1f5f8b", "#d62728", "#2ca02c", "#9467bd"]
    row = 0
    for i, (run, values) in enumerate(cfs_by_run.items()):
        colour = palette[i % len(palette)]
        fig.add_trace(
            go.Histogram(
                x=list(values),
                name=html.escape(run),
                xbins=dict(start=0, end=1.0001, size=0.05),
                marker_color=colour,
                opacity=0.7,
            )
        )
        s = (summaries or {}).get(run) or {}
        at: dict[float, list[str]] = {}
        for key in _PCT_DASH:
            if s.get(key) is not None:
                at.setdefault(round(float(s[key]), 2), []).append(key)
        for x, keys in sorted(at.items()):
            fig.add_vline(x=x, line=dict(color=colour, dash=_PCT_DASH[keys[-1]], width=1.5))
            label = (
                " = ".join(k[4:] for k in keys)
                + f" {x:.2f}"
                + (f" ({html.escape(run)})" if len(cfs_by_run) > 1 else "")
            )
            fig.add_annotation(
                x=x,
                y=1.0 - 0.075 * row,
                xref="x",
                yref="paper",
                text=label,
                showarrow=False,
                xanchor="right" if x > 0.6 else "left",
                font=dict(color=colour, size=11),
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
        title="Citation Fidelity Score per query",
        xaxis_title="CFS (mean verification score)",
        yaxis_title="queries",
        barmode="overlay",
        height=400,
        xaxis=dict(range=[-0.02, 1.05]),
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig


def provenance_graph(nodes: pd.DataFrame, edges: pd.DataFrame, *, title: str = "") -> go.Figure:
    """One query's provenance graph, stage by stage; the ground-truth path in green, the
    broken edge (where the ground-truth source is lost) in red."""
    pos = {n: (x, y) for n, x, y in zip(nodes["node_id"], nodes["x"], nodes["y"])}
    fig = go.Figure()
    for broken, colour, width in ((False, "#bbbbbb", 1), (True, "#d62728", 3)):
        xs, ys = [], []
        for p, c in zip(edges.loc[edges.broken == broken, "parent"], edges.loc[edges.broken == broken, "child"]):
            if p not in pos:
                continue
            x0, y0 = pos[p]
            x1, y1 = pos[c] if c in pos else (x0 + 0.6, y0)
            xs += [x0, x1, None]
            ys += [y0, y1, None]
        if xs:
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line=dict(color=colour, width=width),
                    hoverinfo="skip",
                    name="broken link" if broken else "derived from",
                    showlegend=broken,
                )
            )
    stubs = edges[edges.broken & edges.child.isna()]
    for p, label in zip(stubs["parent"], stubs["label"]):
        if p in pos:
            fig.add_annotation(
                x=pos[p][0] + 0.6,
                y=pos[p][1],
                text=html.escape(str(label))[:60],
                showarrow=False,
                xanchor="left",
                font=dict(color="#a00", size=10),
            )
    colours = np.where(nodes["on_path"], "#2ca02c", "#1f5f8b")
    fig.add_trace(
        go.Scatter(
            x=nodes["x"],
            y=nodes["y"],
            mode="markers",
            marker=dict(size=12, color=colours),
            text=_esc(nodes["label"]),
            customdata=np.column_stack([_esc(nodes["node_id"])]),
            hovertemplate="%{customdata[0]}: %{text}<extra></extra>",
            name="node",
        )
    )
    fig.update_layout(
        title=html.escape(title or "Provenance graph"),
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
            text=[f"{s:.0f}% ({x:+.3f})" for s, x in zip(share, importance)],
            textposition="auto",
            hovertemplate="%{y}: %{x:.1f}%<extra></extra>",
        )
    )
    # the documents are categories (an id like "3" must not become a number on a numeric axis)
    fig.update_layout(
        title=html.escape(title),
        xaxis_title="share of |importance| (%)",
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
    ``run_means``: name → {p: mean WARG} over a run's stored results, drawn thick.
    """
    fig = go.Figure()
    for name, c in curves.items():
        ps = sorted(c, key=float)
        fig.add_trace(
            go.Scatter(x=[float(p) for p in ps], y=[c[p] for p in ps], mode="lines+markers", name=html.escape(name))
        )
    for name, c in (dashed or {}).items():
        ps = sorted(c, key=float)
        fig.add_trace(
            go.Scatter(
                x=[float(p) for p in ps],
                y=[c[p] for p in ps],
                mode="lines",
                name=html.escape(name),
                line=dict(dash="dot"),
            )
        )
    if floor is not None:
        label, c = floor
        ps = sorted(c, key=float)
        fig.add_trace(
            go.Scatter(
                x=[float(p) for p in ps],
                y=[c[p] for p in ps],
                mode="lines",
                name=html.escape(label),
                line=dict(color="#999", dash="dash"),
            )
        )
    for name, c in (run_means or {}).items():
        ps = sorted(c, key=float)
        fig.add_trace(
            go.Scatter(
                x=[float(p) for p in ps],
                y=[c[p] for p in ps],
                mode="lines",
                name=html.escape(name),
                line=dict(width=4, dash="longdash"),
            )
        )
    fig.update_layout(
        title=html.escape(title),
        xaxis_title="p",
        yaxis_title="WARG",
        yaxis=dict(range=[0, 1]),
        height=380,
        margin=dict(l=50, r=20, t=60, b=50),
    )
    return fig

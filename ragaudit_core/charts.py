"""Plotly figures shared by the dashboard and the PDF report (same data, same chart).

Figures only draw what the metric modules computed; no metric is computed here. Hover
texts that carry log strings (run ids, query ids) go through Plotly's own text
rendering, which escapes HTML.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = [
    "CHANGE_COLOURS",
    "jmin_histogram",
    "matrix_heatmap",
    "pair_density",
    "probe_scatter",
    "stability_scatter",
]

CHANGE_COLOURS = {
    "top_k": "#1f77b4",
    "chunk_size": "#d62728",
    "chunk_overlap": "#2ca02c",
    "several": "#9467bd",
    "none": "#7f7f7f",
    "unknown": "#8c564b",
}
_LABELS = {"top_k": "top-k", "chunk_size": "chunk size", "chunk_overlap": "overlap", "several": "several",
           "none": "nothing", "unknown": "unknown (no config)"}


def _esc(values) -> list[str]:
    # Plotly renders a subset of HTML in hover labels; log strings are escaped first.
    return [html.escape(str(v)) for v in values]


def stability_scatter(pairs: pd.DataFrame, *, gap_ratio: float | None = None,
                      highlight: tuple[str, str] | None = None) -> go.Figure:
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
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"),
                             name="J_span = J_doc", hoverinfo="skip"))
    if "span" not in wide:
        wide["span"] = np.nan
    for change in [c for c in CHANGE_COLOURS if c in set(wide["changed"])]:
        sub = wide[wide["changed"] == change]
        fig.add_trace(go.Scatter(
            x=sub["doc"], y=sub["span"], mode="markers", name=_LABELS[change],
            marker=dict(size=11, color=CHANGE_COLOURS[change], line=dict(width=1, color="white")),
            customdata=np.column_stack([sub["run_a"], sub["run_b"]]),
            text=[f"{a} vs {b}" for a, b in zip(_esc(sub["run_a"]), _esc(sub["run_b"]))],
            hovertemplate="%{text}<br>J_doc %{x:.3f}<br>J_span %{y:.3f}<extra>" + _LABELS[change] + "</extra>"))
    if highlight is not None:
        row = wide[(wide["run_a"] == highlight[0]) & (wide["run_b"] == highlight[1])]
        if len(row):
            fig.add_trace(go.Scatter(x=row["doc"], y=row["span"], mode="markers", name="selected",
                                     marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(width=3, color="black")),
                                     hoverinfo="skip"))
    title = "Document vs span stability per run pair"
    if gap_ratio is not None:
        title += f" — gap ratio {gap_ratio:.2f}"
    fig.update_layout(title=title, xaxis_title="mean J_doc", yaxis_title="mean J_span",
                      xaxis=dict(range=[-0.02, 1.02]), yaxis=dict(range=[-0.02, 1.02], scaleanchor="x"),
                      legend_title="changed", height=520, margin=dict(l=50, r=20, t=60, b=50))
    return fig


def pair_density(density: pd.DataFrame, bins: int) -> go.Figure:
    """Per-(query, pair) points counted on a grid (:attr:`StabilityResult.density`)."""
    grid = np.zeros((bins, bins))
    for d, s, n in zip(density["doc_bin"], density["span_bin"], density["n"]):
        grid[int(s), int(d)] = n
    centres = (np.arange(bins) + 0.5) / bins
    fig = go.Figure(go.Heatmap(x=centres, y=centres, z=np.where(grid > 0, grid, np.nan), colorscale="Blues",
                               colorbar=dict(title="(query, pair)"),
                               hovertemplate="J_doc ≈ %{x:.2f}<br>J_span ≈ %{y:.2f}<br>%{z:.0f} (query, pair) points"
                                             "<extra></extra>"))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999", dash="dash"),
                             showlegend=False, hoverinfo="skip"))
    fig.update_layout(title="Every (query, pair): J_doc vs J_span", xaxis_title="J_doc", yaxis_title="J_span",
                      xaxis=dict(range=[0, 1]), yaxis=dict(range=[0, 1], scaleanchor="x"), height=520,
                      margin=dict(l=50, r=20, t=60, b=50))
    return fig


def jmin_histogram(queries: pd.DataFrame) -> go.Figure:
    """Distribution of each query's worst-pair Jaccard ``J_min``, span and document level overlaid."""
    fig = go.Figure()
    for level, colour in (("doc", "#9ecae1"), ("span", "#1f5f8b")):
        q = queries[queries["level"] == level]
        if len(q):
            fig.add_trace(go.Histogram(x=q["j_min"], xbins=dict(start=0, end=1.0001, size=0.05), name=f"J_min,{level}",
                                       marker_color=colour, opacity=0.75,
                                       hovertemplate=f"J_min,{level} " + "%{x}<br>%{y} queries<extra></extra>"))
    fig.update_layout(title="Worst-case stability per query (J_min over every pair)", xaxis_title="J_min",
                      yaxis_title="queries", barmode="overlay", height=360, bargap=0.05,
                      margin=dict(l=50, r=20, t=60, b=50))
    return fig


def matrix_heatmap(matrix: pd.DataFrame, *, title: str) -> go.Figure:
    """A run × run Jaccard matrix (one query) as a heatmap with the values written in."""
    names = _esc(matrix.index)
    z = matrix.to_numpy(dtype=float)
    fig = go.Figure(go.Heatmap(z=z, x=names, y=names, zmin=0, zmax=1, colorscale="RdYlGn",
                               text=np.round(z, 2), texttemplate="%{text}",
                               hovertemplate="%{y} vs %{x}<br>J = %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=120 + 32 * len(names), yaxis=dict(autorange="reversed"),
                      margin=dict(l=120, r=20, t=60, b=120))
    return fig


def probe_scatter(rows: pd.DataFrame, *, tau: float = 0.5, sim_threshold: float = 0.9,
                  title: str = "") -> go.Figure:
    """Answer similarity vs ``J_span`` per query (seed 000, figures 2–3).

    The silent-jitter quadrant — evidence changed (``J_span < τ``) while the answer
    stayed (``Sim ≥ threshold``) — is shaded.
    """
    fig = go.Figure()
    fig.add_shape(type="rect", x0=0, x1=tau, y0=sim_threshold, y1=1.0, fillcolor="rgba(214,39,40,0.12)",
                  line=dict(width=0), layer="below")
    fig.add_annotation(x=tau / 2, y=min(1.0, sim_threshold + 0.04), text="silent jitter", showarrow=False,
                       font=dict(color="#a00"))
    silent = rows["silent_jitter"].fillna(False).astype(bool) if "silent_jitter" in rows else False
    fig.add_trace(go.Scatter(
        x=rows["j_span"], y=rows["sim"], mode="markers",
        marker=dict(size=9, color=np.where(silent, "#d62728", "#1f5f8b")),
        customdata=np.column_stack([rows["query_id"]]), text=_esc(rows["query_id"]),
        hovertemplate="query %{text}<br>J_span %{x:.3f}<br>answer similarity %{y:.3f}<extra></extra>",
        name="queries"))
    fig.update_layout(title=title or "Answer similarity vs span stability", xaxis_title="J_span",
                      yaxis_title="answer similarity (SBERT cosine)", xaxis=dict(range=[-0.02, 1.02]),
                      yaxis=dict(range=[min(0.0, float(np.nanmin(rows["sim"])) - 0.02) if len(rows) else 0, 1.02]),
                      height=460, showlegend=False, margin=dict(l=50, r=20, t=60, b=50))
    return fig

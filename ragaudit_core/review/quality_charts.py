"""Figures of ranking quality and of what jitter costs it (shared by the dashboard and the report).

Colours are the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies);
0–1 quantities sit on [0, 1] axes and changes on [−1, 1]; runs in natural order (k5 < k10 < k20).
"""

from __future__ import annotations

import plotly.graph_objects as go

from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.quality.jitter import OUTCOMES, JitterCost
from ragaudit_core.quality.summary import QualityResult
from ragaudit_core.review.labels import metric_label
from ragaudit_core.review.palette import BLUE, GREY, LIGHT_GREY, OKABE_ITO, SKY_BLUE, VERMILLION, plot_text, wrap_title
from ragaudit_core.review.runlabels import run_labels
from ragaudit_core.wording import counted

__all__ = ["OUTCOME_COLOURS", "OUTCOME_SYMBOLS", "jitter_scatter", "quality_intervals", "two_places"]

OUTCOME_COLOURS = {  # no red-green pair: kept is sky blue, lost vermillion
    "relevant kept": SKY_BLUE,
    "relevant lost": VERMILLION,
    "nothing relevant to lose": GREY,
    "unlabelled": LIGHT_GREY,
    "not collapsed": BLUE,  # drawn as rings (OUTCOME_SYMBOLS): beside sky-blue dots, in print, a colour alone blurs
}
OUTCOME_SYMBOLS = {"not collapsed": "circle-open"}
"""Marker symbols other than the filled circle: a query whose evidence did not collapse is a ring,
so the collapsed queries' outcomes (the figure's question) stand out as filled dots."""


def two_places(x: float) -> str:
    """Two decimals; a value that rounds to zero is 0.00, not -0.00."""
    return f"{round(x, 2) + 0.0:.2f}"


_TITLE_RUN_CHARS = 40
"""Characters of a run id in a chart's title or axis (cut in the middle, kept apart: :mod:`.runlabels`)."""


def quality_intervals(res: QualityResult, metric: str = "ndcg@10", *, title: str | None = None) -> go.Figure:
    """Each run's ``metric`` (mean over its labelled queries) with its 95 % bootstrap interval."""
    runs = {r.run_id: r for r in res.runs if r.metrics.get(metric) is not None and r.metrics[metric].n}
    order = natural_sorted(runs)
    est = [runs[r].metrics[metric] for r in order]
    labels = run_labels(order, _TITLE_RUN_CHARS)  # a 90-character id took most of the chart's width
    fig = go.Figure(
        go.Scatter(
            x=[e.value for e in est],
            y=[plot_text(labels[r]) for r in order],
            mode="markers",
            cliponaxis=False,
            marker=dict(size=9, color=OKABE_ITO[0]),
            error_x=dict(
                type="data",
                symmetric=False,
                array=[e.hi - e.value for e in est],
                arrayminus=[e.value - e.lo for e in est],
                color=OKABE_ITO[0],
            ),
            customdata=[[e.lo, e.hi, counted(e.n, "query"), plot_text(r)] for e, r in zip(est, order)],
            hovertemplate="%{customdata[3]}: %{x:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], %{customdata[2]}"
            "<extra></extra>",
        )
    )
    fig.update_layout(
        title=dict(
            text=wrap_title(
                plot_text(title)
                if title
                else f"{metric_label(metric)} per run, with 95 % intervals over labelled queries"
            ),
            font=dict(size=13),
        ),
        xaxis=dict(title=metric_label(metric), range=[0, 1]),
        # automargin: the static export (the PDF) kept a 10 px margin and cut each run name to its last character
        yaxis=dict(autorange="reversed", type="category", automargin=True),
        height=max(220, 28 * len(order) + 90),
        margin=dict(l=10, r=10, t=50, b=40),
        showlegend=False,
    )
    return fig


def jitter_scatter(cost: JitterCost) -> go.Figure:
    """Per labelled query of a pair: its Jaccard (x, span level when both runs carry spans) against
    the change of nDCG@k (y), coloured by what happened to a collapsed query's relevant documents.
    The title gives Spearman's ρ with its interval."""
    q = cost.queries[cost.queries["delta"].notna()].copy()
    q["group"] = q["outcome"].fillna("not collapsed")
    fig = go.Figure()
    for group in ("not collapsed", *OUTCOMES):
        g = q[q["group"] == group]
        if g.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=g["j"],
                y=g["delta"],
                mode="markers",
                cliponaxis=False,
                name=f"{group} ({len(g)})",
                marker=dict(
                    size=7,
                    color=OUTCOME_COLOURS[group],
                    symbol=OUTCOME_SYMBOLS.get(group, "circle"),
                    opacity=0.75,
                    line=dict(
                        width=1.5 if group in OUTCOME_SYMBOLS else 0.5,
                        color=None if group in OUTCOME_SYMBOLS else "white",
                    ),
                ),
                customdata=[plot_text(str(v)) for v in g["query_id"]],
                hovertemplate="query %{customdata}<br>J = %{x:.3f}<br>Δ nDCG = %{y:+.3f}<extra></extra>",
            )
        )
    rho = cost.rho
    rho_text = (
        "ρ undefined (a constant side)"
        if rho.value != rho.value
        else f"Spearman ρ = {two_places(rho.value)}"
        + (f" [{two_places(rho.lo)}, {two_places(rho.hi)}]" if rho.lo == rho.lo else "")
    )
    labels = run_labels([cost.run_a, cost.run_b], _TITLE_RUN_CHARS)  # a 90-character id took three lines
    head = wrap_title(
        f"Does jitter cost quality? The reviewed pair {plot_text(labels[cost.run_a])} → {plot_text(labels[cost.run_b])}"
    )
    lines = head.count("<br>") + 2  # and the line of ρ under it
    fig.update_layout(
        title=dict(
            text=head + "<br>"
            f'<span style="font-size:12px">Δ nDCG@{cost.k} against J_{cost.level} per labelled query · {rho_text}'
            "</span>",
            font=dict(size=13),
        ),
        # a 0–1 axis as every such axis here: points at J = 0 are drawn past it (cliponaxis), not cut
        xaxis=dict(title=f"J_{cost.level} (1 = the same evidence)", range=[0, 1]),
        yaxis=dict(  # automargin: in the PDF the axis title sat on the tick labels
            title=dict(text=f"nDCG@{cost.k} change (candidate − baseline)", standoff=8),
            range=[-1.05, 1.05],
            zeroline=True,
            automargin=True,
        ),
        legend=dict(title="queries", orientation="h", y=-0.22),
        margin=dict(l=10, r=10, t=30 + 20 * lines, b=90),
        height=400 + 19 * lines,
    )
    return fig

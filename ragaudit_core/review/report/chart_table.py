"""A chart's data as a table, drawn in the PDF in place of a chart that could not be exported.

Read from the Plotly figure itself (the numbers the chart would have drawn), per trace:
points (x, y) for scatter, bar and funnel traces (each point named by its hover text when it has
one, e.g. the run pair), bin counts for histograms (the trace's own
bins, or 0.05 wide on [0, 1]), and cells for heatmaps. At most ``max_rows`` rows; the rest
is counted in a last row.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ragaudit_core.wording import counted

__all__ = ["figure_table"]


def _num(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (float, np.floating)):
        return "n/a" if math.isnan(float(v)) else f"{float(v):.3f}"
    return str(v)


def _seq(v: Any) -> list:
    """A trace's data array (a tuple, list or NumPy array in Plotly) as a list; [] when absent."""
    return [] if v is None else list(v)


def _histogram_rows(name: str, trace: Any) -> list[list[str]]:
    xs = np.asarray([v for v in _seq(trace.x) if v is not None], dtype=float)
    xs = xs[~np.isnan(xs)]
    bins = trace.xbins
    start = bins.start if bins is not None and bins.start is not None else 0.0
    end = bins.end if bins is not None and bins.end is not None else 1.0
    size = bins.size if bins is not None and bins.size is not None else 0.05
    edges = np.arange(float(start), float(end) + 1e-12, float(size))
    counts, edges = np.histogram(xs, bins=edges)
    return [[name, f"{edges[i]:.2f}–{edges[i + 1]:.2f}", str(int(c))] for i, c in enumerate(counts) if c]


def figure_table(fig: go.Figure, max_rows: int = 30) -> tuple[list[str], list[list[str]]]:
    """``(headings, rows)`` with the data ``fig`` draws: series, x, y (or bin, count; or row,
    column, value)."""
    rows: list[list[str]] = []
    kind = "points"
    for i, t in enumerate(fig.data):
        if getattr(t, "hoverinfo", None) == "skip" and t.type == "scatter":
            continue  # guides (the diagonal, a highlight ring), not data
        name = str(t.name) if t.name else f"series {i + 1}"
        if t.type == "histogram":
            kind = "bins"
            rows += _histogram_rows(name, t)
        elif t.type == "heatmap":
            kind = "cells"
            z = np.asarray(t.z, dtype=float)
            xs, ys = _seq(t.x) or list(range(z.shape[1])), _seq(t.y) or list(range(z.shape[0]))
            rows += [[name, f"{ys[r]} × {xs[c]}", _num(z[r, c])] for r in range(z.shape[0]) for c in range(z.shape[1])]
        else:
            xs, ys = _seq(t.x), _seq(t.y)
            texts = _seq(t.text) if isinstance(t.text, (list, tuple, np.ndarray)) else []
            labels = [f"{name}: {html.unescape(str(x))}" for x in texts] if len(texts) == len(xs) else [name] * len(xs)
            rows += [[label, _num(x), _num(y)] for label, x, y in zip(labels, xs, ys)]
    headings = {
        "points": ["series", "x", "y"],
        "bins": ["series", "bin", "count"],
        "cells": ["series", "cell", "value"],
    }[kind]
    if len(rows) > max_rows:
        rest = len(rows) - max_rows
        rows = [*rows[:max_rows], [f"… and {counted(rest, 'more row')}", "", ""]]
    return headings, rows

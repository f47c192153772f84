"""The PDF audit report: what was audited, the verdict, and every section whose data is present.

Two steps, so each can be tested on its own: :func:`gather` (:mod:`.gather`) asks the
metric packages for the numbers and builds the dashboard's figures; :func:`render`
(:mod:`.render`) lays them out with fpdf2 — a cover (runs with their configurations, input
files with SHA-256, tool version, date), contents, the verdict, evidence stability, the
worst queries side by side, the answer probe, citation fidelity, attributions and a methods
appendix (:mod:`.sections`, one function per section, drawn with the primitives of
:mod:`.layout`). Charts are the dashboard's Plotly figures exported by Kaleido
(:mod:`.export`). Text from logs is written as plain text (never markup); a section whose
data is absent is left out and named on the cover.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from ragaudit_core.review.report.export import export_figures
from ragaudit_core.review.report.gather import ReportData, ReportError, ReportOptions, WorstQuery, gather
from ragaudit_core.review.report.render import render

__all__ = [
    "ReportData",
    "ReportError",
    "ReportOptions",
    "WorstQuery",
    "build_report",
    "export_figures",
    "gather",
    "render",
]


def build_report(
    con: duckdb.DuckDBPyConnection,
    out: str | Path | None = None,
    opts: ReportOptions = ReportOptions(),
    progress: Callable[[str], None] | None = None,
) -> tuple[bytes, ReportData]:
    """:func:`gather` then :func:`render`."""
    data = gather(con, opts, progress)
    return render(data, out, progress=progress), data

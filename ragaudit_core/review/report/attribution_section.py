"""The attributions section of the PDF report (seed 001, RAG-E §5): each run's failure rates and
mean Spearman (Table 2), its mean WARG by p (Table 3) and the WARG curves — every figure with its
95 % interval over the explained queries in a second row (:mod:`ragaudit_core.attribution.uncertainty`:
Wilson for the rates, the percentile bootstrap for the means)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ragaudit_core.review.report.gather import ReportData
from ragaudit_core.review.report.layout import ReportPDF, fmt, pct

__all__ = ["attributions"]


def _span(iv: pd.DataFrame, condition: str, metric: str, percent: bool) -> str:
    """The interval of one figure as the dense tables write it (``0.60–0.66``, ``5–70%``); empty
    when it has none (one query, or results stored by an older version)."""
    m = iv[(iv["condition"] == condition) & (iv["metric"] == metric)] if len(iv) else iv
    if m.empty:
        return ""
    lo, hi = float(m["lo"].iloc[0]), float(m["hi"].iloc[0])
    if lo != lo or hi != hi:
        return ""
    if percent:
        return f"{lo * 100:.0f}–{hi * 100:.0f}%"
    return f"{fmt(lo, 2)} to {fmt(hi, 2)}" if lo < 0 else f"{lo:.2f}–{hi:.2f}"  # a dash after −0.50 misreads


def _failure_rows(run: str, tables: dict[str, Any]) -> list[list[str]]:
    iv = tables.get("intervals", pd.DataFrame())
    rows = []
    for r in tables["failure"].itertuples():
        rows.append([run, r.condition, str(int(r.queries)), pct(r.wasted_retrieval), pct(r.noise_distraction)])
        rows[-1].append(fmt(r.spearman))
        second = ["", "", ""] + [
            _span(iv, r.condition, m, p)
            for m, p in (("wasted_retrieval", True), ("noise_distraction", True), ("spearman", False))
        ]
        if any(second):
            rows.append(second)
    return rows


def _warg_rows(run: str, tables: dict[str, Any], ps: list[str]) -> list[list[str]]:
    iv = tables.get("intervals", pd.DataFrame())
    rows = []
    for _, r in tables["warg"].iterrows():
        rows.append([run, r["condition"]] + [fmt(r.get(f"warg_{p}")) for p in ps])
        second = ["", ""] + [_span(iv, r["condition"], f"warg_{p}", False) for p in ps]
        if any(second):
            rows.append(second)
    return rows


def attributions(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    pdf.para(
        "Stored attributions (seed 001, RAG-E): Shapley values of each retrieved document on the generator's "
        "answer, ranked and compared with the retriever's ranking (ranks from 1). Wasted retrieval: the retriever's "
        "top document gets generator rank 4 or lower; noise distraction: the generator's top document had "
        "retriever rank 4 or lower. WARG(p) = 1 − RBO truncated at the list depth (identical lists give p^k, not 0).",
        size=8.5,
    )
    pdf.gap(1)
    rows = [row for run, tables in data.attributions.items() for row in _failure_rows(run, tables)]
    pdf.data_table(
        ["run", "condition", "queries", "wasted retrieval", "noise distraction", "mean Spearman"], rows, size=8
    )
    ps = sorted(
        {c[5:] for t_ in data.attributions.values() for c in t_["warg"].columns if c.startswith("warg_")}, key=float
    )
    rows = [row for run, tables in data.attributions.items() for row in _warg_rows(run, tables, ps)]
    if rows:
        pdf.data_table(["run", "condition"] + [f"WARG({p})" for p in ps], rows, size=7.5)
    pdf.para(
        "Under each row, the 95 % intervals over the run's explained queries: Wilson's score interval for the two "
        "rates (on few queries a bootstrap of a rate of 0 would be [0, 0]), the percentile bootstrap (1,000 "
        "resamples) for the means. A condition with one query has no interval for its means. An attribution costs "
        "about 30 s a query on two CPU cores, so these batches are small and the intervals wide: read them before "
        "the figures.",
        size=8,
        style="I",
    )
    pdf.chart("warg_curves", width=W * 0.8)

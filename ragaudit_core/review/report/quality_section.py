"""The report's ranking-quality section: each compared run's quality with intervals and, for the
reviewed pair, the quality changes and what jitter cost (registered in :data:`gather.STEPS` and
:data:`sections.SECTIONS`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from ragaudit_core.logs.qrels import unlabelled_runs_note
from ragaudit_core.quality.cache import has_labels, quality_cached
from ragaudit_core.quality.jitter import jitter_cost
from ragaudit_core.review import quality_charts
from ragaudit_core.review.gate import SHARE_ADVICE
from ragaudit_core.review.labels import metric_label
from ragaudit_core.review.quality_charts import two_places
from ragaudit_core.review.report.layout import ReportPDF, fmt
from ragaudit_core.stability.compare import CompareResult
from ragaudit_core.wording import counted

if TYPE_CHECKING:
    from ragaudit_core.review.report.gather import ReportData

__all__ = ["gather_quality", "quality_section"]

_METRICS = ("ndcg@10", "recall@10", "mrr")


def gather_quality(
    con: duckdb.DuckDBPyConnection,
    data: ReportData,
    cmp: CompareResult | None,
    docid_map: dict[str, str] | None = None,
) -> None:
    """Quality of the runs the stability section compares (all evidence runs without it), the
    reviewed pair's changes with intervals and the jitter-cost figure; nothing without labels.
    ``docid_map``: raw → canonical document ids, for evidence and labels alike."""
    if not has_labels(con):
        data.omitted.append("ranking quality (no relevance labels are loaded)")
        return
    stab = data.stability
    runs = list(stab.summary.runs) if stab is not None else list(data.runs["run_id"])
    pairs = [(cmp.baseline, cmp.candidate)] if cmp is not None else []
    chosen = runs if cmp is None else list(dict.fromkeys([*runs, *pairs[0]]))
    q = quality_cached(con, chosen, pairs=pairs, docid_map=docid_map)
    if not q.labelled:  # labels are loaded: say why they label none of these runs' queries
        why = unlabelled_runs_note(con, [r.run_id for r in q.runs]) or "no compared run has a labelled query"
        data.omitted.append(f"ranking quality ({why})")
        return
    data.quality = q
    data.labels = _label_sources(con)
    data.figures["quality_intervals"] = quality_charts.quality_intervals(q)
    if cmp is not None:
        cost = jitter_cost(con, cmp, k=10, docid_map=docid_map)
        data.jitter = cost
        data.figures["jitter_scatter"] = quality_charts.jitter_scatter(cost)


def _label_sources(con: duckdb.DuckDBPyConnection) -> str:
    """The loaded relevance labels by the file they came from (the files table lists logs only)."""
    cur = con.cursor()
    try:
        rows = cur.execute(
            "SELECT source, count(*), count(DISTINCT query_id), count(*) FILTER (relevance > 0) "
            "FROM qrels GROUP BY source ORDER BY source"
        ).fetchall()
    finally:
        cur.close()
    return "; ".join(
        f"{src}: {counted(n, 'judgement')} for {counted(nq, 'query')} ({rel:,} relevant)" for src, n, nq, rel in rows
    )


def _ci(lo: float, hi: float, signed: bool = False) -> str:
    if lo != lo:
        return "n/a"
    return f"[{lo:+.3f}, {hi:+.3f}]" if signed else f"[{lo:.3f}, {hi:.3f}]"


def quality_section(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    q = data.quality
    pdf.para(
        "Ranking quality from relevance labels (trec_eval's definitions; a document counts at its first rank). "
        "Each figure is the mean over the run's labelled queries with its 95 % bootstrap interval over queries "
        f"({counted(q.resamples, 'resample')}); queries without a relevant label are left out, never scored 0.",
        size=8.5,
    )
    table = q.run_table(_METRICS)
    rows = [
        [str(r["run"]), str(r["labelled queries"]), str(r["left out"])]
        + [f"{fmt(r[m])} {r[f'{m} 95 % interval'] or ''}".strip() for m in _METRICS]
        for r in table.to_dict("records")
    ]
    pdf.data_table(["run", "labelled", "left out", *(f"{metric_label(m)} [95 % CI]" for m in _METRICS)], rows, size=7.5)
    pdf.chart("quality_intervals", width=W * 0.82)
    cost = getattr(data, "jitter", None)
    if cost is None:
        return
    a, b = cost.run_a, cost.run_b
    if pdf.page_break_trigger - pdf.get_y() < 170:  # keep the pair's table, sentence and chart together
        pdf.add_page()
    pdf.sub_section("Does jitter cost quality? (the reviewed pair)")
    changes = q.pairs.get((a, b), {})
    crow = [
        [metric_label(m), fmt(c.delta), _ci(c.lo, c.hi, signed=True), _p(c.p), _p(c.p_holm), str(c.n)]
        for m in ("ndcg@10", "recall@10", "precision@10", "mrr", "map")
        if (c := changes.get(m)) is not None and c.n
    ]
    if not crow:
        pdf.para(
            f"{b} (candidate) and {a} (baseline) share no labelled query: no change of quality, and no cost of "
            f"jitter, can be taken over other questions — {SHARE_ADVICE['quality']}.",
            size=8.5,
        )
        return
    pdf.para(f"{b} (candidate) against {a} (baseline), over the labelled queries both runs have.", size=8.5)
    pdf.data_table(["metric", "change", "95 % CI", "p", "p (Holm)", "queries"], crow, size=7.5)
    tested = [metric_label(m) for m in q.metrics]
    pdf.para(
        f"p: {'a paired t-test' if q.test == 't' else 'a paired randomization test'} of the per-query changes. "
        f"p (Holm): adjusted by Holm's step-down method over every metric the comparison tests — "
        f"{counted(len(tested), 'metric')} ({', '.join(tested)}), not only the rows above — so it is the p to read "
        "when any one of them could have been picked after the fact.",
        size=8,
        style="I",
    )
    split, rho = cost.collapsed, cost.rho
    n_coll = sum(split.values())
    rho_text = (
        "undefined (a constant side)"
        if rho.value != rho.value
        else two_places(rho.value) + (f" [{two_places(rho.lo)}, {two_places(rho.hi)}]" if rho.lo == rho.lo else "")
    )
    pdf.para(
        f"Per labelled query, the nDCG@10 change against J_{cost.level}: Spearman's ρ = {rho_text}. "
        + (
            f"Of the {counted(n_coll, 'collapsed query')} (J_span = 0, both lists non-empty), "
            f"{split['relevant kept']} kept every relevant document {a} had found, {split['relevant lost']} lost one, "
            f"{split['nothing relevant to lose']} had none to lose and {split['unlabelled']} "
            f"{'is' if split['unlabelled'] == 1 else 'are'} unlabelled."
            if cost.level == "span"
            else ""
        ),
        size=8.5,
    )
    pdf.chart("jitter_scatter", width=W * 0.82)


def _p(p: float | None) -> str:
    """A p-value as a reader writes it: three decimals, ``<0.001`` below that (never ``0.000``)."""
    if p is None or p != p:
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"

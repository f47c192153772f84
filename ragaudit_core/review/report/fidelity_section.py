"""The citation-fidelity section of the PDF report (seed 002): CFS, stage survival, alerts, the
judge panel and the canary — every per-run figure with its 95 % interval over queries."""

from __future__ import annotations

from ragaudit_core.fidelity.graph import FIDELITY_STAGES
from ragaudit_core.fidelity.score import FidelityRules, tail_comment
from ragaudit_core.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED
from ragaudit_core.review.logtext import isolate
from ragaudit_core.review.report.gather import ReportData
from ragaudit_core.review.report.layout import BAD, OK, ReportPDF, ci, fmt, pct
from ragaudit_core.wording import counted

__all__ = ["fidelity_section"]


def _cfs_rows(run: str, s: dict) -> list[list[str]]:
    """The run's CFS row, and under it the intervals of the mean, p50 and p95 (the fidelity
    summary's, over its queries with citations) when it has any."""
    iv = s.get("intervals") or {}
    row = [
        run,
        str(s["n_queries"]),
        str(s["n_with_citations"]),
        fmt(s["cfs_mean"]),
        fmt(s["cfs_p50"]),
        fmt(s["cfs_p95"]),
        fmt(s["cfs_p99"]),
        fmt(s["cfs_product_mean"]),
        pct(s["parse_failure_rate"]),
    ]
    second = ["", "", "", *(ci(iv.get(k)).strip() for k in ("cfs_mean", "cfs_p50", "cfs_p95")), "", "", ""]
    return [row, second] if any(second) else [row]


def _stage_rows(run: str, survival: dict, iv: dict) -> list[list[str]]:
    """The run's conditional survival per stage, and under it each rate's interval (gathered:
    :attr:`ReportData.stage_intervals`)."""
    row = [run] + [pct(survival.get(s)) for s in FIDELITY_STAGES.values()]
    second = [""] + [ci(iv.get(s), percent=True).strip() for s in FIDELITY_STAGES.values()]
    return [row, second] if any(second) else [row]


def fidelity_section(pdf: ReportPDF, data: ReportData) -> None:
    """Per-run CFS figures and conditional stage survival, each with its 95 % interval in a second
    row; the funnel and histogram; the tail reading; alerts, failure modes; the judge; the canary."""
    W = pdf.epw
    pdf.para(
        "Citations extracted from each generated answer and verified against the provenance graph (1.0 exact "
        "source, 0.3 right document wrong page, 0.0 not in the graph); CFS = mean score per query. Stage "
        "survival in the table is conditional: of the queries that reached a stage with a ground-truth source, "
        "the share keeping one through it (the alert's reading; seed 002). The funnel shows the share "
        "of all queries with ground truth still holding a source after each stage (a stage a query's pipeline "
        "skips loses nothing).",
        size=8.5,
    )
    pdf.gap(1)
    pdf.data_table(
        ["run", "queries", "with citations", "CFS mean", "p50", "p95", "p99", "product CFS", "parse failures"],
        [row for r, f in data.fidelity.items() for row in _cfs_rows(r, f.summary)],
        widths=[W - 147, 14, 17, 23, 23, 23, 14, 17, 16],  # room for an interval on one line
        size=7.5,
    )
    stage_names = list(FIDELITY_STAGES.values())
    pdf.data_table(
        ["run"] + [f"{s} (conditional)" for s in stage_names],
        [
            row
            for r, f in data.fidelity.items()
            for row in _stage_rows(r, f.summary["stage_survival"], data.stage_intervals.get(r, {}))
        ],
        size=7.5,
    )
    pdf.para(
        "Second rows: the 95 % bootstrap interval over the run's queries — for CFS its queries with citations, "
        f"for a stage those that reached it with a ground-truth source ({counted(DEFAULT_RESAMPLES, 'resample')}, "
        f"seed {DEFAULT_SEED}); none where a figure rests on no query.",
        size=8,
        style="I",
    )
    pdf.chart("survival_funnel", width=W * 0.8)
    pdf.chart("cfs_histogram", width=W * 0.8)
    for r, f in data.fidelity.items():
        if comment := tail_comment(f.summary, FidelityRules().p95_cfs_min):
            pdf.para(f"{r}: {comment}", size=8, style="I", colour=(150, 80, 0))
    pdf.sub_section("Alerts and failure modes")
    for r, f in data.fidelity.items():
        alerts = sorted(f.alerts, key=lambda a: {"alert": 0, "ok": 1}.get(a["status"], 2))
        rows, styles = pdf.status_rows(
            [(a["status"], a["rule"], a["value"], a["message"]) for a in alerts], {"alert": BAD, "ok": OK}
        )
        pdf.para(f"Run {r}", size=9, style="B")
        pdf.data_table(["status", "rule", "value", "why"], rows, widths=[14, 34, 14, W - 62], styles=styles, size=7.5)
        fm = f.summary.get("failure_modes") or {}
        outcomes = f.summary.get("outcomes") or {}
        if outcomes:
            pdf.para("Citation outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()), size=8)
        pdf.para("Failure modes: " + (", ".join(f"{k} {v}" for k, v in fm.items()) if fm else "none found"), size=8)
        pdf.gap(1)
    if data.judge:
        pdf.sub_section("LLM judge (Pattern 4)")
        pdf.para(
            "Each citation judged by a panel with seed 002's judge prompt; majority vote (ties to the most "
            "conservative verdict). Agreement: the majority equals the rule-based verdict (1.0 ACCURATE, 0.3 "
            "PARTIAL, 0 HALLUCINATED). Disagreement: citations whose votes are not unanimous (the seed reports "
            "12–18 % for its judges); pairwise: judge pairs that differ.",
            size=8.5,
        )
        pdf.data_table(
            ["run", "citations", "agreement with rules", "judges disagree", "pairwise", "invalid votes"],
            [
                [
                    r,
                    str(j["n_citations"]),
                    pct(j["agreement"]["rate"]),
                    pct(j["disagreement"]["rate"]),
                    pct(j["disagreement"]["pairwise"]),
                    str(j["n_invalid_votes"]),
                ]
                for r, j in data.judge.items()
            ],
            size=7.5,
        )
    if data.canary:
        c = data.canary
        verdict = (
            "significant"
            if c["significant"]
            else "not significant"
            if c["significant"] is False
            else c.get("note", "not computed")
        )
        pdf.para(
            f"Canary {isolate(c['baseline'])} → {isolate(c['candidate'])}: "
            f"Mann–Whitney U = {fmt(c['u'])}, p = {fmt(c['p_value'])}"
            f", {verdict} at α = {c['alpha']} (median CFS {fmt(c['median_a'])} → {fmt(c['median_b'])}).",
            size=8.5,
        )

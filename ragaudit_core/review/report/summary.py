"""The report's executive summary, on the page after the cover.

What a reviewer reads before anything else: the verdict, the (at most four) rule results that
decided it, what changed between the two runs, the headline figures of each question the data
answers — each labelled with what it is over: the reviewed pair, or all compared runs — where
in the report to look next, and a plain-language conclusion with a recommendation
(:mod:`.conclusion`). Everything comes from the gathered
:class:`~ragaudit_core.review.report.gather.ReportData`; nothing is computed here.
"""

from __future__ import annotations

from ragaudit_core.review.gate import Verdict
from ragaudit_core.review.labels import column_label, rule_label
from ragaudit_core.review.logtext import isolate
from ragaudit_core.review.report.conclusion import conclusion
from ragaudit_core.review.report.gather import ReportData
from ragaudit_core.review.report.layout import BAD, OK, STATUS_TEXT, WARN, ReportPDF, ci, ci_note, fmt, pct
from ragaudit_core.wording import counted

__all__ = ["CONFIG_COLUMNS", "described_runs", "executive_summary", "what_changed"]

CONFIG_COLUMNS = ("top_k", "chunk_size", "chunk_overlap", "embedder")


def what_changed(data: ReportData, baseline: str, candidate: str) -> str:
    """The settings that differ between two runs, as ``name a → b`` phrases (from the runs table)."""
    rows = {r["run_id"]: r for r in data.runs.to_dict("records")}
    a, b = rows.get(baseline), rows.get(candidate)
    if a is None or b is None:
        return "the runs' settings are not logged"
    diffs = [
        f"{column_label(c)} {fmt(a.get(c))} → {fmt(b.get(c))}" for c in CONFIG_COLUMNS if str(a.get(c)) != str(b.get(c))
    ]
    if diffs:
        return "; ".join(diffs)
    if all(fmt(r.get(c)) == "n/a" for r in (a, b) for c in CONFIG_COLUMNS):
        return "neither run logs its settings (top-k, chunk size, overlap, embedder)"
    return "no logged setting differs (top-k, chunk size, overlap, embedder)"


def described_runs(data: ReportData) -> int:
    """The distinct runs the summary's figures describe: those the stability section compares and
    those with citation-fidelity figures (a provenance run may share its id with an evidence run)."""
    compared = set(data.stability.summary.runs) if data.stability is not None else set()
    return len(compared | set(data.fidelity))


def executive_summary(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    pdf.fresh_page()
    pdf.heading("Executive summary", 18, 11)
    v = data.verdict
    if v is not None:
        verb = {"pass": "may replace", "fail": "should not replace", "inconclusive": "cannot yet be judged against"}
        pdf.para(
            f"{isolate(v.candidate)} {verb[v.status]} {isolate(v.baseline)} — {v.headline()}.",
            size=13,
            style="B",
            colour=STATUS_TEXT[v.status],
            align="L",
        )
        pdf.para(f"What changed: {what_changed(data, v.baseline, v.candidate)}.", size=10)
        pdf.para(_decided_by(v), size=10.5, style="B")
        applicable = [r for r in v.sorted_results() if r.status != "not applicable"]
        top = applicable[:4]
        rows, styles = pdf.status_rows(
            [(r.status, rule_label(r.rule), r.value, r.message) for r in top],
            {"fail": BAD, "pass": OK, "inconclusive": WARN},
        )
        pdf.data_table(["status", "rule", "value", "why"], rows, widths=[13, 42, 14, W - 69], styles=styles, size=8)
        if len(applicable) > len(top):
            rest = applicable[len(top) :]
            counts = ", ".join(
                f"{sum(r.status == s for r in rest)} {word}"
                for s, word in (("fail", "failed"), ("inconclusive", "inconclusive"), ("pass", "passed"))
                if any(r.status == s for r in rest)
            )
            where = pdf.numbers.get("Verdict")
            pdf.para(
                f"And {len(rest)} more applicable rule{'s' if len(rest) != 1 else ''} ({counts})"
                + (f": every rule in §{where}." if where is not None else "."),
                size=8,
                style="I",
            )
    else:
        pdf.para(
            "No pair was reviewed: this report describes the loaded logs without a verdict "
            "(name a baseline and a candidate for one).",
            size=10.5,
        )
    pdf.para("Headline figures", size=10.5, style="B")
    pdf.data_table(["question", "figure (over what)", "value"], _figures(data), widths=[40, 82, W - 122], size=8.5)
    if (
        data.stability is not None
        and (iv := data.stability.intervals) is not None
        and any(ci(iv.summary.get(k)) for k in ("mean_j_doc", "mean_j_span", "collapse_rate"))
    ):
        pair_n = next((r.n_queries for r in v.results if r.rule.metric == "j_avg" and r.n_queries), None) if v else None
        own = (
            f" The reviewed pair's are over its own {counted(pair_n, 'query')}."
            if pair_n not in (None, iv.n_queries)
            else ""
        )
        pdf.para(ci_note("In brackets", iv) + own, size=8, style="I")
    pdf.para("Where to look", size=10.5, style="B")
    for line in _pointers(data):
        pdf.para(f"• {line}", size=9.5)
    pdf.gap(2)
    why = next((o[len("verdict (") : -1] for o in data.omitted if o.startswith("verdict (") and "share no" in o), None)
    loaded = len(set(data.runs["run_id"]) | set(data.prov_runs["run_id"]))
    found, recommend = conclusion(v, pdf.numbers, described_runs(data) or loaded, why, of=loaded)
    pdf.para("Conclusion", size=10.5, style="B")
    pdf.para(found, size=10)
    pdf.para(
        "Recommendation: " + recommend,
        size=10.5,
        style="B",
        colour=STATUS_TEXT["fail"] if v is not None and v.status == "fail" else (20, 50, 90),
    )


def _pair_rows(data: ReportData) -> list[list[str]]:
    """The reviewed pair's own stability figures, from the verdict's rule values."""
    v = data.verdict
    if v is None:
        return []
    got = {(r.rule.metric, r.rule.level): r for r in v.results if r.value is not None and not r.rule.relative}

    def value(key: tuple[str, str], percent: bool = False) -> str:
        r = got.get(key)
        f = pct if percent else fmt
        if r is None:
            return "n/a"
        return f(r.value) + (f" [{f(r.ci[0])}, {f(r.ci[1])}]" if r.ci is not None else "")

    pair = f"the reviewed pair ({isolate(v.baseline)} → {isolate(v.candidate)})"
    rows = []
    j = got.get(("j_avg", "doc")) or got.get(("j_avg", "span"))
    if j is not None:
        over = f", over its {counted(j.n_queries, 'query')}" if j.n_queries else ""
        rows.append([f"J_doc / J_span, {pair}{over}", f"{value(('j_avg', 'doc'))} / {value(('j_avg', 'span'))}"])
    if ("collapse_rate", "span") in got:
        rows.append([f"collapse rate, {pair}", value(("collapse_rate", "span"), percent=True)])
    return rows


def _figures(data: ReportData) -> list[list[str]]:
    rows: list[list[str]] = []
    q = "Is the evidence stable?"
    for figure, value in _pair_rows(data):
        rows.append([q if not rows else "", figure, value])
    if data.stability is not None:
        st = data.stability.summary
        iv = data.stability.intervals.summary if data.stability.intervals is not None else {}
        every = f"all {len(st.runs)} compared runs ({counted(st.n_pairs, 'pair')})"
        rows += [
            [
                q if not rows else "",
                f"mean J_doc / mean J_span, {every}",
                f"{fmt(st.mean_j_doc)}{ci(iv.get('mean_j_doc'))} / {fmt(st.mean_j_span)}{ci(iv.get('mean_j_span'))}",
            ],
            ["", f"gap ratio (J_doc ÷ J_span), {every}", fmt(st.gap_ratio) + ci(iv.get("gap_ratio"))],
            [
                "",
                f"collapse rate (some pair at J_span = 0), {every}",
                pct(st.collapse_rate) + ci(iv.get("collapse_rate"), percent=True),
            ],
        ]
    fid = data.fidelity
    roles = {data.verdict.baseline: "baseline", data.verdict.candidate: "candidate"} if data.verdict else {}
    shown = [(r, role) for r, role in roles.items() if r in fid]  # the reviewed pair's runs that have provenance
    if not shown:
        shown = [(r, "not in the reviewed pair" if roles else "") for r in list(fid)[:3]]
    for run, role in shown:
        s = fid[run].summary
        upper, median, tail = _readings(s)
        note = (
            " — the median is far lower: most queries' citations fail"
            if (upper is not None and median is not None and upper - median >= 0.5)
            else ""
        )
        rows.append(
            [
                "Do citations survive?" if not any(r[0].startswith("Do citations") for r in rows) else "",
                f"CFS of {isolate(run)}{f' ({role})' if role else ''}: 95th percentile / median / "
                "5th percentile (the tail reading of p95)" + _cited(s),
                f"{fmt(upper)} / {fmt(median)} / {fmt(tail)}{note}",
            ]
        )
    if not rows:
        rows.append(["—", "no stability or fidelity data in this report", ""])
    return rows


def _readings(s: dict) -> tuple[float | None, float | None, float | None]:
    """A run's CFS at its 95th percentile, median and 5th percentile: seed 002's "p95" read both
    ways (:func:`ragaudit_core.fidelity.score.tail_comment`), whichever convention the run was
    computed under, so the summary shows the figure the gate's tail rule judges beside the upper one."""
    tail_first = s.get("percentile_convention") == "tail"
    keys = ("cfs_p95_other", "cfs_p95") if tail_first else ("cfs_p95", "cfs_p95_other")
    return s.get(keys[0]), s.get("cfs_p50"), s.get(keys[1])


def _decided_by(v: Verdict) -> str:
    """The title over the rules the verdict rests on. A verdict left inconclusive only because the
    overlap could not be judged (``unjudged``) was not decided by the rules that passed: the title
    says they are what could be checked."""
    if v.unjudged and not any(r.status == "inconclusive" for r in v.results):
        return "What could be checked (the overlap could not, as said above):"
    return "What decided it" + (" (failed rules first)" if v.failed else "") + ":"


def _cited(s: dict) -> str:
    """What a run's CFS percentiles rest on: its queries with citations, of its queries."""
    n, cited = s.get("n_queries"), s.get("n_with_citations")
    return f", over the {cited} of {counted(n, 'query')} with citations" if n and cited is not None else ""


def _pointers(data: ReportData) -> list[str]:
    out = []
    if data.verdict is not None and data.verdict.failed:
        n = len(data.verdict.failed)
        out.append(f"Verdict: {counted(n, 'failed rule')} with {'its' if n == 1 else 'their'} values and reasons.")
    if data.worst:
        w = data.worst[0]
        out.append(
            f"Worst queries: starts with query {isolate(w.query_id)} ({isolate(w.run_a)} vs {isolate(w.run_b)}: "
            f"J_doc {fmt(w.j_doc)}, J_span {fmt(w.j_span)}), both evidence lists side by side."
        )
    if data.fidelity:
        out.append("Citation fidelity: per-stage survival and the queries whose ground truth was lost first.")
    if data.omitted:
        out.append(f"Left out of this report: {counted(len(data.omitted), 'part')}, listed on the cover.")
    if data.failed:
        whose = "its reason" if len(data.failed) == 1 else "their reasons"
        out.append(f"Could not be built: {counted(len(data.failed), 'part')}, named with {whose} on the cover.")
    return out or ["Methods: how every figure is computed, with its source."]

"""The report's sections, one function each, drawn in the order of :data:`SECTIONS`.

Each section takes the PDF and the gathered :class:`ReportData` and draws nothing when its
data is absent (the cover names what was left out and why).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fpdf.fonts import TextStyle
from fpdf.outline import TableOfContents

from ragaudit_core.logs.selection import natural_key
from ragaudit_core.review.labels import change_label, rule_label
from ragaudit_core.review.logtext import excerpt, isolate
from ragaudit_core.review.report.attribution_section import attributions
from ragaudit_core.review.report.conclusion import conclusion
from ragaudit_core.review.report.fidelity_section import fidelity_section
from ragaudit_core.review.report.gather import ReportData
from ragaudit_core.review.report.layout import (
    BAD,
    OK,
    STATUS_TEXT,
    WARN,
    ReportPDF,
    ci,
    ci_note,
    fmt,
    font_names,
    json_or_empty,
    pct,
)
from ragaudit_core.review.report.methods import METHODS, SOURCES
from ragaudit_core.review.report.quality_section import quality_section
from ragaudit_core.review.report.summary import executive_summary
from ragaudit_core.stability.uncertainty import StabilityIntervals
from ragaudit_core.wording import counted

__all__ = ["SECTIONS", "Section"]


def cover(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    pdf.add_page()
    pdf.heading("RagAudit audit report", 22, 12)
    pdf.para("Evidence stability · citation fidelity · retriever–generator alignment", size=11, style="I")
    pdf.gap(3)
    info = [
        ["generated", data.generated_at],
        ["tool", f"RagAudit {data.version}"],
        ["database", data.db_label or "(in memory)"],
        ["data version", data.data_version],
        [
            "runs",
            f"{len(data.runs)} with evidence logs"
            + (f", {len(data.prov_runs)} with provenance logs" if not data.prov_runs.empty else ""),
        ],
        ["queries (distinct ids)", f"{data.n_queries:,}"],
        ["input files", str(len(data.files))],
        ["rejected lines", f"{data.n_rejected:,}"],
        *([["refused files", f"{data.n_refused:,}"]] if data.n_refused else []),
    ]
    if data.verdict is not None:
        v = data.verdict
        info.insert(
            0, ["pair under review", f"{isolate(v.candidate)} (candidate) against {isolate(v.baseline)} (baseline)"]
        )
        info.insert(
            1,
            ["verdict", v.headline()],
        )
        # the executive summary's recommendation, verbatim: the cover alone says what to do and why
        # (never capitalised: it may start with a run id)
        info.insert(2, ["recommendation", conclusion(v, pdf.numbers, len(data.runs))[1]])
    pdf.data_table(None, info, widths=[45, W - 45], size=9)
    if not data.runs.empty:
        pdf.para("Runs audited (evidence logs)", size=10.5, style="B")
    run_rows = [
        [
            r.run_id,
            fmt(r.top_k),
            fmt(r.chunk_size),
            fmt(r.chunk_overlap),
            r.embedder or "—",
            f"{int(r.queries):,}",
            f"{int(r.entries):,}",
            f"{int(r.answers):,}",
        ]
        for r in data.runs.itertuples()
    ]
    if run_rows:
        pdf.data_table(
            ["run", "top-k", "chunk size", "overlap", "embedder", "queries", "entries", "answers"],
            run_rows,
            widths=[30, 13, 16, 14, W - 30 - 13 - 16 - 14 - 16 - 16 - 16, 16, 16, 16],
            size=7.5,
        )
    if not data.prov_runs.empty:
        pdf.para("Provenance runs (citation pipelines)", size=10.5, style="B")
        prow = []
        for r in data.prov_runs.itertuples():
            cfg = json_or_empty(r.config)
            prow.append(
                [
                    r.run_id,
                    fmt(cfg.get("top_k")),
                    fmt(cfg.get("chunk_size")),
                    fmt(cfg.get("chunk_overlap")),
                    str(cfg.get("generator") or "—"),
                    f"{int(r.queries):,}",
                    f"{int(r.with_ground_truth):,}",
                ]
            )
        pdf.data_table(
            ["run", "top-k", "chunk size", "overlap", "generator", "queries", "with ground truth"],
            prow,
            widths=[30, 13, 16, 14, W - 30 - 13 - 16 - 14 - 16 - 22, 16, 22],
            size=7.5,
        )
    if data.failed:
        pdf.para(
            "Could not be built (the rest of the report is drawn): " + "; ".join(data.failed) + ".",
            size=8.5,
            style="B",
            colour=STATUS_TEXT["fail"],
        )
    if data.omitted:
        pdf.para("Sections left out (their data is absent): " + "; ".join(data.omitted) + ".", size=8.5, style="I")
    its, is_ = ("its", "is") if len(data.files) == 1 else ("their", "are")
    pdf.para(
        f"The {counted(len(data.files), 'input file')}, with the SHA-256 of {its} bytes as loaded, {is_} listed in "
        "“Input files and rendering” near the end.",
        size=8.5,
    )


def inputs(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    pdf.para("Every file loaded into the audited database, with the SHA-256 of its bytes as loaded.", size=8.5)
    pdf.data_table(
        ["file", "SHA-256", "lines", "loaded", "rejected"],
        [
            [Path(str(f.path)).name, f.sha256, f"{int(f.n_lines):,}", f"{int(f.n_loaded):,}", f"{int(f.n_rejected):,}"]
            for f in data.files.itertuples()
        ],
        widths=[45, W - 45 - 42, 14, 14, 14],
        size=6.8,
    )
    if data.labels:
        pdf.para(f"Relevance labels (ranking quality): {isolate(data.labels)}; not hashed when loaded.", size=8.5)
    pdf.sub_section("Rendering notes")
    plan = pdf.plan
    notes = [
        f"Charts: the dashboard's Plotly figures exported to PNG by Kaleido ({len(pdf.chart_images)} of "
        f"{len(data.figures)} drawn)" + (f"; {pdf.chart_error}" if pdf.chart_error else "") + ".",
        font_names(plan),
    ]
    if plan.missing:
        notes.append(
            f"{counted(len(plan.missing), 'character')} in the logs "
            + (
                "has no glyph in any installed font and is drawn as its code point: "
                if len(plan.missing) == 1
                else "have no glyph in any installed font and are drawn as their code points: "
            )
            + " ".join(f"U+{ord(c):04X}" for c in plan.missing[:40])
            + (" …" if len(plan.missing) > 40 else "")
            + "."
        )
    for n in notes:
        pdf.para(n, size=8.3)


def contents(pdf: ReportPDF, data: ReportData) -> None:
    pdf.add_page()
    pdf.heading("Contents", 15, 10)
    toc = TableOfContents(
        text_style=TextStyle(font_family="Sans", font_size_pt=10),
        level_indent=6,
        line_spacing=1.6,
        ignore_pages_before_toc=False,
    )
    pdf.insert_toc_placeholder(toc.render_toc, pages=1, allow_extra_pages=True, reset_page_indices=False)


def verdict(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    v = data.verdict
    if v is None:  # the section is drawn only with a verdict (SECTIONS)
        return
    colour = STATUS_TEXT[v.status]
    verb = {"pass": "may replace", "fail": "should not replace", "inconclusive": "cannot yet be judged against"}
    pdf.para(
        f"{v.status.upper()}: {isolate(v.candidate)} {verb[v.status]} {isolate(v.baseline)}.",
        size=13,
        style="B",
        colour=colour,
        align="L",
    )
    pdf.para(v.headline() + ".", size=9.5)
    pdf.para(
        f"Rules: {data.rules_source}. Failed rules first, then inconclusive ones (a rule asking for significance "
        "whose 95 % interval straddles its threshold, or too few queries); a rule whose data is absent is not "
        "applicable and does not fail the gate unless the rules require it. Relative rules compare the change "
        "candidate − baseline.",
        size=8.5,
    )
    pdf.gap(1)
    rows, styles = pdf.status_rows(
        [(r.status, rule_label(r.rule), r.value, r.message) for r in v.sorted_results()],
        {"fail": BAD, "pass": OK, "inconclusive": WARN},
    )
    pdf.data_table(["status", "rule", "value", "why"], rows, widths=[13, 42, 14, W - 69], styles=styles, size=7.5)


def _interval_row(iv: StabilityIntervals | None) -> list[list[str]]:
    """The headline figures' 95 % intervals, under their values; none when no figure has one."""
    if iv is None:
        return []
    e = iv.summary.get
    doc_flip, span_flip = (ci(e(f"flip_rate_{lv}"), percent=True).strip() for lv in ("doc", "span"))
    row = [
        ci(e("mean_j_doc")).strip(),
        ci(e("mean_j_span")).strip(),
        ci(e("gap_ratio")).strip(),
        ci(e("collapse_rate"), percent=True).strip(),
        f"{doc_flip or 'n/a'} / {span_flip or 'n/a'}" if doc_flip or span_flip else "",
        "",
        "",
    ]
    return [row] if any(row) else []


_PAIR_CELLS = (
    ("j_avg", "doc", False),
    ("j_avg", "span", False),
    ("flip_rate", "doc", True),
    ("flip_rate", "span", True),
    ("collapse_rate", "span", True),
    ("null_loss", "doc", True),
    ("null_gain", "doc", True),
)
"""The per-pair table's figure columns: metric, level, written as a percentage."""


def _pair_table_rows(a: str, b: str, changed: object, r: Any, iv: StabilityIntervals | None) -> list[list[str]]:
    """A pair's row of the per-pair table, each figure with its 95 % interval on the line under it
    in the same cell (a row of its own could be carried to the next page away from its pair)."""
    values = [(pct if p else fmt)(r.get((m, lv))) for m, lv, p in _PAIR_CELLS]
    if iv is not None:
        spans = [_span(iv.pair(a, b, lv, m), percent=p) for m, lv, p in _PAIR_CELLS]
        values = [f"{v}\n{s}" if s else v for v, s in zip(values, spans, strict=True)]
    return [[a, b, change_label(changed), *values]]


def _span(e: Any, percent: bool) -> str:
    """An interval as the dense per-pair table writes it, to fit its columns: ``0.60–0.66`` (two
    decimals), ``20–30%`` (whole percents) — one more decimal where that rounding would make both
    bounds one number or leave the value (written as :func:`fmt` or :func:`pct` write it) outside
    them (0.009 under "0.01–0.01"); empty without bounds."""
    if e is None or e.lo != e.lo or e.hi != e.hi:
        return ""
    scale, nd, unit = (100, 0, "%") if percent else (1, 2, "")
    lo, hi, v = e.lo * scale, e.hi * scale, e.value * scale
    if round(lo, nd) == round(hi, nd) or (v == v and not round(lo, nd) <= round(v, nd + 1) <= round(hi, nd)):
        nd += 1
    return f"{lo:.{nd}f}–{hi:.{nd}f}{unit}"


def stability(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    res = data.stability
    s = res.summary
    pdf.para(
        f"All {len(s.runs)} compared runs: {counted(s.n_queries, 'query')} × {counted(s.n_pairs, 'run pair')}, "
        "flip threshold "
        f"τ = {data.tau:g}. "
        "Jaccard of each query's "
        "evidence set between two runs, at document level (doc_id) and at span level (doc_id, span_hash) "
        "(Seed 000, §3; see Sources). " + data.stability_scope,
        size=8.5,
    )
    pdf.gap(1)
    iv_row = _interval_row(res.intervals)
    pdf.data_table(
        [
            "mean J_doc",
            "mean J_span",
            "gap ratio",
            "collapse rate (span)",
            "flip rate doc / span",
            "null transitions",
            "median J_min,span",
        ],
        [
            [
                fmt(s.mean_j_doc),
                fmt(s.mean_j_span),
                fmt(s.gap_ratio),
                pct(s.collapse_rate),
                f"{pct(s.flip_rate['doc'])} / {pct(s.flip_rate['span'])}",
                f"{s.null_transitions:,}",
                fmt(s.span.median_j_min),
            ],
            *iv_row,
        ],
        size=8,
    )
    if iv_row and res.intervals is not None:
        pdf.para(ci_note("Second row", res.intervals), size=8, style="I")
    for w in s.warnings:
        pdf.para(f"Warning: {w}", size=8, style="I", colour=(150, 80, 0))
    if s.gap_ratio_note:
        pdf.para(s.gap_ratio_note, size=8, style="I")
    if "stability_scatter" in data.figures:
        pdf.chart("stability_scatter", width=W * 0.82)
    else:
        pdf.para(
            "The document-vs-span chart is left out: no compared pair carries span information on both sides "
            "(span identity needs each entry's text or span hash), so every point would lack its J_span.",
            size=8,
            style="I",
        )
    pdf.sub_section("Per-pair table")
    wide = res.pairs.pivot_table(
        index=["run_a", "run_b", "changed"],
        columns="level",
        values=["j_avg", "flip_rate", "collapse_rate", "null_loss", "null_gain"],
        aggfunc="first",
    )
    wide = wide.loc[sorted(wide.index, key=lambda i: (natural_key(i[0]), natural_key(i[1])))]  # k5 before k10
    rows = [row for (a, b, ch), r in wide.iterrows() for row in _pair_table_rows(a, b, ch, r, res.intervals)]
    pdf.data_table(
        ["run A", "run B", "changed", "J_doc", "J_span", "flip doc", "flip span", "collapse", "null loss", "null gain"],
        rows,
        widths=[25, 25, 22, 13, 13, 14, 14, 14, 15, W - 155],
        size=7,
    )
    if res.intervals is not None and any("\n" in c for row in rows for c in row[3:]):
        pdf.para(
            ci_note("Under each figure", res.intervals)[:-1]
            + ", written to two decimals or whole percents (one more where that rounding would hide the figure's "
            "place in it).",
            size=8,
            style="I",
        )
    _effects(pdf, data)
    pdf.chart("jmin_histogram", width=W * 0.82)


def _effects(pdf: ReportPDF, data: ReportData) -> None:
    """Effects by what changed: each group's figures with their 95 % intervals beside them."""
    eff = data.effects
    if eff is None or eff.empty or set(eff["changed"]) == {"unknown"}:
        return
    W = pdf.epw
    pdf.sub_section("Effects by what changed", need=60)  # the heading, its sentence and the table's first rows
    pdf.para(
        "Run pairs grouped by the one setting that differs between their runs; “several”: the pairs whose "
        "runs differ in more than one. Each figure is the mean over the group's pairs (pairs weigh equally).",
        size=8.5,
    )

    def cell(r: Any, metric: str, percent: bool) -> str:
        return (pct if percent else fmt)(getattr(r, metric)) + ci(
            [getattr(r, f"{metric}_lo"), getattr(r, f"{metric}_hi")], percent=percent
        )

    pdf.data_table(
        ["changed", "level", "pairs", "J_avg", "flip rate", "collapse rate"],
        [
            [
                change_label(r.changed),
                r.level,
                str(int(r.n_pairs)),
                cell(r, "j_avg", False),
                cell(r, "flip_rate", True),
                cell(r, "collapse_rate", True),
            ]
            for r in eff.itertuples()
        ],
        widths=[24, 13, 13, *[(W - 50) / 3] * 3],
        size=8,
    )
    iv = data.stability.intervals
    if iv is not None and eff.filter(like="_lo").notna().to_numpy().any():
        pdf.para(
            ci_note("In brackets", iv)[:-1] + ", the per-pair table's resamples: in each, a group's figure is the "
            "mean of its pairs' (they share their queries), so a group of one pair has that pair's interval.",
            size=8,
            style="I",
        )


def worst_queries(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    unchanged = bool(data.worst) and all((w.j_span if w.j_span is not None else w.j_doc) == 1 for w in data.worst)
    if unchanged:  # "least stable" would read as instability where there is none
        pdf.para(
            f"No query's evidence changed over {data.worst_scope}: J = 1 on every query, so the queries below "
            "are not instabilities, only the first ones, shown for reference.",
            size=8.5,
            style="B",
        )
    pdf.para(
        f"The {counted(len(data.worst), 'least stable query')} over {data.worst_scope}, "
        f"with the first {counted(max(len(w.a) for w in data.worst), 'evidence entry')} of each run side by side. "
        "“in both”: the same "
        "span (or document, without spans) is in the other list; “same doc, other span”: the document "
        "came back but not this span." + (f" {data.worst_ties}" if data.worst_ties else ""),
        size=8.5,
    )
    for w in data.worst:
        # the heading with its question, the pair's line and the table's first row (about 25 mm of texts)
        pdf.sub_section(f"Query {excerpt(w.query_id, 80)}", need=min(120, 50 + 4 * (len(w.query or "") // 100)))
        if w.query:
            pdf.para(w.query, size=9, style="I")
        pdf.para(
            f"A = {isolate(w.run_a)}, B = {isolate(w.run_b)} · J_doc {fmt(w.j_doc)} · J_span {fmt(w.j_span)} · "
            f"{w.n_a} vs {w.n_b} entries",
            size=8,
        )
        rows = []
        for i in range(max(len(w.a), len(w.b))):
            cells = []
            for side in (w.a, w.b):
                if i < len(side):
                    e = side[i]
                    tag = e["status"] + (", same doc, other span" if e["same_doc_other_span"] else "")
                    tag += ", same text, other id" if e.get("same_text_other_id") else ""
                    cells.append(f"#{e['rank']} {e['doc_id']} ({tag})\n{e['text']}".rstrip())
                else:
                    cells.append("")
            rows.append(cells)
        if rows:
            pdf.data_table([f"A: {w.run_a}", f"B: {w.run_b}"], rows, widths=[W / 2, W / 2], size=7)
        else:
            pdf.para("Both runs returned no evidence for this query.", size=8)


def probe(pdf: ReportPDF, data: ReportData) -> None:
    W = pdf.epw
    pdf.para(
        "Does the answer stay the same while its evidence changes? SBERT cosine similarity of the two runs' "
        "answers (all-MiniLM-L6-v2) against the query's span-level Jaccard (seed 000, Table 1). Silent jitter: "
        "J_span < τ while similarity ≥ 0.9.",
        size=8.5,
    )
    pdf.gap(1)
    pdf.data_table(
        ["pair", "answered", "mean J_span", "mean sim", "drift < 0.9", "drift < 0.8", "Spearman ρ", "silent jitter"],
        [row for p in data.probes for row in _probe_rows(p.summary)],
        widths=[44, 16, 17, 16, 22, 22, 18, W - 155],
        size=7.5,
    )
    if any(p.summary.get("intervals") for p in data.probes):
        pdf.para(
            "Second rows: the 95 % bootstrap interval over the pair's answered queries (1,000 resamples, seed 0; "
            "for ρ, ρ recomputed in each resample).",
            size=8,
            style="I",
        )
    pdf.chart("probe_scatter", width=W * 0.8)


def _probe_rows(s: dict) -> list[list[str]]:
    """A probe's Table-1 row, and under it its figures' intervals when it has any."""
    row = [
        s["pair"],
        str(s["n_queries"]),
        fmt(s["mean_j_span"]),
        fmt(s["mean_sim"]),
        f"{s['drift_0.9']} ({pct(s['drift_rate_0.9'])})",
        f"{s['drift_0.8']} ({pct(s['drift_rate_0.8'])})",
        fmt(s["spearman_rho"]),
        fmt(s["silent_jitter"]),
    ]
    iv = s.get("intervals") or {}  # stored [lo, hi] pairs; a probe stored before them has none

    def b(key: str, percent: bool = False) -> str:
        return ci(iv.get(key), percent).strip()

    second = ["", "", b("mean_j_span"), b("mean_sim"), b("drift_rate_0.9", True), b("drift_rate_0.8", True)]
    second += [b("spearman_rho"), ""]
    return [row, second] if any(second) else [row]


def methods(pdf: ReportPDF, data: ReportData) -> None:
    for title, body in METHODS:
        pdf.para(title, size=9.5, style="B")
        pdf.para(body, size=8.3)
        pdf.gap(1.5)
    pdf.sub_section("Sources", need=60)  # the list whole (about 45 mm): never two of its lines alone on a page
    for s_ in SOURCES:
        pdf.para(s_, size=8.3)
        pdf.gap(0.8)


@dataclass(frozen=True)
class Section:
    """A part of the report: its contents title (None: drawn without one, on a page of its
    own making), whether the gathered data holds it, and the function that draws its body."""

    title: str | None
    present: Callable[[ReportData], bool]
    draw: Callable[[ReportPDF, ReportData], None]


def _always(_data: ReportData) -> bool:
    return True


SECTIONS = [
    Section(None, _always, cover),  # page 1: what was audited
    Section(None, _always, executive_summary),  # then what a reviewer reads first
    Section(None, _always, contents),
    Section("Verdict", lambda d: d.verdict is not None, verdict),
    Section("Evidence stability", lambda d: d.stability is not None, stability),
    Section("Worst queries", lambda d: bool(d.worst), worst_queries),
    Section("Evidence–answer probe", lambda d: bool(d.probes), probe),
    Section("Citation fidelity", lambda d: bool(d.fidelity), fidelity_section),
    Section("Attributions", lambda d: bool(d.attributions), attributions),
    Section("Ranking quality", lambda d: d.quality is not None, quality_section),
    Section("Input files and rendering", _always, inputs),
    Section("Methods", _always, methods),
]
"""The report's sections in page order; a top-level section opens on a fresh page."""

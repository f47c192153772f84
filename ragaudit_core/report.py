"""The PDF audit report: what was audited, the verdict, and every section whose data is present.

Two steps, so each can be tested on its own:

* :func:`gather` asks the metric modules for the numbers (the same functions the
  dashboard pages and the CLI call — stability, compare, probe, fidelity, attributions,
  gate) and builds the same Plotly figures as the dashboard (:mod:`charts`);
* :func:`render` lays them out with fpdf2: a cover (runs with their configurations,
  number of queries, input files with SHA-256, tool version, date), a table of
  contents, the verdict, evidence stability (doc-vs-span chart, per-pair table, effects
  by what changed), the worst queries with their evidence excerpts side by side, the
  answer probe, citation fidelity (survival chart, CFS histogram, alerts), attribution
  summaries with WARG curves, and a methods appendix that defines every metric with its
  source. Charts are the dashboard's Plotly figures exported to PNG by Kaleido (headless
  Chromium). Page numbers on every page. Fonts: :mod:`fonts`.

Text from logs is written as plain text (never markup) and control characters are
shown as U+FFFD. A section whose data is absent is left out and named on the cover.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import plotly.graph_objects as go

from . import __version__, catalog, charts, store
from .gate import DEFAULT_RULES, Rule, Verdict, collect, evaluate

__all__ = ["ReportData", "ReportError", "ReportOptions", "build_report", "export_figures", "gather", "render"]


class ReportError(ValueError):
    """The report cannot be built (message says why)."""


@dataclass
class ReportOptions:
    baseline: str | None = None
    candidate: str | None = None
    rules: list[Rule] | None = None          # None: the default preset
    rules_source: str = "default preset"
    tau: float = 0.5
    worst_queries: int = 5
    entries_per_side: int = 5
    excerpt_chars: int = 240
    probe: bool = True                      # compute answer similarity (SBERT) when it is not stored
    embedder: Any = None                    # loaded model or zero-argument loader; default packaged MiniLM
    db_label: str = ""


@dataclass
class ReportData:
    generated_at: str
    version: str
    db_label: str
    data_version: str
    runs: pd.DataFrame
    prov_runs: pd.DataFrame
    files: pd.DataFrame
    n_queries: int
    n_rejected: int
    tau: float = 0.5
    omitted: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    rules_source: str = ""
    stability: Any = None                   # StabilityResult
    effects: pd.DataFrame | None = None
    worst: list[dict] = field(default_factory=list)
    worst_scope: str = ""
    probes: list = field(default_factory=list)          # ProbeResult
    fidelity: dict = field(default_factory=dict)        # run → RunFidelity
    canary: dict | None = None
    attributions: dict = field(default_factory=dict)    # run → {"failure": df, "warg": df}
    figures: dict[str, go.Figure] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def _tick(timings: dict, key: str, t0: float) -> float:
    t = time.perf_counter()
    timings[key] = round(t - t0, 3)
    return t


def gather(con: duckdb.DuckDBPyConnection, opts: ReportOptions = ReportOptions(),
           progress: Callable[[str], None] | None = None) -> ReportData:
    """Every number and figure the report shows, from an ingested database."""
    from .compare import compare_runs
    from .derived import stability_cached
    from .drilldown import evidence_side_by_side
    from .fidelity import canary, fidelity_runs, provenance_runs
    from .stability import StabilityError, StabilityOptions, effects_by_change, list_runs

    say = progress or (lambda _m: None)
    timings: dict[str, float] = {}
    t = time.perf_counter()
    runs = catalog.runs_table(con)
    prov_table = catalog.provenance_runs_table(con)
    if runs.empty and prov_table.empty:
        raise ReportError("the database holds no runs; ingest logs first")
    evidence_runs = list_runs(con)
    known = catalog.all_run_ids(con)
    for r in (opts.baseline, opts.candidate):
        if r is not None and r not in known:
            raise ReportError(f"run {r!r} not found; runs are: {', '.join(map(repr, known))}")
    if (opts.baseline is None) != (opts.candidate is None):
        raise ReportError("give both a baseline and a candidate run, or neither")
    ov = catalog.overview(con)
    data = ReportData(
        generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), version=__version__,
        db_label=opts.db_label, data_version=store.data_version(con), runs=runs, prov_runs=prov_table,
        files=catalog.files_table(con),
        n_queries=_distinct_queries(con), n_rejected=ov["rejected"], tau=opts.tau, timings=timings)
    t = _tick(timings, "catalog", t)

    pair = (opts.baseline, opts.candidate) if opts.baseline is not None else None
    if pair:
        say("verdict")
        rules = opts.rules if opts.rules is not None else DEFAULT_RULES
        cmp = (compare_runs(con, *pair, tau=opts.tau)
               if pair[0] != pair[1] and set(pair) <= set(evidence_runs) else None)
        data.verdict = evaluate(rules, *pair, *collect(con, *pair, tau=opts.tau, comparison=cmp))
        data.rules_source = opts.rules_source
        t = _tick(timings, "verdict", t)
    else:
        cmp = None
        data.omitted.append("verdict (no baseline and candidate were chosen)")

    say("stability")
    if len(evidence_runs) >= 2:
        try:
            res = stability_cached(con, StabilityOptions(flip_threshold=opts.tau, allow_missing=True))
        except StabilityError as e:
            res = None
            data.omitted.append(f"evidence stability ({e})")
        if res is not None:
            data.stability = res
            data.effects = effects_by_change(res.pairs)
            data.figures["stability_scatter"] = charts.stability_scatter(res.pairs, gap_ratio=res.summary["gap_ratio"],
                                                                         highlight=tuple(sorted(pair)) if pair else None)
            data.figures["jmin_histogram"] = charts.jmin_histogram(res.queries)
    else:
        data.omitted.append("evidence stability (it compares the evidence logs of two or more runs; "
                            f"{len(evidence_runs)} loaded)")
    t = _tick(timings, "stability", t)

    say("worst queries")
    if cmp is not None:
        data.worst_scope = f"the reviewed pair, {pair[0]} (A) vs {pair[1]} (B)"
        picks = [(r.query_id, pair[0], pair[1], r.j_doc, None if pd.isna(r.j_span) else r.j_span)
                 for r in cmp.queries.head(opts.worst_queries).itertuples()]
    elif data.stability is not None:
        q = data.stability.queries
        level = "span" if (q["level"] == "span").any() else "doc"
        q = q[q["level"] == level].sort_values(["j_min", "query_id"]).head(opts.worst_queries)
        data.worst_scope = f"every run pair: each query's worst pair at {level} level (J_min)"
        picks = [(r.query_id, r.run_a, r.run_b, None, None) for r in q.itertuples()]
    else:
        picks = []
    pair_cells: dict[tuple[str, str], pd.DataFrame] = {}
    for qid, a, b, jd, js in picks:
        ea, eb = evidence_side_by_side(con, qid, a, b)
        cur = con.cursor()
        try:
            qt = cur.execute("SELECT any_value(query) FROM records WHERE query_id = ? AND run_id IN (?, ?)",
                             [qid, a, b]).fetchone()[0]
        finally:
            cur.close()
        if jd is None:            # J_min mode: this query's worst pair, computed once per pair
            if (a, b) not in pair_cells:
                pair_cells[(a, b)] = compare_runs(con, a, b, tau=opts.tau).queries.set_index("query_id")
            cells = pair_cells[(a, b)]
            jd = float(cells.loc[qid, "j_doc"])
            js = None if pd.isna(cells.loc[qid, "j_span"]) else float(cells.loc[qid, "j_span"])
        data.worst.append({"query_id": qid, "query": qt, "run_a": a, "run_b": b, "j_doc": jd, "j_span": js,
                           "a": _entries(ea, opts), "b": _entries(eb, opts), "n_a": len(ea), "n_b": len(eb)})
    t = _tick(timings, "worst_queries", t)

    say("answer probe")
    _probes(con, data, opts, pair)
    t = _tick(timings, "probe", t)

    say("citation fidelity")
    prov = provenance_runs(con)
    if prov:
        data.fidelity = fidelity_runs(con, prov)
        summaries = {r: f.summary for r, f in data.fidelity.items()}
        data.figures["survival_funnel"] = charts.survival_funnel(summaries)
        data.figures["cfs_histogram"] = charts.cfs_histogram(
            {r: f.queries["cfs"].dropna().tolist() for r, f in data.fidelity.items()}, summaries=summaries,
            threshold=0.85)
        if pair and all(r in data.fidelity for r in pair) and pair[0] != pair[1]:
            data.canary = {"baseline": pair[0], "candidate": pair[1], **canary(
                data.fidelity[pair[0]].queries["cfs"].dropna(), data.fidelity[pair[1]].queries["cfs"].dropna())}
    else:
        data.omitted.append("citation fidelity (no provenance logs)")
    t = _tick(timings, "fidelity", t)

    say("attributions")
    from .attribution import batch_tables

    for run in evidence_runs:
        tables = batch_tables(con, run)
        if tables:
            data.attributions[run] = tables
    if data.attributions:
        means = {}
        for run, tables in data.attributions.items():
            for _, row in tables["warg"].iterrows():
                means[f"{run}, {row['condition']}"] = {c[5:]: row[c] for c in tables["warg"].columns
                                                       if c.startswith("warg_") and pd.notna(row[c])}
        data.figures["warg_curves"] = charts.warg_curves(
            {}, run_means=means, title="Mean WARG(p) over each run's explained queries (seed 001, Table 3)")
    else:
        data.omitted.append("attributions (none stored; run `ragaudit attribute` or the Attributions page)")
    _tick(timings, "attributions", t)
    return data


def _distinct_queries(con) -> int:
    cur = con.cursor()
    try:
        return int(cur.execute("""SELECT count(*) FROM (SELECT query_id FROM records UNION
                                                        SELECT query_id FROM prov_records)""").fetchone()[0])
    finally:
        cur.close()


def _entries(frame: pd.DataFrame, opts: ReportOptions) -> list[dict]:
    out = []
    for r in frame.head(opts.entries_per_side).itertuples():
        text = r.text if isinstance(r.text, str) else ""
        text = " ".join(text.split())
        if len(text) > opts.excerpt_chars:
            text = text[: opts.excerpt_chars - 1] + "…"
        out.append({"rank": int(r.position) + 1, "doc_id": r.doc_id, "status": r.status,
                    "same_doc_other_span": bool(r.same_doc_other_span), "text": text})
    return out


def _probes(con, data: ReportData, opts: ReportOptions, pair) -> None:
    from .probe import DEFAULT_SIMILARITY_MODEL, has_answers, lookup_similarities, probe_pair

    cur = con.cursor()
    try:
        answered = [r for (r,) in cur.execute(
            "SELECT DISTINCT run_id FROM records WHERE answer IS NOT NULL ORDER BY run_id").fetchall()]
    finally:
        cur.close()
    if len(answered) < 2:
        data.omitted.append("answer probe (fewer than two runs carry answers)")
        return
    anchor = pair[0] if pair and pair[0] in answered else (
        "k10-c256-o32" if "k10-c256-o32" in answered else answered[0])
    pairs = [(anchor, r) for r in answered if r != anchor]
    if pair and pair[0] != pair[1] and all(r in answered for r in pair) and tuple(pair) not in pairs:
        pairs.insert(0, tuple(pair))
    loaded: list = []

    def encoder():
        if not loaded:
            e = opts.embedder
            if e is None:
                from .models import load_embedder

                e = load_embedder
            loaded.append(e() if callable(e) and not hasattr(e, "encode") else e)
        return loaded[0]

    skipped = []
    for a, b in pairs:
        if not opts.probe:        # only pairs whose every similarity is stored: no model load
            if len(lookup_similarities(con, a, b, model=DEFAULT_SIMILARITY_MODEL)) < has_answers(con, a, b):
                skipped.append(f"{a} vs {b}")
                continue
        data.probes.append(probe_pair(con, a, b, encoder, tau=opts.tau))
    if skipped:
        data.omitted.append("answer probe for " + ", ".join(skipped) + " (similarities not computed yet)")
    if data.probes:
        p0 = data.probes[0]
        data.figures["probe_scatter"] = charts.probe_scatter(p0.rows, tau=opts.tau, title=f"{p0.run_a} vs {p0.run_b}")


# --------------------------------------------------------------------------- charts → PNG


def export_figures(figs: dict[str, go.Figure], *, width: int = 780, scale: float = 2.0) -> tuple[dict[str, bytes], str | None]:
    """PNG bytes of each figure (Kaleido, one headless Chromium for all), and an error
    message when export is impossible (no Chromium): the report then says so in place
    of each chart."""
    if not figs:
        return {}, None
    with _EXPORT_LOCK:       # one Kaleido server per process: concurrent reports take turns
        return _export(figs, width, scale)


_EXPORT_LOCK = threading.Lock()


def _export(figs: dict[str, go.Figure], width: int, scale: float) -> tuple[dict[str, bytes], str | None]:
    import kaleido
    import plotly.io as pio

    out: dict[str, bytes] = {}
    try:
        kaleido.start_sync_server(headless=True, silence_warnings=True)
    except Exception as e:  # noqa: BLE001 - any failure to start Chromium is reported, not raised
        return {}, f"charts could not be exported ({type(e).__name__}: {e}); install Chromium for Kaleido"
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, fig in figs.items():
                height = int(fig.layout.height or 450)
                out[name] = pio.to_image(fig, format="png", width=width, height=height, scale=scale)
    except Exception as e:  # noqa: BLE001
        return out, f"charts could not be exported ({type(e).__name__}: {e}); install Chromium for Kaleido"
    finally:
        try:
            kaleido.stop_sync_server(silence_warnings=True)
        except Exception:  # noqa: BLE001
            pass
    return out, None


# --------------------------------------------------------------------------- layout


def _clean(text: Any) -> str:
    """Plain text for the PDF: control characters become U+FFFD; tabs and newlines stay."""
    s = "" if text is None else str(text)
    return "".join(c if (c >= " " or c in "\n\t") and c != "\x7f" else "\ufffd" for c in s)


def _json_or_empty(v: Any) -> dict:
    import json

    try:
        out = json.loads(v) if isinstance(v, str) else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _fmt(v: Any, nd: int = 3) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def _pct(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and v != v) else f"{v:.1%}"


def _strings(data: ReportData) -> set[str]:
    """Every character the report will draw (for font planning)."""
    chars: set[str] = set()

    def add(v):
        if isinstance(v, str):
            chars.update(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                add(k)
                add(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
        elif isinstance(v, pd.DataFrame):
            for c in v.columns:
                add(str(c))
                if v[c].dtype == object or str(v[c].dtype).startswith("string"):
                    for x in v[c].dropna():
                        add(str(x))

    add([data.runs, data.prov_runs, data.files, data.worst, data.omitted, data.db_label, data.rules_source])
    if data.verdict is not None:
        add([r.message for r in data.verdict.results] + [r.rule.name for r in data.verdict.results])
    for p in data.probes:
        add(p.rows[["query_id"]])
    for f in data.fidelity.values():
        add([f.alerts, f.citations, f.findings, f.summary])
    if data.stability is not None:
        add([data.stability.pairs, data.stability.summary.get("warnings", [])])
    add(list(data.attributions))
    chars.update(_METHODS_TEXT)
    return chars


def render(data: ReportData, out: str | Path | None = None, *, chart_images: dict[str, bytes] | None = None,
           progress: Callable[[str], None] | None = None) -> bytes:
    """Lay ``data`` out as a PDF; returns its bytes (and writes ``out`` when given)."""
    from fpdf import FPDF, FontFace
    from fpdf.enums import XPos, YPos
    from fpdf.fonts import TextStyle
    from fpdf.outline import TableOfContents

    from .fonts import plan_fonts

    say = progress or (lambda _m: None)
    t = time.perf_counter()
    if chart_images is None:
        say("charts")
        chart_images, chart_error = export_figures(data.figures)
    else:
        chart_error = None
    t = _tick(data.timings, "charts", t)
    plan = plan_fonts(_strings(data))
    say("layout")

    class PDF(FPDF):
        def footer(self):
            self.set_y(-12)
            self.set_font("Sans", size=7.5)
            self.set_text_color(110)
            self.cell(0, 6, _clean(f"RagAudit {data.version} audit report · {data.generated_at} · "
                                   f"page {self.page_no()} of {{nb}}"), align="C")
            self.set_text_color(0)

    pdf = PDF(format="A4", unit="mm")
    pdf.set_margins(15, 15, 15)
    pdf.set_auto_page_break(True, margin=16)
    pdf.set_title("RagAudit audit report")
    pdf.set_author(f"RagAudit {data.version}")
    pdf.set_creator("RagAudit")
    pdf.add_font("Sans", "", plan.regular.path)
    pdf.add_font("Sans", "B", (plan.bold or plan.regular).path)
    pdf.add_font("Sans", "I", (plan.italic or plan.regular).path)
    pdf.add_font("Mono", "", (plan.mono or plan.regular).path)
    names = []
    for i, spec in enumerate(plan.fallbacks):
        pdf.add_font(f"Fallback{i}", "", spec.path, collection_font_number=spec.index)
        names.append(f"Fallback{i}")
    if names:
        pdf.set_fallback_fonts(names, exact_match=False)
    if plan.needs_shaping:
        try:
            pdf.set_text_shaping(True)
        except Exception:  # noqa: BLE001 - uharfbuzz missing: glyphs still drawn, unshaped
            pass
    pdf.set_section_title_styles(
        TextStyle(font_family="Sans", font_style="B", font_size_pt=15, t_margin=2, b_margin=3, color=(20, 50, 90)),
        TextStyle(font_family="Sans", font_style="B", font_size_pt=11.5, t_margin=4, b_margin=2, color=(20, 50, 90)))
    W = pdf.epw

    def para(text: str, size: float = 9.5, style: str = "", h: float | None = None, colour=None) -> None:
        pdf.set_font("Sans", style, size)
        if colour:
            pdf.set_text_color(*colour)
        pdf.multi_cell(W, h or size * 0.48, _clean(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.set_text_color(0)

    def gap(mm: float = 2.5) -> None:
        pdf.ln(mm)

    def table(headings: list[str] | None, rows: list[list[Any]], widths: list[float] | None = None, size: float = 7.5,
              styles: list[list[Any]] | None = None, wrap_char: bool = False) -> None:
        from fpdf.enums import WrapMode

        pdf.set_font("Sans", "", size)
        with pdf.table(col_widths=tuple(widths) if widths else None, text_align="LEFT", line_height=size * 0.5,
                       first_row_as_headings=headings is not None, repeat_headings=1, padding=0.8,
                       headings_style=FontFace(emphasis="BOLD", fill_color=(226, 232, 240)),
                       wrapmode=WrapMode.CHAR if wrap_char else WrapMode.WORD) as tb:
            if headings is not None:
                row = tb.row()
                for h in headings:
                    row.cell(_clean(h))
            for i, r in enumerate(rows):
                row = tb.row()
                for j, v in enumerate(r):
                    style = styles[i][j] if styles else None
                    row.cell(_clean(v if isinstance(v, str) else _fmt(v)), style=style)
        gap(2)

    def chart(name: str, width: float | None = None) -> None:
        png = chart_images.get(name)
        if png is None:
            para(f"[chart “{name}” not drawn: {chart_error or 'no image'}]", size=8, style="I", colour=(150, 0, 0))
            return
        from PIL import Image

        im = Image.open(io.BytesIO(png))
        w = width or W
        h = w * im.height / im.width
        if pdf.get_y() + h > pdf.page_break_trigger:
            pdf.add_page()
        pdf.image(io.BytesIO(png), x=pdf.l_margin + (W - w) / 2, w=w, h=h)
        gap(2)

    def fresh_page() -> None:
        # a new page unless the current one is still empty (the contents placeholder leaves one)
        if pdf.page == 0 or pdf.get_y() > pdf.t_margin + 0.5:
            pdf.add_page()

    ok_style = FontFace(fill_color=(220, 242, 220))
    bad_style = FontFace(fill_color=(250, 215, 215), emphasis="BOLD")
    na_style = FontFace(color=(120, 120, 120))

    # ---- cover ------------------------------------------------------------------------------
    pdf.add_page()
    pdf.set_font("Sans", "B", 22)
    pdf.set_text_color(20, 50, 90)
    pdf.cell(W, 12, "RagAudit audit report", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_text_color(0)
    para("Evidence stability · citation fidelity · retriever–generator alignment", size=11, style="I")
    gap(3)
    info = [["generated", data.generated_at], ["tool", f"RagAudit {data.version}"],
            ["database", data.db_label or "(in memory)"], ["data version", data.data_version],
            ["runs", f"{len(data.runs)} with evidence logs" + (f", {len(data.prov_runs)} with provenance logs"
                                                                 if not data.prov_runs.empty else "")],
            ["queries (distinct ids)", f"{data.n_queries:,}"],
            ["input files", str(len(data.files))], ["rejected lines", f"{data.n_rejected:,}"]]
    if data.verdict is not None:
        v = data.verdict
        info.insert(0, ["pair under review", f"{v.candidate} (candidate) against {v.baseline} (baseline)"])
        info.insert(1, ["verdict", f"{v.status.upper()} — {len(v.failed)} of "
                                   f"{sum(r.status != 'not applicable' for r in v.results)} applicable rules failed"])
    table(None, info, widths=[45, W - 45], size=9)
    if not data.runs.empty:
        para("Runs audited (evidence logs)", size=10.5, style="B")
    run_rows = [[r.run_id, _fmt(r.top_k), _fmt(r.chunk_size), _fmt(r.chunk_overlap), r.embedder or "—",
                 f"{int(r.queries):,}", f"{int(r.entries):,}", f"{int(r.answers):,}"] for r in data.runs.itertuples()]
    if run_rows:
        table(["run", "top-k", "chunk size", "overlap", "embedder", "queries", "entries", "answers"], run_rows,
              widths=[30, 13, 16, 14, W - 30 - 13 - 16 - 14 - 16 - 16 - 16, 16, 16, 16], size=7.5)
    if not data.prov_runs.empty:
        para("Provenance runs (citation pipelines)", size=10.5, style="B")
        prow = []
        for r in data.prov_runs.itertuples():
            cfg = _json_or_empty(r.config)
            prow.append([r.run_id, _fmt(cfg.get("top_k")), _fmt(cfg.get("chunk_size")), _fmt(cfg.get("chunk_overlap")),
                         str(cfg.get("generator") or "—"), f"{int(r.queries):,}", f"{int(r.with_ground_truth):,}"])
        table(["run", "top-k", "chunk size", "overlap", "generator", "queries", "with ground truth"], prow,
              widths=[30, 13, 16, 14, W - 30 - 13 - 16 - 14 - 16 - 22, 16, 22], size=7.5)
    para("Input files (SHA-256 of the bytes as loaded)", size=10.5, style="B")
    table(["file", "SHA-256", "lines", "loaded", "rejected"],
          [[Path(str(f.path)).name, f.sha256, f"{int(f.n_lines):,}", f"{int(f.n_loaded):,}", f"{int(f.n_rejected):,}"]
           for f in data.files.itertuples()],
          widths=[45, W - 45 - 42, 14, 14, 14], size=6.8, wrap_char=True)
    if data.omitted:
        para("Sections left out (their data is absent): " + "; ".join(data.omitted) + ".", size=8.5, style="I")

    # ---- contents ---------------------------------------------------------------------------
    pdf.add_page()
    pdf.set_font("Sans", "B", 15)
    pdf.set_text_color(20, 50, 90)
    pdf.cell(W, 10, "Contents", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_text_color(0)
    toc = TableOfContents(text_style=TextStyle(font_family="Sans", font_size_pt=10), level_indent=6,
                          line_spacing=1.6, ignore_pages_before_toc=False)
    pdf.insert_toc_placeholder(toc.render_toc, pages=1, allow_extra_pages=True, reset_page_indices=False)

    # ---- verdict ----------------------------------------------------------------------------
    if data.verdict is not None:
        v = data.verdict
        fresh_page()
        pdf.start_section("Verdict")
        colour = (20, 120, 40) if v.status == "pass" else (180, 20, 20)
        para(f"{v.status.upper()}: {v.candidate} "
             f"{'may replace' if v.status == 'pass' else 'should not replace'} {v.baseline}.", size=13, style="B",
             colour=colour)
        para(f"Rules: {data.rules_source}. Failed rules first; a rule whose data is absent is not applicable "
             f"and does not fail the gate. Relative rules compare the change candidate − baseline.", size=8.5)
        gap(1)
        rows, styles = [], []
        for r in v.sorted_results():
            st_ = {"fail": bad_style, "pass": ok_style}.get(r.status, na_style)
            rows.append([r.status.upper() if r.status != "not applicable" else "n/a", r.rule.name, _fmt(r.value),
                         r.message])
            styles.append([st_, None, None, None])
        table(["status", "rule", "value", "why"], rows, widths=[13, 42, 14, W - 69], styles=styles, size=7.5)

    # ---- stability --------------------------------------------------------------------------
    if data.stability is not None:
        res = data.stability
        s = res.summary
        fresh_page()
        pdf.start_section("Evidence stability")
        para(f"{s['n_queries']:,} queries × {s['n_pairs']:,} run pairs, flip threshold τ = {data.tau:g}. "
             "Jaccard of each query's "
             "evidence set between two runs, at document level (doc_id) and at span level (doc_id, span_hash); "
             "seed 000.", size=8.5)
        gap(1)
        table(["mean J_doc", "mean J_span", "gap ratio", "collapse rate (span)", "flip rate doc / span",
               "null transitions", "median J_min,span"],
              [[_fmt(s["mean_j_doc"]), _fmt(s["mean_j_span"]), _fmt(s["gap_ratio"]), _pct(s["collapse_rate"]),
                f"{_pct(s['flip_rate']['doc'])} / {_pct(s['flip_rate']['span'])}", f"{s['null_transitions']:,}",
                _fmt(s["span"].get("median_j_min"))]], size=8)
        for w in s.get("warnings", []):
            para(f"Warning: {w}", size=8, style="I", colour=(150, 80, 0))
        if s.get("gap_ratio_note"):
            para(s["gap_ratio_note"], size=8, style="I")
        chart("stability_scatter", width=W * 0.82)
        pdf.start_section("Per-pair table", level=1)
        wide = res.pairs.pivot_table(index=["run_a", "run_b", "changed"], columns="level",
                                     values=["j_avg", "flip_rate", "collapse_rate", "null_loss", "null_gain"],
                                     aggfunc="first")
        rows = []
        for (a, b, ch), r in wide.iterrows():
            rows.append([a, b, ch, _fmt(r.get(("j_avg", "doc"))), _fmt(r.get(("j_avg", "span"))), _pct(r.get(("flip_rate", "doc"))),
                         _pct(r.get(("flip_rate", "span"))), _pct(r.get(("collapse_rate", "span"))),
                         _pct(r.get(("null_loss", "doc"))), _pct(r.get(("null_gain", "doc")))])
        table(["run A", "run B", "changed", "J_doc", "J_span", "flip doc", "flip span", "collapse", "null loss",
               "null gain"], rows, widths=[25, 25, 22, 13, 13, 14, 14, 14, 15, W - 155], size=7)
        if data.effects is not None and not data.effects.empty and set(data.effects["changed"]) != {"unknown"}:
            pdf.start_section("Effects by what changed", level=1)
            para("Pairs that differ in exactly one setting, grouped by that setting (pairs weigh equally).", size=8.5)
            table(["changed", "level", "pairs", "J_avg", "flip rate", "collapse rate"],
                  [[r.changed, r.level, str(int(r.n_pairs)), _fmt(r.j_avg), _pct(r.flip_rate), _pct(r.collapse_rate)]
                   for r in data.effects.itertuples()], size=8)
        chart("jmin_histogram", width=W * 0.82)

    # ---- worst queries ----------------------------------------------------------------------
    if data.worst:
        fresh_page()
        pdf.start_section("Worst queries")
        para(f"The {len(data.worst)} least stable queries over {data.worst_scope}, with the first "
             f"{max(len(w['a']) for w in data.worst)} evidence entries of each run side by side. “in both”: the same "
             "span (or document, without spans) is in the other list; “same doc, other span”: the document "
             "came back but not this span.", size=8.5)
        for w in data.worst:
            pdf.start_section(f"Query {w['query_id']}", level=1)
            if w["query"]:
                para(w["query"], size=9, style="I")
            para(f"A = {w['run_a']}, B = {w['run_b']} · J_doc {_fmt(w['j_doc'])} · J_span {_fmt(w['j_span'])} · "
                 f"{w['n_a']} vs {w['n_b']} entries", size=8)
            rows = []
            for i in range(max(len(w["a"]), len(w["b"]))):
                cells = []
                for side in ("a", "b"):
                    if i < len(w[side]):
                        e = w[side][i]
                        tag = e["status"] + (", same doc, other span" if e["same_doc_other_span"] else "")
                        cells.append(f"#{e['rank']} {e['doc_id']} ({tag})\n{e['text']}".rstrip())
                    else:
                        cells.append("")
                rows.append(cells)
            if rows:
                table([f"A: {w['run_a']}", f"B: {w['run_b']}"], rows, widths=[W / 2, W / 2], size=7)
            else:
                para("Both runs returned no evidence for this query.", size=8)

    # ---- probe ------------------------------------------------------------------------------
    if data.probes:
        fresh_page()
        pdf.start_section("Evidence–answer probe")
        para("Does the answer stay the same while its evidence changes? SBERT cosine similarity of the two runs' "
             "answers (all-MiniLM-L6-v2) against the query's span-level Jaccard (seed 000, Table 1). Silent jitter: "
             "J_span < τ while similarity ≥ 0.9.", size=8.5)
        gap(1)
        table(["pair", "answered", "mean J_span", "mean sim", "drift < 0.9", "drift < 0.8", "Spearman ρ",
               "silent jitter"],
              [[p.summary["pair"], str(p.summary["n_queries"]), _fmt(p.summary["mean_j_span"]),
                _fmt(p.summary["mean_sim"]), f"{p.summary['drift_0.9']} ({_pct(p.summary['drift_rate_0.9'])})",
                f"{p.summary['drift_0.8']} ({_pct(p.summary['drift_rate_0.8'])})", _fmt(p.summary["spearman_rho"]),
                _fmt(p.summary["silent_jitter"])] for p in data.probes],
              widths=[44, 16, 17, 16, 22, 22, 18, W - 155], size=7.5)
        chart("probe_scatter", width=W * 0.8)

    # ---- fidelity ---------------------------------------------------------------------------
    if data.fidelity:
        fresh_page()
        pdf.start_section("Citation fidelity")
        para("Citations extracted from each generated answer and verified against the provenance graph (1.0 exact "
             "source, 0.3 right document wrong page, 0.0 not in the graph); CFS = mean score per query; stage "
             "survival = share of queries keeping a ground-truth source through each stage, given the previous "
             "one (seed 002).", size=8.5)
        gap(1)
        from .fidelity import FIDELITY_STAGES

        stage_names = list(FIDELITY_STAGES.values())
        table(["run", "queries", "with citations", "CFS mean", "p50", "p95", "p99", "product CFS", "parse failures"],
              [[r, str(f.summary["n_queries"]), str(f.summary["n_with_citations"]), _fmt(f.summary["cfs_mean"]),
                      _fmt(f.summary["cfs_p50"]), _fmt(f.summary["cfs_p95"]), _fmt(f.summary["cfs_p99"]),
                      _fmt(f.summary["cfs_product_mean"]), _pct(f.summary["parse_failure_rate"])]
                     for r, f in data.fidelity.items()], size=7.5)
        table(["run"] + [f"{s} survival" for s in stage_names],
              [[r] + [_pct(f.summary["stage_survival"].get(s)) for s in stage_names] for r, f in data.fidelity.items()],
              size=7.5)
        chart("survival_funnel", width=W * 0.8)
        chart("cfs_histogram", width=W * 0.8)
        pdf.start_section("Alerts and failure modes", level=1)
        for r, f in data.fidelity.items():
            rows, styles = [], []
            for a in sorted(f.alerts, key=lambda a: {"alert": 0, "ok": 1}.get(a["status"], 2)):
                rows.append([a["status"].upper() if a["status"] != "not applicable" else "n/a", a["rule"],
                             _fmt(a["value"]), a["message"]])
                styles.append([{"alert": bad_style, "ok": ok_style}.get(a["status"], na_style), None, None, None])
            para(f"Run {r}", size=9, style="B")
            table(["status", "rule", "value", "why"], rows, widths=[14, 34, 14, W - 62], styles=styles, size=7.5)
            fm = f.summary.get("failure_modes") or {}
            outcomes = f.summary.get("outcomes") or {}
            if outcomes:
                para("Citation outcomes: " + ", ".join(f"{k} {v}" for k, v in outcomes.items()), size=8)
            para("Failure modes: " + (", ".join(f"{k} {v}" for k, v in fm.items()) if fm else "none found"), size=8)
            gap(1)
        if data.canary:
            c = data.canary
            verdict = ("significant" if c["significant"] else "not significant" if c["significant"] is False
                       else c.get("note", "not computed"))
            para(f"Canary {c['baseline']} → {c['candidate']}: Mann–Whitney U = {_fmt(c['u'])}, p = {_fmt(c['p_value'])}"
                 f", {verdict} at α = {c['alpha']} (median CFS {_fmt(c['median_a'])} → {_fmt(c['median_b'])}).",
                 size=8.5)

    # ---- attributions -----------------------------------------------------------------------
    if data.attributions:
        fresh_page()
        pdf.start_section("Attributions")
        para("Stored attributions (seed 001, RAG-E): Shapley values of each retrieved document on the generator's "
             "answer, ranked and compared with the retriever's ranking. Wasted retrieval: the retriever's top "
             "document gets generator rank > 2; noise distraction: the generator's top document had retriever "
             "rank > 2. WARG(p) = 1 − RBO truncated at the list depth (identical lists give p^k, not 0).", size=8.5)
        gap(1)
        rows = []
        for run, tables in data.attributions.items():
            for r in tables["failure"].itertuples():
                rows.append([run, r.condition, str(int(r.queries)), _pct(r.wasted_retrieval),
                             _pct(r.noise_distraction), _fmt(r.spearman)])
        table(["run", "condition", "queries", "wasted retrieval", "noise distraction", "mean Spearman"], rows, size=8)
        ps = sorted({c[5:] for t_ in data.attributions.values() for c in t_["warg"].columns if c.startswith("warg_")},
                    key=float)
        rows = [[run, r["condition"]] + [_fmt(r.get(f"warg_{p}")) for p in ps]
                for run, tables in data.attributions.items() for _, r in tables["warg"].iterrows()]
        if rows:
            table(["run", "condition"] + [f"WARG({p})" for p in ps], rows, size=7.5)
        chart("warg_curves", width=W * 0.8)

    # ---- methods ----------------------------------------------------------------------------
    fresh_page()
    pdf.start_section("Methods")
    for title, body in _METHODS:
        para(title, size=9.5, style="B")
        para(body, size=8.3)
        gap(1.5)
    pdf.start_section("Sources", level=1)
    for s_ in _SOURCES:
        para(s_, size=8.3)
        gap(0.8)
    pdf.start_section("Rendering notes", level=1)
    notes = [f"Charts: the dashboard's Plotly figures exported to PNG by Kaleido ({len(chart_images)} of "
             f"{len(data.figures)} drawn)" + (f"; {chart_error}" if chart_error else "") + ".",
             "Fonts: DejaVu Sans" + (f", with {len(plan.fallbacks)} fallback font(s) for characters it lacks: "
                                      + ", ".join(Path(f.path).stem for f in plan.fallbacks) if plan.fallbacks else "")
             + "." + (" Complex scripts shaped with HarfBuzz." if plan.needs_shaping else "")]
    if plan.missing:
        notes.append(f"{len(plan.missing)} character(s) in the logs have no glyph in any installed font and show "
                     "as boxes: " + " ".join(f"U+{ord(c):04X}" for c in plan.missing[:40])
                     + (" …" if len(plan.missing) > 40 else "") + ".")
    for n in notes:
        para(n, size=8.3)
    t = _tick(data.timings, "layout", t)
    say("writing")
    blob = bytes(pdf.output())
    _tick(data.timings, "output", t)
    data.timings["pages"] = pdf.pages_count
    if out is not None:
        Path(out).write_bytes(blob)
    return blob


def build_report(con: duckdb.DuckDBPyConnection, out: str | Path | None = None,
                 opts: ReportOptions = ReportOptions(), progress: Callable[[str], None] | None = None
                 ) -> tuple[bytes, ReportData]:
    """:func:`gather` then :func:`render`."""
    data = gather(con, opts, progress)
    return render(data, out, progress=progress), data


_METHODS = [
    ("Evidence identity and Jaccard (seed 000, §3)",
     "Each evidence entry has a document identity (canonical doc_id) and a span identity (doc_id, span_hash), "
     "the hash computed over the normalised cited text. For a query q and runs A, B with evidence sets E_A, E_B: "
     "J(q; A, B) = |E_A ∩ E_B| / |E_A ∪ E_B|; both empty → 1 (a stable “no evidence” state), one empty → 0. "
     "J_avg is the mean over queries; mean J_doc / mean J_span over every (query, pair) cell."),
    ("Stability Gap, collapse, flips, nulls (seed 000, §3–4)",
     "Gap ratio = mean J_doc / mean J_span (undefined when mean J_span = 0). A pair collapses on a query when "
     "J_span = 0 while both lists are non-empty; the collapse rate is the share of queries with some collapsed "
     "pair (per pair: share of queries collapsed). A query flips when J < τ (τ = 0.5 unless chosen). Null loss: A "
     "non-empty, B empty; null gain: the reverse; null rate: share of queries with empty evidence. J_min: a "
     "query's worst J over every pair."),
    ("Evidence–answer probe (seed 000, Table 1)",
     "Answer similarity = cosine of SBERT embeddings (all-MiniLM-L6-v2) of the two runs' answers to the same "
     "query; drift counts answers with similarity < 0.9 and < 0.8; Spearman ρ between per-query J_span and "
     "similarity; silent jitter: J_span < τ with similarity ≥ 0.9."),
    ("Citation Fidelity Score (seed 002)",
     "Citations are extracted from the generated text by configurable patterns; each is verified against the "
     "query's provenance graph: 1.0 when the cited document and page match a source reachable from the "
     "generation node, 0.3 for the right document with the wrong page, 0.0 otherwise; parse failures are counted "
     "separately. CFS of a query = mean of its citations' scores (queries without citations have none); the "
     "product form multiplies per-stage survival. p50/p95/p99 are percentiles of per-query CFS (the seed's "
     "literal reading: p95 is the 95th percentile). Stage survival = share of queries (with ground truth) still "
     "holding a ground-truth source after a stage, given it survived the previous stage. Canary: two-sided "
     "Mann–Whitney U on per-query CFS between two runs."),
    ("Retriever saliency (seed 001, §3.1)",
     "Integrated Gradients over the retriever's input token embeddings, for the query and for each document with "
     "the other side fixed, with the retriever's own similarity as output: β_i = (x_i − x⁰_i) · Σ_l ∂s(x⁰ + "
     "l/L (x − x⁰))/∂x_i / L (right Riemann sum, L = 100 steps); baseline: every non-special token replaced by "
     "[UNK]. Completeness ratio Σβ / (s(x) − s(x⁰)) is reported with each result."),
    ("Generator attribution (seed 001, §3.2, Algorithm 1)",
     "The answer is generated once, greedily, with all documents; for a coalition S of documents the prompt is "
     "rebuilt and v_t(S) = log p(y_t | y_<t, prompt(S)) by teacher forcing (eq. 10). Shapley values per output "
     "token: exact up to 6 documents (Σφ = v(all) − v(none)), KernelSHAP, MCSHAP or PMCSHAP (paired coalitions, "
     "N perturbations, M fits on subsets). Document importance = mean over output tokens (eq. 11)."),
    ("Alignment: RBO, WARG, failure modes (seed 001, §3.3, §5.2)",
     "RBO(S, T; p) = (1 − p) Σ_{d=1..k} p^{d−1} |S_:d ∩ T_:d| / d, truncated at the list depth k (eq. 12); "
     "WARG(p) = 1 − RBO, so identical lists give p^k; the extrapolated RBO of Webber et al. is an option. "
     "Wasted retrieval: retriever rank 0 gets generator rank > 2; noise distraction: generator rank 0 had "
     "retriever rank > 2."),
    ("Deploy gate",
     "Each rule names a metric, where it applies (doc/span level, a pipeline stage or every stage), a comparison "
     "and a threshold, absolute or relative to the baseline (candidate − baseline). Pair metrics (J_avg, flip, "
     "collapse, null loss/gain) are computed between the two runs; run metrics per run. The verdict fails when "
     "any applicable rule fails; rules without data are not applicable."),
]

_SOURCES = [
    "Seed 000 — P. Ponnuraj, “Document Overlap Is Not Evidence Continuity: Measuring Retrieval Jitter in "
    "Citation-Based RAG Evaluation” (RagCiteCheck; doi:10.5281/zenodo.18645598).",
    "Seed 001 — K. Randl, G. Rocchietti, A. Henriksson, Z. Abedjan, T. Lindgren, J. Pavlopoulos, “RAG-E: "
    "Quantifying Retriever-Generator Alignment and Failure Modes”, arXiv:2601.21803 (2026).",
    "Seed 002 — “RAG Citation Integrity: Measure Accuracy Loss in Pipelines” (technical article on stage-wise "
    "provenance and the Citation Fidelity Score).",
    "W. Webber, A. Moffat, J. Zobel, “A similarity measure for indefinite rankings”, ACM TOIS 28(4), 2010 (RBO).",
    "M. Sundararajan, A. Taly, Q. Yan, “Axiomatic Attribution for Deep Networks”, ICML 2017 (Integrated Gradients).",
]

_METHODS_TEXT = "".join(t + b for t, b in _METHODS) + "".join(_SOURCES)

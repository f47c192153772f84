"""Lay the gathered data out as a PDF: charts exported once, fonts planned for the characters
the report will draw, then each section of :data:`sections.SECTIONS` in turn.

Each section is drawn on its own: one that raises is left out and the document is laid out
again without it, so the cover names it with its reason (:attr:`ReportData.failed`) and every
other section is drawn."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

from ragaudit_core.review.fonts import plan_fonts
from ragaudit_core.review.labels import rule_label
from ragaudit_core.review.report.export import export_figures
from ragaudit_core.review.report.gather import ReportData, failure_reason
from ragaudit_core.review.report.layout import ReportPDF
from ragaudit_core.review.report.methods import METHODS_TEXT
from ragaudit_core.review.report.sections import SECTIONS

__all__ = ["frame_text", "render"]


def render(
    data: ReportData,
    out: str | Path | None = None,
    *,
    chart_images: dict[str, bytes] | None = None,
    progress: Callable[[str], None] | None = None,
) -> bytes:
    """Lay ``data`` out as a PDF; returns its bytes (and writes ``out`` when given)."""
    say = progress or (lambda _m: None)
    t = time.perf_counter()
    chart_error = None
    plan = plan_fonts(_strings(data))
    if chart_images is None:
        say("charts")
        # a character no installed font has is drawn as its code point in the charts too (a box otherwise)
        chart_images, chart_error = export_figures(data.figures, missing=frozenset(plan.missing))
    t = _tick(data.timings, "charts", t)
    say("layout")
    broken: set[int] = set()
    while True:  # at most once more per failing section
        pdf = ReportPDF(
            plan, f"RagAudit {data.version} audit report · {data.generated_at}", chart_images, chart_error, data.figures
        )
        pdf.set_author(f"RagAudit {data.version}")
        failed = _draw_sections(pdf, data, broken)
        if not failed:
            break
        broken |= failed
    t = _tick(data.timings, "layout", t)
    say("writing")
    blob = bytes(pdf.output())
    _tick(data.timings, "output", t)
    data.timings["pages"] = pdf.pages_count
    if out is not None:
        Path(out).write_bytes(blob)
    return blob


def _draw_sections(pdf: ReportPDF, data: ReportData, broken: set[int]) -> set[int]:
    """Draw every present section not in ``broken``; returns the indices of those that raised
    (named in ``data.failed``; the caller lays the document out again without them)."""
    failed: set[int] = set()
    titled = [s.title for i, s in enumerate(SECTIONS) if i not in broken and s.title and s.present(data)]
    pdf.numbers = {t: n for n, t in enumerate(titled, start=1)}
    for i, section in enumerate(SECTIONS):
        if i in broken or not section.present(data):
            continue
        try:
            if section.title is not None:
                pdf.new_section(section.title)
            section.draw(pdf, data)
        except Exception as e:  # noqa: BLE001 - one section failing must not stop the report
            name = section.title or section.draw.__name__.replace("_", " ")
            data.failed.append(f"{name} section ({failure_reason(e)})")
            failed.add(i)
            return failed  # the document is in an unknown state: lay it out again without it
    return failed


def _tick(timings: dict, key: str, t0: float) -> float:
    t = time.perf_counter()
    timings[key] = round(t - t0, 3)
    return t


def frame_text(frame: pd.DataFrame) -> Iterator[str]:
    """The text a table of the report draws: its column names and the values of its text columns —
    object, "string" and pandas 3's default "str" (a dtype-name test missed the last: run ids in
    tables were never planned for, and a CJK one vanished from the PDF)."""
    for c in frame.columns:
        yield str(c)
        if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c].dtype):
            yield from (str(x) for x in frame[c].dropna())


def _strings(data: ReportData) -> set[str]:
    """Every character the report will draw (for font planning)."""
    chars: set[str] = set()

    def add(v: object) -> None:
        if isinstance(v, str):
            chars.update(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                add(k)
                add(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                add(x)
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            add(dataclasses.asdict(v))
        elif isinstance(v, pd.DataFrame):
            for text in frame_text(v):
                chars.update(text)

    add([data.runs, data.prov_runs, data.files, data.worst, data.omitted, data.db_label, data.rules_source])
    if data.verdict is not None:
        add([r.message for r in data.verdict.results] + [rule_label(r.rule) for r in data.verdict.results])
    for p in data.probes:
        add(p.rows[["query_id"]])
    for f in data.fidelity.values():
        add([f.alerts, f.citations, f.findings, f.summary])
    if data.stability is not None:
        add([data.stability.pairs, data.stability.summary.warnings])
    add(list(data.attributions))
    chars.update(METHODS_TEXT)
    return chars

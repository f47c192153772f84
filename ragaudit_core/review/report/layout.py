"""The report's page primitives: an fpdf2 document with its fonts, and paragraphs, tables and
charts drawn as plain text (never markup).

Text from logs goes through :func:`clean`: control characters become U+FFFD (tabs and
newlines stay), explicit bidi controls are shown as ``[U+202E]`` (only the isolates of
:func:`~ragaudit_core.review.logtext.isolate` stay), and a text longer than a paragraph's or a
cell's limit becomes an excerpt with its full length stated — so nothing a log says can change
the layout, reorder a verdict or fill hundreds of pages.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
from fpdf import FPDF, FontFace
from fpdf.enums import MethodReturnValue, WrapMode, XPos, YPos
from fpdf.fonts import TextStyle
from fpdf.util import Padding

from ragaudit_core.review.fonts import FontPlan, code_points
from ragaudit_core.review.logtext import excerpt, neutralise, strip_isolates
from ragaudit_core.wording import counted

__all__ = [
    "BAD",
    "CELL_LIMIT",
    "CELL_PAD",
    "NA",
    "OK",
    "PARA_LIMIT",
    "STATUS_TEXT",
    "WARN",
    "ReportPDF",
    "ci",
    "ci_note",
    "clean",
    "fmt",
    "font_names",
    "json_or_empty",
    "pct",
]

# status cells in tints of the charts' Okabe–Ito colours (blue, vermillion, orange): no red-green pair
OK = FontFace(fill_color=(204, 227, 240))
BAD = FontFace(fill_color=(245, 206, 179), emphasis="BOLD")
WARN = FontFace(fill_color=(250, 230, 179))
# verdict text colours: dark blue (pass), dark vermillion (fail), dark orange (inconclusive)
STATUS_TEXT = {"pass": (0, 90, 140), "fail": (170, 60, 0), "inconclusive": (140, 95, 0)}
NA = FontFace(color=(120, 120, 120))


PARA_LIMIT = 3000  # characters of one paragraph (a page and a half of body text)
CELL_LIMIT = 1200  # characters of one table cell


def clean(text: Any, limit: int | None = None) -> str:
    """Plain text for the PDF: control characters become U+FFFD (tabs and newlines stay), bidi
    controls are shown (:func:`~ragaudit_core.review.logtext.neutralise`); cut to an excerpt of
    ``limit`` characters with the full length stated."""
    s = "" if text is None else str(text)
    if limit is not None:
        s = excerpt(s, limit)
    s = "".join(c if (c >= " " or c in "\n\t") and c != "\x7f" else "\ufffd" for c in s)
    return neutralise(s)


def _plain(title: str) -> str:
    """A Plotly title as plain text (its <br>, <sup> and entities undone)."""
    import html
    import re

    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", title)).split())


def json_or_empty(v: Any) -> dict:
    """A JSON object stored as text, or ``{}`` when it is absent or not an object."""
    import json

    try:
        out = json.loads(v) if isinstance(v, str) else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


CELL_PAD = 0.8
"""mm between a table cell's border and its text, on every side: what the tables draw with
and what :meth:`ReportPDF._height` measures with."""


def ci_note(lead: str, iv: Any) -> str:
    """The line under figures printed with intervals: ``lead`` ("In brackets", "Second row")
    and what the intervals are over (``iv``: its ``n_queries``, ``resamples``, ``seed``)."""
    return (
        f"{lead}: the 95 % bootstrap interval over the {counted(iv.n_queries, 'query')} "
        f"({counted(iv.resamples, 'resample')}, seed {iv.seed})."
    )


def fmt(v: Any, nd: int = 3) -> str:
    """A value as the report writes it: ``n/a`` for missing (None, NaN, pandas' NA of a nullable
    column), ``yes``/``no``, ``nd`` decimals."""
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def pct(v: Any) -> str:
    """A share as a percentage with one decimal; ``n/a`` for missing (as :func:`fmt`)."""
    return "n/a" if v is None or v is pd.NA or (isinstance(v, float) and v != v) else f"{v:.1%}"


def ci(est: Any, percent: bool = False) -> str:
    """An interval as the report writes it after the value (`` [lo, hi]``, as :func:`pct` or
    :func:`fmt` writes numbers): ``est`` an :class:`~ragaudit_core.intervals.Estimate` or a
    stored ``[lo, hi]`` pair (JSON's form); empty when there is none (no estimate, or a bound
    that is None or NaN: no query had a value)."""
    if est is None:
        return ""
    lo, hi = (est.lo, est.hi) if hasattr(est, "lo") else (*est, None, None)[:2]
    if lo is None or hi is None or lo != lo or hi != hi:
        return ""
    f = pct if percent else fmt
    return f" [{f(lo)}, {f(hi)}]"


def _wrap(wrap_char: bool) -> WrapMode:
    return WrapMode.CHAR if wrap_char else WrapMode.WORD


class ReportPDF(FPDF):
    """An A4 page with the report's fonts, footer and drawing primitives."""

    def __init__(
        self,
        plan: FontPlan,
        footer_text: str,
        chart_images: dict[str, bytes],
        chart_error: str | None,
        figures: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(format="A4", unit="mm")
        self.figures = figures or {}
        self.numbers: dict[str, int] = {}
        self._chart_error_said = False  # section title → its number in the contents (§n)
        self.plan = plan
        self._no_glyph = frozenset(plan.missing)
        self.footer_text = footer_text
        self.chart_images = chart_images
        self.chart_error = chart_error
        self.set_margins(15, 15, 15)
        self.set_auto_page_break(True, margin=16)
        self.set_title("RagAudit audit report")
        self.set_creator("RagAudit")
        self._add_fonts(plan)
        self.set_section_title_styles(
            TextStyle(font_family="Sans", font_style="B", font_size_pt=15, t_margin=2, b_margin=3, color=(20, 50, 90)),
            TextStyle(
                font_family="Sans", font_style="B", font_size_pt=11.5, t_margin=4, b_margin=2, color=(20, 50, 90)
            ),
        )

    def _add_fonts(self, plan: FontPlan) -> None:
        self.add_font("Sans", "", plan.regular.path)
        self.add_font("Sans", "B", (plan.bold or plan.regular).path)
        self.add_font("Sans", "I", (plan.italic or plan.regular).path)
        self.add_font("Mono", "", (plan.mono or plan.regular).path)
        names = []
        for i, spec in enumerate(plan.fallbacks):
            self.add_font(f"Fallback{i}", "", spec.path, collection_font_number=spec.index)
            names.append(f"Fallback{i}")
        if names:
            self.set_fallback_fonts(names, exact_match=False)
        if plan.needs_shaping:
            try:
                self.set_text_shaping(True)
            except Exception:  # noqa: BLE001 - uharfbuzz missing: glyphs still drawn, unshaped
                pass

    def safe(self, text: Any, limit: int | None = None) -> str:
        """:func:`clean` text as this document draws it: without bidi shaping (no RTL script in the
        report) fpdf2 draws in logical order and has no glyph for U+2068/U+2069, so they are dropped."""
        s = clean(text, limit)
        if self.plan.missing:  # fpdf2 draws nothing for a character without a glyph: show its code point
            s = code_points(s, self._no_glyph)
        return s if self.text_shaping else strip_isolates(s)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("Sans", size=7.5)
        self.set_text_color(110)
        self.cell(0, 6, self.safe(f"{self.footer_text} · page {self.page_no()} of {{nb}}"), align="C")
        self.set_text_color(0)

    def heading(self, text: str, size: float, h: float) -> None:
        """A title line outside the table of contents (the cover's and the contents')."""
        self.set_font("Sans", "B", size)
        self.set_text_color(20, 50, 90)
        self.cell(self.epw, h, self.safe(text, 200), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.set_text_color(0)

    def para(
        self,
        text: str,
        size: float = 9.5,
        style: str = "",
        h: float | None = None,
        colour: tuple[int, int, int] | None = None,
        align: str = "J",
    ) -> None:
        """A paragraph, justified unless ``align`` says otherwise (``L`` for headlines: a few long
        bold words justified leave wide gaps) or it holds a word over a third of the line (a long
        run id: the words on its line would be spread several ems apart)."""
        self.set_font("Sans", style, size)
        if colour:
            self.set_text_color(*colour)
        s = self.safe(text, PARA_LIMIT)
        if align == "J" and any(self.get_string_width(w) > self.epw / 3 for w in s.split()):
            align = "L"
        self.multi_cell(self.epw, h or size * 0.48, s, align=align, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.set_text_color(0)

    def gap(self, mm: float = 2.5) -> None:
        self.ln(mm)

    def data_table(
        self,
        headings: list[str] | None,
        rows: list[list[Any]],
        widths: list[float] | None = None,
        size: float = 7.5,
        styles: list[list[Any]] | None = None,
        wrap_char: bool = False,
    ) -> None:
        """A table of plain-text cells (values through :func:`fmt`), headings repeated on each page.

        Column widths are widened where a heading word or an unbreakable cell (a hash, an id) would
        otherwise be broken mid-token, taking the room from columns with slack (:meth:`_fit_widths`).
        A table of at most :attr:`_KEEP_ROWS` rows that fits on a page starts on a new one rather
        than break; a longer one whose last page would hold fewer than :attr:`_MIN_ROWS` rows
        carries that many over to it, so no page holds a table's last row or two alone."""
        headings = [self.safe(h, CELL_LIMIT) for h in headings] if headings is not None else None
        cells = [[self.safe(v if isinstance(v, str) else fmt(v), CELL_LIMIT) for v in r] for r in rows]
        widths = self._fit_widths(headings, cells, widths, size)
        self.set_font("Sans", "", size)
        if len(cells) <= self._KEEP_ROWS and self.get_y() > self.t_margin + 1:
            need = self._height(headings, cells, self._even(cells, widths), size, wrap_char)
            if need > self.page_break_trigger - self.get_y() and need < 0.3 * self.eph:
                self.add_page()  # a short table is kept on one page, never one row left behind
        tail, before = self._rows_on_last_page(headings, cells, widths, size, wrap_char)
        if tail < self._MIN_ROWS < len(cells) and before - (self._MIN_ROWS - tail) >= self._MIN_ROWS:
            cut = len(cells) - self._MIN_ROWS  # a few rows alone on the last page: take some along
            self._table(headings, cells[:cut], widths, size, styles[:cut] if styles else None, wrap_char)
            self.add_page()
            cells, styles = cells[cut:], styles[cut:] if styles else None
        self._table(headings, cells, widths, size, styles, wrap_char)
        self.gap(2)

    def _table(
        self,
        headings: list[str] | None,
        cells: list[list[str]],
        widths: list[float] | None,
        size: float,
        styles: list[list[Any]] | None,
        wrap_char: bool,
    ) -> None:
        with super().table(
            col_widths=tuple(widths) if widths else None,
            text_align="LEFT",
            line_height=size * 0.5,
            first_row_as_headings=headings is not None,
            repeat_headings=1,
            padding=CELL_PAD,
            headings_style=FontFace(emphasis="BOLD", fill_color=(226, 232, 240)),
            wrapmode=_wrap(wrap_char),
        ) as tb:
            if headings is not None:
                row = tb.row()
                for h in headings:
                    row.cell(h)
            for i, r in enumerate(cells):
                row = tb.row()
                for j, v in enumerate(r):
                    row.cell(v, style=styles[i][j] if styles else None)

    def _rows_on_last_page(
        self,
        headings: list[str] | None,
        cells: list[list[str]],
        widths: list[float] | None,
        size: float,
        wrap_char: bool = False,
    ) -> tuple[int, int]:
        """How many rows of the table would stand on its last page and on the page before it
        (:meth:`_height` per row, the headings repeated on each page, a row never split, the
        headings and the first row moved on together when they do not fit where the table starts);
        (all rows, 0) when it ends on the page it starts on."""
        widths = self._even(cells, widths)
        head = self._height(headings, [], widths, size, wrap_char) if headings is not None else 0.0
        room, used, n, before = self.page_break_trigger - self.get_y(), head, 0, 0
        for r in cells:
            h = self._height(None, [r], widths, size, wrap_char)
            if used + h > room:
                room, used, n, before = self.page_break_trigger - self.t_margin, head, 0, (n or before)
            used, n = used + h, n + 1
        return n, before

    _PAD = CELL_PAD * 2 + 0.6  # cell padding on both sides and a little air, mm
    _KEEP_ROWS = 15  # tables up to this many rows are kept on one page
    _MIN_ROWS = 3  # a longer table never leaves fewer rows than this alone on its last page

    def _height(
        self,
        headings: list[str] | None,
        cells: list[list[str]],
        widths: list[float],
        size: float,
        wrap_char: bool = False,
    ) -> float:
        """A table's height (mm) as fpdf2 lays it out: per row, its tallest cell as fpdf2's own
        line breaking makes it (a dry run of the cell at its width, padding and line height)."""
        line = size * 0.5
        mode = _wrap(wrap_char)
        total = 0.0
        for k, r in enumerate(([headings] if headings is not None else []) + cells):
            self.set_font("Sans", "B" if k == 0 and headings is not None else "", size)
            total += max(
                (self._cell_height(str(v), w, line, mode) for v, w in zip(r, widths)), default=line + 2 * CELL_PAD
            )
        self.set_font("Sans", "", size)
        return total

    def _even(self, cells: list[list[str]], widths: list[float] | None) -> list[float]:
        """The given column widths, or the page's width shared evenly (fpdf2's default)."""
        return widths or [self.epw / max(1, len(cells[0]) if cells else 1)]

    def _cell_height(self, text: str, width: float, line: float, mode: WrapMode) -> float:
        """A table cell's height (mm) in the current font: a dry run of what fpdf2's table draws."""
        h = self.multi_cell(
            width,
            line,
            text,
            dry_run=True,
            output=MethodReturnValue.HEIGHT,
            padding=Padding.new(CELL_PAD),
            max_line_height=line,
            wrapmode=mode,
        )
        assert isinstance(h, float)
        return h

    def _fit_widths(
        self, headings: list[str] | None, cells: list[list[str]], widths: list[float] | None, size: float
    ) -> list[float] | None:
        """Widths (mm) at which no heading word and no cell token
        is split (a token up to 60 % of the page: a SHA-256 fits): each column gets at least its widest such
        token; the room comes from the columns
        with the most slack. The given widths (default: equal) are kept where they already fit."""
        n = len(headings) if headings is not None else (len(cells[0]) if cells else 0)
        if not n:
            return widths
        widths = list(widths) if widths else [self.epw / n] * n
        cap = self.epw * 0.6
        need = [0.0] * n
        self.set_font("Sans", "B", size)
        for j, h in enumerate(headings or []):
            need[j] = max([self.get_string_width(w) for w in h.split()] or [0.0])
        self.set_font("Sans", "", size)
        for r in cells:
            for j, v in enumerate(r[:n]):
                for tok in v.split():
                    w = self.get_string_width(tok)
                    if need[j] < w <= cap:
                        need[j] = w
        need = [w + self._PAD if w else 0.0 for w in need]
        lack = [0.0] * n  # what a column whose token fits no width still lacks (a long run id)
        while sum(max(0.0, nd - w) for nd, w in zip(need, widths)) > sum(
            max(0.0, w - nd) for nd, w in zip(need, widths)
        ):
            # cannot fit all: the column lacking most is broken as it would be anyway, so the others
            # (numbers, intervals) still get what they need
            j = max(range(n), key=lambda k: need[k] - widths[k])
            lack[j], need[j] = need[j] - widths[j], widths[j]
        short = sum(max(0.0, nd - w) for nd, w in zip(need, widths))
        if short <= 0 and not any(lack):
            return widths  # already fits: keep the layout
        slack = [max(0.0, w - nd) for nd, w in zip(need, widths)]
        out = [
            nd if nd > w else w - (short * sl / sum(slack) if short > 0 else 0.0)
            for w, nd, sl in zip(widths, need, slack)
        ]
        # half the room still left goes to the columns that lack it: fewer lines per long run id
        left = [0.0 if lk else max(0.0, o - nd) for o, nd, lk in zip(out, need, lack)]
        give = min(sum(lack), sum(left) / 2)
        if give > 0:
            out = [o - give * lf / sum(left) + give * lk / sum(lack) for o, lf, lk in zip(out, left, lack)]
        return out

    def chart(self, name: str, width: float | None = None) -> None:
        """The exported PNG of figure ``name``; without one, a note saying why and the chart's data
        as a table (:func:`~ragaudit_core.review.report.chart_table.figure_table`)."""
        png = self.chart_images.get(name)
        if png is None:
            fig = self.figures.get(name)
            title = _plain(getattr(getattr(fig.layout, "title", None), "text", None) or "") if fig is not None else ""
            why = self.chart_error or "no image"
            if self._chart_error_said:
                why = "no image; the reason is given at the first chart"
            self._chart_error_said = self._chart_error_said or self.chart_error is not None
            self.para(
                f"Chart “{title or name}” not drawn ({why}); its data:",
                size=8,
                style="I",
                colour=(150, 80, 0),
            )
            if fig is not None:
                from ragaudit_core.review.report.chart_table import figure_table

                headings, rows = figure_table(fig)
                if rows:
                    self.data_table(headings, rows, size=7)
            return
        from PIL import Image

        im = Image.open(io.BytesIO(png))
        w = width or self.epw
        h = w * im.height / im.width
        if self.get_y() + h > self.page_break_trigger:
            self.add_page()
        self.image(io.BytesIO(png), x=self.l_margin + (self.epw - w) / 2, w=w, h=h)
        self.gap(2)

    def new_section(self, title: str) -> None:
        """A top-level section (in the contents, numbered as :attr:`numbers` says) on a fresh page."""
        self.fresh_page()
        n = self.numbers.get(title)
        self.start_section(self.safe(f"{n}. {title}" if n is not None else title, 200))

    def sub_section(self, title: str, need: float = 35.0) -> None:
        """A second-level heading, moved to the next page when less than ``need`` mm is left
        under it (a heading never ends a page)."""
        if self.page_break_trigger - self.get_y() < need:
            self.add_page()
        self.start_section(self.safe(title, 200), level=1)

    def fresh_page(self) -> None:
        """A new page unless the current one is still empty (the contents placeholder leaves one)."""
        if self.page == 0 or self.get_y() > self.t_margin + 0.5:
            self.add_page()

    def status_rows(
        self, items: list[tuple[str, str, Any, str]], styles_by_status: dict[str, FontFace]
    ) -> tuple[list[list[Any]], list[list[Any]]]:
        """Rows ``[STATUS, name, value, why]`` with the status cell coloured."""
        rows, styles = [], []
        for status, name, value, why in items:
            rows.append([status.upper() if status != "not applicable" else "n/a", name, fmt(value), why])
            styles.append([styles_by_status.get(status, NA), None, None, None])
        return rows, styles


def font_names(plan: FontPlan) -> str:
    """The fonts line of the rendering notes."""
    return (
        "Fonts: DejaVu Sans"
        + (
            f", with {counted(len(plan.fallbacks), 'fallback font')} for characters it lacks: "
            + ", ".join(Path(f.path).stem for f in plan.fallbacks)
            if plan.fallbacks
            else ""
        )
        + "."
        + (" Complex scripts shaped with HarfBuzz." if plan.needs_shaping else "")
    )

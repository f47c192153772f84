"""The report's page primitives: an fpdf2 document with its fonts, and paragraphs, tables and
charts drawn as plain text (never markup).

Text from logs goes through :func:`clean`: control characters become U+FFFD (tabs and
newlines stay), so nothing a log says can change the layout.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from fpdf import FPDF, FontFace
from fpdf.enums import WrapMode, XPos, YPos
from fpdf.fonts import TextStyle

from ragaudit_core.review.fonts import FontPlan

__all__ = [
    "BAD",
    "NA",
    "OK",
    "WARN",
    "ReportPDF",
    "clean",
    "fmt",
    "font_names",
    "json_or_empty",
    "pct",
]

OK = FontFace(fill_color=(220, 242, 220))
BAD = FontFace(fill_color=(250, 215, 215), emphasis="BOLD")
WARN = FontFace(fill_color=(250, 235, 200))
NA = FontFace(color=(120, 120, 120))


def clean(text: Any) -> str:
    """Plain text for the PDF: control characters become U+FFFD; tabs and newlines stay."""
    s = "" if text is None else str(text)
    return "".join(c if (c >= " " or c in "\n\t") and c != "\x7f" else "\ufffd" for c in s)


def json_or_empty(v: Any) -> dict:
    """A JSON object stored as text, or ``{}`` when it is absent or not an object."""
    import json

    try:
        out = json.loads(v) if isinstance(v, str) else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def fmt(v: Any, nd: int = 3) -> str:
    """A value as the report writes it: ``n/a`` for missing, ``yes``/``no``, ``nd`` decimals."""
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def pct(v: Any) -> str:
    """A share as a percentage with one decimal; ``n/a`` for missing."""
    return "n/a" if v is None or (isinstance(v, float) and v != v) else f"{v:.1%}"


class ReportPDF(FPDF):
    """An A4 page with the report's fonts, footer and drawing primitives."""

    def __init__(
        self, plan: FontPlan, footer_text: str, chart_images: dict[str, bytes], chart_error: str | None
    ) -> None:
        super().__init__(format="A4", unit="mm")
        self.plan = plan
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

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("Sans", size=7.5)
        self.set_text_color(110)
        self.cell(0, 6, clean(f"{self.footer_text} · page {self.page_no()} of {{nb}}"), align="C")
        self.set_text_color(0)

    def heading(self, text: str, size: float, h: float) -> None:
        """A title line outside the table of contents (the cover's and the contents')."""
        self.set_font("Sans", "B", size)
        self.set_text_color(20, 50, 90)
        self.cell(self.epw, h, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.set_text_color(0)

    def para(
        self,
        text: str,
        size: float = 9.5,
        style: str = "",
        h: float | None = None,
        colour: tuple[int, int, int] | None = None,
    ) -> None:
        self.set_font("Sans", style, size)
        if colour:
            self.set_text_color(*colour)
        self.multi_cell(self.epw, h or size * 0.48, clean(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
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
        otherwise be broken mid-token, taking the room from columns with slack (:meth:`_fit_widths`)."""
        headings = [clean(h) for h in headings] if headings is not None else None
        cells = [[clean(v if isinstance(v, str) else fmt(v)) for v in r] for r in rows]
        widths = self._fit_widths(headings, cells, widths, size)
        self.set_font("Sans", "", size)
        with super().table(
            col_widths=tuple(widths) if widths else None,
            text_align="LEFT",
            line_height=size * 0.5,
            first_row_as_headings=headings is not None,
            repeat_headings=1,
            padding=0.8,
            headings_style=FontFace(emphasis="BOLD", fill_color=(226, 232, 240)),
            wrapmode=WrapMode.CHAR if wrap_char else WrapMode.WORD,
        ) as tb:
            if headings is not None:
                row = tb.row()
                for h in headings:
                    row.cell(h)
            for i, r in enumerate(cells):
                row = tb.row()
                for j, v in enumerate(r):
                    row.cell(v, style=styles[i][j] if styles else None)
        self.gap(2)

    _PAD = 0.8 * 2 + 0.6  # cell padding on both sides and a little air, mm

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
        short = sum(max(0.0, nd - w) for nd, w in zip(need, widths))
        slack = [max(0.0, w - nd) for nd, w in zip(need, widths)]
        if short <= 0 or sum(slack) < short:
            return widths  # already fits, or cannot: keep the layout
        out = []
        for w, nd, sl in zip(widths, need, slack):
            out.append(nd if nd > w else w - short * sl / sum(slack))
        return out

    def chart(self, name: str, width: float | None = None) -> None:
        """The exported PNG of figure ``name``, or a line saying why it is missing."""
        png = self.chart_images.get(name)
        if png is None:
            self.para(
                f"[chart “{name}” not drawn: {self.chart_error or 'no image'}]", size=8, style="I", colour=(150, 0, 0)
            )
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
        """A top-level section (in the contents) on a fresh page."""
        self.fresh_page()
        self.start_section(title)

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
            f", with {len(plan.fallbacks)} fallback font(s) for characters it lacks: "
            + ", ".join(Path(f.path).stem for f in plan.fallbacks)
            if plan.fallbacks
            else ""
        )
        + "."
        + (" Complex scripts shaped with HarfBuzz." if plan.needs_shaping else "")
    )

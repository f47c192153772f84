"""One colour-blind-safe palette for every chart of the dashboard and the report, and the
helpers every figure shares (wrapped titles, natural run order, one percentage format, histogram
bars' counts in words).

Colours are Okabe & Ito's eight ("Color Universal Design", 2008; distinguishable with
protanopia, deuteranopia and tritanopia); no figure pairs red with green. Continuous scales
are Cividis (Nuñez et al. 2018, designed for colour-vision deficiency), from dark blue to
yellow. Edge cases: more series than colours cycle the palette; :func:`wrap_title` never breaks
inside a word and keeps Plotly's ``<br>`` and ``<sup>`` parts as they are.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

import numpy as np

from ragaudit_core.logs.selection import natural_key
from ragaudit_core.wording import counted

__all__ = [
    "BLACK",
    "BLUE",
    "BLUISH_GREEN",
    "GREY",
    "LIGHT_GREY",
    "OKABE_ITO",
    "ORANGE",
    "REDDISH_PURPLE",
    "SEQUENTIAL",
    "SKY_BLUE",
    "VERMILLION",
    "YELLOW",
    "bin_hover",
    "colour",
    "count_ticks",
    "natural_key",
    "natural_order",
    "percent",
    "plot_text",
    "wrap_title",
]

# Okabe–Ito, in the order series take them
BLUE = "#0072B2"
ORANGE = "#E69F00"
BLUISH_GREEN = "#009E73"
REDDISH_PURPLE = "#CC79A7"
SKY_BLUE = "#56B4E9"
VERMILLION = "#D55E00"
YELLOW = "#F0E442"
BLACK = "#000000"
OKABE_ITO = (BLUE, ORANGE, BLUISH_GREEN, REDDISH_PURPLE, SKY_BLUE, VERMILLION, YELLOW, BLACK)
GREY = "#999999"
LIGHT_GREY = "#CCCCCC"
SEQUENTIAL = "Cividis"  # Plotly's name of the colour-blind-safe continuous scale


def bin_hover(edges: np.ndarray, counts: np.ndarray, noun: str = "query") -> list[list]:
    """A histogram's hover data, one row per bar: its bounds and its count in words (``1 query``,
    ``2 queries``; a hover template's ``%{y} queries`` reads ``1 queries``)."""
    return [[float(lo), float(hi), counted(int(n), noun)] for lo, hi, n in zip(edges[:-1], edges[1:], counts)]


def colour(i: int) -> str:
    """The ``i``-th series colour (cycling)."""
    return OKABE_ITO[i % len(OKABE_ITO)]


def natural_order(items: Iterable[str]) -> list[str]:
    """``items`` in natural order, digit runs read as numbers: k5 < k10 < k20 (the run pickers'
    order, :func:`ragaudit_core.logs.selection.natural_key`)."""
    return sorted(items, key=natural_key)


def percent(v: float | None, digits: int = 1) -> str:
    """A share (0–1) as the report and the dashboard write it: ``91.0%``; ``n/a`` when missing."""
    return "n/a" if v is None or v != v else f"{v * 100:.{digits}f}%"


_TAG = re.compile(r"<[^>]+>")


def count_ticks(top: float) -> dict:
    """Ticks for an axis (or a colour bar) of counts: whole numbers. Plotly's own steps for a count
    of 1 or 2 are 0.2 (0.6 … 1.4 on the colour bar of one cell); up to 10, every count is ticked."""
    return dict(tick0=0, dtick=1) if top <= 10 else dict(tickformat=",d")


def plot_text(value: object) -> str:
    """Log text as Plotly must be given it: ``&``, ``<`` and ``>`` escaped (Plotly draws a subset of
    HTML in titles, ticks and hover labels), quotes left as they are — Plotly decodes ``&amp;``,
    ``&lt;``, ``&gt;`` and numeric entities but shows ``&quot;`` literally (a run id ``half "x"`` read
    ``half &quot;x&quot;`` on the charts)."""
    return html.escape(str(value), quote=False)


def wrap_title(text: str, width: int = 60) -> str:
    """A title broken with ``<br>`` into lines of at most ``width`` visible characters (at
    spaces; a word longer than ``width`` stands on its own line). Existing ``<br>`` parts are
    wrapped one by one; a part holding markup (``<sup>…``) is left whole."""
    out = []
    for part in re.split(r"<br\s*/?>", text):
        if _TAG.search(part):
            out.append(part)
            continue
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > width:
                out.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        out.append(line)
    return "<br>".join(out)

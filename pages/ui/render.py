"""Coloured text for the dashboard and the report, built from escaped text only.

Every string that reaches HTML here goes through ``html.escape``; colours and styles
are computed from numbers, never taken from a log.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ragaudit_core.review.logtext import bidi_safe
from ragaudit_core.review.palette import GREY, OKABE_ITO

__all__ = ["DOC_COLOURS", "code", "diverging_html", "legend_html", "md", "owner_html"]

_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|~$:")


_AUTOLINK = re.compile(r"(://|(?i:www)\.|@)")
_JOINER = "\u2060"  # WORD JOINER: invisible, and breaks GFM's autolink literals
# C0 and C1 controls (CR, LF, tab, ESC …) and the line and paragraph separators: a line ending in a log
# string would split the sentence around it (a paragraph, a code block, a heading under "===")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def md(text: object) -> str:
    """Log text made inert inside Streamlit markdown: every markdown/HTML/LaTeX-significant
    character backslash-escaped (so ``**x**``, ``[a](…)``, ``:red[…]`` and ``$…$`` show as
    typed), and an invisible word joiner put into ``://``, ``www.`` and ``@`` — GFM turns bare
    URLs and e-mail addresses into links *after* escapes are resolved, so escaping alone does
    not stop ``http://host`` from becoming a link. Text holding a right-to-left letter or a bidi
    control is isolated (U+2068 … U+2069, its controls shown as ``[U+202E]``), so a run id cannot
    reorder the verdict sentence around it (:func:`ragaudit_core.review.logtext.bidi_safe`); a control
    character (a line break, a tab, ESC) is shown as ``[U+000A]`` too, so a sentence stays one
    paragraph however the log string is written. This is
    the one helper for putting untrusted text into a Streamlit markdown string (banners, captions,
    labels)."""
    s = _AUTOLINK.sub(
        lambda m: m.group(0)[:-1] + _JOINER + m.group(0)[-1] if m.group(0) != "@" else "@" + _JOINER,
        bidi_safe(_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", "" if text is None else str(text))),
    )
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in s)


def code(text: object) -> str:
    """Text as an inline code span in Streamlit markdown (a path, a command to copy): fenced with one
    backtick more than the longest run of them in it (and padded), since a code span resolves no
    escape — a backtick in a file name would otherwise end the span and let the rest be read as
    markdown; control characters shown as ``[U+000A]`` as :func:`md` shows them."""
    s = bidi_safe(_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", "" if text is None else str(text)))
    fence = "`" * (max((len(r) for r in re.findall("`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or len(fence) > 1 else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# the charts' colour-blind-safe palette (Okabe–Ito), shared with the figures of ragaudit_core.review.charts
# (black left out: a token tinted black would hide its text)
DOC_COLOURS = [*OKABE_ITO[:7], GREY]


def _rgba(score: float, scale: float) -> str:
    a = 0.0 if scale <= 0 else min(1.0, abs(score) / scale)
    return f"rgba(213,94,0,{a:.3f})" if score >= 0 else f"rgba(0,114,178,{a:.3f})"  # vermillion / blue


def diverging_html(words: Sequence[str], scores: Sequence[float], *, scale: float | None = None, sep: str = " ") -> str:
    """Words on a diverging background: vermillion for positive attribution, blue for negative,
    opacity ∝ |score| / scale (default: the largest |score|). Hover shows the value."""
    scale = scale if scale is not None else max((abs(float(s)) for s in scores), default=0.0)
    parts = [
        f'<span title="{float(s):+.4f}" style="background:{_rgba(float(s), scale)};padding:1px 2px;'
        f'border-radius:3px">{html.escape(w)}</span>'
        for w, s in zip(words, scores)
    ]
    return f'<div style="line-height:1.9">{sep.join(parts)}</div>'


def owner_html(tokens: Sequence[str], owners: Sequence[int], strengths: Sequence[float]) -> str:
    """Answer tokens coloured by the document that influenced them most (``owners``),
    opacity ∝ that influence relative to the strongest token."""
    top = max((abs(float(s)) for s in strengths), default=0.0) or 1.0
    parts = []
    for t, o, s in zip(tokens, owners, strengths):
        colour = DOC_COLOURS[int(o) % len(DOC_COLOURS)]
        alpha = 0.35 + 0.65 * min(1.0, abs(float(s)) / top)  # the faintest tint still tells its colour
        rgb = tuple(int(colour[i : i + 2], 16) for i in (1, 3, 5))
        parts.append(
            f'<span title="document {int(o) + 1}: {float(s):+.4f}" style="background:rgba({rgb[0]},{rgb[1]},'
            f'{rgb[2]},{alpha:.3f});border-radius:3px">{html.escape(t)}</span>'
        )
    return f'<div style="line-height:1.9;white-space:pre-wrap">{"".join(parts)}</div>'


def legend_html(labels: Sequence[str]) -> str:
    items = [
        f'<span style="display:inline-block;width:12px;height:12px;background:{DOC_COLOURS[i % len(DOC_COLOURS)]};'
        f'margin:0 4px 0 12px;border-radius:2px"></span>{html.escape(label)}'
        for i, label in enumerate(labels)
    ]
    return f'<div style="font-size:0.9em">{"".join(items)}</div>'

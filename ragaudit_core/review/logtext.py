"""Text from logs made safe to show beside the tool's own words: bidi-isolated and excerpted.

A log string is data. Two things it must not do where it is shown (a dashboard page, the PDF):

* **reorder the sentence around it.** A run id holding U+202E (RIGHT-TO-LEFT OVERRIDE) makes the
  Unicode Bidirectional Algorithm (UAX #9) draw everything after it right to left, so the verdict
  "j_avg … is 0.333" reads "333.0". :func:`isolate` shows every explicit bidi control of the log
  text as a visible ``[U+202E]`` (so an auditor sees it is there) and wraps the text in a first-strong
  isolate, U+2068 … U+2069 (UAX #9 §2.7: an isolate is treated as one neutral character by the
  text around it, and its own direction comes from its first strong character).
* **flood the page.** :func:`excerpt` keeps the first ``limit`` characters and states the full
  length ("… [excerpt: 240 of 1,048,576 characters]"), so a 1 MB text costs a line, not 500 pages.

Edge cases: ``None`` is the empty string; a string already isolated by :func:`isolate` is not
isolated twice.
"""

from __future__ import annotations

import re

__all__ = [
    "BIDI_CONTROLS",
    "FSI",
    "PDI",
    "RTL_OR_CONTROL",
    "bidi_safe",
    "excerpt",
    "isolate",
    "neutralise",
    "show_controls",
    "strip_isolates",
]

FSI = "\u2068"  # FIRST STRONG ISOLATE
PDI = "\u2069"  # POP DIRECTIONAL ISOLATE
# explicit embeddings, overrides, isolates and the directional marks (UAX #9, table 4)
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_CONTROLS_RE = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")
# an isolate made by isolate(): its content holds no control
_ISOLATED_RE = re.compile(FSI + "[^" + "".join(sorted(BIDI_CONTROLS)) + "]*" + PDI)


def show_controls(text: object) -> str:
    """Every explicit bidi control in ``text`` as a visible ``[U+XXXX]`` (inert)."""
    s = "" if text is None else str(text)
    return _CONTROLS_RE.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", s)


def isolate(text: object) -> str:
    """``text`` with its bidi controls shown (:func:`show_controls`), inside U+2068 … U+2069."""
    s = "" if text is None else str(text)
    if _ISOLATED_RE.fullmatch(s):
        return s
    return FSI + show_controls(s) + PDI


# the blocks of right-to-left scripts (Hebrew … Arabic Extended, their presentation forms, the
# historic RTL blocks of plane 1) and the bidi controls: a string without any of these cannot
# change the direction of the text around it
RTL_OR_CONTROL = re.compile(
    "[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe\U00010800-\U00010fff\U0001e800-\U0001efff"
    + "".join(sorted(BIDI_CONTROLS))
    + "]"
)


def bidi_safe(text: object) -> str:
    """:func:`isolate` where it matters, ``text`` unchanged where it cannot: a string holding a
    right-to-left letter or a bidi control (:data:`RTL_OR_CONTROL`) is isolated; one without
    (every run id like ``k10-c256-o32``) is returned as it is, so the common case reads and
    compares unchanged."""
    s = "" if text is None else str(text)
    return isolate(s) if RTL_OR_CONTROL.search(s) else s


def neutralise(text: str) -> str:
    """Bidi controls shown as ``[U+XXXX]`` except the isolates :func:`isolate` made."""
    out, pos = [], 0
    for m in _ISOLATED_RE.finditer(text):
        out.append(show_controls(text[pos : m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(show_controls(text[pos:]))
    return "".join(out)


def strip_isolates(text: str) -> str:
    """``text`` without U+2068/U+2069 (for a renderer that applies no bidi algorithm and has no
    glyph for them; drawn in logical order, nothing can be reordered there)."""
    return text.replace(FSI, "").replace(PDI, "")


def excerpt(text: object, limit: int) -> str:
    """The start of ``text`` in at most ``limit`` characters (the ``…`` counted), with the full
    length stated when it is cut. The cut falls after the last whole word when one ends in the
    last fifth of the limit (a reader should not take "carcino…" for a word), else mid-word."""
    s = "" if text is None else str(text)
    if len(s) <= limit:
        return s
    kept = s[: max(0, limit - 1)]
    if not s[len(kept)].isspace():  # the cut falls inside a word: end at the word before it
        space = kept.rfind(" ")
        if space >= 0.8 * limit:
            kept = kept[:space]
    kept = kept.rstrip()
    return kept + f"… [excerpt: {len(kept) + 1:,} of {len(s):,} characters]"

"""Run ids as a narrow widget shows them, kept apart: a long id keeps its beginning and its end
around a middle ``…`` (:func:`middle_cut`), so ``ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-20.csv``
and its ``…-11-21.csv`` twin — which a widget cutting at the end shows alike — still read apart.

:func:`run_labels` gives every run of a list its label: at most ``width`` characters where that
keeps each label distinct from the others; runs whose labels would clash (two ids differing only
in their middle) are shown wider, step by step, up to their full id. A label is for the eye only:
the widget's value stays the run id, and a page names the chosen runs in full beside it.

A picker's typed search (Streamlit's selectbox and multiselect filter on the option's label) finds
only what the label holds, so a picker's label is :func:`picker_labels`: the cut label followed by
the whole id in brackets. A narrow widget shows the cut (and cuts the rest at its edge), the label's
tooltip shows all of it, and every word of the id is found by typing it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

__all__ = ["ELLIPSIS", "RUN_LABEL_CHARS", "middle_cut", "pair_label", "picker_labels", "run_labels"]

ELLIPSIS = "…"
RUN_LABEL_CHARS = 32
"""Characters of a run's label in a picker: what a sidebar multiselect's chip or a quarter-width
selectbox shows uncut on the dashboard's default layout (measured in Chromium)."""

_STEP = 4  # characters a clashing label widens by, each round


def middle_cut(text: str, width: int = RUN_LABEL_CHARS) -> str:
    """``text`` itself when at most ``width`` characters, else its first characters, ``…`` and its
    last ones, ``width`` characters in all — the end keeps the larger share (run ids tend to share
    their beginnings and differ in their endings: a date, a suffix). ``width`` is at least 5."""
    width = max(width, 5)
    if len(text) <= width:
        return text
    head = (width - 1) * 2 // 5
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def run_labels(runs: Iterable[str], width: int = RUN_LABEL_CHARS) -> dict[str, str]:
    """Each run's label (module doc): :func:`middle_cut` to ``width``, the runs whose labels clash
    widened until every label is distinct (at worst the full id, and full ids are distinct)."""
    names = list(dict.fromkeys(runs))
    widths = dict.fromkeys(names, width)
    while True:
        labels = {r: middle_cut(r, widths[r]) for r in names}
        holders: dict[str, list[str]] = defaultdict(list)
        for r, label in labels.items():
            holders[label].append(r)
        clashing = [r for group in holders.values() if len(group) > 1 for r in group if labels[r] != r]
        if not clashing:
            return labels
        for r in clashing:
            widths[r] = min(len(r), widths[r] + _STEP)


def picker_labels(runs: Iterable[str], width: int = RUN_LABEL_CHARS) -> dict[str, str]:
    """Each run's label in a picker (module doc): its :func:`run_labels` label, and after a cut one
    the whole id in brackets, so that the picker's search matches every word of the id."""
    return {r: label if label == r else f"{label} ({r})" for r, label in run_labels(runs, width).items()}


def pair_label(labels: dict[str, str], a: str, b: str) -> str:
    """A run pair's label in a picker: ``a vs b`` with the runs' :func:`run_labels` ``labels``, then
    (when either is cut) both ids whole in brackets, which the picker's search matches."""
    shown = f"{labels.get(a, a)} vs {labels.get(b, b)}"
    return shown if shown == f"{a} vs {b}" else f"{shown} ({a} vs {b})"

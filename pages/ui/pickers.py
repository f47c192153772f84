"""The dashboard's run and query pickers: run ids cut for a narrow widget and whole for its search
(:mod:`ragaudit_core.review.runlabels`), the chosen runs named in full, the run pair remembered
across pages, and the query search."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from pages.ui.render import md
from pages.ui.session import KEYS
from ragaudit_core.logs import catalog
from ragaudit_core.review.runlabels import RUN_LABEL_CHARS, pair_label, picker_labels, run_labels

__all__ = [
    "RUN_CHARS_HALF",
    "RUN_CHARS_NARROW",
    "RUN_CHARS_WIDE",
    "query_picker",
    "run_label",
    "run_pair_label",
    "run_pair_picker",
    "runs_in_full",
]


RUN_CHARS_NARROW = 18
"""Characters of a run's label in a sidebar multiselect's chip or a quarter-width selectbox: what
they show uncut at the default sidebar and window width (measured in Chromium: a chip holds 130 px)."""
RUN_CHARS_HALF = 44
"""Characters of a run's label in a half-width selectbox (two pickers side by side)."""
RUN_CHARS_WIDE = 88
"""Characters of a run's label in a full-width selectbox: twice a half-width one's."""


def run_label(runs: Sequence[str], width: int = RUN_LABEL_CHARS) -> Callable[[object], str]:
    """A run picker's ``format_func``: a long run id as its beginning, ``…`` and its end, distinct
    from every other run's label, so a widget that cuts at its end never shows two runs alike; then
    the whole id in brackets, which the widget's type-to-search matches (it searches the label only:
    :func:`ragaudit_core.review.runlabels.picker_labels`). The widget's value stays the run id."""
    labels = picker_labels(runs, width)
    return lambda run: labels.get(run, str(run)) if isinstance(run, str) else str(run)


def run_pair_label(runs: Sequence[str], width: int = RUN_LABEL_CHARS) -> Callable[[str, str], str]:
    """A run-pair picker's label of ``(a, b)``: both runs cut as :func:`run_label` cuts them, then
    both ids whole in brackets for the picker's search (:func:`ragaudit_core.review.runlabels.pair_label`)."""
    labels = run_labels(runs, width)
    return lambda a, b: pair_label(labels, a, b)


def runs_in_full(chosen: Sequence[str], label: Callable[[object], str], where=st) -> None:
    """A caption naming in full the chosen runs whose picker shows them cut (nothing when none is)."""
    cut = [r for r in chosen if label(r) != r]
    if cut:
        where.caption(f"In full: {' · '.join(md(r) for r in cut)}")


def run_pair_picker(
    runs: list[str],
    labels: tuple[str, str] = ("Baseline run", "Candidate run"),
    prefer_sample_run: bool = True,
    preferred: list[str] | None = None,
    default: tuple[str, str] | None = None,
) -> tuple[str, str]:
    """Two runs side by side, remembered across pages; defaults: ``default`` when given (e.g.
    :func:`catalog.default_pair`), else two of ``preferred`` when it holds two (e.g. the runs that
    logged answers), else the sample's base run (or the first run) and the next one."""
    first, second = st.session_state.get(KEYS.run_a), st.session_state.get(KEYS.run_b)
    if default is not None and not (first in runs and second in runs and first != second):
        first, second = default
    pool = [r for r in (preferred or []) if r in runs]
    if len(pool) >= 2 and not (first in runs and second in runs and first != second):
        first, second = (catalog.preferred_run(pool) if prefer_sample_run else pool[0]), None
    if first not in runs:
        first = catalog.preferred_run(runs) if prefer_sample_run else runs[0]
    if second not in runs or second == first:
        second = next((r for r in (pool if len(pool) >= 2 else runs) if r != first), first)
    c1, c2 = st.columns(2)
    label = run_label(runs, RUN_CHARS_HALF)
    a = c1.selectbox(labels[0], runs, index=runs.index(first), format_func=label)
    b = c2.selectbox(labels[1], runs, index=runs.index(second), format_func=label)
    runs_in_full([a, b], label)
    st.session_state[KEYS.run_a], st.session_state[KEYS.run_b] = a, b
    return a, b


def query_picker(con, current: str | None, *, search_box=st, limit: int = 500, run: str | None = None) -> str:
    """Search a query by id or text and pick one — of ``run``'s queries when given (stops the page
    when nothing matches)."""
    search = search_box.text_input("Find a query by id or text", value="", placeholder="e.g. 1012, or stem cells")
    found = catalog.list_queries(con, search, limit=limit, run=run)
    if current and current not in set(found["query_id"]) and not search:
        exact = catalog.list_queries(con, current, run=run)
        exact = exact[exact.query_id == current]
        found = exact if len(exact) else found
    if found.empty:
        st.warning("No query matches that search.")
        st.stop()
    ids = found["query_id"].tolist()
    labels = dict(zip(found["query_id"], found["query"].fillna("")))
    return st.selectbox(
        "Query",
        ids,
        index=ids.index(current) if current in ids else 0,
        format_func=lambda q: f"{q} — {labels.get(q, '')[:110]}",
    )

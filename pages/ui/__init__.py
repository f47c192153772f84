"""The dashboard's helpers, in one place: used only by ``app.py`` and the pages.

Opening the store with a page's precondition, the shared τ slider, number formatting, the
gate-rule editor, and the cached models. The session keys live in :mod:`.session`, the HTML
built from escaped text in :mod:`.render`, the run and query pickers in :mod:`.pickers`. This
is the only Python outside ``ragaudit_core`` that imports Streamlit; it sits in a folder of
``pages/`` so Streamlit does not list it as a page.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from pages.ui.pickers import (
    RUN_CHARS_HALF,
    RUN_CHARS_NARROW,
    RUN_CHARS_WIDE,
    query_picker,
    run_label,
    run_pair_label,
    run_pair_picker,
    runs_in_full,
)
from pages.ui.render import DOC_COLOURS, code, diverging_html, legend_html, md, owner_html
from pages.ui.session import KEYS, PAGES, PARAMS
from ragaudit_core import models
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.selection import comparable_runs, natural_sorted
from ragaudit_core.review import gate, palette
from ragaudit_core.review.labels import column_label, is_share
from ragaudit_core.review.logtext import RTL_OR_CONTROL, bidi_safe
from ragaudit_core.stability.cache import opening_pair
from ragaudit_core.wording import counted, shell_word

__all__ = [
    "CHART_WIDTH",
    "DB_WAIT_S",
    "DOC_COLOURS",
    "KEYS",
    "PAGES",
    "PARAMS",
    "READ_ONLY_NOTE",
    "RUN_CHARS_HALF",
    "RUN_CHARS_NARROW",
    "RUN_CHARS_WIDE",
    "Store",
    "code",
    "connection",
    "counted",
    "current_db_path",
    "default_pair",
    "default_selection",
    "diverging_html",
    "embedder",
    "error_text",
    "first_rows",
    "fmt",
    "gate_rule_editor",
    "legend_html",
    "md",
    "metric_rows",
    "needs_writing",
    "open_store",
    "owner_html",
    "picked_runs",
    "query_picker",
    "release_connections",
    "run_label",
    "run_pair_label",
    "run_pair_picker",
    "runs_in_full",
    "sentence",
    "short_connection",
    "side_by_side",
    "table",
    "tau_slider",
    "through_app",
    "wrapping_row",
    "writable",
]

DB_WAIT_S = 10.0
"""How long an interaction waits for a database another program (a CLI command, another
dashboard) is writing, before the page says who holds it."""
_RUN = threading.local()


def connection(db_path: str):
    """The database for this script run: opened on first use, closed when the run ends
    (:func:`release_connections`, called by ``app.py`` around every page). The dashboard holds
    the file only while an interaction runs, so ``ragaudit ingest/gate/report --db`` and other
    dashboards can use it in between; new data shows on the next interaction (cached results
    are keyed by the data version). Raises ``store.StoreBusy`` after ``DB_WAIT_S``."""
    cons = getattr(_RUN, "cons", None)
    if cons is None:
        cons = _RUN.cons = {}
    con = cons.get(db_path)
    if con is None:
        con = cons[db_path] = _open(db_path)
    return con


def _open(db_path: str):
    """The database opened for writing, or read-only where this user may not write the file (or its
    folder): then it is browsed — what it holds, and what the pages compute on it, without storing
    anything (:func:`writable` says so where a page would store)."""
    try:
        return store.connect(db_path, wait_s=DB_WAIT_S)
    except store.StoreReadOnly:
        return store.connect(db_path, read_only=True, wait_s=DB_WAIT_S)


READ_ONLY_NOTE = (
    "This database is read-only for this user: its logs and stored results can be browsed and computed on, "
    "not changed — loading logs or labels, removing files and starting jobs need a copy this user may write "
    "(copy the file, then open the copy under “Database” in the sidebar)"
)


def writable(db: Store, doing: str) -> bool:
    """Whether the page's database may be written; where it may not (a database browsed read-only), a
    caption says that ``doing`` ("Judging citations") needs a copy this user may write, and False."""
    if db.writable:
        return True
    needs_writing(doing)
    return False


def needs_writing(doing: str) -> None:
    """A caption where something that would store is not offered (a database browsed read-only): that
    ``doing`` ("Judging citations") needs a copy this user may write."""
    st.caption(
        f"{doing} needs a database this user may write: this one is read-only (copy the file, then open the "
        "copy under “Database” in the sidebar)."
    )


@contextlib.contextmanager
def short_connection(db_path: str):
    """The database for one short look, closed at once: for fragments that rerun on a timer
    (``app.py`` does not wrap their reruns, so :func:`connection` would keep the file open)."""
    con = _open(db_path)
    try:
        yield con
    finally:
        con.close()


def release_connections() -> None:
    """Close this script run's database connections."""
    for con in getattr(_RUN, "cons", {}).values():
        try:
            con.close()
        except Exception:  # noqa: BLE001 — a connection already closed by DuckDB
            pass
    _RUN.cons = {}


embedder = st.cache_resource(models.load_embedder, show_spinner="Loading the SBERT model…")


@dataclass(frozen=True)
class Store:
    con: object  # duckdb.DuckDBPyConnection
    db_path: str
    version: str  # the data version: part of every cached result's key
    writable: bool = True  # False: browsed read-only (this user may not write the file)


@st.cache_data(show_spinner=False, max_entries=8)
def default_pair(db: str, data_version: str) -> tuple[str, str] | None:
    """The pair the pages open on (:func:`stability.cache.opening_pair`: among the runs the default
    selection compares), cached per data version (it joins every run's queries)."""
    return opening_pair(connection(db))


@st.cache_data(show_spinner=False, max_entries=8)
def default_selection(db: str, data_version: str):
    """The runs compared by default (``logs.selection.RunSelection``) and every run with evidence,
    in natural order; cached per data version (it groups every record)."""
    return comparable_runs(connection(db)), natural_sorted(catalog.evidence_run_ids(connection(db)))


def picked_runs() -> list[str] | None:
    """The runs the user picked on the stability page, or None for the default selection."""
    return st.session_state.get(KEYS.runs)


def current_db_path() -> str:
    """The database this session reads: chosen on the home page, else the default."""
    return st.session_state.get(KEYS.db_path) or str(store.default_db_path())


def through_app() -> None:
    """Make sure this page runs inside ``app.py``'s navigation; rerun it so when not.

    Streamlit (1.67) starts a server in its old multipage mode when a ``pages/`` folder lies beside
    the main script, and stays in it until ``st.navigation`` is first called. A server whose first
    visit is a link to a page (``/Stability``, a shared drill-down link) ran that page file on its
    own: the sidebar listed file names, and ``app.py``'s ``finally`` — which lets go of the database
    after every interaction (:func:`release_connections`) — never ran, so the CLI could not write
    the file while the page was open. Here the page sets the flag ``st.navigation`` sets and reruns:
    the rerun goes through ``app.py`` and opens the same page (its address is the same)."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def open_store(title: str, precondition: Callable[[object], str | None] | None = None) -> Store:
    """Draw the page title, open the session's database and check the page's precondition
    (a function of the connection returning why the page cannot draw, or None); when it
    fails, say why and stop the script. First, the page is made to run through ``app.py``
    (:func:`through_app`)."""
    through_app()
    db_path = current_db_path()
    st.title(title)
    try:
        con = connection(db_path)
    except store.StoreBusy as e:
        st.warning(md(f"{e}. This page works again on your next interaction once it is free."))
        st.stop()
    except store.StoreError as e:
        st.error(error_text(e) + " Pick another file under “Database” on the home page.")
        st.stop()
    writable = not store.is_read_only(con)
    if precondition is not None and (msg := precondition(con)):
        st.info(md(msg))
        if not writable:  # the message says to load logs on the home page, which does not offer it
            needs_writing("Loading logs")
        st.stop()
    return Store(con, db_path, store.data_version(con), writable)


def tau_slider(label: str = "Flip threshold τ (a query flips when J < τ)") -> float:
    """The flip threshold τ, in the sidebar, shared by every page."""
    tau = st.sidebar.slider(label, 0.05, 0.95, float(st.session_state.get(KEYS.flip_threshold, FLIP_THRESHOLD)), 0.05)
    st.session_state[KEYS.flip_threshold] = tau
    return tau


def wrapping_row(n: int) -> list:
    """``n`` places side by side (``st.metric`` figures, page links), filled in order, that wrap onto
    another line in a narrow window: ``st.columns(n)`` cut each figure there to its first character
    (the walk at 900 px with the sidebar open: "0…", "2…", "9…" for the stability headline)."""
    return [st.container(horizontal=True)] * n


CHART_WIDTH = 460
"""Pixels of a chart that stands beside another (:func:`side_by_side`): its title of up to 60
characters (``palette.wrap_title``, about 410 px) and a square plot beside its legend or colour bar."""


def side_by_side(*widths: int) -> list:
    """Places of ``widths`` pixels in a row where the window holds them all, else one under the
    other, each as wide as the page allows up to its width: ``st.columns(2)`` halved a narrow page
    instead (at 900 px with the sidebar open the stability page's two charts got 212 px each, their
    titles cut and their square plots 60 px wide)."""
    row = st.container(horizontal=True, horizontal_alignment="distribute")
    return [row.container(width=w) for w in widths]


_WHOLE_COLUMNS = {"page", "paragraph", "rank", "logged_rank", "position", "char_start", "char_end", "line_no", "stage"}


TABLE_ROWS = 1_000
"""Rows a per-query table sends to the browser: the worst first; the rest by the query picker."""


def metric_rows(frame: pd.DataFrame, keys: pd.Series, columns: Sequence[str]) -> Styler:
    """A table whose rows are metrics (``keys``: each row's metric key): the share rows' ``columns``
    written as percentages, the others with three decimals — one format per row, not per column."""
    share = keys.map(is_share).to_numpy()
    rows = frame.index[share]
    other = frame.index[~share]
    cols = [c for c in columns if c in frame.columns]
    return frame.style.format(palette.percent, subset=pd.IndexSlice[rows, cols], na_rep="").format(
        "{:.3f}", subset=pd.IndexSlice[other, cols], na_rep=""
    )


def first_rows(frame: pd.DataFrame, what: str = "queries", limit: int = TABLE_ROWS) -> pd.DataFrame:
    """The first ``limit`` rows of a table sorted worst first, with a caption saying how many of
    how many are shown (100k rows would be megabytes sent to the browser on every interaction)."""
    if len(frame) <= limit:
        return frame
    st.caption(
        f"Showing the first {limit:,} of {len(frame):,} {what} (worst first); open any other in the "
        "query drill-down, or read them all with `ragaudit stability --json`."
    )
    return frame.head(limit)


def _whole(col: pd.Series, name: str) -> bool:
    """A float column that holds counts or positions (NULLs made it float): shown without decimals."""
    if name not in _WHOLE_COLUMNS and not name.startswith("n_"):
        return False
    vals = col.dropna()
    return bool(len(vals)) and bool((vals == vals.round()).all())


def table(data, *, column_config: dict | None = None, **kwargs):
    """``st.dataframe`` as every page draws it: missing values blank (never "None"), readable
    column titles (:func:`ragaudit_core.review.labels.column_label`) and floats with three
    decimals (the callers give rows in natural run order). The data keeps its keys, so a
    selection's row index and ``.value`` in tests are unchanged. Returns what
    ``st.dataframe`` returns (the selection, with ``on_select``). Share columns
    (:func:`ragaudit_core.review.labels.is_share`) read as percentages, one decimal."""
    styler = data if isinstance(data, Styler) else None
    styled = styler is not None  # the caller's Styler formats the numbers: a column format would override it
    frame = styler.data if styler is not None else data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    given = set(column_config or {})
    shares = [
        c for c in frame.columns if c not in given and pd.api.types.is_float_dtype(frame[c].dtype) and is_share(c)
    ]
    if styler is None:
        frame = _bidi_safe_cells(frame)
        if shares:  # shares as the charts and the report write them: 94.3%
            styler = frame.style.format(dict.fromkeys(shares, palette.percent), na_rep="")
    config: dict = {}
    for col in frame.columns:
        if col in shares:
            config[col] = column_label(col)
        elif pd.api.types.is_float_dtype(frame[col].dtype) and _whole(frame[col], str(col)):
            config[col] = st.column_config.NumberColumn(column_label(col), format="%d")  # a page, not 2.000
        elif pd.api.types.is_float_dtype(frame[col].dtype) and not styled:
            config[col] = st.column_config.NumberColumn(column_label(col), format="%.3f")
        else:
            config[col] = column_label(col)
    for col, spec in (column_config or {}).items():
        if isinstance(spec, dict) and spec.get("label") is None and col in frame:
            spec = {**spec, "label": column_label(col)}
        config[col] = spec
    kwargs.setdefault("hide_index", True)
    return st.dataframe(styler if styler is not None else frame, column_config=config, placeholder="", **kwargs)


def _bidi_safe_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells holding a right-to-left letter or a bidi control isolated (U+2068 … U+2069,
    controls shown as ``[U+202E]``), so a run id cannot reorder the rest of its cell (a rule's
    "why"); a frame without such a cell is returned as it is (one vectorised scan per text column)."""
    out = frame
    for col in frame.columns:
        if not (frame[col].dtype == object or pd.api.types.is_string_dtype(frame[col].dtype)):
            continue
        try:
            hit = frame[col].str.contains(RTL_OR_CONTROL.pattern, regex=True, na=False)
        except (AttributeError, TypeError):  # not a text column
            continue
        if hit.any():
            out = out.copy() if out is frame else out
            out[col] = frame[col].map(lambda v: bidi_safe(v) if isinstance(v, str) else v)
    return out


def sentence(text: str) -> str:
    """A message from the core as a sentence: its first letter in capitals (the core words its
    warnings to follow a colon or a file name: "query coverage differs …")."""
    return text[:1].upper() + text[1:]


def error_text(error: object) -> str:
    """An error from the core as a page shows it: a sentence (a first word in capitals unless it is a
    file name or an id, a full stop at the end — the core words its errors to follow ``error:`` on
    the command line) in Markdown-escaped text."""
    text = str(error).rstrip()
    first = text.split(" ", 1)[0]
    if first.isalpha() and first.islower():  # a word, not a file name ("crm.duckdb is …") or an id
        text = sentence(text)
    return md(text if text.endswith((".", "?", "!", "…")) else text + ".")


def fmt(v, pct: bool = False, nd: int = 3) -> str:
    """A number as the dashboard shows it: ``n/a`` when missing, a percentage or ``nd`` decimals."""
    if v is None or (isinstance(v, float) and v != v):
        return "n/a"
    v = round(float(v), nd + 2 if pct else nd) + 0.0  # (+ 0.0: a value that rounds to zero shows 0, not -0)
    return f"{v:.1%}" if pct else f"{v:.{nd}f}"


QUALITY_CHOICES = [f"{m}@{k}" for k in (5, 10, 20) for m in ("ndcg", "recall", "precision", "hit")] + [
    "mrr",
    "map",
    "ndcg",
    "recall",
]
"""Ranking-quality metrics offered in the rule editor (any ``metric@k`` is valid in a rules file)."""


def gate_rule_editor(db_path: str) -> tuple[gate.GatePolicy, str]:
    """The compare page's rule editor: presets, a TOML upload, the editable table, what the verdict
    must rest on, saving and downloading. Returns the policy (valid rules only: invalid rows are
    shown and left out) and its TOML text."""
    if KEYS.gate_rules not in st.session_state:
        st.session_state[KEYS.gate_rules] = gate.rule_rows(gate.DEFAULT_RULES)
        st.session_state[KEYS.gate_policy] = {"min_applicable": 0, "require": []}
        st.session_state[KEYS.gate_editor] = 0
    with st.expander("Rules (edit, load, save)"):
        _rule_sources()
        edited = st.data_editor(
            st.session_state[KEYS.gate_rules],
            num_rows="dynamic",
            hide_index=True,
            key=f"compare.rule_editor.{st.session_state[KEYS.gate_editor]}",
            column_config=_rule_columns(),
        )
        rules, errors = gate.rules_from_rows(edited)
        for e in errors:
            st.error(f"Rule {e} (left out until fixed)")
        policy = _policy_settings(rules)
        toml_text = gate.dump_policy(policy)
        _rule_targets(policy, toml_text, bool(errors), db_path)
    return policy, toml_text


def _policy_settings(rules: list[gate.Rule]) -> gate.GatePolicy:
    """What the verdict must rest on: at least N applicable rules, and the questions it requires."""
    saved = st.session_state[KEYS.gate_policy]
    c1, c2 = st.columns([1, 2])
    n = c1.number_input(
        "Applicable rules at least",
        0,
        max(len(rules), 1),
        min(int(saved["min_applicable"]), max(len(rules), 1)),
        help="A verdict resting on fewer applicable rules fails (a thin verdict).",
        key=f"compare.min_applicable.{st.session_state[KEYS.gate_editor]}",
    )
    req = c2.multiselect(
        "Questions the verdict must answer",
        list(gate.AREAS),
        default=[a for a in saved["require"] if a in gate.AREAS],
        help="Each needs an applicable rule, else the verdict fails (e.g. fidelity: provenance logs must be loaded).",
        key=f"compare.require.{st.session_state[KEYS.gate_editor]}",
    )
    st.session_state[KEYS.gate_policy] = {"min_applicable": int(n), "require": list(req)}
    return gate.GatePolicy(rules=rules, min_applicable=int(n), require=list(req))


def _use_rules(policy: gate.GatePolicy) -> None:
    st.session_state[KEYS.gate_rules] = gate.rule_rows(policy.rules)
    st.session_state[KEYS.gate_policy] = {"min_applicable": policy.min_applicable, "require": list(policy.require)}
    st.session_state[KEYS.gate_editor] += 1  # a new editor widget, so the table shows the new rows
    st.rerun()


def _rule_sources() -> None:
    c1, c2 = st.columns([1, 2])
    preset = c1.selectbox(
        "Start from a preset",
        ["—", *(p for p in gate.PRESETS if p != "none")],
        help=(
            "default: doc + span stability; fidelity, WARG and nDCG@10 relative to the baseline; "
            "strict: seed 002's absolute fidelity thresholds; review: the default rules, and the verdict "
            "must answer stability, fidelity and attribution"
        ),
    )
    loaded = c2.file_uploader("…or load a rules TOML file", type=["toml"], key="compare.rules_file")
    if preset != "—":
        c1.caption("Picked, not yet used: the button replaces the rules in the table below with this preset's.")
        if c1.button(f"Use the {preset} preset"):
            _use_rules(gate.PRESETS[preset])
    if loaded is not None and c2.button(f"Use the rules in {md(loaded.name)}"):
        try:
            rules_in = gate.policy_from_toml(loaded.getvalue())
        except ValueError as e:
            st.error(md(f"{loaded.name}: {e}"))
        else:
            _use_rules(rules_in)


def _rule_targets(policy: gate.GatePolicy, toml_text: str, has_errors: bool, db_path: str) -> None:
    c1, c2 = st.columns([2, 1])
    root, beside = store.workspace_root(), Path(db_path).resolve().parent
    raw = c1.text_input(
        "Save the rules to",
        value=str((beside if beside.is_relative_to(root) else root) / "gate-rules.toml"),
        help=f"A .toml file inside the workspace folder {root}.",
    )
    if c2.button("Save rules", disabled=has_errors):
        try:  # a text box must not make the server write wherever its process may (as the database picker)
            target = store.path_in_workspace(raw, (".toml",), "a rules file", "saves files", "gate-rules.toml")
            gate.save_rules(policy, target)
        except store.StoreError as e:
            st.error(md(sentence(str(e)) + "."))
        except OSError as e:
            st.error(
                md(
                    f"Could not write {raw}: {e.strerror or e}; save them to a folder this user may write, "
                    "or download them."
                )
            )
        else:
            them = "it" if len(policy.rules) == 1 else "them"
            st.success(
                f"Saved {counted(len(policy.rules), 'rule')} to {md(str(target))} — use {them} in CI with "
                f"{code(f'ragaudit gate --rules {shell_word(target)}')}."
            )
    c2.download_button("Download rules.toml", toml_text, file_name="gate-rules.toml", mime="application/toml")


def _rule_columns() -> dict:
    return {
        "metric": st.column_config.SelectboxColumn(
            "metric",
            options=[*sorted(gate.PAIR_METRICS | gate.RUN_METRICS), *QUALITY_CHOICES],
            required=True,
        ),
        "level": st.column_config.TextColumn("level / stage", help="doc or span; a stage name or 'every'"),
        "p": st.column_config.NumberColumn("p (WARG)", min_value=0.01, max_value=0.99, step=0.05),
        "op": st.column_config.SelectboxColumn("op", options=[">=", "<=", ">", "<"], required=True),
        "threshold": st.column_config.NumberColumn("threshold", required=True, format="%.3f"),
        "relative": st.column_config.CheckboxColumn("relative to baseline", default=False),
        "significant": st.column_config.CheckboxColumn(
            "significant",
            default=False,
            help="Decide on the 95 % interval: pass when it lies wholly within, fail when wholly beyond, "
            "inconclusive otherwise",
        ),
        "min_queries": st.column_config.NumberColumn(
            "min queries", min_value=1, step=1, help="Fewer queries behind the figure: inconclusive"
        ),
        "required": st.column_config.CheckboxColumn(
            "required", default=False, help="Fail when the rule's data is absent"
        ),
    }

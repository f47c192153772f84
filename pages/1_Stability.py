"""Evidence stability: do the same documents and the same spans come back across runs?

Seed 000: document- vs span-level Jaccard per run pair, the Stability Gap, collapse,
flip and null diagnostics. Click a pair in the scatter (or pick it below) to see its
queries; pick a query to open the drill-down.
"""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import catalog
from ragaudit_core.logs.qrels import unlabelled_runs_note
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.quality.cache import has_labels, quality_cached
from ragaudit_core.review import charts, quality_charts
from ragaudit_core.review.labels import change_label, metric_label
from ragaudit_core.stability.cache import DEFAULT_DENSITY_BINS as BINS
from ragaudit_core.stability.cache import compare_cached, default_options, stability_cached
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.metrics import NoComparablePairs, NoSharedQueries, StabilityError, StabilityOptions
from ragaudit_core.stability.uncertainty import EFFECT_INTERVAL_METRICS
from ragaudit_core.wording import bracket

st.set_page_config(page_title="Stability · RagAudit", page_icon="📈", layout="wide")
db = ui.open_store("Evidence stability", lambda con: catalog.missing_data_message(con, min_runs=2))
db_path, version = db.db_path, db.version
KEYS, PAGES, fmt = ui.KEYS, ui.PAGES, ui.fmt


@st.cache_data(show_spinner="Computing stability over every run pair…", max_entries=8)
def stability(db: str, data_version: str, tau: float, runs: tuple[str, ...] | None):
    # stored in the database per data version: the default selection is computed at ingest for τ = 0.5
    con = ui.connection(db)
    opts = (
        default_options(con, tau)
        if runs is None
        else StabilityOptions(runs=list(runs), flip_threshold=tau, allow_missing=True, resamples=DEFAULT_RESAMPLES)
    )
    return stability_cached(con, opts)


@st.cache_data(show_spinner="Ranking quality of the compared runs…", max_entries=8)
def quality(db: str, data_version: str, runs: tuple[str, ...]):
    """The runs' ranking quality, and why the loaded labels label no query of some of them (None, None
    without labels)."""
    con = ui.connection(db)
    if not has_labels(con):
        return None, None
    return quality_cached(con, list(runs)), unlabelled_runs_note(con, runs)


@st.cache_data(show_spinner=False, max_entries=32)
def pair_queries(db: str, data_version: str, a: str, b: str, tau: float):
    return compare_cached(ui.connection(db), a, b, tau=tau)  # the default pair is stored at ingest


tau = ui.tau_slider("Flip threshold τ (a pair flips when J < τ)")
selection, all_runs = ui.default_selection(db_path, version)
remembered = [r for r in (ui.picked_runs() or []) if r in all_runs]
state = st.session_state.get("stability.runs")  # None on a first draw (or back from another page)
current = [r for r in state or [] if r in all_runs]
if state is None or (state and not current):  # emptied by the user ("Clear all"): stays empty
    current = remembered if len(remembered) >= 2 else selection.runs  # first draw, or every pick was removed
st.session_state["stability.runs"] = current
run_label = ui.run_label(all_runs, ui.RUN_CHARS_NARROW)
picked = st.sidebar.multiselect(
    "Runs compared",
    all_runs,
    key="stability.runs",
    format_func=run_label,
    help="Default: the runs that share the most queries between the most runs (runs sharing no query, or "
    "asking other questions under the same ids, or only a few of the queries, are left out). The PDF report built "
    "on the compare page compares the same runs.",
)
ui.runs_in_full(picked, run_label, st.sidebar)
st.session_state[KEYS.runs] = None if set(picked) == set(selection.runs) else natural_sorted(picked)
if selection.note and set(picked) == set(selection.runs):
    st.info(ui.md(selection.note))
if len(picked) < 2:
    st.info("Pick at least two runs to compare under “Runs compared” in the sidebar.")
    st.stop()
try:
    res = stability(
        db_path, version, tau, None if set(picked) == set(selection.runs) else tuple(natural_sorted(picked))
    )
except NoSharedQueries:  # a choice of runs, not a failure: say what to pick instead (as the compare page does)
    default = ", ".join(selection.runs[:8]) + (" …" if len(selection.runs) > 8 else "")
    st.info(
        ui.md(
            f"These {len(picked)} runs have no query in common, so there is nothing to compare. Take out the runs "
            f"that share no query under “Runs compared”, or compare the default selection: "
            f"{ui.counted(len(selection.runs), 'run')} sharing {ui.counted(selection.n_shared, 'query')} ({default})."
        )
    )
    st.stop()
except NoComparablePairs as e:  # every pair sets a run without document ids beside one with: a choice too
    st.info(ui.md(ui.sentence(str(e)) + " (under “Runs compared” in the sidebar)."))
    st.stop()
except StabilityError as e:
    st.error(ui.error_text(e))
    st.stop()
s = res.summary
for w in s.warnings:
    st.warning(ui.md(ui.sentence(w)))


m = ui.wrapping_row(6)
m[0].metric("mean J_doc", fmt(s.mean_j_doc), help="Mean document-level Jaccard over every (query, pair).")
m[1].metric("mean J_span", fmt(s.mean_j_span), help="Mean span-level Jaccard; n/a when the logs carry no spans.")
m[2].metric("gap ratio", fmt(s.gap_ratio), help="mean J_doc / mean J_span: the Stability Gap.")
m[3].metric(
    "collapse rate",
    fmt(s.collapse_rate, pct=True),
    help="Queries with some pair at J_span = 0 while both lists are non-empty.",
)
m[4].metric(
    "flip rate (span)",
    fmt(s.flip_rate["span"], pct=True),
    help=f"(query, pair) cells with J_span < τ = {tau}; document level: {fmt(s.flip_rate['doc'], True)}.",
)
m[5].metric(
    "null transitions",
    f"{s.null_transitions:,}",
    help="(query, pair) cells where one run returned evidence and the other none.",
)
st.caption(
    f"{ui.counted(s.n_queries, 'query')} × {ui.counted(s.n_pairs, 'run pair')}"
    f" · flip rate (doc) {fmt(s.flip_rate['doc'], True)}"
    f" · median J_min,span {fmt(s.span.median_j_min)}"
    f" · same documents with different spans: "
    f"{s.same_docs_diff_spans if s.same_docs_diff_spans is not None else 'n/a'}"
    + (f" · {s.gap_ratio_note}" if s.gap_ratio_note else "")
)
if res.intervals is not None:
    iv = res.intervals.summary

    def ci(key: str, pct: bool = False) -> str:
        e = iv.get(key)
        return "n/a" if e is None or e.lo != e.lo else f"[{fmt(e.lo, pct)}, {fmt(e.hi, pct)}]"

    st.caption(
        f"95 % bootstrap intervals over the {ui.counted(res.intervals.n_queries, 'query')} "
        f"({ui.counted(res.intervals.resamples, 'resample')}): mean J_doc {ci('mean_j_doc')} · "
        f"mean J_span {ci('mean_j_span')} · gap ratio {ci('gap_ratio')} · collapse rate {ci('collapse_rate', True)} · "
        f"flip rate (span) {ci('flip_rate_span', True)}"
    )

pairs = res.pairs
pair_list = [tuple(p) for p in pairs.loc[pairs.level == "doc", ["run_a", "run_b"]].itertuples(index=False)]
default_pair = ui.default_pair(db_path, version)  # the compare page's: stored at ingest
if default_pair is not None and default_pair[::-1] in pair_list:
    pair_list = [default_pair if p == default_pair[::-1] else p for p in pair_list]
selected = st.session_state.get(KEYS.pair)
selected = tuple(selected) if selected and tuple(selected) in pair_list else None

left, right = ui.side_by_side(ui.CHART_WIDTH, ui.CHART_WIDTH)  # one under the other in a narrow window
with left:
    event = st.plotly_chart(
        charts.stability_scatter(pairs, gap_ratio=s.gap_ratio, highlight=selected),
        on_select="rerun",
        selection_mode="points",
        key="stability.scatter",
    )
    points = (event or {}).get("selection", {}).get("points", []) if event else []
    picked = [p.get("customdata") for p in points if p.get("customdata")]
    if picked and tuple(picked[0][:2]) != selected:
        st.session_state[KEYS.pair] = tuple(picked[0][:2])
        st.rerun()
with right:
    if res.density is not None and len(res.density):
        st.plotly_chart(charts.pair_density(res.density, BINS), key="stability.density")
    else:
        st.info("No pair has span information on both sides: the per-(query, pair) view needs spans.")

q_res, q_note = quality(db_path, version, tuple(s.runs))
if q_res is not None and (q_res.labelled or q_note):
    st.subheader("Ranking quality (relevance labels)")
if q_note:  # labels are loaded, yet some compared run has none of its queries labelled: say why
    st.info(ui.md(ui.sentence(q_note) + "."))
if q_res is not None and q_res.labelled:
    q_left, q_right = ui.side_by_side(560, 420)  # side by side from about 1,460 px (its title: 340 px)
    with q_left:
        ui.table(
            q_res.run_table(),
            hide_index=True,
            column_config={m: st.column_config.NumberColumn(format="%.3f") for m in ("ndcg@10", "recall@10", "mrr")},
        )
        st.caption(
            "Mean over each run's queries with a relevant label (trec_eval's definitions; a document counts at its "
            "first rank). Queries without labels are left out, never scored 0. Compare two runs to see whether "
            "the evidence that changed took quality with it."
        )
    with q_right:
        st.plotly_chart(quality_charts.quality_intervals(q_res), key="stability.quality")

st.subheader("By what changed between the two runs")
effects = effects_by_change(pairs, res.intervals)
shown = effects[["changed", "level", "n_pairs"]].assign(
    changed=effects["changed"].map(change_label)
)  # the legend's words
for m in EFFECT_INTERVAL_METRICS:  # each figure, then its interval as text (J_avg to 3 decimals, rates as percents)
    shown[m] = effects[m]
    spec = ".3f" if m == "j_avg" else ".1%"
    shown[f"{m}_ci"] = [bracket(lo, hi, spec) or None for lo, hi in zip(effects[f"{m}_lo"], effects[f"{m}_hi"])]
ui.table(
    shown,
    hide_index=True,
    column_config={
        "j_avg": st.column_config.NumberColumn(format="%.3f"),  # the rates: percentages (ui.table)
        **{f"{m}_ci": f"{metric_label(m)}, 95 % interval" for m in EFFECT_INTERVAL_METRICS},
    },
)
if res.intervals is not None:
    st.caption(
        "Means over each group's pairs, pairs weighing equally. 95 % bootstrap intervals over the "
        f"{ui.counted(res.intervals.n_queries, 'query')}, on the resamples of the pairs' own intervals: a group's "
        "figure in a resample is the mean of its pairs' figures in that resample (its pairs share their queries)."
    )

st.subheader("Run pairs")
wide = pairs.pivot_table(
    index=["run_a", "run_b", "changed"],
    columns="level",
    values=["j_avg", "flip_rate", "collapse_rate", "null_loss", "null_gain"],
).reset_index()
wide.columns = [f"{v}_{lvl}" if lvl else v for v, lvl in wide.columns]
sdds = pairs[pairs.level == "span"].set_index(["run_a", "run_b"])["same_docs_diff_spans"]
wide["same_docs_diff_spans"] = [sdds.get((a, b)) for a, b in zip(wide.run_a, wide.run_b)]
wide = wide.sort_values("j_avg_span" if "j_avg_span" in wide else "j_avg_doc", kind="stable")
wide["changed"] = wide["changed"].map(change_label)
pair_ci: dict = {}
if res.intervals is not None:  # each pair's J_avg with its interval, beside the figure (the scatter's axes)
    j = res.intervals.pairs
    j = j[j.metric == "j_avg"] if len(j) else j
    # one lookup for every row (a filter per row was 10,000 scans of 50,000 rows at 5,000 pairs), either orientation
    bounds = {(r.level, *ab): (r.lo, r.hi) for r in j.itertuples() for ab in ((r.run_a, r.run_b), (r.run_b, r.run_a))}
    for lvl in ("doc", "span"):
        if f"j_avg_{lvl}" not in wide:
            continue
        col = wide.columns.get_loc(f"j_avg_{lvl}") + 1
        est = [bounds.get((lvl, a, b)) for a, b in zip(wide.run_a, wide.run_b)]
        wide.insert(col, f"j_avg_{lvl}_ci", [bracket(*e, ".3f") if e else None for e in est])
        pair_ci[f"j_avg_{lvl}_ci"] = f"{metric_label('j_avg', lvl)}, 95 % interval"
first = ["run_a", "run_b", "changed", *(c for c in wide.columns if c.startswith("j_avg_"))]  # the sort key first
wide = wide[first + [c for c in wide.columns if c not in first]]
pair_pick = ui.table(
    wide,
    hide_index=True,
    on_select="rerun",
    selection_mode="single-row",
    key="stability.pairs",
    column_config={
        **{c: st.column_config.NumberColumn(format="%.3f") for c in wide.columns if c in ("j_avg_doc", "j_avg_span")},
        **pair_ci,
    },
)
if pair_ci:
    st.caption(
        f"95 % bootstrap intervals over the {ui.counted(res.intervals.n_queries, 'query')}. Every figure of a pair "
        "has one: `ragaudit stability --json` and the PDF report's per-pair table give them all."
    )
rows = pair_pick.selection.rows if pair_pick else []
if rows:
    r = wide.iloc[rows[0]]
    if (r.run_a, r.run_b) != selected:
        st.session_state[KEYS.pair] = (r.run_a, r.run_b)
        st.rerun()

st.subheader("Worst case per query")
st.plotly_chart(charts.jmin_histogram(res.queries), key="stability.jmin")

# --- one pair ---------------------------------------------------------------------------------
st.subheader("One pair, query by query")
index = pair_list.index(selected) if selected else pair_list.index(default_pair) if default_pair in pair_list else 0
pair_label = ui.run_pair_label(all_runs)  # both runs named in full in the sentence below
choice = st.selectbox(
    "Run pair (or click a point in the scatter)",
    range(len(pair_list)),
    index=index,
    format_func=lambda i: pair_label(*pair_list[i]),
)
a, b = pair_list[choice]
if choice != index:  # only a change by the user: the scatter's spec (and its selection) stays put
    st.session_state[KEYS.pair] = (a, b)
    st.rerun()
detail = pair_queries(db_path, version, a, b, tau)
ds = detail.summary
st.write(
    f"**{ui.md(a)}** vs **{ui.md(b)}**: {ui.counted(ds.n_queries, 'query')}, "
    f"{ds.n_flipped:,} flipped (J_{ds.level} < τ), "
    + (f"{ds.n_collapsed:,} collapsed, " if ds.n_collapsed is not None else "")
    + f"{ui.counted(ds.n_null_changes, 'null transition')}."
    + (
        f" Over the queries both runs have; the figures above are over the {ui.counted(s.n_queries, 'query')} "
        "every compared run has."
        if ds.n_queries != s.n_queries
        else ""
    )
)
shown_queries = ui.first_rows(detail.queries)
q_pick = ui.table(
    shown_queries,
    hide_index=True,
    on_select="rerun",
    selection_mode="single-row",
    key=f"stability.pair_queries.{a}.{b}",
    column_config={
        "j_doc": st.column_config.NumberColumn(format="%.3f"),
        "j_span": st.column_config.NumberColumn(format="%.3f"),
        "query": st.column_config.TextColumn(width="large"),
    },
)
nav = st.columns(2)
if nav[0].button("Compare these two runs →"):
    st.session_state[KEYS.run_a], st.session_state[KEYS.run_b] = a, b
    st.switch_page(PAGES.compare)
q_rows = q_pick.selection.rows if q_pick else []
if q_rows:
    st.session_state[KEYS.query] = shown_queries.iloc[q_rows[0]]["query_id"]
    st.session_state[KEYS.run_a], st.session_state[KEYS.run_b] = a, b
    st.switch_page(PAGES.drilldown)
nav[1].caption("Select a query row to open it in the drill-down.")

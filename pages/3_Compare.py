"""Baseline vs candidate: metric deltas, the queries that flipped or collapsed, and the
evidence–answer probe (seed 000, Table 1 and figures 2–3)."""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.logs import catalog
from ragaudit_core.logs.qrels import unlabelled_runs_note
from ragaudit_core.logs.sanity import same_questions_other_ids
from ragaudit_core.logs.selection import natural_sorted, runs_sharing_queries
from ragaudit_core.logs.stored_questions import hashed_id
from ragaudit_core.quality.cache import has_labels, quality_cached
from ragaudit_core.quality.jitter import jitter_cost
from ragaudit_core.review import charts, gate, quality_charts
from ragaudit_core.stability.cache import compare_cached
from ragaudit_core.stability.compare import OVERLAP_METRICS, PAIR_METRIC_LABELS, RUN_METRIC_LABELS
from ragaudit_core.stability.metrics import NoSharedQueries, StabilityError
from ragaudit_core.stability.probe import has_answers, lookup_similarities, probe_pair
from ragaudit_core.wording import bracket, shell_word

st.set_page_config(page_title="Compare · RagAudit", page_icon="⚖️", layout="wide")
db = ui.open_store("Compare two runs", lambda con: catalog.missing_data_message(con, min_runs=2))
con, db_path, version = db.con, db.db_path, db.version
KEYS, PAGES = ui.KEYS, ui.PAGES


@st.cache_data(show_spinner="Comparing…", max_entries=32)
def comparison(db: str, data_version: str, a: str, b: str, tau: float):
    return compare_cached(ui.connection(db), a, b, tau=tau)  # the default pair is stored at ingest


@st.cache_data(show_spinner="Ranking quality of the pair…", max_entries=32)
def pair_quality(db: str, data_version: str, a: str, b: str, tau: float):
    con = ui.connection(db)
    if not has_labels(con):
        return None, None, None
    q = quality_cached(con, [a, b], pairs=[(a, b)])
    # why the loaded labels label no query of one of the runs, when they do not
    return q, jitter_cost(con, comparison(db, data_version, a, b, tau), k=10), unlabelled_runs_note(con, [a, b])


@st.cache_data(show_spinner="Comparing the answers…", max_entries=8)
def answer_probe(db: str, data_version: str, a: str, b: str, tau: float):
    """The evidence–answer probe (similarities stored in the database when it may be written, else
    kept by this cache for the session's next interactions)."""
    return probe_pair(ui.connection(db), a, b, ui.embedder, tau=tau)


@st.cache_data(show_spinner="Gathering the gate's metrics…", max_entries=32)
def gate_inputs(db: str, data_version: str, a: str, b: str, tau: float, cutoffs: tuple[int, ...]):
    con = ui.connection(db)
    return gate.collect(con, a, b, tau=tau, comparison=comparison(db, data_version, a, b, tau), cutoffs=cutoffs)


def _listed(runs: list[str]) -> str:
    """At most 8 runs named, then how many more (a sentence's full stop follows: not "… .")."""
    return ", ".join(runs[:8]) + (f" and {len(runs) - 8:,} more" if len(runs) > 8 else "")


def _sharing_note(baseline: str, candidate: str, compared: list[str]) -> str:
    """For two runs that share no query: the runs that share queries with each (the default
    selection's runs, named before, were often none of them: a stray upload's partner was not)."""
    sharing = {r: runs_sharing_queries(con, r) for r in (baseline, candidate)}
    if not any(sharing.values()):
        return f"Pick two of the runs that share queries: {_listed(compared)}."
    return " ".join(
        f"Runs that share queries with {r}: {_listed(runs)}." if runs else f"{r} shares no query with any other run."
        for r, runs in sharing.items()
    )


def _pairing_advice(a: str, b: str, id_a: str, id_b: str) -> str:
    """How to pair two runs asking the same questions under other ids: a run of hashed ids takes the other's
    when its file is loaded again after it (the stored runs' questions); two runs of logged ids need the same."""
    if hashed_id(id_a) != hashed_id(id_b):
        hashed, other = (a, b) if hashed_id(id_a) else (b, a)
        return (
            f"To compare them, remove the file of {hashed} on the home page and upload it again: loaded after "
            f"{other}, its questions take the ids {other} logs for them (or upload it with the benchmark's questions "
            "file, or give it those ids in a query_id field)."
        )
    return (
        "To compare them, give both logs the same ids (a query_id field) and load them again (remove the old "
        "files on the home page first)."
    )


selection, _evidence_runs = ui.default_selection(db_path, version)
compared = ui.picked_runs() or selection.runs
all_runs = natural_sorted(catalog.runs_table(con)["run_id"].tolist())
baseline, candidate = ui.run_pair_picker(all_runs, preferred=compared, default=ui.default_pair(db_path, version))
tau = ui.tau_slider()
if baseline == candidate:
    st.info("Pick two different runs.")
    st.stop()
try:
    cmp = comparison(db_path, version, baseline, candidate, tau)
except NoSharedQueries:
    same = same_questions_other_ids(con, baseline, candidate)
    st.info(
        ui.md(
            f"{baseline} and {candidate} share no query id, but ask {same.n:,} of the same questions under other ids "
            f"(e.g. {same.id_a} in {baseline} is {same.id_b} in {candidate}): a log without query ids gets one from "
            "its question's hash (q:…). " + _pairing_advice(baseline, candidate, same.id_a, same.id_b)
            if same
            else f"{baseline} and {candidate} share no query, so there is nothing to compare. "
            + _sharing_note(baseline, candidate, compared)
        )
    )
    st.stop()
except StabilityError as e:
    st.error(ui.error_text(e))
    st.stop()
s = cmp.summary
for w in s.warnings:
    st.warning(ui.md(ui.sentence(w)))

m = ui.wrapping_row(5)
unmet = "n/a: one run logged document ids, the other only its passages' text hashes (see above)"
if s.ids_meet:
    m[0].metric("J_avg, doc", ui.fmt(cmp.pair_value("j_avg", "doc")))
    m[1].metric("J_avg, span", ui.fmt(cmp.pair_value("j_avg", "span")))
    m[2].metric("queries flipped", f"{s.n_flipped:,} / {s.n_queries:,}", help=f"J_{s.level} < τ = {tau}")
    m[3].metric(
        "queries collapsed",
        "n/a" if s.n_collapsed is None else f"{s.n_collapsed:,}",
        help="J_span = 0 while both lists are non-empty",
    )
else:  # J is 0 on every query by how the runs were logged: no figure to show, the warning says why
    for tile, label in zip(m[:4], ("J_avg, doc", "J_avg, span", "queries flipped", "queries collapsed"), strict=True):
        tile.metric(label, "n/a", help=unmet)
m[4].metric("null transitions", f"{s.n_null_changes:,}")

left, right = st.columns(2)
with left:
    st.markdown("**Between the two runs**")
    pair = cmp.pair
    if not s.ids_meet:  # Jaccard's figures are 0 by how the runs were logged: left blank (the tiles say n/a)
        pair = pair.assign(**{lvl: pair[lvl].where(~pair["metric"].isin(OVERLAP_METRICS)) for lvl in ("doc", "span")})
    ui.table(
        ui.metric_rows(pair.assign(metric=pair["metric"].map(PAIR_METRIC_LABELS)), pair["metric"], ["doc", "span"]),
        hide_index=True,
        column_config={"doc": "document level", "span": "span level"},
    )
with right:
    st.markdown("**Each run on its own**")
    ui.table(
        ui.metric_rows(
            cmp.runs.assign(metric=cmp.runs["metric"].map(RUN_METRIC_LABELS)),
            cmp.runs["metric"],
            ["baseline", "candidate", "delta"],
        ),
        hide_index=True,
        column_config={c: c for c in ("baseline", "candidate", "delta")},  # formatted per row by metric_rows
    )
if s.ids_meet and cmp.intervals is not None and not cmp.intervals.pairs.empty:
    iv = cmp.intervals
    bits = [
        f"{PAIR_METRIC_LABELS[m]} ({lvl}) {bracket(e.lo, e.hi)}"
        for lvl, m in (("doc", "j_avg"), ("span", "j_avg"), ("span", "collapse_rate"))
        if (e := iv.pair(baseline, candidate, lvl, m)) is not None and bracket(e.lo, e.hi)
    ]
    if bits:
        st.caption(f"95 % bootstrap intervals over the {ui.counted(iv.n_queries, 'shared query')}: " + " · ".join(bits))

# --- ranking quality --------------------------------------------------------------------------
q_pair, cost, q_note = pair_quality(db_path, version, baseline, candidate, tau)
shared_labelled = q_pair is not None and any(c.n for c in q_pair.pairs.get((baseline, candidate), {}).values())
if q_note:
    st.subheader("Does jitter cost quality?")
    st.info(ui.md(ui.sentence(q_note) + "."))
elif (
    q_pair is not None
    and q_pair.labelled
    and not any(c.n for c in q_pair.pairs.get((baseline, candidate), {}).values())
):
    st.subheader("Does jitter cost quality?")
    st.info(
        f"{ui.md(baseline)} and {ui.md(candidate)} share no labelled query: no change of quality, and no cost of "
        f"jitter, can be taken over other questions — {gate.SHARE_ADVICE['quality']}."
    )
elif q_pair is not None and q_pair.labelled:
    st.subheader("Does jitter cost quality?")
    changes = q_pair.pairs.get((baseline, candidate), {})
    qrows = []
    for m in ("ndcg@10", "recall@10", "precision@10", "mrr", "map"):
        ra, rb, ch = q_pair.run(baseline), q_pair.run(candidate), changes.get(m)
        if ra is None or rb is None or ch is None or not ch.n:
            continue
        qrows.append(
            {
                "metric": m,
                "baseline": ra.metrics[m].value,
                "candidate": rb.metrics[m].value,
                "change": ch.delta,
                "95 % interval": bracket(ch.lo, ch.hi, "+.3f") or None,
                "p (Holm)": ch.p_holm,
                "queries": ch.n,
            }
        )
    ui.table(  # the page's width: beside the chart, p (Holm) and queries were scrolled out of view
        qrows,
        hide_index=True,
        column_config={
            **{c: st.column_config.NumberColumn(format="%.3f") for c in ("baseline", "candidate", "p (Holm)")},
            "change": st.column_config.NumberColumn(format="%+.3f"),
        },
    )
    st.caption(
        f"Over the labelled queries both runs have; paired {q_pair.test}-test, Holm-corrected over these "
        "metrics. A gate rule can ask for significance (the rule editor's 'significant')."
    )
    ql, qr = st.columns([2, 3])
    with ql:
        if cost is not None and cost.level == "span":
            split = cost.collapsed
            n_coll = sum(split.values())
            st.markdown(
                f"**{ui.counted(n_coll, 'collapsed query')}** (J_span = 0, both lists non-empty): "
                f"relevant documents kept {split['relevant kept']:,} · lost {split['relevant lost']:,} · "
                f"nothing relevant to lose {split['nothing relevant to lose']:,} · "
                f"unlabelled {split['unlabelled']:,}."
            )
    with qr:
        if cost is not None:
            st.plotly_chart(quality_charts.jitter_scatter(cost), key="compare.jitter")

# --- deploy gate ------------------------------------------------------------------------------
st.subheader("Deploy gate")
rules, toml_text = ui.gate_rule_editor(db_path)
verdict = gate.evaluate(rules, gate_inputs(db_path, version, baseline, candidate, tau, gate.quality_cutoffs(rules)))
headline = ui.md(verdict.headline())
if verdict.status == "pass":
    st.success(f"{ui.md(candidate)} may replace {ui.md(baseline)} — {headline}.", icon=":material/check_circle:")
elif verdict.status == "inconclusive":
    # more queries or a looser rule help a rule that was inconclusive, not runs whose ids cannot meet
    # (the headline says what to load instead)
    unsure = [r for r in verdict.results if r.status == "inconclusive"]
    apart = dict.fromkeys(r.rule.area for r in unsure if r.apart)  # runs sharing none of a figure's queries
    thin = any(not r.apart for r in unsure)
    advice = "".join(f" {gate.SHARE_ADVICE[a][0].upper()}{gate.SHARE_ADVICE[a][1:]}." for a in apart) + (
        " Gather more queries, or loosen the rule." if thin else ""
    )
    st.warning(
        f"{ui.md(candidate)} cannot yet be judged against {ui.md(baseline)} — {headline}.{advice}",
        icon=":material/help:",  # Streamlit's bundled icon font: "❔" drew as a missing-glyph box (no emoji font)
    )
else:
    st.error(f"{ui.md(candidate)} should not replace {ui.md(baseline)} — {headline}.", icon=":material/block:")
ui.table(
    gate.verdict_rows(verdict),
    key="compare.verdict",
    column_order=["status", "rule", "why", "value", "interval", "baseline", "candidate"],  # the reason in view
    column_config={
        "status": st.column_config.TextColumn(width=110),  # "not applicable" whole
        "rule": st.column_config.TextColumn(width=210),
        "why": st.column_config.TextColumn(width=680),  # a rule's sentence whole, with its reason at the end
        **{c: st.column_config.NumberColumn(format="%.3f") for c in ("value", "baseline", "candidate")},
    },
)
unsettled = [r for r in gate.verdict_rows(verdict) if r["status"] in ("fail", "inconclusive")]
if unsettled:  # the table's column cuts a long reason (how much shows depends on the letters' widths)
    with st.expander("Why each failed or inconclusive rule is so, in full"):
        for r in unsettled:
            st.markdown(f"**{ui.md(r['status'])}** · {ui.md(r['rule'])} — {ui.md(r['why'])}")
st.caption(
    "Failed rules first, then inconclusive ones (a rule asking for significance whose 95 % interval "
    "straddles its threshold, or one resting on fewer queries than it asks for: 30 in the default rules). "
    "A rule whose data is absent (no spans, no provenance logs, no stored "
    "attributions, no relevance labels) is not applicable and does not fail the gate — unless the rules "
    "ask for more applicable rules or require that question. The same verdict from the command line:"
)
st.code(
    f"ragaudit gate --db {shell_word(db_path)} --baseline {shell_word(baseline)} --candidate {shell_word(candidate)}",
    language="bash",
)

with st.container(border=True):
    st.markdown(
        "**Audit report (PDF)** — cover, this verdict, stability, worst queries, probe, citation "
        "fidelity, attributions and a methods appendix, with the charts of these pages."
    )
    what = (db_path, version, baseline, candidate, tau, toml_text, tuple(ui.picked_runs() or ()))
    st.caption(
        ui.md(
            "Its stability section compares "
            + (
                f"the runs picked on the stability page: {', '.join(compared)}."
                if ui.picked_runs()
                else f"the default selection ({ui.counted(len(selection.runs), 'run')}"
                + (" that share queries)." if len(selection.runs) > 1 else ").")
                + (f" {selection.note}" if selection.note else "")
            )
        )
    )
    built = st.session_state.get(KEYS.report)
    if st.button("Build the PDF report", key="compare.build_report"):
        bar = st.progress(0.0, text="Building the report…")
        steps = [
            "verdict",
            "stability",
            "worst queries",
            "answer probe",
            "citation fidelity",
            "attributions",
            "ranking quality",
            "charts",
            "layout",
            "writing",
        ]

        def step(name: str) -> None:
            bar.progress(
                min(1.0, (steps.index(name) + 1) / len(steps)) if name in steps else 0.0,
                text=f"Building the report: {name}…",
            )

        from ragaudit_core.errors import RagAuditError
        from ragaudit_core.review.report import ReportOptions, build_report

        try:
            blob, _data = build_report(
                con,
                None,
                ReportOptions(
                    baseline=baseline,
                    candidate=candidate,
                    rules=rules,
                    rules_source="rules of the compare page",
                    tau=tau,
                    embedder=ui.embedder,
                    db_label=db_path,
                    runs=ui.picked_runs(),
                ),
                progress=step,
            )
        except RagAuditError as e:  # ReportError and any other refusal with its reason
            st.error(ui.error_text(e))
        except Exception as e:  # noqa: BLE001 - the report failing must not stop the rest of the page
            st.error(
                ui.md(f"The report could not be built ({type(e).__name__}: {e}); the rest of this page is unaffected.")
            )
        else:
            built = (what, blob)
            st.session_state[KEYS.report] = built
        bar.empty()
    if built and built[0] == what:
        st.download_button(
            f"Download audit-{ui.md(candidate)}-vs-{ui.md(baseline)}.pdf ({len(built[1]) / 1024:.0f} KB)",
            built[1],
            file_name=f"audit-{candidate}-vs-{baseline}.pdf",
            mime="application/pdf",
            key="compare.download_report",
        )
    elif built:
        st.caption("The last report was built for other settings; build it again for this pair.")

st.subheader("Queries")
only = st.toggle("Only queries that flipped, collapsed or lost evidence", value=True)
q = cmp.queries
if not s.ids_meet:  # every query "flipped" and "collapsed" by how the runs were logged: not findings
    q = q.assign(j_doc=float("nan"), j_span=float("nan"), flipped=False, collapsed=False)
if only:
    q = q[q["flipped"] | q["collapsed"] | (q["null_change"] != "")]
st.caption(f"{ui.counted(len(q), 'query')}, worst first. Select a row to open it in the drill-down.")
q = ui.first_rows(q)
pick = ui.table(
    q,
    hide_index=True,
    on_select="rerun",
    selection_mode="single-row",
    key=f"compare.queries.{baseline}.{candidate}.{only}",
    column_config={
        "j_doc": st.column_config.NumberColumn(format="%.3f"),
        "j_span": st.column_config.NumberColumn(format="%.3f"),
        "query": st.column_config.TextColumn(width="large"),
    },
)
if pick and pick.selection.rows:
    st.session_state[KEYS.query] = q.iloc[pick.selection.rows[0]]["query_id"]
    st.switch_page(PAGES.drilldown)

# --- answer probe -----------------------------------------------------------------------------
st.subheader("Evidence–answer probe")
n_answers = has_answers(con, baseline, candidate)
if not n_answers:
    st.caption("These two runs do not both carry answers; the probe needs answers in both.")
    st.stop()
known = len(lookup_similarities(con, baseline, candidate))
asked = st.session_state.setdefault(KEYS.similarities, {})  # read-only: what this session computed, kept here
computed = (db_path, version, baseline, candidate) in asked
if (
    known < n_answers
    and not computed
    and not st.button(f"Compute answer similarity for {ui.counted(n_answers, 'query')} (loads the SBERT model)")
):
    st.caption(
        f"{ui.counted(n_answers, 'query')} {'has' if n_answers == 1 else 'have'} answers in both runs; "
        f"{ui.counted(known, 'similarity', 'similarities')} {'is' if known == 1 else 'are'} stored."
    )
    st.stop()
probe = answer_probe(db_path, version, baseline, candidate, tau)
if not db.writable:  # nothing can be stored in the file: the next interaction shows the probe again
    asked[(db_path, version, baseline, candidate)] = True
ps = probe.summary
p = ui.wrapping_row(6)
p[0].metric("answered queries", ps["n_queries"])
p[1].metric("mean J_span", "n/a" if ps["mean_j_span"] is None else f"{ps['mean_j_span']:.3f}")
p[2].metric("mean answer similarity", f"{ps['mean_sim']:.3f}")
p[3].metric("drift < 0.9", f"{ps['drift_0.9']} ({ps['drift_rate_0.9']:.0%})")
p[4].metric("drift < 0.8", f"{ps['drift_0.8']} ({ps['drift_rate_0.8']:.0%})")
p[5].metric(
    "Spearman ρ",
    ui.fmt(ps["spearman_rho"]),
    help="Rank correlation of per-query J_span and answer similarity.",
)
piv = ps.get("intervals") or {}  # a probe stored before intervals were added has none
said = [
    f"{name} {text}"
    for name, key, spec in (
        ("mean J_span", "mean_j_span", ".3f"),
        ("mean answer similarity", "mean_sim", ".3f"),
        ("drift < 0.9", "drift_rate_0.9", ".0%"),
        ("drift < 0.8", "drift_rate_0.8", ".0%"),
        ("Spearman ρ", "spearman_rho", "+.3f"),
    )
    if (text := bracket(*(piv.get(key) or (None, None)), spec))
]
st.caption(
    f"Silent jitter (J_span < τ = {tau} while similarity ≥ 0.9): "
    f"{ui.counted(ps['silent_jitter'], 'query') if ps['silent_jitter'] is not None else 'n/a'}."
    + (
        f" 95 % bootstrap intervals over the {ui.counted(ps['n_queries'], 'answered query', 'answered queries')}: "
        + " · ".join(said)
        if said
        else ""
    )
)
ev = st.plotly_chart(
    charts.probe_scatter(probe.rows, tau=tau, title=f"{baseline} vs {candidate}"),
    on_select="rerun",
    selection_mode="points",
    key="compare.probe",
)
pts = (ev or {}).get("selection", {}).get("points", []) if ev else []
if pts and pts[0].get("customdata"):
    st.session_state[KEYS.query] = pts[0]["customdata"][0]
    st.switch_page(PAGES.drilldown)
ui.table(
    probe.rows,
    hide_index=True,
    column_config={
        "answer_a": st.column_config.TextColumn("baseline answer", width="large"),
        "answer_b": st.column_config.TextColumn("candidate answer", width="large"),
    },
)

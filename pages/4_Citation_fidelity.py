"""Citation fidelity (seed 002): do citations survive the pipeline?

Stage-survival funnel per run, the CFS distribution with its percentiles and the alert
threshold, the alerts and why, each query's citations with their verification outcome,
one query's provenance graph with the broken link in red, and the two-run canary test.
"""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.defaults import JUDGE_PRECISIONS
from ragaudit_core.fidelity import (
    SURVIVAL_LABELS,
    FidelityRules,
    canary,
    compute_query,
    fidelity_runs,
    graph_layout,
    load_graphs,
    survival_table,
    tail_comment,
)
from ragaudit_core.fidelity.judge import judge_caveat
from ragaudit_core.fidelity.judging import judge_summary, verdict_table
from ragaudit_core.jobs import is_stored, plan_judge, queue
from ragaudit_core.jobs.worker import ensure_worker, revive
from ragaudit_core.logs import catalog
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.review import charts
from ragaudit_core.wording import bracket

st.set_page_config(page_title="Citation fidelity · RagAudit", page_icon="🔗", layout="wide")
db = ui.open_store("Citation fidelity", catalog.missing_provenance_message)
con, db_path, version = db.con, db.db_path, db.version
KEYS = ui.KEYS

with st.sidebar:
    st.markdown("**Alert thresholds** (seed 002)")
    p95_min = st.slider("p95 CFS at least", 0.0, 1.0, 0.85, 0.01)
    surv_min = st.slider("every stage survival at least", 0.0, 1.0, 0.90, 0.01)
    parse_max = st.slider("parse-failure rate at most", 0.0, 0.2, 0.005, 0.001, format="%.3f")
    convention = st.radio(
        "Percentiles",
        ["upper", "tail"],
        horizontal=True,
        help="upper: p95 is the 95th percentile of CFS (the seed as written). "
        "tail: p95 is the value 95 % of queries reach (the 5th percentile).",
    )
rules = FidelityRules(
    p95_cfs_min=p95_min, stage_survival_min=surv_min, parse_failure_max=parse_max, percentile=convention
)


@st.cache_data(show_spinner="Verifying citations…", max_entries=16)
def results(db: str, data_version: str, rules_json: str):
    return fidelity_runs(ui.connection(db), rules=FidelityRules.model_validate_json(rules_json))


res = results(db_path, version, rules.model_dump_json())
runs = natural_sorted(res)

# --- overview across runs ---------------------------------------------------------------------
OVERVIEW_MAX = 6  # runs drawn side by side (metrics, funnel, histogram); beyond, a table holds every run
shown = runs
if len(runs) > OVERVIEW_MAX:
    shown = (
        st.multiselect(
            "Runs in the overview",
            runs,
            default=runs[:OVERVIEW_MAX],
            format_func=(half := ui.run_label(runs, ui.RUN_CHARS_HALF)),
            max_selections=OVERVIEW_MAX,
            key="fid.overview",
            help=f"{ui.counted(len(runs), 'run')}: the metrics and charts below draw up to {OVERVIEW_MAX} of "
            "them; the table beneath holds every run's figures.",
        )
        or runs[:1]
    )
    ui.runs_in_full(shown, half)
    with st.expander(f"Every run's figures ({ui.counted(len(runs), 'run')})", expanded=False):
        ui.table(
            [
                {
                    "run_id": run,
                    "n_queries": res[run].summary["n_queries"],
                    "n_citations": res[run].summary["n_citations"],
                    "cfs_mean": res[run].summary["cfs_mean"],
                    "cfs_p50": res[run].summary["cfs_p50"],
                    "cfs_p95": res[run].summary["cfs_p95"],
                    "cfs_product_mean": res[run].summary["cfs_product_mean"],
                    "n_alerts": res[run].summary["n_alerts"],
                }
                for run in runs
            ],
            hide_index=True,
            key="fid.overview.table",
            column_config={
                "cfs_mean": st.column_config.NumberColumn("mean CFS", format="%.3f"),
                "cfs_p50": st.column_config.NumberColumn("median CFS", format="%.3f"),
                "cfs_p95": st.column_config.NumberColumn(
                    "p95 CFS" if rules.percentile == "upper" else "tail p95 CFS", format="%.3f"
                ),
                "cfs_product_mean": st.column_config.NumberColumn("product-form CFS", format="%.3f"),
                "n_alerts": st.column_config.NumberColumn("alerts", format="%d"),
            },
        )
cols = st.columns(len(shown))
for col, run in zip(cols, shown):
    s = res[run].summary
    col.markdown(f"**{ui.md(run)}**")
    col.metric("mean CFS", ui.fmt(s["cfs_mean"]), help="Mean per-query CFS over queries with citations.")
    upper_name, other_name = ("p95", "tail p95") if s["percentile_convention"] == "upper" else ("tail p95", "p95")
    col.caption(
        f"{ui.counted(s['n_queries'], 'query')} · {s['n_with_citations']:,} with citations · "
        f"{ui.counted(s['n_citations'], 'citation')} · product-form CFS {ui.fmt(s['cfs_product_mean'])} · "
        f"{ui.counted(s['n_alerts'], 'alert')}"
    )
    col.caption(
        f"median {ui.fmt(s['cfs_p50'])} · {upper_name} {ui.fmt(s['cfs_p95'])} · "
        f"{other_name} {ui.fmt(s['cfs_p95_other'])}",
        help="p95: the 95th percentile of per-query CFS (the seed as written). tail p95: the score 95 % "
        "of queries reach (the 5th percentile).",
    )
    iv = s.get("intervals") or {}
    said = [
        f"{name} {bracket(*iv[key])}"
        for name, key in (("mean", "cfs_mean"), ("median", "cfs_p50"), (upper_name, "cfs_p95"))
        if iv.get(key) and bracket(*iv[key])
    ]
    if said:
        col.caption(
            f"95 % bootstrap intervals over its {ui.counted(s['n_with_citations'], 'query')} with citations: "
            + " · ".join(said)
        )
    if comment := tail_comment(s, rules.p95_cfs_min):
        col.warning(ui.md(comment))
left, right = st.columns(2)
left.plotly_chart(charts.survival_funnel({r: res[r].summary for r in shown}), key="fid.funnel")
if no_truth := [r for r in shown if not res[r].summary.get("n_with_ground_truth")]:
    left.caption(
        ui.md(
            f"Not in the funnel: {', '.join(no_truth)} — no query of {'its' if len(no_truth) == 1 else 'their'} "
            "provenance logs names a ground-truth source, so no source can be seen to survive or be lost (CFS "
            "still applies)."
        )
    )
right.plotly_chart(
    charts.cfs_histogram(
        {r: res[r].queries["cfs"].dropna() for r in shown},
        summaries={r: res[r].summary for r in shown},
        threshold=rules.p95_cfs_min,
    ),
    key="fid.hist",
)

# --- one run ----------------------------------------------------------------------------------
wide = ui.run_label(runs, ui.RUN_CHARS_WIDE)
run = st.selectbox("Run", runs, index=0, format_func=wide)
ui.runs_in_full([run], wide)
r = res[run]
st.subheader("Alerts")
alerts = sorted(r.alerts, key=lambda a: {"alert": 0, "ok": 1}.get(a["status"], 2))
ui.table(
    alerts,
    hide_index=True,
    column_config={
        "value": st.column_config.NumberColumn(format="%.3f"),
        "threshold": st.column_config.NumberColumn(format="%.3f"),
        "message": st.column_config.TextColumn(width="large"),
    },
)
with st.expander(f"Stage survival of {ui.md(run)}, both readings", expanded=False):
    st.caption(
        "The alert uses the conditional rate (of the queries that reached a stage with a ground-truth "
        "source, the share keeping one through it); the funnel shows the share of "
        "all queries with ground truth still holding a source after each stage (a stage a query's pipeline skips "
        "loses nothing). Stages no query reached are left out."
    )
    ui.table(
        survival_table(r.summary),
        hide_index=True,
        key=f"fid.survival.{run}",
        column_config={
            "stage": st.column_config.TextColumn("stage"),
            "conditional": st.column_config.NumberColumn(SURVIVAL_LABELS["conditional"], format="percent"),
            "share": st.column_config.NumberColumn(SURVIVAL_LABELS["share"], format="percent"),
        },
    )
s = r.summary
st.caption(
    "Verification outcomes: "
    + (", ".join(f"{k} {v}" for k, v in s["outcomes"].items()) or "none")
    + " · failure modes: "
    + (", ".join(f"{k} {v}" for k, v in s["failure_modes"].items()) or "none found")
)

st.subheader("Queries")
st.caption("Select a query to see its citations and draw its provenance graph.")
pick = ui.table(
    r.queries,
    hide_index=True,
    on_select="rerun",
    selection_mode="single-row",
    key=f"fid.queries.{run}",
    column_config={"cfs": st.column_config.NumberColumn(format="%.3f")},
)
rows = pick.selection.rows if pick else []
qid = r.queries.iloc[rows[0]]["query_id"] if rows else st.session_state.get(f"{KEYS.query}.fidelity")
worst = r.queries.sort_values(["cfs_product", "cfs"], na_position="first", kind="stable")["query_id"].iloc[0]
if qid not in set(r.queries["query_id"]):
    qid = worst
st.session_state[f"{KEYS.query}.fidelity"] = qid

(g,) = load_graphs(con, run, [qid])
qf = compute_query(g)
st.markdown(f"**Query {ui.md(qid)}**")
if qid == worst:  # opened without a pick: say why this one (the table's first row is another)
    st.caption("The worst query of the run (lowest product-form CFS, then CFS): select a row to open another.")
st.caption("Question")  # two texts from the logs, one above the other: say which is which
st.text(g.query or "(no query text logged)")
st.caption("Generated answer")
st.text(g.generated_text or "(no generated text)")
cits = r.citations[r.citations["query_id"] == qid].drop(columns=["query_id"])
if len(cits):
    ui.table(cits, hide_index=True)
else:
    st.caption("No citation in the generated text.")
if qf.parse_failures:
    st.warning("Citation-like strings that no pattern parses: " + " · ".join(ui.md(f) for f in qf.parse_failures))
nodes, edges = graph_layout(g, qf)
st.plotly_chart(
    charts.provenance_graph(
        nodes,
        edges,
        title=f"Provenance of query {qid}"
        + (
            f" — ground truth lost at {r.queries.set_index('query_id').loc[qid, 'first_failed_stage']}"
            if qf.first_failed_stage
            else ""
        ),
    ),
    key="fid.graph",
)
if g.dropped:
    with st.expander(f"Chunks dropped by compression ({len(g.dropped)})"):
        ui.table(g.dropped, hide_index=True)
finds = r.findings[r.findings["query_id"] == qid]
if len(finds):
    st.warning(f"{ui.counted(len(finds), 'failure-mode finding')} in this graph")
    ui.table(finds.drop(columns=["query_id"]), hide_index=True)

# --- LLM judge (Pattern 4) --------------------------------------------------------------------
st.subheader("LLM judge (Pattern 4)")
st.caption(
    "A judge model verifies each citation against the retrieved context with seed 002's prompt; three "
    "judges (seeds 0–2 of the packaged SmolLM2; seed 0 greedy) vote. Beside the rule-based verification "
    "above: how often they agree, and how often the judges disagree among themselves (the seed reports "
    "12–18 % for its judges). Runs in the background; results appear as they land."
)
panels = [p for p in JUDGE_PRECISIONS if not verdict_table(con, run, p).empty]
shown_panel = panels[0] if panels else "auto"
if len(panels) > 1:  # a bf16 panel beside the reference's: counted apart, shown one at a time
    shown_panel = st.radio(
        "Judge panel",
        panels,
        format_func=lambda p: "reference weights" if p == "auto" else "bf16 weights",
        horizontal=True,
        key="fid.judge.panel",
    )
verdicts = verdict_table(con, run, shown_panel)
js = judge_summary(verdicts)
judge_jobs = [j for j in queue.jobs(db_path, run_id=run) if j.spec.kind == "judge"]
active = [j for j in judge_jobs if j.status in ("queued", "running")]
if js["n_citations"]:
    a, d = js["agreement"], js["disagreement"]
    jm = ui.wrapping_row(4)
    jm[0].metric("citations judged", f"{js['n_citations']:,}")

    def _ci(x: dict) -> str:
        ci = x.get("ci")
        return f"n = {x['n_citations']:,}" + (
            f", 95 % [{ui.fmt(ci[0], pct=True)}, {ui.fmt(ci[1], pct=True)}]" if ci else ""
        )

    jm[1].metric(
        "agreement with the rules",
        ui.fmt(a["rate"], pct=True),
        delta=_ci(a),
        delta_color="off",
        delta_arrow="off",
        help="Share of citations whose majority verdict equals Pattern 3's (1.0 ACCURATE, 0.3 PARTIAL, "
        "0 HALLUCINATED); the interval is Wilson's.",
    )
    jm[2].metric(
        "judges disagree",
        ui.fmt(d["rate"], pct=True),
        delta=_ci(d),
        delta_color="off",
        delta_arrow="off",
        help=f"Share of citations whose votes are not unanimous; pairwise: {ui.fmt(d['pairwise'], pct=True)}.",
    )
    jm[3].metric("invalid votes", f"{js['n_invalid_votes']:,}")
    if caveat := judge_caveat(a["n_citations"], js["judges"]):
        st.warning(ui.md(caveat))
    ui.table(
        verdicts.drop(columns=["_votes", "judges"], errors="ignore"),
        key=f"fid.judge.{run}",
        column_config={
            "rule": st.column_config.TextColumn("rule-based (Pattern 3)"),
            "votes": st.column_config.TextColumn("judges' votes", width="large"),
            "majority": st.column_config.TextColumn("majority (ties: most conservative)"),
        },
    )


@st.fragment(run_every=2.0)
def judge_progress(n_done: int) -> None:
    """The run's judge jobs, re-read every two seconds; the page reruns when one lands, so its
    verdicts appear, and when the last one ends."""
    jobs = [j for j in queue.jobs(db_path, run_id=run) if j.spec.kind == "judge"]  # never waits on the database
    done = sum(j.status == "done" for j in jobs)
    live = [j for j in jobs if j.status in ("queued", "running")]
    if done != n_done or not live:
        st.rerun(scope="app")
    if revive(db_path, idle_s=60):
        st.warning("Worker stopped — restarting; its job is queued again.")
    running = next((j for j in live if j.status == "running"), None)
    st.progress(
        done / max(1, len(jobs)),
        text=ui.md(
            f"{done} of {ui.counted(len(jobs), 'judge job')} done, {len(live)} queued or "
            f"running" + (f" · query {running.spec.query_id}: {running.label}" if running else "")
        ),
    )
    if st.button("Cancel judging", key="fid.judge.cancel"):
        queue.cancel(db_path, [j.job_id for j in live])


failed = [j for j in judge_jobs if j.status == "failed"]
if failed and not active:
    st.error(ui.md(f"{ui.counted(len(failed), 'judge job')} failed; the first: {failed[0].error}"))
    if db.writable and st.button("Retry failed judge jobs", key="fid.judge.retry"):  # (read-only: said below)
        queue.retry(db_path, [j.job_id for j in failed])
        ensure_worker(db_path, idle_s=60)
        st.rerun()
if active and db.writable:  # (read-only: nothing runs, whatever the queue says)
    judge_progress(sum(j.status == "done" for j in judge_jobs))
elif ui.writable(db, "Judging citations") and st.button(
    f"Judge the citations of {ui.md(run)} (3 judges)…", key="fid.judge.start"
):
    st.session_state["fid.judge.confirm"] = run
if not active and db.writable and st.session_state.get("fid.judge.confirm") == run:  # (read-only: never)
    precision = st.radio(
        "Judge model's weights",
        list(JUDGE_PRECISIONS),
        format_func=lambda p: "reference weights" if p == "auto" else "bf16 weights (faster on a CPU)",
        horizontal=True,
        key="fid.judge.precision",
        help="Reference weights: full precision (fp32) for a judge model of up to 1B parameters, bf16 beyond on "
        "a GPU. bf16 took 3.0–3.9 s per citation against 5.4–6.3 s in fp32 on 2 CPU cores with AVX-512 BF16; "
        "35 of 36 verdicts were the same on 12 citations. On a GPU it is slower for the packaged model (an H200: "
        "1.24 against 0.64 s per citation). Its verdicts are a panel of their own, counted apart.",
    )
    plans = [plan_judge(con, run, q, precision=precision) for q in r.queries["query_id"]]
    todo = [(sp, inp) for sp, inp in plans if inp.citations and not is_stored(con, sp)]
    n_cit = sum(len(inp.citations) for _sp, inp in todo)
    est = queue.estimate_seconds(db_path, todo[0][0]) if todo else None
    with st.container(border=True):
        if not todo:
            st.info("Every citation of this run is judged already.")
        else:
            per = (
                f"about {len(todo):,} × {est[0]:.0f} s ≈ {len(todo) * est[0] / 60:.0f} min (the median of "
                f"{ui.counted(est[1], 'measured judge job')} here)"
                if est
                else "not measured here yet (three local judges took about 6 s per citation in fp32 and 3 s in "
                f"bf16 on 2 CPU cores, so about {n_cit * (3 if precision == 'bf16' else 6) / 60:.0f} min)"
            )
            jobs = f"{ui.counted(len(todo), 'judge job')} ({ui.counted(n_cit, 'citation')})"
            st.warning(ui.md(f"Queue {jobs} for {run}? Time: {per}."))
        yes, no = st.columns(2)
        if todo and yes.button("Yes, judge them", type="primary", key="fid.judge.yes"):
            st.session_state.pop("fid.judge.confirm", None)
            for sp, inp in todo:
                queue.enqueue(db_path, sp, inp)
            ensure_worker(db_path, idle_s=60)
            st.rerun()
        if no.button("No" if todo else "Close", key="fid.judge.no"):
            st.session_state.pop("fid.judge.confirm", None)
            st.rerun()

# --- canary -----------------------------------------------------------------------------------
st.subheader("Canary: two runs' CFS distributions")
if len(runs) < 2:
    st.caption("Load provenance for a second run to compare (Mann–Whitney U).")
    st.stop()
c1, c2 = st.columns(2)
run_label = ui.run_label(runs, ui.RUN_CHARS_HALF)
base = c1.selectbox("Baseline", runs, index=0, key="fid.canary.a", format_func=run_label)
cand = c2.selectbox("Candidate", runs, index=1, key="fid.canary.b", format_func=run_label)
ui.runs_in_full([base, cand], run_label)
c = canary(res[base].queries["cfs"].dropna(), res[cand].queries["cfs"].dropna(), alpha=rules.canary_alpha)
k = st.columns(4)
k[0].metric("median CFS, baseline", "n/a" if c["median_a"] is None else f"{c['median_a']:.3f}")
k[1].metric("median CFS, candidate", "n/a" if c["median_b"] is None else f"{c['median_b']:.3f}")
k[2].metric("Mann–Whitney U", "n/a" if c["u"] is None else f"{c['u']:.1f}")
k[3].metric("p-value", "n/a" if c["p_value"] is None else f"{c['p_value']:.4f}")
if c["significant"] is None:
    st.caption(c.get("note", ""))
else:
    # no difference found is not sameness shown (28 queries a side cannot show it): said, not green
    (st.error if c["significant"] else st.info)(
        f"The CFS distributions {'differ' if c['significant'] else 'do not differ'} significantly "
        f"at α = {rules.canary_alpha} (two-sided Mann–Whitney U, {c['n_a']} vs {c['n_b']} queries with citations)"
        + ("." if c["significant"] else ": no difference was found, which does not show they are the same.")
    )

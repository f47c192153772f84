"""Attributions on demand (seed 001, RAG-E): does the generator use what the retriever ranked?

Pick a logged query and press the button: IG token saliency on the retriever, Shapley
values of each document on the generator's answer, WARG curves and failure modes.
Results are stored in the database; a query explained once opens instantly.
"""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.attribution.compute import FIRST_LABELS, predicted_job_seconds
from ragaudit_core.attribution.storage import AttributionError, batch_state, batch_tables, stored_results
from ragaudit_core.attribution.uncertainty import FIGURES
from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS as D
from ragaudit_core.defaults import EXACT_SHAPLEY_MAX_DOCS, IG_BASELINES, IG_METHODS, SHAPLEY_METHODS
from ragaudit_core.jobs import partial, plan, queue, result_keys
from ragaudit_core.jobs.worker import ensure_worker, revive
from ragaudit_core.logs import catalog
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.review import charts
from ragaudit_core.review.labels import metric_label
from ragaudit_core.wording import bracket

st.set_page_config(page_title="Attributions · RagAudit", page_icon="🧭", layout="wide")
db = ui.open_store("Attributions", catalog.missing_text_message)
con, db_path, version = db.con, db.db_path, db.version
KEYS = ui.KEYS


@st.cache_data(show_spinner=False, max_entries=32)
def run_tables(db: str, data_version: str, run: str, state: str):
    """The run's section-5 tables, once per state of its stored results (``state``: batch_state)."""
    return batch_tables(ui.connection(db), run)


st.caption(
    "Does the generator use what the retriever ranked? (seed 001, RAG-E) Integrated Gradients scores how much "
    "each query token moves the retriever's similarity to a document; Shapley values share the generated answer "
    "among the retrieved documents (how much each one's presence changes it); WARG = 1 − RBO between the "
    "retriever's ranking and the generator's ranking by Shapley value: 0 when the generator relies on the "
    "documents in the retriever's order, near 1 when it does not. Computed on demand, then stored."
)
runs = natural_sorted(catalog.runs_with_texts(con))  # k5, k10, k20 as on the other pages
c1, c2 = st.columns([1, 3])
run_label = ui.run_label(runs, ui.RUN_CHARS_NARROW)
run = c1.selectbox("Run", runs, index=runs.index(catalog.preferred_run(runs)), format_func=run_label)
ui.runs_in_full([run], run_label, c1)
qid = ui.query_picker(con, st.session_state.get(KEYS.query), search_box=c2, limit=300, run=run)

with st.expander("Settings (defaults chosen by measurement: docs/benchmarks.md)"):
    s1, s2, s3, s4 = st.columns(4)
    method = s1.selectbox(
        "Shapley estimator",
        SHAPLEY_METHODS,
        index=SHAPLEY_METHODS.index(D["method"]),
        help=f"auto (default): exact up to {EXACT_SHAPLEY_MAX_DOCS} documents, PMCSHAP beyond. pmc: PMCSHAP, N sampled "
        "coalitions in complementary pairs (its error against exact is in "
        "docs/benchmarks.md). exact: all 2^n coalitions.",
    )
    max_docs = s2.number_input("Documents", 2, 10, D["max_docs"])
    ig_steps = s3.number_input("IG points L", 2, 300, D["ig_steps"])
    ig_method = s4.selectbox("IG rule", IG_METHODS, index=IG_METHODS.index(D["ig_method"]))
    s5, s6, s7, s8 = st.columns(4)
    n_samples = s5.number_input("N (kernel/pmc/mc)", 8, 256, D["n_samples"])
    n_fits = s6.number_input("M (pmc/mc)", 10, 500, D["n_fits"])
    ig_baseline = s7.selectbox("IG baseline", IG_BASELINES, index=IG_BASELINES.index(D["ig_baseline"]))
    max_new_tokens = s8.number_input(
        "Answer tokens at most",
        4,
        256,
        D["max_new_tokens"],
        help="The answer is generated once, greedily, and cut at this length.",
    )
    shuffle = st.checkbox("Also shuffled order", value=False)
options = dict(
    method=method,
    max_docs=int(max_docs),
    ig_steps=int(ig_steps),
    ig_method=ig_method,
    n_samples=int(n_samples),
    n_fits=int(n_fits),
    ig_baseline=ig_baseline,
    max_new_tokens=int(max_new_tokens),
)
try:
    spec, inputs = plan(con, run, qid, shuffle=shuffle, **options)
except AttributionError as e:
    st.error(ui.error_text(e))
    st.stop()
keys = result_keys(spec)
have = stored_results(con, list(keys.values()))
results = {c: have[keys[c]] for c in spec.conditions if keys[c] in have}


def _queue(specs_inputs) -> None:
    for sp, inp in specs_inputs:
        queue.enqueue(db_path, sp, inp)
    ensure_worker(db_path, idle_s=60)
    st.rerun()


def _confirm_all(est) -> None:
    """Explaining a whole run is long: say how many jobs and about how long first."""
    qids = catalog.query_ids(con, run)
    per = (
        est[0] if est else predicted_job_seconds(spec.method, spec.params, len(inputs.documents), len(spec.conditions))
    )
    basis = (
        f"the median of {ui.counted(est[1], 'measured job')} with these settings"
        if est
        else "unit costs measured on 2 CPU cores"
    )
    total = per * len(qids)
    with st.container(border=True):
        st.warning(
            ui.md(
                f"Queue {ui.counted(len(qids), 'explanation')} of run {run}? About {len(qids):,} × {per:.0f} s ≈ "
                f"{total / 3600:.1f} h of model work ({basis}; queries already explained are skipped when they run)."
            )
        )
        yes, no = st.columns(2)
        if yes.button("Yes, queue them", type="primary", key="attr.confirm_all.yes"):
            st.session_state.pop("attr.confirm_all", None)
            todo = []
            for q in qids:
                try:
                    todo.append(plan(con, run, q, shuffle=shuffle, **options))
                except AttributionError:
                    continue  # a query without texts: nothing to explain
            _queue(todo)
        if no.button("No", key="attr.confirm_all.no"):
            st.session_state.pop("attr.confirm_all", None)
            st.rerun()


def _eta(job) -> str:
    eta = job.eta_s
    return "" if eta is None else f" · about {eta:.0f} s left (measured: elapsed / share done)"


@st.fragment(run_every=1.0)
def job_panel(job_id: str) -> None:
    """The job's state, read afresh each second; when it ends, the whole page reruns."""
    found = queue.jobs(db_path, job_ids=[job_id])  # the queue beside the database: never waits on it
    job = found[0] if found else None
    if job is None or job.status in ("done", "failed", "cancelled"):
        st.rerun(scope="app")
    if revive(db_path, idle_s=60):
        st.warning("Worker stopped — restarting; the job is queued again.")
    if job.status == "queued":
        st.progress(0.0, text="Queued: waiting for the background worker…")
    else:
        st.progress(min(1.0, job.fraction), text=ui.md(f"{job.label} · {job.elapsed_s or 0:.0f} s{_eta(job)}"))
    # the anytime job's first estimate (compute.FIRST_METHODS, few IG points) while exact runs; a file
    # there that is too large or not one (partial.MAX_BYTES, checked fields) is left out, saying why
    p, why = partial.first_estimate(db_path, job_id) if job.status == "running" else (None, None)
    if why:
        st.caption(ui.md(why))
    if p:
        how = FIRST_LABELS.get(p["method"], p["method"])
        st.caption(f"First estimate ({ui.md(how)}): the exact Shapley values replace it when the job ends.")
        st.dataframe(
            {
                "document": p["doc_ids"],
                "retriever rank": list(range(1, len(p["doc_ids"]) + 1)),
                "importance": p["importance"],
            },
            hide_index=True,
        )
    if st.button("Cancel", key=f"attr.cancel.{job_id}"):
        queue.cancel(db_path, [job_id])


def run_panel() -> None:
    """The run's jobs (\"all queries of this run\"): how many are queued, running, done, failed."""
    counts = {}
    for j in queue.jobs(db_path, run_id=run):
        counts[j.status] = counts.get(j.status, 0) + 1
    if counts.get("queued") or counts.get("running"):
        st.caption(
            f"Run {ui.md(run)}: "
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + " — results appear as they land."
        )


run_panel()
if len(results) < len(spec.conditions):
    job = next(iter(queue.jobs(db_path, job_ids=[spec.job_id()])), None)
    if job is not None and job.status in ("queued", "running") and db.writable:  # (read-only: nothing runs)
        job_panel(job.job_id)
        st.stop()
    if job is not None and job.status == "failed":
        st.error(ui.md(f"The last attempt failed: {job.error}"))
        if db.writable and st.button("Retry", key="attr.retry"):  # (read-only: said below)
            queue.retry(db_path, [job.job_id])
            ensure_worker(db_path, idle_s=60)
            st.rerun()
    elif job is not None and job.status == "cancelled":
        st.info("The last attempt was cancelled.")
    if not ui.writable(db, "Explaining a query"):
        st.stop()
    est = queue.estimate_seconds(db_path, spec)
    st.caption(
        (
            "Takes about "
            + f"{est[0]:.0f} s (median of {ui.counted(est[1], 'job')} with these settings on this database)"
            if est
            else "Not measured yet with these settings on this database; the progress bar shows the "
            "measured time left once it runs"
        )
        + ". It runs in the background: you can leave this page and "
        "come back; the result is stored."
    )
    b1, b2 = st.columns(2)
    if b1.button("Explain this query", type="primary"):
        _queue([(spec, inputs)])
    if b2.button(f"Explain all queries of run {ui.md(run)}…"):
        st.session_state["attr.confirm_all"] = run
    if st.session_state.get("attr.confirm_all") == run:
        _confirm_all(est)
    st.stop()

res = results.get("original") or next(iter(results.values()))
n = len(res.doc_ids)
doc_labels = [f"{i + 1}. {d}" for i, d in enumerate(res.doc_ids)]
tab_labels = [f"Document {i + 1}" for i in range(n)]

st.subheader("Retriever: which words made each document match the query")
tabs = st.tabs(tab_labels)
for i, tab in enumerate(tabs):
    with tab:
        q_ig, d_ig = res.ig_query[i], res.ig_documents[i]
        st.text(f"document id: {res.doc_ids[i]}")
        st.caption(
            f"similarity {d_ig.score:.3f} · baseline [{d_ig.baseline}] {d_ig.baseline_score:.3f} · "
            f"completeness Σβ/(s−s⁰): query {ui.fmt(q_ig.completeness)}, document {ui.fmt(d_ig.completeness)} "
            f"(L = {d_ig.steps})"
        )
        st.markdown("**Query**")
        st.html(ui.diverging_html(q_ig.words, q_ig.word_attributions))
        st.markdown("**Document**")
        st.html(ui.diverging_html(d_ig.words, d_ig.word_attributions))
        st.caption("Red: raises the similarity; blue: lowers it; stronger colour, larger |β|.")

st.subheader("Generator: which document each answer token came from")
vals = res.values  # n × m
owners = [max(range(n), key=lambda i: vals[i][j]) for j in range(len(res.answer_tokens))]
strength = [vals[owners[j]][j] for j in range(len(owners))]
st.html(ui.legend_html(doc_labels))
st.html(ui.owner_html(res.answer_tokens, owners, strength))
fig = charts.influence_bars(
    res.importance,
    doc_labels,
    [ui.DOC_COLOURS[i % len(ui.DOC_COLOURS)] for i in range(n)],
    title=f"Document influence ({res.method} Shapley, mean over {ui.counted(len(res.answer_tokens), 'token')})",
)
st.plotly_chart(fig, key="attr.influence")

st.subheader("Alignment")
k = ui.wrapping_row(4)
k[0].metric(
    "generator ranking",
    " > ".join(str(i + 1) for i in res.generator_ranking),
    help="Retrieved documents by their retriever rank (1 = top), ordered by generator importance.",
)
k[1].metric("Spearman (rank vs importance)", "n/a" if res.spearman is None else f"{res.spearman:.3f}")
k[2].metric(
    "wasted retrieval",
    "yes" if res.wasted_retrieval else "no",
    help="The retriever's top document gets generator rank 4 or lower (ranks from 1).",
)
k[3].metric(
    "noise distraction",
    "yes" if res.noise_distraction else "no",
    help="The generator's top document had retriever rank 4 or lower (ranks from 1).",
)
tables = run_tables(db_path, version, run, batch_state(con, run))
means = {}
if tables and len(tables["warg"]):
    explained = dict(zip(tables["failure"]["condition"], tables["failure"]["queries"]))
    for _, row in tables["warg"].iterrows():
        if explained.get(row["condition"], 0) > 1:  # over one query the mean is this query's curve, drawn under it
            means[f"run mean, {row['condition']}"] = {p: row.get(f"warg_{p}") for p in res.warg}
wfig = charts.warg_curves(
    {f"WARG, {cond}": r.warg for cond, r in results.items()},
    dashed={"WARG (extrapolated RBO)": res.warg_extrapolated},
    floor=(f"floor p^{n} (identical lists)", res.warg_floor),
    run_means=means,
)
st.plotly_chart(wfig, key="attr.warg")
if tables:
    st.markdown(f"**Run {ui.md(run)}: stored results** (wasted retrieval and noise distraction rates, mean Spearman)")
    shown, iv = tables["failure"].copy(), tables["intervals"].set_index(["condition", "metric"])
    for m, spec in (("wasted_retrieval", ".1%"), ("noise_distraction", ".1%"), ("spearman", ".3f")):
        at = shown.columns.get_loc(m) + 1  # each figure, then its 95 % interval as text
        bounds = [iv.loc[(c, m), ["lo", "hi"]] if (c, m) in iv.index else (None, None) for c in shown["condition"]]
        shown.insert(at, f"{m}_ci", [bracket(lo, hi, spec) or None for lo, hi in bounds])
    ui.table(
        shown,
        hide_index=True,
        column_config={f"{m}_ci": f"{metric_label(m)}, 95 % interval" for m in FIGURES},
    )
    st.caption(
        "95 % intervals over the run's explained queries: Wilson's score interval for the rates (a bootstrap "
        "of a rate of 0 over a few queries would be [0, 0]), the percentile bootstrap for the mean Spearman; "
        "none for a mean over one query. Attribution batches are small: read the interval before the figure."
    )
st.caption("Answer (generated once with all documents, greedy):")
st.text(res.answer)
st.caption(
    f"{ui.counted(res.n_coalitions, 'coalition')} evaluated · IG {res.timings_s['ig']} s · "
    f"Shapley {res.timings_s['shapley']} s"
)

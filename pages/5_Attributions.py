"""Attributions on demand (seed 001, RAG-E): does the generator use what the retriever ranked?

Pick a logged query and press the button: IG token saliency on the retriever, Shapley
values of each document on the generator's answer, WARG curves and failure modes.
Results are stored in the database; a query explained once opens instantly.
"""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.attribution.explain import AttributionError, batch_tables, explain_query, stored_attribution
from ragaudit_core.logs import catalog
from ragaudit_core.models import DEFAULT_EMBEDDER, DEFAULT_GENERATOR_NAME
from ragaudit_core.review import charts

st.set_page_config(page_title="Attributions · RagAudit", page_icon="🧭", layout="wide")
db = ui.open_store("Attributions", catalog.missing_text_message)
con = db.con
KEYS = ui.KEYS

runs = catalog.runs_with_texts(con)
c1, c2 = st.columns([1, 3])
run = c1.selectbox("Run", runs, index=runs.index(catalog.preferred_run(runs)))
qid = ui.query_picker(con, st.session_state.get(KEYS.query), search_box=c2, limit=300)

with st.expander("Settings"):
    s1, s2, s3, s4 = st.columns(4)
    method = s1.selectbox("Shapley estimator", ["auto", "exact", "kernel", "pmc", "mc"],
                          help="auto: exact up to 6 documents, PMCSHAP beyond.")
    max_docs = s2.number_input("Documents", 2, 10, 5)
    ig_steps = s3.number_input("IG steps L", 10, 300, 100, step=10)
    shuffle = s4.checkbox("Also shuffled order", value=False)
    s5, s6, s7 = st.columns(3)
    n_samples = s5.number_input("N (kernel/pmc/mc)", 8, 256, 20)
    n_fits = s6.number_input("M (pmc/mc)", 10, 500, 200)
    ig_baseline = s7.selectbox("IG baseline", ["unk", "mask", "pad", "zeros"])

stored = [r for r in stored_attribution(con, run, qid)
          if r["params"].get("max_docs") == max_docs and r["params"].get("ig_steps") == ig_steps
          and r["params"].get("ig_baseline") == ig_baseline and (method == "auto" or r["method"] == method)]
results = {r["condition"]: r for r in stored}
if not results or (shuffle and "shuffled" not in results):
    if st.button("Explain this query", type="primary"):
        bar = st.progress(0.0, text="Starting…")
        try:
            out = explain_query(con, run, qid, embedder=ui.embedder, generator=ui.generator,
                                retriever_name=DEFAULT_EMBEDDER, generator_name=DEFAULT_GENERATOR_NAME,
                                method=method, n_samples=int(n_samples), n_fits=int(n_fits), max_docs=int(max_docs),
                                ig_steps=int(ig_steps), ig_baseline=ig_baseline, shuffle=shuffle,
                                progress=lambda label, frac: bar.progress(min(1.0, frac), text=label))
        except AttributionError as e:
            st.error(ui.md(str(e)))
            st.stop()
        results = {r["condition"] if "condition" in r else c: r for c, r in zip(["original", "shuffled"], out)}
        bar.empty()
    else:
        st.caption("Not explained yet with these settings. On the CPU, 5 documents take about a minute "
                   "(IG dominates); the result is stored.")
        st.stop()

res = results.get("original") or next(iter(results.values()))
n = len(res["doc_ids"])
doc_labels = [f"{i + 1}. {d}" for i, d in enumerate(res["doc_ids"])]
tab_labels = [f"Document {i + 1}" for i in range(n)]

st.subheader("Retriever: which words made each document match the query")
tabs = st.tabs(tab_labels)
for i, tab in enumerate(tabs):
    with tab:
        q_ig, d_ig = res["ig_query"][i], res["ig_documents"][i]
        st.text(f"document id: {res['doc_ids'][i]}")
        st.caption(f"similarity {d_ig['score']:.3f} · baseline [{d_ig['baseline']}] {d_ig['baseline_score']:.3f} · "
                   f"completeness Σβ/(s−s⁰): query {q_ig['completeness']:.3f}, document {d_ig['completeness']:.3f} "
                   f"(L = {d_ig['steps']})")
        st.markdown("**Query**")
        st.html(ui.diverging_html(q_ig["words"], q_ig["word_attributions"]))
        st.markdown("**Document**")
        st.html(ui.diverging_html(d_ig["words"], d_ig["word_attributions"]))
        st.caption("Red: raises the similarity; blue: lowers it; stronger colour, larger |β|.")

st.subheader("Generator: which document each answer token came from")
vals = res["values"]                                   # n × m
owners = [max(range(n), key=lambda i: vals[i][j]) for j in range(len(res["answer_tokens"]))]
strength = [vals[owners[j]][j] for j in range(len(owners))]
st.html(ui.legend_html(doc_labels))
st.html(ui.owner_html(res["answer_tokens"], owners, strength))
fig = charts.influence_bars(res["importance"], doc_labels, [ui.DOC_COLOURS[i % 10] for i in range(n)],
                            title=f"Document influence ({res['method']} Shapley, mean over "
                                  f"{len(res['answer_tokens'])} tokens)")
st.plotly_chart(fig, key="attr.influence")

st.subheader("Alignment")
k = st.columns(4)
k[0].metric("generator ranking", " > ".join(str(i + 1) for i in res["generator_ranking"]),
            help="Retrieved documents by their retriever rank (1 = top), ordered by generator importance.")
k[1].metric("Spearman (rank vs importance)", "n/a" if res["spearman"] is None else f"{res['spearman']:.3f}")
k[2].metric("wasted retrieval", "yes" if res["wasted_retrieval"] else "no",
            help="The retriever's top document gets generator rank > 2.")
k[3].metric("noise distraction", "yes" if res["noise_distraction"] else "no",
            help="The generator's top document had retriever rank > 2.")
tables = batch_tables(con, run)
means = {}
if tables and len(tables["warg"]):
    for _, row in tables["warg"].iterrows():
        means[f"run mean, {row['condition']}"] = {p: row.get(f"warg_{p}") for p in res["warg"]}
wfig = charts.warg_curves({f"WARG, {cond}": r["warg"] for cond, r in results.items()},
                          dashed={"WARG (extrapolated RBO)": res["warg_extrapolated"]},
                          floor=(f"floor p^{n} (identical lists)", res["warg_floor"]), run_means=means)
st.plotly_chart(wfig, key="attr.warg")
if tables:
    st.markdown(f"**Run {ui.md(run)}: stored results** (wasted retrieval and noise distraction rates, mean Spearman)")
    ui.table(tables["failure"], hide_index=True)
st.caption("Answer (generated once with all documents, greedy):")
st.text(res["answer"])
st.caption(f"{res['n_coalitions']} coalitions evaluated · IG {res['timings_s']['ig']} s · "
           f"Shapley {res['timings_s']['shapley']} s")

"""Attributions on demand (seed 001, RAG-E): does the generator use what the retriever ranked?

Pick a logged query and press the button: IG token saliency on the retriever, Shapley
values of each document on the generator's answer, WARG curves and failure modes.
Results are stored in the database; a query explained once opens instantly.
"""

from __future__ import annotations

import streamlit as st

from ragaudit_core import catalog, charts, models, render, store
from ragaudit_core.attribution import AttributionError, batch_tables, explain_query, stored_attribution
from ragaudit_core.session import KEYS

st.set_page_config(page_title="Attributions · RagAudit", page_icon="🧭", layout="wide")
connection = st.cache_resource(store.connect, show_spinner=False)
embedder = st.cache_resource(models.load_embedder, show_spinner="Loading the retriever…")
generator = st.cache_resource(models.load_generator, show_spinner="Loading the generator…")

db_path = st.session_state.get(KEYS.db_path) or str(store.default_db_path())
con = connection(db_path)
st.title("Attributions")
if msg := catalog.missing_text_message(con):
    st.info(msg)
    st.stop()

runs = catalog.runs_with_texts(con)
c1, c2 = st.columns([1, 3])
run = c1.selectbox("Run", runs, index=runs.index("k10-c256-o32") if "k10-c256-o32" in runs else 0)
search = c2.text_input("Find a query by id or text", value="")
found = catalog.list_queries(con, search, limit=300)
if found.empty:
    st.warning("No query matches that search.")
    st.stop()
ids = found["query_id"].tolist()
labels = dict(zip(found["query_id"], found["query"].fillna("")))
current = st.session_state.get(KEYS.query)
qid = st.selectbox("Query", ids, index=ids.index(current) if current in ids else 0,
                   format_func=lambda q: f"{q} — {labels.get(q, '')[:110]}")

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
            out = explain_query(con, run, qid, embedder=embedder, generator=generator,
                                retriever_name=models.DEFAULT_EMBEDDER, generator_name="SmolLM2-135M-Instruct",
                                method=method, n_samples=int(n_samples), n_fits=int(n_fits), max_docs=int(max_docs),
                                ig_steps=int(ig_steps), ig_baseline=ig_baseline, shuffle=shuffle,
                                progress=lambda label, frac: bar.progress(min(1.0, frac), text=label))
        except AttributionError as e:
            st.error(str(e))
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
        st.html(render.diverging_html(q_ig["words"], q_ig["word_attributions"]))
        st.markdown("**Document**")
        st.html(render.diverging_html(d_ig["words"], d_ig["word_attributions"]))
        st.caption("Red: raises the similarity; blue: lowers it; stronger colour, larger |β|.")

st.subheader("Generator: which document each answer token came from")
vals = res["values"]                                   # n × m
owners = [max(range(n), key=lambda i: vals[i][j]) for j in range(len(res["answer_tokens"]))]
strength = [vals[owners[j]][j] for j in range(len(owners))]
st.html(render.legend_html(doc_labels))
st.html(render.owner_html(res["answer_tokens"], owners, strength))
fig = charts.influence_bars(res["importance"], doc_labels, [render.DOC_COLOURS[i % 10] for i in range(n)],
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
    st.markdown(f"**Run {render.md(run)}: stored results** (wasted retrieval and noise distraction rates, mean Spearman)")
    st.dataframe(tables["failure"], hide_index=True)
st.caption("Answer (generated once with all documents, greedy):")
st.text(res["answer"])
st.caption(f"{res['n_coalitions']} coalitions evaluated · IG {res['timings_s']['ig']} s · "
           f"Shapley {res['timings_s']['shapley']} s")

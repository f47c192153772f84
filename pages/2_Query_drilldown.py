"""One query: its Jaccard matrix across runs, two evidence lists side by side, the
characters two chunks of one document share, and both runs' answers."""

from __future__ import annotations

import streamlit as st

from pages import ui
from ragaudit_core.logs import catalog
from ragaudit_core.logs.qrels import query_labels
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.quality.ranking import per_query_quality
from ragaudit_core.review import charts
from ragaudit_core.stability import drilldown
from ragaudit_core.stability.probe import DEFAULT_SIMILARITY_MODEL, lookup_similarities, stored_similarities

st.set_page_config(page_title="Query drill-down · RagAudit", page_icon="🔬", layout="wide")
db = ui.open_store("Query drill-down", catalog.missing_data_message)
con, db_path, version = db.con, db.db_path, db.version
KEYS, PARAMS = ui.KEYS, ui.PARAMS


@st.cache_data(show_spinner=False, max_entries=64)
def matrix(db: str, data_version: str, query_id: str):
    return drilldown.query_matrix(ui.connection(db), query_id)


@st.cache_data(show_spinner=False, max_entries=64)
def lists(db: str, data_version: str, query_id: str, a: str, b: str):
    return drilldown.evidence_side_by_side(ui.connection(db), query_id, a, b)


@st.cache_data(show_spinner=False, max_entries=64)
def query_quality(db: str, data_version: str, query_id: str, runs: tuple[str, ...]):
    con = ui.connection(db)
    labels = query_labels(con, query_id)
    return labels, (per_query_quality(con, list(runs), queries=[query_id]) if labels else None)


# --- pick the query ---------------------------------------------------------------------------
params = st.query_params
if PARAMS.query in params and params[PARAMS.query] != st.session_state.get(KEYS.query):
    st.session_state[KEYS.query] = params[PARAMS.query]
    if PARAMS.run_a in params and PARAMS.run_b in params:
        st.session_state[KEYS.run_a], st.session_state[KEYS.run_b] = params[PARAMS.run_a], params[PARAMS.run_b]
current = st.session_state.get(KEYS.query)
qid = ui.query_picker(con, current)
if qid != current:
    st.session_state[KEYS.query] = qid
st.query_params[PARAMS.query] = qid

logged = drilldown.query_runs(con, qid)
groups = drilldown.question_groups(logged)
query_text = groups[0][0] if groups else None  # the question most runs ask under this id
st.text(f"Query {qid}: {query_text}" if query_text else f"Query {qid} (no query text logged)")

if len(groups) > 1:
    said = "; ".join(
        f"“{text[:80]}” ({ui.counted(len(rs), 'run')}: {', '.join(rs[:3])}{' …' if len(rs) > 3 else ''})"
        for text, rs in groups[:4]
    )
    st.warning(
        ui.md(
            f"Query id {qid} names {len(groups)} different questions in different runs: {said}. Comparing runs across "
            "them pairs unrelated queries; the home page's identity checks name the runs."
        )
    )

# --- J matrix ---------------------------------------------------------------------------------
mats = matrix(db_path, version, qid)
if mats:
    tabs = st.tabs([f"{lvl} level" for lvl in ("span", "doc") if lvl in mats])
    for tab, lvl in zip(tabs, [lvl for lvl in ("span", "doc") if lvl in mats]):
        with tab:
            st.plotly_chart(
                charts.matrix_heatmap(mats[lvl], title=f"J_{lvl} between every two runs for query {qid}"),
                key=f"drill.matrix.{lvl}",
            )
    if any(m.isna().to_numpy().any() for m in mats.values()):
        st.caption(
            "n/a: a run that logged no document ids (its ids are its passages' text hashes) beside one that did. "
            "They share no document and no span by how they were logged, not by what they retrieved, so their J "
            "is not compared; load such a run again with its document ids to compare it."
        )
else:
    st.info("Only one run logged this query: there is nothing to compare it with.")

# --- two runs side by side --------------------------------------------------------------------
runs = natural_sorted(logged["run_id"])
if len(runs) == 1:  # nothing to compare: the one run's evidence and answer as they were logged
    only, _same = lists(db_path, version, qid, runs[0], runs[0])
    st.markdown("**Its evidence**")
    st.text(runs[0])
    shown = ["rank", "doc_id", "chunk_id", "score", "char_start", "char_end", "text"]
    ui.table(only[[c for c in shown if c in only.columns]], hide_index=True, key="drill.list_one")
    answer = logged["answer"].iloc[0]
    st.text(f"Answer: {answer}" if isinstance(answer, str) else "No answer logged.")
if len(runs) < 2:
    st.stop()
answered = natural_sorted(logged.loc[logged["answer"].notna(), "run_id"])  # open on a pair with answers
if len(groups) > 1:  # ... of runs asking the question most runs ask, not a run whose id names another
    asking = set(groups[0][1])
    answered = [r for r in answered if r in asking]
    answered = answered if len(answered) >= 2 else natural_sorted(asking)
run_a, run_b = ui.run_pair_picker(runs, ("Run A", "Run B"), prefer_sample_run=False, preferred=answered)
st.query_params[PARAMS.run_a], st.query_params[PARAMS.run_b] = run_a, run_b
a, b = lists(db_path, version, qid, run_a, run_b)
if mats:
    jd = mats["doc"].loc[run_a, run_b] if "doc" in mats else None
    js = mats["span"].loc[run_a, run_b] if "span" in mats else None
    if jd != jd:  # n/a: one run logged no document ids and the other did (the caption above says why)
        st.write("J_doc n/a · J_span n/a (their ids cannot meet)")
    else:
        st.write(
            f"J_doc = **{jd:.3f}**" + (f" · J_span = **{js:.3f}**" if js is not None else " · J_span n/a (no spans)")
        )
if note := drilldown.passage_ids_note(a, b, run_a, run_b):  # J 0 by how one run was logged: say so
    st.warning(ui.md(note))
labels, qq = query_quality(db_path, version, qid, (run_a, run_b))
if labels and qq is not None and len(qq):
    by_run = qq.set_index("run_id")
    bits = [
        f"{ui.md(r)}: nDCG@10 **{by_run.loc[r, 'ndcg@10']:.3f}**, recall@10 {by_run.loc[r, 'recall@10']:.3f}"
        for r in (run_a, run_b)
        if r in by_run.index
    ]
    change = (
        f" · change **{by_run.loc[run_b, 'ndcg@10'] - by_run.loc[run_a, 'ndcg@10']:+.3f}**"
        if {run_a, run_b} <= set(by_run.index)
        else ""
    )
    n_rel = sum(v > 0 for v in labels.values())
    st.write(
        f"Ranking quality ({n_rel} relevant document{'s' if n_rel != 1 else ''} labelled): " + " · ".join(bits) + change
    )
    a = a.assign(relevance=a["doc_id"].map(labels))
    b = b.assign(relevance=b["doc_id"].map(labels))
elif not labels:
    st.caption("No relevance label for this query: its ranking quality is not scored.")

# tints of the charts' Okabe–Ito colours (blue, orange, reddish purple): no red-green pair
STATUS_COLOURS = {"in both": "#cce3f0", "only in A": "#fae6b3", "only in B": "#f0d7e6"}


# the chunk text right after the status columns: placed last, it sat past the table's right edge;
# a column no entry of either list fills (a Ragas log's chunk ids, scores, offsets) is left out,
# but not the relevance labels' (there, blank says "unjudged")
WANTED = ["rank", "doc_id", "relevance", "chunk_id", "status", "same_doc_other_span", "same_text_other_id", "text",
          "score", "char_start", "char_end"]  # fmt: skip
ALWAYS = {"rank", "doc_id", "relevance", "status", "same_doc_other_span"}
shown_columns = [c for c in WANTED if any(c in d.columns and (c in ALWAYS or d[c].notna().any()) for d in (a, b))]
if not any(d["same_text_other_id"].any() for d in (a, b) if "same_text_other_id" in d):
    shown_columns = [c for c in shown_columns if c != "same_text_other_id"]  # only where some row has it


def styled(df):
    show = df[[c for c in shown_columns if c in df.columns]]
    # the Styler's text is what the table shows (its default: "1.000000", "nan"): labels are integers
    numbers = {c: f for c, f in (("relevance", "{:.0f}"), ("score", "{:.4f}")) if c in show.columns}
    return show.style.map(lambda v: f"background-color: {STATUS_COLOURS.get(v, '')}", subset=["status"]).format(
        numbers, na_rep=""
    )


# narrow identity columns (pixels), so that the chunk text gets the room (the walk found it past the
# table's edge at 1,500 px when the logs fill chunk ids and relevance labels)
cols = {
    "rank": st.column_config.NumberColumn(width=44),
    "doc_id": st.column_config.TextColumn(width=90),
    "chunk_id": st.column_config.TextColumn(width=90),
    "status": st.column_config.TextColumn(width=80),
    "text": st.column_config.TextColumn("chunk text", width=560),
    "relevance": st.column_config.NumberColumn(
        "relevance label", help="From the relevance labels (qrels); blank: unjudged", width=60
    ),
    "same_doc_other_span": st.column_config.CheckboxColumn("same doc, other span", width=70),
    "same_text_other_id": st.column_config.CheckboxColumn(
        "same text, other id",
        help="The other list holds this passage word for word under another document id",
        width=70,
    ),
    "score": st.column_config.NumberColumn(format="%.4f"),
}
# one list above the other, each the page's width: side by side, half a page left the passages a few
# words wide (the status colours and ranks carry the comparison)
for label, run_id, d, key in (("Run A", run_a, a, "drill.list_a"), ("Run B", run_b, b, "drill.list_b")):
    st.markdown(f"**{label}**")
    st.text(run_id)
    ui.table(styled(d), hide_index=True, column_config=cols, key=key)

# --- overlapping chunks of one document --------------------------------------------------------
st.subheader("Same document, different span")
st.caption(
    "Both runs cite this document (sometimes even the same chunk id), but not the same passage: the span "
    "is the hash of the cited text, and a chunking change (size, overlap) moves a chunk's boundaries while "
    "its document and often its id stay the same. Same id is not same evidence; the shared characters show "
    "how much of the passage survived."
)
cand = drilldown.overlap_candidates(a, b)
if cand.empty:
    st.caption("No document appears in both lists with different spans for this pair.")
else:
    opts = list(range(len(cand)))
    k = st.selectbox("Chunk pair", opts, format_func=lambda i: cand.label[i])
    ca, cb = a.loc[cand.pos_a[k]], b.loc[cand.pos_b[k]]

    def off(v):  # an offset, or None when the log has none (None, NaN or pandas' NA)
        try:
            return None if v is None else int(v)
        except (TypeError, ValueError):
            return None

    ov = drilldown.chunk_overlap(
        ca["text"],
        cb["text"],
        start_a=off(ca.char_start),
        end_a=off(ca.char_end),
        start_b=off(cb.char_start),
        end_b=off(cb.char_end),
    )
    st.caption(
        f"Compared by {ov.method}: {ui.counted(ov.shared_chars, 'shared character')} (blue); characters only in "
        "one chunk in orange." + (f" {ov.note}." if ov.note else "")
    )
    x, y = st.columns(2)
    x.html(drilldown.segments_html(ov.a))
    y.html(drilldown.segments_html(ov.b))

# --- answers ----------------------------------------------------------------------------------
ans = logged.set_index("run_id")["answer"]
if isinstance(ans.get(run_a), str) or isinstance(ans.get(run_b), str):
    st.subheader("Answers")
    x, y = st.columns(2)
    x.text(run_a)
    x.text(ans.get(run_a) if isinstance(ans.get(run_a), str) else "(no answer logged)")
    y.text(run_b)
    y.text(ans.get(run_b) if isinstance(ans.get(run_b), str) else "(no answer logged)")
    if isinstance(ans.get(run_a), str) and isinstance(ans.get(run_b), str):
        kept = st.session_state.setdefault(KEYS.similarities, {})  # read-only: computed by this session
        at = (db_path, version, run_a, run_b, qid)
        value = lookup_similarities(con, run_a, run_b).get(qid, kept.get(at))
        if value is None and st.button("Compute answer similarity (loads the SBERT model)"):
            value = stored_similarities(con, run_a, run_b, [qid], [ans[run_a]], [ans[run_b]], ui.embedder)[0]
            if not db.writable:  # nothing can be stored in the file: kept for the next interactions
                kept[at] = value
        if value is not None:
            st.metric(f"Answer similarity ({DEFAULT_SIMILARITY_MODEL} cosine)", f"{value:.3f}")

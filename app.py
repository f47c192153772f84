"""RagAudit dashboard — home / data page.

Thin by design: it loads, asks ``ragaudit_core``, and draws. Texts from logs are shown
with ``st.dataframe`` / ``st.text`` (escaped), never as HTML.
"""

from __future__ import annotations

import streamlit as st

from ragaudit_core import __version__, store

st.set_page_config(page_title="RagAudit", layout="wide")


@st.cache_resource
def _connection(path: str):
    return store.connect(path)


st.title("RagAudit")
st.caption(f"Audit RAG systems from their logs · version {__version__}")

db_path = str(store.default_db_path())
con = _connection(db_path).cursor()
n_runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
if n_runs == 0:
    st.info(f"No logs loaded yet in {db_path}. Load logs with `ragaudit ingest PATH... --db {db_path}`.")
    st.stop()

runs = con.execute("SELECT run_id, top_k, chunk_size, chunk_overlap, embedder FROM runs ORDER BY run_id").df()
counts = con.execute(
    "SELECT count(DISTINCT run_id) AS runs, count(DISTINCT query_id) AS queries, sum(n_evidence) AS entries FROM records"
).df()
c1, c2, c3 = st.columns(3)
c1.metric("Runs", int(counts.runs[0]))
c2.metric("Queries", int(counts.queries[0]))
c3.metric("Evidence entries", int(counts.entries[0]))
st.subheader("Runs")
st.dataframe(runs, hide_index=True)
st.subheader("Rejected lines")
st.dataframe(con.execute("SELECT path, line_no, reason, raw FROM quarantine ORDER BY path, line_no").df(),
             hide_index=True)

"""RagAudit dashboard — home: load logs, see what is loaded, see what was rejected.

Thin by design: it asks ``ragaudit_core`` and draws. Texts from logs are shown with
``st.dataframe`` / ``st.text`` / ``st.code`` (escaped), never as HTML.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ragaudit_core import __version__, catalog, store
from ragaudit_core.ingest import IngestError
from ragaudit_core.session import KEYS, PAGES

st.set_page_config(page_title="RagAudit", page_icon="🔎", layout="wide")
connection = st.cache_resource(store.connect, show_spinner=False)


def home() -> None:
    st.title("RagAudit")
    st.caption(f"Audit retrieval-augmented generation from its logs · version {__version__}")

    # --- which database --------------------------------------------------------------------------
    db_path = st.session_state.get(KEYS.db_path) or str(store.default_db_path())
    with st.sidebar.expander("Database", expanded=False):
        new_path = st.text_input("DuckDB file", value=db_path, help="An existing RagAudit database, or a new file.")
        if st.button("Open database") and new_path != db_path:
            try:
                connection(new_path)
            except store.StoreError as e:
                st.error(str(e))
            else:
                st.session_state[KEYS.db_path] = new_path
                st.rerun()
    try:
        con = connection(db_path)
    except store.StoreError as e:
        st.error(f"{e}. Pick another file under “Database” in the sidebar.")
        st.stop()
    st.sidebar.caption(f"Database: `{db_path}`")

    # --- load ------------------------------------------------------------------------------------
    info = catalog.overview(con)
    sample_dir = catalog.sample_logs_dir()

    with st.container(border=True):
        st.subheader("Load logs")
        left, right = st.columns([2, 1])
        with left:
            files = st.file_uploader(
                "Evidence or provenance logs (JSONL or JSONL.gz, one record per line; several files at once)",
                type=["jsonl", "gz", "json", "ndjson"], accept_multiple_files=True,
                key=f"{KEYS.uploader}.{st.session_state.get(KEYS.uploader, 0)}")
            if files and st.button("Load the uploaded files", type="primary"):
                with st.spinner("Validating and loading…"):
                    try:
                        report = catalog.ingest_uploads(con, [(f.name, f.getvalue()) for f in files],
                                                        catalog.uploads_dir(db_path))
                    except IngestError as e:
                        st.session_state[KEYS.last_ingest] = {"error": str(e)}
                    else:
                        st.session_state[KEYS.last_ingest] = {
                            "summary": report.summary(),
                            "rejected": [(i.path, i.line_no, i.message) for i in report.rejected],
                            "warnings": [str(w) for w in report.warnings],
                        }
                st.session_state[KEYS.uploader] = st.session_state.get(KEYS.uploader, 0) + 1
                st.cache_data.clear()
                st.rerun()
        with right:
            if sample_dir is not None:
                st.write("Or open the bundled SciFact sample logs (12 retrieval configurations, 300 queries).")
                if st.button("Open the sample logs", type="primary" if info["runs"] == 0 else "secondary"):
                    with st.spinner("Loading the sample logs…"):
                        report = catalog.ingest_sample_logs(con)
                    st.session_state[KEYS.last_ingest] = {"summary": report.summary(), "rejected": [],
                                                          "warnings": [str(w) for w in report.warnings]}
                    st.cache_data.clear()
                    st.rerun()
            if info["runs"] or info["rejected"]:
                with st.popover("Clear data"):
                    st.write("Delete every loaded log, rejected line and stored result from this database.")
                    if st.button("Yes, clear everything", type="primary"):
                        store.clear_data(con)
                        st.session_state.pop(KEYS.last_ingest, None)
                        st.cache_data.clear()
                        st.rerun()

    last = st.session_state.get(KEYS.last_ingest)
    if last:
        if "error" in last:
            st.error(last["error"])
        else:
            (st.warning if last["rejected"] else st.success)(last["summary"])
            for w in last["warnings"][:20]:
                st.warning(w)

    # --- what is loaded --------------------------------------------------------------------------
    if info["runs"] == 0 and info["rejected"] == 0 and info["provenance"] == 0:
        st.info("No logs loaded yet. Upload evidence logs above, open the bundled sample logs, or load files from a "
                f"shell with `ragaudit ingest PATH... --db {db_path}`.")
        st.stop()

    c = st.columns(7)
    c[0].metric("Runs", f"{info['runs']:,}")
    c[1].metric("Queries", f"{info['queries']:,}")
    c[2].metric("Evidence entries", f"{info['entries']:,}")
    c[3].metric("Answers", f"{info['answers']:,}")
    c[4].metric("Provenance records", f"{info['provenance']:,}")
    c[5].metric("Files", f"{info['files']:,}")
    c[6].metric("Rejected lines", f"{info['rejected']:,}")

    if info["runs"]:
        st.subheader("Runs and their configurations")
        st.dataframe(catalog.runs_table(con), hide_index=True,
                     column_config={"mean_entries": st.column_config.NumberColumn("mean entries", format="%.2f"),
                                    "config": st.column_config.TextColumn("config (as logged)", width="large")})
        nav = st.columns(4)
        nav[0].page_link(PAGES.stability, label="Evidence stability →", icon=":material/scatter_plot:")
        nav[1].page_link(PAGES.drilldown, label="Query drill-down →", icon=":material/search:")
        nav[2].page_link(PAGES.compare, label="Compare two runs →", icon=":material/compare_arrows:")
        nav[3].page_link(PAGES.fidelity, label="Citation fidelity →", icon=":material/link:")

    st.subheader(f"Rejected lines ({info['rejected']:,})")
    if info["rejected"]:
        st.caption("Every line that could not be loaded: which file, which line, why. The line is kept verbatim.")
        st.dataframe(catalog.quarantine_table(con), hide_index=True,
                     column_config={"raw": st.column_config.TextColumn("line as read", width="large")})
    else:
        st.caption("None: every line of every file was loaded.")

    if info["warnings"]:
        with st.expander(f"Ingest warnings ({info['warnings']:,})"):
            st.dataframe(catalog.warnings_table(con), hide_index=True)
    with st.expander("Files"):
        st.dataframe(catalog.files_table(con).assign(path=lambda d: d["path"].map(lambda p: Path(p).name)),
                     hide_index=True)


st.navigation([
    st.Page(home, title="Home", icon=":material/home:", default=True),
    st.Page(PAGES.stability, title="Evidence stability", icon=":material/scatter_plot:"),
    st.Page(PAGES.drilldown, title="Query drill-down", icon=":material/search:"),
    st.Page(PAGES.compare, title="Compare runs", icon=":material/compare_arrows:"),
    st.Page(PAGES.fidelity, title="Citation fidelity", icon=":material/link:"),
    st.Page(PAGES.attributions, title="Attributions", icon=":material/insights:"),
]).run()

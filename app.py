"""RagAudit dashboard — home: load logs, see what is loaded, see what was rejected.

Thin by design: it asks ``ragaudit_core`` and draws, with the helpers of ``pages/ui``.
Texts from logs are shown with ``st.dataframe`` / ``st.text`` / ``st.code`` (escaped),
never as HTML.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from pages import ui
from ragaudit_core import __version__, workspace
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import catalog, formats, sanity, store
from ragaudit_core.logs.ingest import IngestOptions
from ragaudit_core.logs.qrels import QrelsError
from ragaudit_core.logs.runs import parse_settings
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.wording import NOTE, shell_word

KEYS, PAGES = ui.KEYS, ui.PAGES
st.set_page_config(page_title="RagAudit", page_icon="🔎", layout="wide")


def home() -> None:
    st.title("RagAudit")
    st.caption(f"Audit retrieval-augmented generation from its logs · version {__version__}")
    con, db_path, writable = _database()
    info = catalog.overview(con)
    if writable:
        with st.container(border=True):
            st.subheader("Load logs")
            left, right = st.columns([2, 1])
            with left:
                _upload(con, db_path)
                _qrels_upload(con, db_path)
            with right:
                _sample_and_clear(con, info)
    else:
        st.info(ui.md(ui.READ_ONLY_NOTE + "."))
    _last_ingest()
    if info["runs"] == 0 and info["rejected"] == 0 and info["provenance"] == 0:
        if writable:
            st.info(
                "No logs loaded yet. Upload evidence logs above, open the bundled sample logs, or load files from a "
                f"shell with `ragaudit ingest PATH... --db {shell_word(db_path)}`."
            )
        else:
            st.info("No logs are loaded in this database.")
        st.stop()
    _loaded(con, info, db_path, writable)


def _database():
    """The sidebar's database picker; the open connection, its path and whether it may be written."""
    db_path = ui.current_db_path()
    with st.sidebar.expander("Database", expanded=False):
        root = store.workspace_root()
        new_path = st.text_input(
            "DuckDB file",
            value=db_path,
            help=f"An existing RagAudit database, or a new file, inside the workspace folder {root}.",
        )
        init = st.checkbox(
            "Add RagAudit's tables",
            help="Only for a DuckDB file another program made: its own tables are left as they are.",
        )
        if st.button("Open database") and new_path != db_path:
            try:
                target = str(store.db_path_in_workspace(new_path))
                try:
                    store.connect(target, init=init).close()
                except store.StoreReadOnly as cannot_write:  # browsed read-only (ui.connection)
                    try:
                        store.connect(target, read_only=True).close()
                    except store.DatabaseRefused:  # another program's file: its refusal says to tick "init"
                        if init:
                            raise cannot_write from None  # ticked: adding the tables needs writing
                        raise
            except store.StoreError as e:
                st.error(ui.error_text(e))
            else:
                st.session_state[KEYS.db_path] = target
                st.rerun()
    try:
        con = ui.connection(db_path)
    except store.StoreBusy as e:
        st.warning(ui.md(f"{e}. This page works again on your next interaction once it is free."))
        st.stop()
    except store.StoreError as e:
        st.error(ui.error_text(e) + " Pick another file under “Database” in the sidebar.")
        st.stop()
    writable = not store.is_read_only(con)  # (this user may not write the file: browsed, see ui.connection)
    st.sidebar.caption(f"Database: {ui.code(db_path)}" + ("" if writable else " (read-only)"))
    return con, db_path, writable


def _read_as(files) -> str:
    """What the loaded files were read as, grouped ("; 14 files read as native; ragas.csv read as
    Ragas"); a file that loaded nothing is said under the summary, with why."""
    groups: dict[str, list[str]] = {}
    for f in files:
        if f.status == "loaded" and f.formats:
            groups.setdefault(f.formats_read(), []).append(Path(f.path).name)
    return "".join(
        f"; {names[0] if len(names) == 1 else ui.counted(len(names), 'file')} read as {fmt}"
        for fmt, names in groups.items()
    )


def _after_load(report=None, error: str | None = None) -> None:
    if error is not None:
        st.session_state[KEYS.last_ingest] = {"error": error}
    else:
        st.session_state[KEYS.last_ingest] = {
            "summary": report.summary() + _read_as(report.files),
            "rejected": [(i.path, i.line_no, i.message) for i in report.rejected],
            "warnings": [  # (kind, words): a file's start with its name (as written); the database's are sentences
                (w.kind, str(w) if w.path else ui.sentence(str(w)))
                for w in report.said_once()
                if w.code != "identity" or w.kind == NOTE  # (a note — ids read as texts — is this load's news)
            ],  # (identity warnings: shown under Identity checks; the same words about several files said once)
            "failed": [
                ui.md(report.failure(f) + ".")  # "<file name> was not loaded: <why>", the name as uploaded
                if f.status == "unreadable"
                else ui.md(ui.sentence(report.failure(f))) + " (reasons below, under Rejected lines)."
                for f in report.failed_files
            ],
        }
    st.cache_data.clear()


def _format_label(name: str) -> str:
    f = formats.get(name)
    return "RagAudit's own contract (native)" if name == "native" else f.label


def _upload(con, db_path: str) -> None:
    files = st.file_uploader(
        "Evidence or provenance logs — ours, Ragas, RAGChecker, OpenInference/Phoenix, LangSmith, Langfuse, "
        "MLflow, TruLens or DeepEval "
        "(JSONL, JSON, CSV, TSV or Parquet, or a table saved as .txt; .gz; several files at once)",
        type=["jsonl", "gz", "json", "ndjson", "csv", "tsv", "txt", "parquet"],
        accept_multiple_files=True,
        key=f"{KEYS.uploader}.{st.session_state.get(KEYS.uploader, 0)}",
    )
    fmt = st.selectbox(
        "Read the files as",
        [None, *formats.NAMES],
        format_func=lambda n: "each record as what it is (recognised by its fields)" if n is None else _format_label(n),
        help="Leave it to recognise each record by its fields (a file may mix formats). Pick a format when a "
        "file is read as another: a Ragas frame with run_id and query_id columns reads as our own contract, "
        "its contexts then document ids — read as Ragas, they are passages.",
        key="home.format",
    )
    as_texts = st.checkbox(
        "Document ids are passage texts",
        help="For logs whose evidence lists hold passages, not ids: each becomes the entry's text (span metrics "
        "then apply) with a 'text:' document id.",
        key="home.ids_are_texts",
    )
    id_key = st.text_input(
        "Document id key",
        help="For Ragas, LangSmith, Langfuse and OpenInference logs whose passages carry their document id in "
        "their metadata (e.g. 'id' or 'source'): that metadata key. It wins over a logged id (LlamaIndex logs each "
        "chunk's node id). Left empty, a passage without an id gets the hash of its text as its document id.",
        key="home.doc_id_key",
    ).strip()
    settings = st.text_input(
        "Settings of these runs",
        placeholder="e.g. top_k=5, chunk_size=256",
        help="For logs that carry no settings (Ragas exports; LangSmith, Langfuse, OpenInference exports whose "
        "metadata names none): the top-k, chunk size, overlap or embedder of the runs these files make, so the "
        "pages can say what changed between runs. Runs that log their own keep them.",
        key="home.settings",
    ).strip()
    questions = st.file_uploader(
        "Questions file (for logs without query ids)",
        type=["jsonl", "gz", "tsv", "csv", "txt"],
        help="The benchmark's questions (BEIR's queries.jsonl, 'id<TAB>text' or 'id,text' rows, or query_id/query "
        "JSONL): a Ragas or trace export's record, whose query id is its question's hash (q:…), takes the question's "
        "id, so it pairs with a native run over the same questions. Ids the logs give are kept.",
        key=f"{KEYS.uploader}.questions.{st.session_state.get(KEYS.uploader, 0)}",
    )
    stored = st.checkbox(
        "Take missing ids from the runs already loaded (questions and passages, by text)",
        value=True,
        help="A record whose query id is its question's hash (q:…) takes the id a run loaded before logs for the "
        "same question (a native run's; without a questions file), and a passage whose document id is its text's "
        "hash (text:…) the document id a run loaded before logs for the same passage word for word, so the runs "
        "pair and their documents meet; a text two ids share keeps its hash. Untick to keep the hashes. Runs "
        "loaded before are never renamed: load the native runs first.",
        key="home.stored_questions",
    )
    if files and st.button("Load the uploaded files", type="primary"):
        with st.spinner("Validating and loading…"):
            try:
                report = workspace.load_uploads(
                    con,
                    [(f.name, f.getvalue()) for f in files],
                    catalog.uploads_dir(db_path),
                    IngestOptions(
                        doc_id_key=id_key or None, stored_questions=stored, stored_passages=stored, format=fmt
                    ),
                    ids_are_texts=as_texts,
                    settings=parse_settings(settings) if settings else None,
                    questions=(questions.name, questions.getvalue()) if questions is not None else None,
                )
            except RagAuditError as e:  # an ingest that could not start, or settings that do not read
                _after_load(error=str(e))
            else:
                _after_load(report)
        st.session_state[KEYS.uploader] = st.session_state.get(KEYS.uploader, 0) + 1
        st.session_state.pop("home.format", None)  # a format is asked for one upload: the next is recognised
        st.rerun()


def _qrels_upload(con, db_path: str) -> None:
    """Relevance labels for the ranking-quality figures (TREC/BEIR qrels)."""
    with st.expander("Relevance labels (qrels) — for ranking quality"):
        files = st.file_uploader(
            "TREC or BEIR qrels: 'query-id<TAB>doc-id<TAB>relevance' (header or not) or TREC's "
            "'query-id 0 doc-id relevance'; graded; a later file replaces the labels of its queries. With BEIR's "
            "queries.jsonl beside them, the labels also meet logs without query ids (Ragas, traces) by question",
            type=["tsv", "txt", "qrels", "gz", "jsonl"],
            accept_multiple_files=True,
            key=f"{KEYS.uploader}.qrels.{st.session_state.get(KEYS.uploader, 0)}",
        )
        if files and st.button("Load the relevance labels"):
            with st.spinner("Loading the labels…"):
                try:
                    rep = workspace.load_qrels_uploads(
                        con, [(f.name, f.getvalue()) for f in files], catalog.uploads_dir(db_path)
                    )
                except QrelsError as e:
                    st.session_state[KEYS.last_ingest] = {"error": str(e)}
                else:  # with what the load noticed (labels that label no loaded query, repeated judgements)
                    st.session_state[KEYS.last_ingest] = {"notice": rep.summary(), "notes": rep.warnings}
            st.session_state[KEYS.uploader] = st.session_state.get(KEYS.uploader, 0) + 1
            st.cache_data.clear()
            st.rerun()


def _sample_and_clear(con, info: dict) -> None:
    if catalog.sample_logs_dir() is not None:
        st.write("Or open the bundled SciFact sample logs (12 retrieval configurations, 300 queries).")
        if st.button("Open the sample logs", type="primary" if info["runs"] == 0 else "secondary"):
            with st.spinner("Loading the sample logs…"):
                _after_load(workspace.load_sample_logs(con))
            st.rerun()
    if info["runs"] or info["rejected"]:
        with st.popover("Clear data"):
            st.write("Delete every loaded log, rejected line and stored result from this database.")
            if st.button("Yes, clear everything", type="primary"):
                workspace.clear(con)
                st.session_state.pop(KEYS.last_ingest, None)
                st.cache_data.clear()
                st.rerun()


def _last_ingest() -> None:
    last = st.session_state.get(KEYS.last_ingest)
    if not last:
        return
    if "error" in last:
        st.error(ui.md(last["error"]))
        return
    if "notice" in last:
        st.success(ui.md(last["notice"][:1].upper() + last["notice"][1:] + "."))
        for note in last.get("notes", [])[:20]:
            st.warning(ui.md(ui.sentence(note) + "."))
        return
    for msg in last.get("failed", []):
        st.error(msg)
    (st.warning if last["rejected"] else st.success)(ui.md(ui.sentence(last["summary"]) + "."))
    for kind, w in last["warnings"][:20]:  # a note (what the load did, as asked) is information, not a warning
        (st.info if kind == NOTE else st.warning)(ui.md(w))


def _loaded(con, info: dict, db_path: str, writable: bool) -> None:
    info = {**info, "rejected_lines": info["rejected"] - info["refused"]}
    c = ui.wrapping_row(7)
    for col, (label, key) in zip(
        c,
        [
            ("Runs", "runs"),
            ("Queries", "queries"),
            ("Evidence entries", "entries"),
            ("Answers", "answers"),
            ("Provenance records", "provenance"),
            ("Files", "files"),
            ("Rejected lines", "rejected_lines"),
        ],
    ):
        col.metric(label, f"{info[key]:,}")
    _identity(con, writable)
    if info["runs"]:
        st.subheader("Runs and their configurations")
        runs = catalog.runs_table(con)
        ui.table(
            runs,
            hide_index=True,
            column_config={
                "mean_entries": st.column_config.NumberColumn("mean entries", format="%.2f"),
                "config": st.column_config.TextColumn("config (as logged)", width="large"),
            },
        )
        _no_settings(runs)
        sel, _ = ui.default_selection(db_path, store.data_version(con))
        if sel.note:  # which runs the pages compare when nobody picks, and why the others are left out
            st.caption(
                ui.md(
                    (
                        f"The stability and compare pages compare by default {len(sel.runs)} runs over their "
                        f"{ui.counted(sel.n_shared, 'shared query')}. "
                        if len(sel.runs) > 1
                        else "No two runs share a query: the stability and compare pages have no default comparison. "
                    )
                    + sel.note
                )
            )
        nav = ui.wrapping_row(5)  # wraps in a narrow window (columns cut the labels)
        nav[0].page_link(PAGES.stability, label="Evidence stability →", icon=":material/scatter_plot:")
        nav[1].page_link(PAGES.drilldown, label="Query drill-down →", icon=":material/search:")
        nav[2].page_link(PAGES.compare, label="Compare two runs →", icon=":material/compare_arrows:")
        nav[3].page_link(PAGES.fidelity, label="Citation fidelity →", icon=":material/link:")
        nav[4].page_link(PAGES.attributions, label="Attributions →", icon=":material/insights:")
    refused = f" and refused files ({info['refused']:,})" if info["refused"] else ""
    st.subheader(f"Rejected lines ({info['rejected_lines']:,}){refused}")
    if info["rejected"]:
        st.caption(
            "Every line that could not be loaded: which file, which line, why. The line is kept verbatim."
            + (" A file refused as a whole has a row without line." if refused else "")
        )
        ui.table(
            catalog.quarantine_table(con).assign(path=lambda d: d["path"].map(lambda p: Path(p).name)),
            hide_index=True,
            column_config={"raw": st.column_config.TextColumn("line as read", width="large")},
        )
    else:
        st.caption("None: every line of every file was loaded.")
    if info["warnings"]:
        n_notes = info["notes"]
        n_warnings = info["warnings"] - n_notes
        said = ", ".join(
            [ui.counted(n_warnings, "warning")] * bool(n_warnings) + [ui.counted(n_notes, "note")] * bool(n_notes)
        )
        with st.expander(f"What the loads said: warnings and notes ({said})"):
            st.caption(
                "Every sentence a load said about its data, kept with the database: a warning asks you to look "
                "into something (records that did not pair, data left out); a note says what was done as asked "
                "(ids taken from a questions file or from the runs already loaded, labels read)."
            )
            warnings = catalog.warnings_table(con)
            # a file by its name, as uploaded (not where it is kept); no path (NULL): about the database
            names = warnings["path"].map(lambda p: Path(p).name if isinstance(p, str) else p)
            ui.table(warnings.assign(path=names), hide_index=True)
    _ledger(con, writable)


def _no_settings(runs) -> None:
    """Which runs log no settings, so the pages cannot say what changed between them, and where to give them."""
    bare = natural_sorted(runs.loc[runs["config"].isna(), "run_id"])
    if len(runs) < 2 or not bare:
        return
    names = ", ".join(repr(r) for r in bare[:5]) + (f" and {len(bare) - 5:,} more" if len(bare) > 5 else "")
    st.caption(
        ui.md(
            f"{'Run' if len(bare) == 1 else 'Runs'} {names} log{'s' if len(bare) == 1 else ''} no settings (top-k, "
            "chunk size, overlap, embedder), so the pages call what changed between runs “unknown (no config)”. "
            "Ragas and RAGChecker rows and DeepEval test cases carry none, nor does a trace export whose metadata "
            "names none: give them "
            "under “Settings of these runs” when loading, or with "
            "ragaudit ingest --settings top_k=5,chunk_size=256 (a run already loaded takes them once removed and "
            "loaded again)."
        )
    )


def _identity(con, writable: bool) -> None:
    """The identity checks' warnings, and re-reading passage-like ids as texts in one click."""
    passages = sanity.passage_id_runs(con)
    conflicts = sanity.conflict_messages(sanity.query_text_conflicts(con))
    order = sanity.order_messages(con)  # ids that are places in a list, ranks out of the list's order
    if not passages and not conflicts and not order:
        return
    st.subheader("Identity checks")
    for p in passages:
        st.warning(ui.md(ui.sentence(p.message())))
    if passages and not writable:  # the warnings name the button: say why it is not here
        ui.needs_writing("Reading these ids as texts")
    if (
        passages
        and writable
        and st.button(f"Read these ids as texts ({ui.counted(len(passages), 'run')})", key="home.as_texts")
    ):
        n = sanity.read_ids_as_texts(con, [p.run_id for p in passages])
        texts = "a passage text" if n == 1 else "passage texts"
        st.session_state[KEYS.last_ingest] = {"notice": f"read {ui.counted(n, 'document id')} as {texts}"}
        st.cache_data.clear()
        st.rerun()
    for msg in [*order, *conflicts]:
        st.warning(ui.md(ui.sentence(msg)))


def _ledger(con, writable: bool) -> None:
    """Every loaded file, newest first, and removing one file or one run with what derives from it."""
    ledger = catalog.files_ledger(con)
    st.subheader(f"Files ({len(ledger):,}), newest first")
    ui.table(ledger.drop(columns=["file_id"]), hide_index=True)
    if not writable:
        return  # nothing can be removed (the home page says why once)
    runs = natural_sorted(catalog.all_run_ids(con))
    with st.popover("Remove a file or a run…"):
        what = st.radio("Remove", ["a file", "a run"], horizontal=True, key="home.remove.what")
        if what == "a file":
            labels = {
                int(r.file_id): f"{r.file} ({ui.counted(r.records, 'record')}, runs: {r.runs or 'none'})"
                for r in ledger.itertuples()
            }
            pick = st.selectbox("File", list(labels), format_func=labels.__getitem__, key="home.remove.file")
        else:
            pick = st.selectbox("Run", runs, key="home.remove.run")
        st.caption(
            "Removes its records, evidence, provenance, rejected lines and warnings, and every result derived from "
            "them (stability caches, attributions, verdicts, jobs). The other files and runs stay."
        )
        if pick is not None and st.button("Yes, remove it", type="primary", key="home.remove.go"):
            with st.spinner("Removing, then storing what the pages open on for the data that stays…"):
                done = (
                    workspace.remove_file(con, int(pick))
                    if what == "a file"
                    else workspace.remove_runs(con, [str(pick)])
                )
            st.session_state[KEYS.last_ingest] = {"notice": done.summary()}
            st.cache_data.clear()
            st.rerun()


page = st.navigation(
    [
        st.Page(home, title="Home", icon=":material/home:", default=True),
        st.Page(PAGES.stability, title="Evidence stability", icon=":material/scatter_plot:"),
        st.Page(PAGES.drilldown, title="Query drill-down", icon=":material/search:"),
        st.Page(PAGES.compare, title="Compare runs", icon=":material/compare_arrows:"),
        st.Page(PAGES.fidelity, title="Citation fidelity", icon=":material/link:"),
        st.Page(PAGES.attributions, title="Attributions", icon=":material/insights:"),
    ]
)
try:
    page.run()
except Exception as e:  # a damaged database file, or a sentence of RagAudit's (a damaged job queue); the rest is raised
    why = str(e) if isinstance(e, RagAuditError) else store.damage_message(ui.current_db_path(), e)
    if why is None:
        raise
    st.error(ui.error_text(why))  # the path and DuckDB's words are text, not Markdown
finally:
    ui.release_connections()  # the database is open only while an interaction runs (ui.connection)

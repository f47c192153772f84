"""AppTest: the home page (load, what is loaded, rejected lines, clear)."""

from __future__ import annotations

import pytest

from ragaudit_core import workspace
from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.selection import natural_sorted
from tests.helpers import XSS, app_test, plain, write_jsonl, xss_logs

pytestmark = pytest.mark.slow


def test_empty_database_says_what_to_do(app_env):
    app_env()
    at = app_test("app.py").run()
    assert not at.exception
    assert any("No logs loaded yet" in i.value for i in at.info)
    assert any(b.label == "Open the sample logs" for b in at.button)


def test_open_sample_logs_with_one_click(app_env):
    path = app_env()
    at = app_test("app.py").run()
    next(b for b in at.button if b.label == "Open the sample logs").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    c = store.connect(path)
    info = catalog.overview(c)
    assert info["runs"] == 12 and info["queries"] == 300
    assert metrics["Runs"] == f"{info['runs']:,}"
    assert metrics["Queries"] == f"{info['queries']:,}"
    assert metrics["Evidence entries"] == f"{info['entries']:,}"
    assert metrics["Answers"] == "180"
    # what the 12 files were read as, said once (it was "… read as native" twelve times)
    assert any(plain(s.value).endswith("; 12 files read as native; 2 files read as provenance.") for s in at.success)
    runs = at.dataframe[0].value
    assert list(runs["run_id"]) == natural_sorted(runs["run_id"]) and len(runs) == 12  # k5 < k10 < k20
    assert list(runs["run_id"])[:2] == ["k5-c128-o0", "k5-c128-o32"]
    assert set(runs["chunk_size"]) == {128, 256}


def test_upload_with_bad_lines_shows_each_rejected_line(app_env, tmp_path):
    path = app_env()
    good = {"run_id": "r1", "query_id": "q1", "evidence": ["d1", "d2"]}
    body = write_jsonl(
        tmp_path / "mixed.jsonl",
        [
            good,
            '{"run_id": "r1", "query_id": "q2", "evidence": [',  # line 2: truncated JSON
            {"run_id": "r1", "evidence": ["d3"]},  # line 3: no query id
            {"run_id": "r1", "query_id": "q4", "evidence": ["d4"]},
        ],
    ).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("mixed.jsonl", body, "application/jsonl"))
    at.run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    assert any("rejected 2 lines" in plain(w.value) for w in at.warning)
    assert any(plain(w.value).startswith("Loaded 2 records") for w in at.warning)  # a sentence, capitalised
    assert {m.label: m.value for m in at.metric}["Rejected lines"] == "2"
    q = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert list(q["line_no"]) == [2, 3]
    assert all(p.endswith("mixed.jsonl") for p in q["path"])
    assert q["reason"][0].startswith("invalid JSON: unexpected end of data")
    assert q["reason"][1] == "missing query id: none of query_id, qid, id is present"
    assert q["raw"][0] == '{"run_id": "r1", "query_id": "q2", "evidence": ['
    # the good lines are in, and the upload is kept beside the database
    c = store.connect(path)
    assert c.execute("SELECT count(*) FROM records").fetchall()[0][0] == 2
    assert any(catalog.uploads_dir(path).rglob("mixed.jsonl"))


def test_clear_data(app_env, tmp_path):
    path = app_env()
    c = store.connect(path)
    from ragaudit_core.logs.ingest import ingest_paths

    ingest_paths(c, [write_jsonl(tmp_path / "r.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d"]}])])
    at = app_test("app.py").run()
    assert {m.label: m.value for m in at.metric}["Runs"] == "1"
    next(b for b in at.button if b.label == "Yes, clear everything").click().run()
    assert not at.exception
    assert any("No logs loaded yet" in i.value for i in at.info)
    assert catalog.overview(c)["records"] == 0


def test_log_text_is_never_rendered_as_html(app_env, tmp_path):
    path = app_env()
    from ragaudit_core.logs.ingest import ingest_paths

    ingest_paths(store.connect(path), [xss_logs(tmp_path / "xss")])
    at = app_test("app.py").run()
    assert not at.exception
    # nothing from the logs reaches an HTML or markdown element; it is in data frames only
    for el in list(at.markdown) + list(at.caption) + list(at.get("html")):
        assert XSS not in str(el.value) and "onerror" not in str(el.value)


def test_an_upload_whose_every_line_is_rejected_is_an_error_naming_the_uploaded_file(app_env, tmp_path):
    app_env()
    body = write_jsonl(tmp_path / "x.jsonl", ["{nope", "[1, 2]"]).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("all_bad.jsonl", body, "application/jsonl"))
    at.run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    assert any("No record of all_bad.jsonl could be loaded: all 2 of its lines were rejected" in e for e in errors)
    assert not any(".uploads" in e for e in errors)


def test_a_file_refused_as_a_whole_says_why_and_the_page_still_lists_the_rejected_lines(app_env, tmp_path):
    """A Ragas test set (nothing retrieved) is refused as a whole beside a file with a bad line:
    the error names the file and the reason (not "all 1 of its lines"), the summary counts the
    refusal apart from the rejected line, and the rejected lines' table — where the refusal has
    no line and no text — is drawn (it raised on pandas' missing value before)."""
    app_env()
    testset = [{"user_input": f"q{i}", "reference_contexts": ["a"], "reference": "r"} for i in range(3)]
    bodies = {
        "testset.jsonl": write_jsonl(tmp_path / "t.jsonl", testset).read_bytes(),
        "mixed.jsonl": write_jsonl(
            tmp_path / "m.jsonl", [{"run_id": "r1", "query_id": "q1", "evidence": ["d1"]}, "{bad json"]
        ).read_bytes(),
    }
    at = app_test("app.py").run()
    at.file_uploader[0].set_value([(name, body, "application/jsonl") for name, body in bodies.items()])
    at.run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    assert errors == [
        "testset.jsonl was not loaded: 3 Ragas rows without retrieved contexts (a test set?): nothing to audit."
    ]
    (summary,) = [plain(w.value) for w in at.warning if "rejected 1 line; refused 1 file as a whole" in plain(w.value)]
    assert summary.endswith("; mixed.jsonl read as native.") and "testset.jsonl read as" not in summary
    q = next(df.value for df in at.dataframe if "reason" in df.value.columns)
    assert len(q) == 2 and q["raw"].isna().sum() == 1 and "{bad json" in list(q["raw"])
    at.run()  # the next visit reads the same table from the database
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Rejected lines"] == "1"  # the refusal is not a line
    assert any(h.value == "Rejected lines (1) and refused files (1)" for h in at.subheader)


def test_the_document_id_key_field_reads_ids_from_the_passages_metadata(app_env, tmp_path):
    path = app_env()
    runs = [
        {
            "id": f"r{i}",
            "trace_id": f"t{i}",
            "parent_run_id": "c",
            "run_type": "retriever",
            "inputs": {"query": f"question {i}"},
            "outputs": {"documents": [{"page_content": f"passage {i}", "metadata": {"source": f"doc{i}"}}]},
        }
        for i in range(2)
    ]
    body = write_jsonl(tmp_path / "ls.jsonl", runs).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("langsmith.jsonl", body, "application/jsonl"))
    at.text_input(key="home.doc_id_key").set_value(" source ")
    at.run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception and not at.error
    ids = store.connect(path).execute("SELECT doc_id FROM evidence ORDER BY doc_id").fetchall()
    assert ids == [("doc0",), ("doc1",)]


def test_uploading_a_ragas_csv_loads_a_run_named_after_the_file(app_env, tmp_path):
    import csv
    import io

    app_env()
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["user_input", "retrieved_contexts", "response"])
    w.writeheader()
    w.writerow(
        {
            "user_input": "What causes tides?",
            "retrieved_contexts": repr(["The Moon pulls.", "Lunar cycle."]),
            "response": "The Moon.",
        }
    )
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("ragas eval.csv", buf.getvalue().encode(), "text/csv"))
    at.run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception and not at.error
    runs = next(df.value for df in at.dataframe if "run_id" in df.value.columns and "mean_entries" in df.value.columns)
    assert list(runs["run_id"]) == ["ragas_eval"]  # the kept file's name, without extensions
    assert {m.label: m.value for m in at.metric}["Evidence entries"] == "2"
    warned = next(df.value for df in at.dataframe if "code" in df.value.columns and "message" in df.value.columns)
    assert set(warned["path"]) == {"ragas_eval.csv"}  # the file as uploaded, not the folder it is kept in


def test_open_database_stays_in_the_workspace_and_leaves_foreign_files_alone(app_env, tmp_path):
    import duckdb

    app_env()  # the workspace folder is the default database's: tmp_path
    crm = tmp_path / "crm.duckdb"
    c = duckdb.connect(str(crm))
    c.execute("CREATE TABLE customers (id INTEGER)")
    c.close()
    at = app_test("app.py").run()

    def open_db(path: str, init: bool = False):
        at.sidebar.text_input[0].set_value(path)
        at.sidebar.checkbox[0].set_value(init)
        next(b for b in at.sidebar.button if b.label == "Open database").click().run()
        assert not at.exception
        return [plain(e.value) for e in at.error]

    errors = open_db(str(tmp_path.parent / "elsewhere.duckdb"))
    assert any("is outside the workspace folder" in e for e in errors)
    assert not (tmp_path.parent / "elsewhere.duckdb").exists()
    errors = open_db("crm.duckdb")
    assert any("crm.duckdb is a DuckDB database of another program (it holds table 'customers')" in e for e in errors)
    assert open_db("crm.duckdb", init=True) == []
    assert any(str(crm) in plain(c.value) for c in at.sidebar.caption)


def test_the_ledger_removes_one_file_and_keeps_the_rest(app_env, tmp_path):
    path = app_env()
    at = app_test("app.py").run()
    for name, run in [("first.jsonl", "r1"), ("second.jsonl", "r2")]:
        body = write_jsonl(tmp_path / name, [{"run_id": run, "query_id": "q1", "evidence": ["d1"]}]).read_bytes()
        at.file_uploader[0].set_value((name, body, "application/jsonl"))
        at.run()
        next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    ledger = next(df.value for df in at.dataframe if "warnings" in df.value.columns and "file" in df.value.columns)
    assert ledger["file"].tolist() == ["second.jsonl", "first.jsonl"]  # newest first
    at.radio(key="home.remove.what").set_value("a file").run()
    sel = at.selectbox(key="home.remove.file")
    sel.select(next(o for o in sel.options if o.startswith("first.jsonl"))).run()
    at.button(key="home.remove.go").click().run()
    assert not at.exception
    assert any("runs removed: r1" in plain(s.value) for s in at.success)
    c = store.connect(path)
    assert [r for (r,) in c.execute("SELECT run_id FROM runs").fetchall()] == ["r2"]
    c.close()


def test_relevance_labels_upload_on_the_home_page(app_env, tmp_path):
    path = app_env()
    at = app_test("app.py").run()
    body = write_jsonl(
        tmp_path / "r.jsonl", [{"run_id": "r1", "query_id": "q1", "evidence": ["D1", "d2"]}]
    ).read_bytes()
    at.file_uploader[0].set_value(("r.jsonl", body, "application/jsonl")).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    qrels = b"query-id\tcorpus-id\tscore\nq1\tD1\t2\nq1\td9\t1\nq2\td2\t1\n"
    at.file_uploader[2].set_value(("标签.tsv", qrels, "text/tab-separated-values")).run()
    next(b for b in at.button if b.label == "Load the relevance labels").click().run()
    assert not at.exception
    assert any("Loaded 3 relevance labels for 2 queries" in plain(s.value) for s in at.success)
    c = store.connect(path)
    assert c.execute("SELECT query_id, doc_id, relevance FROM qrels ORDER BY ALL").fetchall() == [
        ("q1", "d1", 2),  # canonical ids, as evidence ids are
        ("q1", "d9", 1),
        ("q2", "d2", 1),
    ]
    c.close()
    at.file_uploader[2].set_value(("empty.tsv", b"nothing here\n", "text/plain")).run()
    next(b for b in at.button if b.label == "Load the relevance labels").click().run()
    assert any("empty.tsv: no line is a relevance judgement" in plain(e.value) for e in at.error)


def test_labels_that_label_no_loaded_query_are_not_loaded_in_silence(app_env, tmp_path):
    """SciFact's qrels uploaded beside a Ragas export (whose query ids hash its questions) showed only
    "Loaded 2 relevance labels for 2 queries" in green: it says too that they label no loaded query."""
    app_env()
    at = app_test("app.py").run()
    rows = [{"user_input": q, "retrieved_contexts": [q]} for q in ("Is coffee harmful?", "Do statins lower LDL?")]
    at.file_uploader[0].set_value(("ragas.jsonl", write_jsonl(tmp_path / "x.jsonl", rows).read_bytes(), "x")).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    at.file_uploader[2].set_value(("test.tsv", b"1\t31715818\t1\n3\t14717500\t1\n", "text/plain")).run()
    next(b for b in at.button if b.label == "Load the relevance labels").click().run()
    assert not at.exception
    assert any("Loaded 2 relevance labels for 2 queries" in plain(s.value) for s in at.success)
    said = [plain(w.value) for w in at.warning if "label no query of run 'ragas'" in plain(w.value)]
    assert len(said) == 1 and said[0].startswith("Relevance labels are loaded for 2 queries ('1', '3')"), said
    # the benchmark's questions uploaded with the labels label the Ragas rows by their question texts
    questions = b'{"_id": "1", "text": "Is coffee harmful?"}\n{"_id": "3", "text": "Do statins lower LDL?"}\n'
    at.file_uploader[2].set_value(
        [("queries.jsonl", questions, "x"), ("test.tsv", b"1\t31715818\t1\n3\t14717500\t1\n", "x")]
    ).run()
    next(b for b in at.button if b.label == "Load the relevance labels").click().run()
    assert not at.exception and not any("label no query" in plain(w.value) for w in at.warning)
    assert any("also under their questions' hashed ids (queries.jsonl)" in plain(s.value) for s in at.success)


def test_one_warning_for_the_same_words_about_several_files(app_env, tmp_path):
    """Three Ragas exports without ids drew three yellow boxes of the same 300 characters, one per file
    (ten exports: ten boxes above the figures): the warning is said once and names the files."""
    app_env()
    at = app_test("app.py").run()
    ups = []
    for name in ("k5.csv", "k10.csv", "k20.csv", "c128.csv"):
        body = f"user_input,retrieved_contexts\nWhy?,['passage of {name}']\n".encode()
        ups.append((name, body, "text/csv"))
    at.file_uploader[0].set_value(ups).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    said = [plain(w.value) for w in at.warning if "carry no document ids" in plain(w.value)]
    assert len(said) == 1, said
    assert said[0].startswith("k5.csv, k10.csv, k20.csv and 1 more file: Ragas records carry no document ids"), said


def test_runs_without_settings_are_told_how_to_get_them(app_env, tmp_path):
    """Ragas exports log no top-k or chunk size: every page called what changed "unknown (no config)"
    with no word on how to say it. The home page says which runs lack settings and where to give them;
    given with the upload, they fill the runs table."""
    app_env()
    at = app_test("app.py").run()

    def upload(name, settings=""):
        body = f"user_input,retrieved_contexts\nWhy?,['passage of {name}']\n".encode()
        at.file_uploader[0].set_value((name, body, "text/csv")).run()
        at.text_input(key="home.settings").set_value(settings).run()
        next(b for b in at.button if b.label == "Load the uploaded files").click().run()
        assert not at.exception

    upload("k5.csv")
    upload("k10.csv")
    said = [plain(c.value) for c in at.caption if "log no settings" in plain(c.value)]
    assert len(said) == 1 and said[0].startswith("Runs 'k5', 'k10' log no settings (top-k, chunk size"), said
    assert "Settings of these runs" in said[0] and "--settings" in said[0]
    upload("k20.csv", "top_k=20, chunk_size=256")
    runs = next(df.value for df in at.dataframe if "top_k" in df.value.columns)
    assert runs.set_index("run_id").loc["k20", "top_k"] == 20
    upload("bad.csv", "top_k")
    assert any("settings are KEY=VALUE pairs" in plain(e.value) for e in at.error)


def test_passage_like_ids_are_flagged_and_read_as_texts_in_one_click(app_env, tmp_path):
    path = app_env()
    passage = (
        "Stem cells divide asymmetrically, producing one daughter that keeps stemness and one that differentiates."
    )
    recs = [{"run_id": "r1", "query_id": "q1", "contexts": [passage]}]
    body = write_jsonl(tmp_path / "p.jsonl", recs).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("p.jsonl", body, "application/jsonl")).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    (flag,) = [
        plain(w.value) for w in at.warning if "100% of its 1 document id looks like a passage text" in plain(w.value)
    ]
    assert flag.startswith("Run 'r1': ")  # a sentence under Identity checks
    at.button(key="home.as_texts").click().run()
    assert not at.exception
    assert not any("looks like a passage text" in plain(w.value) for w in at.warning)
    c = store.connect(path)
    assert c.execute("SELECT text FROM evidence").fetchall() == [(passage,)]
    c.close()


def test_ids_that_are_places_and_ranks_out_of_order_are_shown_under_identity_checks(app_env, tmp_path):
    """The ingest found them, but the home page drew only the passage and query-text checks (and
    dropped every identity warning from the load's summary as "shown under Identity checks"): the
    stability page then showed J_doc 1.000, J_span 0.000 for unrelated runs without a word."""
    app_env()
    rc = [
        {
            "run_id": r,
            "query_id": f"q{i}",
            "evidence": [{"doc_id": f"{j:03d}", "text": f"{r} {i} {j}"} for j in range(3)],
        }
        for r in ("A", "B")
        for i in range(2)
    ]
    ranks = [{"run_id": "R", "query_id": "q1", "evidence": [{"doc_id": "z", "rank": 2}, {"doc_id": "y", "rank": 1}]}]
    body = write_jsonl(tmp_path / "p.jsonl", rc + ranks).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("p.jsonl", body, "application/jsonl")).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    said = [plain(w.value) for w in at.warning]
    assert sum("are their places in the list" in w for w in said) == 2  # runs A and B
    assert any(w.startswith("Run 'R': 1 entry is listed after an entry of a later rank") for w in said)


def test_reading_ids_as_texts_on_upload_is_said(app_env, tmp_path):
    """Ticking "Document ids are passage texts" loaded with no word of it: the load's note
    (an identity note, dropped with the identity warnings) is shown."""
    app_env()
    passage = (
        "Stem cells divide asymmetrically, producing one daughter that keeps stemness and one that differentiates."
    )
    body = write_jsonl(tmp_path / "p.jsonl", [{"run_id": "r1", "query_id": "q1", "contexts": [passage]}]).read_bytes()
    at = app_test("app.py").run()
    at.file_uploader[0].set_value(("p.jsonl", body, "application/jsonl")).run()
    at.checkbox(key="home.ids_are_texts").check().run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    shown = " ".join(plain(e.value) for e in [*at.caption, *at.markdown, *at.info, *at.success])
    assert "Read 1 document id of this load as a passage text" in shown, shown[:2000]


@pytest.mark.parametrize(
    ("runs", "opening", "left_out"),
    [
        (
            ("k5", "k10"),
            "The stability and compare pages compare by default 2 runs over their 3 shared queries.",
            "Left out 1 run that shares no query with the 2 compared (which share 3): 'upload'",
        ),
        (  # every run alone: not "a default comparison of 1 runs"
            ("k5",),
            "No two runs share a query: the stability and compare pages have no default comparison.",
            "Left out 1 run that shares no query with the one kept (3 queries): 'upload'",
        ),
    ],
)
def test_the_runs_left_out_of_the_default_comparison_are_named_beside_the_runs(
    app_env, tmp_path, runs, opening, left_out
):
    """The home page lists every run; which of them the pages compare by default, and why the others
    are left out, was said only on the stability page (the walk: a Ragas export, a colliding run)."""
    from tests.helpers import records_db

    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r in runs for i in range(3)]
    recs += [{"run_id": "upload", "query_id": "elsewhere", "evidence": ["x"]}]
    app_env(records_db(tmp_path, recs))
    at = app_test("app.py").run()
    assert not at.exception
    (note,) = [plain(c.value) for c in at.caption if "Left out" in plain(c.value)]
    assert note.startswith(opening) and left_out in note


def test_warnings_about_the_whole_database_show_beside_a_files_own(app_env, tmp_path):
    """A coverage warning has no file (its path is NULL): the table names files by their name and
    leaves it empty — naming them broke on it once (an exception box in the browser walk test)."""
    from ragaudit_core.logs.ingest import ingest_paths

    path = app_env(tmp_path / "w.duckdb")
    con = store.connect(path)
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r in ("a", "b") for i in range(3 if r == "a" else 2)
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "ab.jsonl", recs)])
    (tmp_path / "c.csv").write_text("user_input,retrieved_contexts\nWhy?,\"['Tides follow the moon.']\"\n")
    ingest_paths(con, [tmp_path / "c.csv"])  # a file's own warning (no document ids) beside the coverage one
    con.close()
    at = app_test("app.py").run()
    assert not at.exception
    warned = next(df.value for df in at.dataframe if "code" in df.value.columns and "message" in df.value.columns)
    assert set(warned["code"]) >= {"coverage", "mapping"}
    assert warned.loc[warned["code"] == "coverage", "path"].isna().all()
    assert set(warned.loc[warned["code"] == "mapping", "path"]) == {"c.csv"}


def test_the_loaded_home_page_links_every_page(app_env, sample_db):
    """The row of links under the runs names each page of the sidebar; Attributions was missing."""
    app_env(sample_db)
    at = app_test("app.py").run()
    assert not at.exception
    labels = [link.proto.label for link in at.get("page_link")]
    assert labels == [
        "Evidence stability →",
        "Query drill-down →",
        "Compare two runs →",
        "Citation fidelity →",
        "Attributions →",
    ]


def test_a_database_whose_data_block_is_damaged_says_so_in_one_sentence(app_env, tmp_path):
    """The open's checks read the header and the length; a block that fails its checksum is met by the
    first query that reads it, on whichever page: one sentence, not a traceback."""
    from tests.logs.test_database_objects import _damage_block

    db = tmp_path / "dmg.duckdb"
    con = store.connect(db)
    from ragaudit_core.logs.ingest import ingest_paths

    recs = [{"run_id": r, "query_id": "q1", "evidence": [{"doc_id": "d1", "text": "alpha"}]} for r in ("a", "b")]
    ingest_paths(con, [write_jsonl(tmp_path / "one.jsonl", recs)])
    con.close()
    _damage_block(db, "records")
    app_env(db)
    at = app_test("app.py").run()
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    assert any(
        e.startswith(f"The database {db} could not be read (") and e.endswith(".") and "it is damaged" in e
        for e in errors
    ), errors


def test_a_job_queue_file_that_is_not_sqlite_says_so_in_one_sentence(app_env, tmp_path):
    """The queue beside the database (.NAME.queue.sqlite) overwritten: the pages that list jobs say
    what to do with it in one sentence, not a traceback."""
    from ragaudit_core.jobs import queue

    db = tmp_path / "q.duckdb"
    con = store.connect(db)
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import pipeline

    ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
    queue.ensure_schema(con)
    con.close()
    qf = queue.queue_file(db)
    for suffix in ("-wal", "-shm"):
        qf.with_name(qf.name + suffix).unlink(missing_ok=True)
    qf.write_bytes(b"not a queue " * 500)
    app_env(db)
    at = app_test("app.py").run()
    at.switch_page("pages/4_Citation_fidelity.py").run()
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    assert any(e.startswith(f"The job queue beside the database, {qf}, cannot be read (") for e in errors), errors


def test_a_ragas_frame_with_run_and_query_ids_is_read_as_ragas_when_picked(app_env, tmp_path):
    """A Ragas frame with run_id and query_id columns reads as our own contract (its contexts then
    document ids); the warning names the picker, and picking Ragas reads the contexts as passages."""
    path = app_env()
    body = b"run_id,query_id,question,contexts,answer\nr1,q1,Who won?,\"['The Packers won two.', 'Six.']\",Six\n"

    def load(fmt):
        at = app_test("app.py").run()
        at.file_uploader[0].set_value(("v1.csv", body, "text/csv")).run()
        at.selectbox(key="home.format").set_value(fmt).run()
        next(b for b in at.button if b.label == "Load the uploaded files").click().run()
        assert not at.exception and not at.error
        return at

    at = load(None)
    said = " ".join(plain(w.value) for w in [*at.warning, *at.caption, *at.markdown])
    assert "Read the files as: Ragas" in said
    with store.connect(path) as con:
        assert con.execute("SELECT text FROM evidence").fetchall() == [(None,), (None,)]  # ids, not passages
        workspace.clear(con)
    at = load("ragas")
    with store.connect(path) as con:
        got = con.execute("SELECT run_id, query_id, text FROM evidence ORDER BY rank").fetchall()
    assert got == [("r1", "q1", "The Packers won two."), ("r1", "q1", "Six.")]
    assert at.selectbox(key="home.format").value is None  # the next upload is recognised again

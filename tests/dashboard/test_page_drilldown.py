"""AppTest: the query drill-down (matrix, side-by-side lists, chunk overlap, escaping)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from tests.helpers import XSS, app_test, plain, records_db, write_jsonl, xss_logs

pytestmark = pytest.mark.slow
PAGE = "pages/2_Query_drilldown.py"


def test_no_data_says_what_to_do(app_env):
    app_env()
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("No logs are loaded yet" in i.value for i in at.info)


def test_search_a_query_and_compare_two_runs(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    at.text_input[0].input("1012").run()
    query_box = next(s for s in at.selectbox if s.label == "Query")
    assert query_box.value == "1012"  # exact id match comes first
    next(s for s in at.selectbox if s.label == "Run A").select("k10-c256-o32").run()
    next(s for s in at.selectbox if s.label == "Run B").select("k10-c128-o32").run()
    assert not at.exception and not at.error
    cells = compute_stability(
        store.connect(sample_db), StabilityOptions(pairs=[("k10-c128-o32", "k10-c256-o32")]), keep_cells=True
    ).cells
    c = cells[cells.query_id == "1012"].set_index("level")["j"]
    line = next(m.value for m in at.markdown if m.value.startswith("J_doc"))
    assert line == f"J_doc = **{c['doc']:.3f}** · J_span = **{c['span']:.3f}**"
    a, b = (df.value for df in at.dataframe[:2])
    assert len(a) == len(b) == 10
    assert set(a["status"]) <= {"in both", "only in A"} and set(b["status"]) <= {"in both", "only in B"}
    # same documents, no shared span (J_doc 1, J_span 0): every row is a same-doc-other-span row
    assert c["doc"] == 1.0 and c["span"] == 0.0
    assert a["same_doc_other_span"].all()
    overlap = at.get("html")
    assert len(overlap) == 2 and "<span" in overlap[0].proto.body
    answers = [t.value for t in at.text]
    assert any(t.startswith("The document provides") for t in answers)  # both runs answered query 1012


def test_html_in_logs_shows_as_text(app_env, tmp_path):
    path = app_env()
    ingest_paths(store.connect(path), [xss_logs(tmp_path / "xss")])
    at = app_test(PAGE).run()
    assert not at.exception
    assert any(XSS in t.value for t in at.text)  # the query text, as text
    bodies = [h.proto.body for h in at.get("html")]
    assert len(bodies) == 2  # the two overlapping chunks
    for body in bodies:
        assert "<img" not in body and "<script" not in body
        assert "&lt;img src=x onerror=alert(1)&gt;" in body and "&lt;script&gt;" in body
    for el in list(at.markdown) + list(at.caption):
        assert "<img" not in el.value and "<script" not in el.value


def test_markdown_escape_makes_log_text_inert():
    from pages.ui.render import md

    assert md("**x**") == "\\*\\*x\\*\\*"
    assert md("[a](javascript:alert(1))") == "\\[a\\]\\(javascript\\:alert\\(1\\)\\)"
    assert md("k10-c256-o32") == "k10\\-c256\\-o32"


def test_opens_on_a_pair_with_answers_and_survives_chunks_without_offsets(app_env, tmp_path):
    """Runs are in natural order; of k5, k10 and k20 only k10 and k20 answered, so the page opens on
    that pair; chunks without offsets (NaN/NA) are compared by text, not a crash; the caption says
    why the same document can carry another span."""
    recs = [
        {
            "run_id": r,
            "query_id": "q1",
            "query": "why?",
            "answer": ans,
            "evidence": [{"doc_id": "D1", "chunk_id": "c1", "text": f"the shared passage {tail}"}],
        }
        for r, ans, tail in (("k5", None, "five"), ("k10", "ten", "ten"), ("k20", "twenty", "twenty"))
    ]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    assert next(s for s in at.selectbox if s.label == "Run A").options == ["k5", "k10", "k20"]
    assert (
        next(s for s in at.selectbox if s.label == "Run A").value,
        next(s for s in at.selectbox if s.label == "Run B").value,
    ) == ("k10", "k20")
    assert any("Same id is not same evidence" in c.value for c in at.caption)
    assert any(c.value.startswith("Compared by") for c in at.caption)  # the chunk pair was compared


def test_the_querys_quality_change_and_its_labels(app_env, sample_db):
    """A labelled sample query: both runs' nDCG@10 for it, the change, and the relevance label
    beside each retrieved document."""
    from ragaudit_core.quality.ranking import per_query_quality

    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception
    text = " ".join(plain(m.value) for m in at.markdown)
    assert "Ranking quality (" in text and "nDCG@10" in text
    shown = [df.value for df in at.dataframe if "relevance" in df.value.columns]
    assert len(shown) == 2 and any(shown[0]["relevance"].notna()) | any(shown[1]["relevance"].notna())
    qid = at.session_state["ragaudit.query"]
    run_a = at.session_state["ragaudit.run_a"]
    con = store.connect(sample_db)
    q = per_query_quality(con, [run_a], queries=[qid])
    con.close()
    assert len(q) == 1 and f"{run_a}: nDCG@10 {q['ndcg@10'].iloc[0]:.3f}" in text.replace("*", "")


def test_a_query_one_run_logged_shows_that_runs_evidence_and_answer(app_env, tmp_path):
    path = app_env()
    record = {
        "run_id": "solo",
        "query_id": "q1",
        "query": "Why?",
        "answer": "Because <b>so</b>.",
        "evidence": [{"doc_id": "d1", "text": "first passage"}, {"doc_id": "d2", "text": "second passage"}],
    }
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "solo.jsonl", [record])])
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("Only one run logged this query" in i.value for i in at.info)
    shown = next(df.value for df in at.dataframe if "doc_id" in df.value.columns)
    assert list(shown["doc_id"]) == ["d1", "d2"] and list(shown["rank"]) == [1, 2]
    assert list(shown["text"]) == ["first passage", "second passage"]
    assert any(t.value == "Answer: Because <b>so</b>." for t in at.text)  # as text, never HTML


def _display_values(element) -> pd.DataFrame:
    """The cells as the browser shows them: a Styler's display values, sent beside the data."""
    import pyarrow as pa

    return pa.ipc.open_stream(element.proto.arrow_data.styler.display_values).read_all().to_pandas()


def test_relevance_labels_and_scores_read_as_written(app_env, sample_db):
    """A relevance label is an integer: shown "1", not "1.000000" (the Styler's default precision, seen
    in the walk), an unjudged document blank, not "nan"; a retrieval score with 4 decimals."""
    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception
    shown = [_display_values(df) for df in at.dataframe if "relevance" in df.value.columns]
    assert len(shown) == 2
    labels = set(pd.concat(shown)["relevance"])
    assert "1" in labels and labels <= {"", "1"}  # the sample's labels are all 1
    assert all(re.fullmatch(r"0\.\d{4}", s) for s in pd.concat(shown)["score"])


def test_opens_on_runs_asking_the_question_most_runs_ask(app_env, tmp_path):
    """Before: a run whose query id names another question (an upload reusing the sample's ids)
    sorted first, so the page opened on it: its question as the query's text above the matrix
    and its evidence as run A, beside a run answering a different question."""
    stroke, france = "Does aspirin prevent stroke?", "What is the capital of France?"
    recs = [
        {"run_id": r, "query_id": "1", "query": stroke, "evidence": ["d1", "d2"], "answer": f"yes ({r})"}
        for r in ("k5", "k10", "k20")
    ]
    recs.append({"run_id": "bm25", "query_id": "1", "query": france, "evidence": ["d9"], "answer": "Paris"})
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception
    assert at.text[0].value == f"Query 1: {stroke}"
    assert [s.value for s in at.selectbox if s.label in ("Run A", "Run B")] == ["k5", "k10"]
    assert any("names 2 different questions" in plain(w.value) for w in at.warning)  # bm25 is still named
    next(s for s in at.selectbox if s.label == "Run A").select("bm25").run()  # and can be picked
    assert not at.exception and [s.value for s in at.selectbox if s.label == "Run A"] == ["bm25"]


def test_the_chunk_text_is_not_hidden_behind_columns_the_logs_left_empty(app_env, tmp_path):
    """Seen in a browser walk on two Ragas uploads: each evidence list showed rank, document, an
    empty chunk column, status, same doc, an empty score, empty char start and char end, and only
    past them, off the half-width table's right edge, the chunk text: the one thing the auditor
    came to read. Columns no entry of either list fills are left out, and the text comes right after
    the status columns (the offsets and score, when logged, after it)."""
    entries = {r: [{"doc_id": f"d{i}", "text": f"{r} passage {i}"} for i in (1, 2)] for r in ("a", "b")}
    recs = [{"run_id": r, "query_id": "q1", "query": "Why?", "evidence": entries[r]} for r in ("a", "b")]
    recs[1]["evidence"][0] = {"doc_id": "d1", "text": "a passage 1", "score": 0.5}  # a score in one list only
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception
    a, b = (df.value for df in at.dataframe if "doc_id" in df.value.columns)
    for shown in (a, b):
        assert list(shown.columns) == ["rank", "doc_id", "status", "same_doc_other_span", "text", "score"]
    assert list(a["text"]) == ["a passage 1", "a passage 2"]


def test_a_run_without_document_ids_beside_one_with_them_says_why_j_is_0(app_env, tmp_path):
    """The walk's mixed workspace: a Ragas export (no document ids: each is its passage's text hash)
    beside the native run it came from, over the same question. Their lists hold the same passages,
    yet every row reads "only in A/B" and J is 0; the page says that this is how the Ragas run was
    logged, how many of its passages the native list holds word for word, and what to do."""
    from ragaudit_core.logs.formats import query_id_for

    question, passages = "What causes tides?", ["The Moon's gravity pulls the oceans.", "Tides follow the Moon."]
    native = {
        "run_id": "native",
        "query_id": query_id_for(question),
        "query": question,
        "answer": "The Moon.",
        "evidence": [{"doc_id": f"d{i}", "text": t} for i, t in enumerate([*passages, "Unrelated passage."])],
    }
    ragas = {"user_input": question, "retrieved_contexts": passages, "response": "The Moon."}
    path = app_env()
    con = store.connect(path)
    ingest_paths(
        con, [write_jsonl(tmp_path / "native.jsonl", [native]), write_jsonl(tmp_path / "ragas.jsonl", [ragas])]
    )
    con.close()
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    assert next(s for s in at.selectbox if s.label == "Run A").value == "native"
    (note,) = [plain(w.value) for w in at.warning if "logged no document ids" in w.value]
    assert note.startswith("ragas logged no document ids: its document ids are its passages' text hashes (text:…)")
    assert "shares no document and no span with native (J would be 0, from how it was logged" in note
    assert "2 of its 2 passages are in native's list word for word." in note
    # each of those passages is marked in both lists: the same words under another id
    a, b = (df.value.data if hasattr(df.value, "data") else df.value for df in at.dataframe[-2:])
    assert a["same_text_other_id"].tolist() == [True, True, False]  # native: d0, d1 in ragas' list, d2 not
    assert b["same_text_other_id"].tolist() == [True, True]
    assert set(a["status"]) == {"only in A"}  # not the same evidence by identity


def test_a_pair_whose_ids_cannot_meet_reads_n_a_not_0(app_env, tmp_path):
    """'ids' logged document ids and 'ragas' did not: their J is 0 by how they were logged, so the
    matrix and the pair's line say n/a, and a caption says why (not J_doc = 0.000, not "nan")."""
    from tests.dashboard.test_page_stability import _mixed_ids_db

    app_env(_mixed_ids_db(tmp_path, ("ids", "ragas")))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    assert any(m.value == "J_doc n/a · J_span n/a (their ids cannot meet)" for m in at.markdown)
    assert any(c.value.startswith("n/a: a run that logged no document ids") for c in at.caption)
    assert not any("nan" in m.value for m in at.markdown)

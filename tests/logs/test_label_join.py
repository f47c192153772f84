"""Relevance labels that meet no query of a run say so, and why: an auditor's SciFact qrels (query
ids '1', '3', …) beside Ragas exports, whose rows carry no query id (each query id is the hash of
its question), loaded "339 relevance labels for 300 queries" in green and then scored nothing — the
quality command printed "no labelled query", the gate "no relevance labels", the stability page
nothing at all."""

from __future__ import annotations

from ragaudit_core.logs import store
from ragaudit_core.logs.qrels import load_qrels, unlabelled_runs_note
from ragaudit_core.workspace import load_paths
from tests.helpers import write_jsonl

QUESTIONS = {
    "1": "0-dimensional biomaterials show inductive properties.",
    "3": "1,000 genomes project enables mapping.",
}
QRELS = "query-id\tcorpus-id\tscore\n1\t31715818\t1\n3\t14717500\t1\n"


def _ragas(tmp_path, name="ragas_k5", ids=False):
    rows = [
        {"user_input": q, "retrieved_contexts": [f"passage about {q}"], "response": "yes"} for q in QUESTIONS.values()
    ]
    for r in rows if ids else []:
        r["retrieved_context_ids"] = ["31715818"]
    return write_jsonl(tmp_path / f"{name}.jsonl", rows)


def _labels(tmp_path):
    p = tmp_path / "test.tsv"
    p.write_text(QRELS)
    return p


def test_labels_that_meet_no_hashed_query_id_say_why_when_loaded(tmp_path):
    con = store.connect(":memory:")
    report = load_paths(con, [_ragas(tmp_path)], qrels=[_labels(tmp_path)], precompute_overview=False)
    note = unlabelled_runs_note(con)
    assert note is not None
    assert note.startswith(
        "relevance labels are loaded for 2 queries ('1', '3') but label no query of run 'ragas_k5', so its ranking "
        "quality is not scored: its query ids are hashes of the question texts (such as 'q:"
    )
    assert "as the log gave none" in note and "query_id" in note and "ingest --queries queries.jsonl" in note
    assert report.labels is not None and note in report.labels.warnings  # said where the labels are loaded


def test_query_ids_of_another_form_are_named(tmp_path):
    con = store.connect(":memory:")
    logs = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": "Q-1", "cited": ["31715818"]}])
    load_paths(con, [logs], qrels=[_labels(tmp_path)], precompute_overview=False)
    assert unlabelled_runs_note(con) == (
        "relevance labels are loaded for 2 queries ('1', '3') but label no query of run 'a', so its ranking quality "
        "is not scored: its query ids (such as 'Q-1') are not the ones the labels use"
    )


def test_no_note_when_a_run_is_labelled_or_no_label_is_loaded(tmp_path):
    con = store.connect(":memory:")
    labelled = write_jsonl(tmp_path / "n.jsonl", [{"run_id": "n", "query_id": "1", "cited": ["31715818"]}])
    load_paths(con, [labelled, _ragas(tmp_path)], precompute_overview=False)
    assert unlabelled_runs_note(con) is None  # no label loaded
    load_qrels(con, [_labels(tmp_path)])
    assert unlabelled_runs_note(con, ["n"]) is None
    assert "run 'ragas_k5'" in (unlabelled_runs_note(con) or "")  # only the run the labels miss is named


def _beir(tmp_path):
    """BEIR's layout: queries.jsonl beside the qrels/ folder."""
    d = tmp_path / "scifact"
    (d / "qrels").mkdir(parents=True)
    write_jsonl(d / "queries.jsonl", [{"_id": i, "text": t, "metadata": {}} for i, t in QUESTIONS.items()])
    (d / "qrels" / "test.tsv").write_text(QRELS)
    return d


def test_beir_questions_beside_the_labels_label_logs_without_query_ids(tmp_path):
    """With BEIR's queries.jsonl beside its qrels/ folder, each label is also stored under its
    question's hashed id, the id a log without query ids gives the question: the Ragas run is scored."""
    con = store.connect(":memory:")
    d = _beir(tmp_path)
    ragas = write_jsonl(
        tmp_path / "ragas.jsonl",
        [{"user_input": t, "retrieved_contexts": ["x"], "retrieved_context_ids": [doc]}
         for t, doc in zip(QUESTIONS.values(), ["31715818", "other"])],
    )  # fmt: skip
    report = load_paths(con, [ragas], qrels=[d / "qrels" / "test.tsv"], precompute_overview=False)
    assert report.labels is not None
    assert report.labels.summary() == (
        "loaded 2 relevance labels for 2 queries (2 relevant) from 1 file; the labels of 2 queries also under "
        "their questions' hashed ids (queries.jsonl), for logs without query ids"
    )
    assert unlabelled_runs_note(con) is None and not report.labels.warnings
    from ragaudit_core.quality.ranking import per_query_quality

    q = per_query_quality(con, ["ragas"], cutoffs=(1,))
    assert sorted(q["recall@1"]) == [0.0, 1.0]  # both questions labelled; the first found its document


def test_questions_uploaded_with_the_labels_are_read_as_questions(tmp_path):
    """On the home page the questions come as an upload beside the qrels (no folder layout)."""
    con = store.connect(":memory:")
    d = _beir(tmp_path)
    load_paths(con, [_ragas(tmp_path, ids=True)], precompute_overview=False)
    rep = load_qrels(con, [d / "queries.jsonl", d / "qrels" / "test.tsv"])
    assert rep.n_labels == 2 and rep.n_by_text == 2 and unlabelled_runs_note(con) is None
    labelled = con.execute("SELECT DISTINCT query_id FROM qrels ORDER BY ALL").fetchall()
    assert [q for (q,) in labelled][:2] == ["1", "3"] and all(q.startswith("q:") for (q,) in labelled[2:])
    import pytest

    from ragaudit_core.logs.qrels import QrelsError

    with pytest.raises(QrelsError, match="holds questions, not relevance labels"):
        load_qrels(con, [d / "queries.jsonl"])


def test_runs_without_document_ids_are_not_scored_zero_by_labels_of_documents(tmp_path):
    """Once the questions joined SciFact's labels to the Ragas rows, every Ragas export without
    retrieved_context_ids scored nDCG 0.000 — its document ids are its passages' hashes, which no label
    naming a document can meet — and the gate passed a change of 0 → 0. Such a run is left out of the
    figures (its queries unlabelled for it), and the note says why; labels of passages still score it."""
    from ragaudit_core.quality.summary import compute_quality

    con = store.connect(":memory:")
    d = _beir(tmp_path)
    ids = write_jsonl(
        tmp_path / "with_ids.jsonl",
        [
            {"user_input": t, "retrieved_contexts": [t], "retrieved_context_ids": ["31715818"]}
            for t in QUESTIONS.values()
        ],
    )
    load_paths(con, [_ragas(tmp_path), ids], qrels=[d / "qrels" / "test.tsv"], precompute_overview=False)
    q = compute_quality(con, ["ragas_k5", "with_ids"], resamples=0)
    assert q.run("ragas_k5").n_queries == 0 and q.run("ragas_k5").n_unlabelled == 2
    assert q.run("with_ids").n_queries == 2
    note = unlabelled_runs_note(con)
    assert note is not None and note.startswith(
        "relevance labels are loaded for 2 queries ('1', '3') but score no query of run 'ragas_k5': it logged"
    ), note
    assert "but score no query of run 'ragas_k5': it logged no document ids" in note, note
    assert "such as '14717500'" in note and "retrieved_context_ids" in note, note
    assert "with_ids" not in note


def test_the_runs_a_note_names_are_in_natural_order(tmp_path):
    """k5 before k10 before k20, as every run list of the product reads (not k10, k20, k5)."""
    con = store.connect(":memory:")
    logs = [
        write_jsonl(
            tmp_path / f"{name}.jsonl",
            [{"user_input": q, "retrieved_contexts": [f"{name} passage"]} for q in QUESTIONS.values()],
        )
        for name in ("ragas_k10", "ragas_k20", "ragas_k5")
    ]
    load_paths(con, logs, qrels=[_labels(tmp_path)], precompute_overview=False)
    assert "label no query of runs 'ragas_k5', 'ragas_k10', 'ragas_k20'," in (unlabelled_runs_note(con) or "")

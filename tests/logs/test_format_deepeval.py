"""DeepEval test cases (LLMTestCase / Golden fields, snake_case or camelCase; a test run's
``testCases``, a dataset's ``goldens``) load as records; ``context`` labels the query's relevant
passages; goldens without retrieval are refused as a test set."""

from __future__ import annotations

import json

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import deepeval, query_id_for
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.quality.ranking import per_query_quality
from tests.helpers import write_jsonl

A = "Aspirin lowers the risk of a second stroke in adults with a first ischaemic stroke."
B = "Coffee intake was not associated with mortality in the cohort."
C = "Statins reduce LDL cholesterol by about a third."
Q1, Q2 = "Does aspirin prevent stroke?", "Is coffee harmful?"


def _hashed(text: str) -> str:
    return "text:" + span_hash(text)[:16]


def _load(*paths):
    con = store.connect(":memory:")
    return con, ingest_paths(con, list(paths))


def _stored(con):
    ev = con.execute(
        "SELECT run_id, query_id, position, doc_id, text FROM evidence ORDER BY run_id, query_id, position"
    ).fetchall()
    recs = con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY run_id, query_id")
    return ev, recs.fetchall()


def test_test_cases_as_deepeval_reads_them_from_json(tmp_path):
    """A JSON list of LLMTestCase fields (``add_test_cases_from_json_file``'s keys): query, passages
    in order under their text's hash, answer; ``context`` labels the relevant passage; a test case
    without ``retrieval_context`` is counted, not loaded."""
    cases = [
        {"input": Q1, "actual_output": "Yes.", "expected_output": "Yes", "retrieval_context": [B, A], "context": [A]},
        {"input": Q2, "actual_output": "No.", "retrieval_context": [C]},
        {"input": "Unanswered?", "expected_output": "x", "context": [C]},  # a golden: nothing retrieved
    ]
    f = tmp_path / "deep.json"
    f.write_text(json.dumps(cases, indent=2))
    con, rep = _load(f)
    q1, q2 = query_id_for(Q1), query_id_for(Q2)
    ev, recs = _stored(con)
    assert sorted(recs) == sorted([("deep", q1, Q1, "Yes.", 2), ("deep", q2, Q2, "No.", 1)])
    assert [(q, p, d, t) for _r, q, p, d, t in ev if q == q1] == [(q1, 0, _hashed(B), B), (q1, 1, _hashed(A), A)]
    assert rep.n_rejected == 0 and rep.files[0].n_skipped == 1
    assert con.execute("SELECT query_id, doc_id FROM qrels").fetchall() == [(q1, _hashed(A))]
    ids = [w.message for w in rep.warnings if "records carry no document ids" in w.message]
    assert len(ids) == 1 and "load a log of the same run that has them first" in ids[0]
    q = per_query_quality(con, ["deep"], cutoffs=(1, 2))
    assert sorted(zip(q["mrr"], q["recall@2"])) == [(0.5, 1.0)]  # q1: A at rank 2; q2 has no label


def test_a_test_run_in_camel_case_and_a_pulled_dataset(tmp_path):
    """``deepeval test run``'s results (``testCases``, camelCase keys) and a dataset's ``goldens``
    are containers of test cases."""
    run = {
        "testFile": "test_rag.py",
        "testCases": [
            {"name": "t0", "input": Q1, "actualOutput": "Yes.", "retrievalContext": [A], "success": True},
            {"name": "t1", "input": Q2, "actualOutput": "No.", "retrievalContext": [B, C], "metricsData": []},
        ],
    }
    (tmp_path / "run.json").write_text(json.dumps(run))
    goldens = {"goldens": [{"input": Q1, "expectedOutput": "Yes", "retrievalContext": [C]}], "datasetId": "d"}
    (tmp_path / "set.json").write_text(json.dumps(goldens))
    con, rep = _load(tmp_path / "run.json", tmp_path / "set.json")
    ev, recs = _stored(con)
    assert sorted((r, n) for r, _q, _t, _a, n in recs) == [("run", 1), ("run", 2), ("set", 1)]
    assert [(r, t) for r, _q, _p, _d, t in ev if r == "set"] == [("set", C)]
    assert rep.n_rejected == 0 and {f.formats.most_common(1)[0][0] for f in rep.files} == {"DeepEval"}


def test_goldens_without_retrieval_are_refused_as_a_test_set(tmp_path):
    """``EvaluationDataset.save_as('json')`` writes goldens (input, actual_output, expected_output,
    context, source_file): nothing retrieved, nothing to audit."""
    golden = {"input": Q1, "actual_output": None, "expected_output": "Yes", "context": [A], "source_file": "a.pdf"}
    f = tmp_path / "goldens.json"
    f.write_text(json.dumps([golden, {**golden, "input": Q2}], indent=4))
    con, rep = _load(f)
    assert _stored(con) == ([], [])
    assert [r.message for r in rep.rejected] == [
        "2 DeepEval test cases without retrieved contexts (a test set?): nothing to audit"
    ]


def test_a_csv_whose_retrieval_context_deepeval_joins_with_semicolons(tmp_path):
    """DeepEval's CSV reader splits ``retrieval_context`` on ';' (its default): so are they read,
    with one warning; a cell holding a JSON list is read as the list."""
    f = tmp_path / "cases.csv"
    f.write_text(
        "input,actual_output,retrieval_context\n"
        f'"{Q1}",Yes.,"{B};{A}"\n'
        f'"{Q2}",No.,"{json.dumps([C]).replace(chr(34), chr(34) * 2)}"\n',
        encoding="utf-8",
    )
    con, rep = _load(f)
    ev, _recs = _stored(con)
    by_query = {q: [t for _r, q2, _p, _d, t in ev if q2 == q] for q in (query_id_for(Q1), query_id_for(Q2))}
    assert by_query == {query_id_for(Q1): [B, A], query_id_for(Q2): [C]}
    assert rep.n_rejected == 0 and [w.message for w in rep.warnings].count(deepeval.SPLIT) == 1


def test_a_cell_bracketed_as_a_list_it_cannot_read_is_rejected_not_split_on_semicolons(tmp_path):
    """A printed list the reader cannot read (numpy's form, as a Parquet file saved again as CSV
    prints it; a ``None`` element) was split on ';' — found none — and stored as one passage made of
    the printed list. Rejected with the reason; a cell of plain text is still split."""
    f = tmp_path / "cases.csv"
    f.write_text(
        "input,actual_output,retrieval_context\n"
        f"\"{Q1}\",Yes.,\"['{A}'\n '{B}']\"\n"
        f'"{Q2}",No.,"[\'{C}\', None]"\n'
        f'"{Q2} again",No.,"{B};{A}"\n'
        '"Which lowers risk?",Both.,"[Aspirin] lowers stroke risk [1];[Statins] reduce LDL [2]"\n',
        encoding="utf-8",
    )
    con, rep = _load(f)
    assert [(r.line_no, r.message.split(":")[1].strip()[:40]) for r in rep.rejected] == [
        (2, "retrieval_context is a numpy array print"),
        (4, "retrieval_context[1] must be a text, got"),
    ]
    ev, _recs = _stored(con)
    assert sorted(t for *_k, t in ev) == sorted([B, A, "[Aspirin] lowers stroke risk [1]", "[Statins] reduce LDL [2]"])


def test_a_test_case_whose_passages_are_not_texts_is_rejected_with_the_reason(tmp_path):
    cases = [
        {"input": Q1, "actual_output": "Yes.", "retrieval_context": [A, 7]},
        {"input": Q2, "actual_output": "No.", "retrieval_context": '{"passages": ["x"]}'},  # data, not a list
        {"input": ["not", "a", "question"], "retrieval_context": [A]},
        {"input": Q2, "actual_output": "No.", "retrieval_context": [B]},
    ]
    con, rep = _load(write_jsonl(tmp_path / "deep.jsonl", cases))
    assert [(r.line_no, r.message) for r in rep.rejected] == [
        (1, "DeepEval test case: retrieval_context[1] must be a text, got int"),
        (2, "DeepEval test case: retrieval_context must be a list of texts, got dict"),
        (3, "DeepEval test case: DeepEval record without a query (input)"),
    ]
    assert _stored(con)[1] == [("deep", query_id_for(Q2), Q2, "No.", 1)]


def test_passages_take_the_ids_of_a_native_run_loaded_before(tmp_path):
    """DeepEval keeps no document ids: beside a native log of the same passages, loaded first, each
    passage takes the native document id (stored passages), so the two runs pair."""
    native = [
        {"run_id": "native", "query_id": query_id_for(Q1), "query": Q1, "evidence": [{"doc_id": "d-b", "text": B}]},
    ]
    n = write_jsonl(tmp_path / "native.jsonl", native)
    d = write_jsonl(tmp_path / "deep.jsonl", [{"input": Q1, "actual_output": "Yes.", "retrieval_context": [B, A]}])
    con = store.connect(":memory:")
    ingest_paths(con, [n])
    rep = ingest_paths(con, [d])
    docs = con.execute("SELECT doc_id FROM evidence WHERE run_id = 'deep' ORDER BY position").fetchall()
    assert docs == [("d-b",), (_hashed(A),)]
    assert rep.n_rejected == 0


def test_a_test_run_longer_than_the_value_limit_streams_case_by_case(tmp_path):
    """A test run's results past ``--max-line-bytes`` are read test case by test case (each under
    the limit), as a ``{"results": [...]}`` document is: the same records."""
    from ragaudit_core.logs.ingest import IngestOptions

    cases = [
        {"input": f"q{i}?", "actualOutput": "Yes.", "retrievalContext": [f"p{i} a", f"p{i} b"]} for i in range(200)
    ]
    f = tmp_path / "run.json"
    f.write_text(json.dumps({"testFile": "t.py", "testCases": cases, "metricsScores": []}, indent=2))
    got = []
    for opts in (IngestOptions(), IngestOptions(max_line_bytes=2_000)):
        con = store.connect(":memory:")
        rep = ingest_paths(con, [f], opts)
        assert (rep.n_records, rep.n_entries, rep.n_rejected) == (200, 400, 0)
        got.append(_stored(con))
    assert f.stat().st_size > 20_000 and got[0] == got[1]


def test_odd_cells_and_a_langfuse_dataset_item(tmp_path):
    """A cell of citations that looks like a list but is not data ("[1] …; [2] …") is split on ';';
    a 'null' cell is no retrieval (a golden); a ``context`` cell joined with ';' labels both
    passages; a Langfuse dataset item (``datasetId``) is not read as DeepEval's."""
    f = tmp_path / "cases.csv"
    f.write_text(
        f'input,actual_output,retrieval_context,context\n"{Q1}",Yes.,"[1] {A}; [2] {B}","{A};{B}"\n"{Q2}",No.,null,\n',
        encoding="utf-8",
    )
    con, rep = _load(f)
    ev, recs = _stored(con)
    assert [t for *_x, t in ev] == [f"[1] {A}", f" [2] {B}"] and len(recs) == 1
    assert rep.files[0].n_skipped == 1 and sorted(
        d for (d,) in con.execute("SELECT doc_id FROM qrels").fetchall()
    ) == sorted([_hashed(A), _hashed(B)])
    item = {"id": "i1", "datasetId": "d1", "input": {"q": Q1}, "expectedOutput": "Yes", "status": "ACTIVE"}
    assert not deepeval.detect(item) and deepeval.detect({"input": Q1, "expectedOutput": "Yes"})


def test_run_settings_from_additional_metadata(tmp_path):
    """``additional_metadata`` naming the retrieval's settings (``top_k``, ``chunk_size``) gives
    the run its config, as a trace's metadata does; other keys are not settings."""
    md = {"top_k": 5, "chunk_size": 256, "user": "ann"}
    cases = [{"input": Q1, "actualOutput": "Yes.", "retrievalContext": [A], "additionalMetadata": md}]
    con, rep = _load(write_jsonl(tmp_path / "deep.jsonl", cases))
    got = con.execute("SELECT run_id, top_k, chunk_size, chunk_overlap, config FROM runs").fetchall()
    assert rep.n_rejected == 0 and got == [("deep", 5, 256, None, json.dumps({"chunk_size": 256, "top_k": 5}))]


def test_a_test_runs_hyperparameters_are_its_runs_settings(tmp_path):
    """``evaluate(hyperparameters=…)`` keeps a run's settings beside its ``testCases``; they were
    dropped (the run's config empty, no word). They are each test case's settings, its own
    ``additionalMetadata`` winning."""
    run = {
        "testFile": "test_rag.py",
        "testCases": [
            {"name": "t1", "input": Q1, "actualOutput": "Yes.", "retrievalContext": [A, B]},
            {
                "name": "t2",
                "input": Q2,
                "actualOutput": "No.",
                "retrievalContext": [C],
                "additionalMetadata": {"top_k": 3},
            },
        ],
        "hyperparameters": {"top_k": 5, "chunk_size": 512, "embedder": "bge-small"},
    }
    (tmp_path / "de_run.json").write_text(json.dumps(run), encoding="utf-8")
    con, rep = _load(tmp_path / "de_run.json")
    assert rep.n_records == 2
    # a run's first logged settings are kept (the log contract): t1's, all from the hyperparameters
    assert con.execute("SELECT top_k, chunk_size, embedder FROM runs").fetchall() == [(5, 512, "bge-small")]


def test_a_passage_that_reads_as_a_number_is_a_passage(tmp_path):
    """DeepEval's CSV reader gives ["2024"] for a retrieval_context cell 2024; it was rejected as
    "must be a list of texts, got int" (the cell read as JSON)."""
    f = tmp_path / "num.csv"
    f.write_text(f'input,actual_output,retrieval_context\n"{Q1}",Then,2024\n', encoding="utf-8")
    con, rep = _load(f)
    assert rep.n_rejected == 0 and [t for *_k, t in _stored(con)[0]] == ["2024"]


def test_a_test_cases_own_run_and_query_ids_are_kept(tmp_path):
    """Test cases naming their run and query (run_id/query_id columns, or the contract's aliases)
    were all put in the file's run under hashed query ids: two runs merged, their query ids lost."""
    cases = [
        {"input": Q1, "actual_output": "Yes.", "retrieval_context": [A], "run_id": "r0", "query_id": "q1"},
        {"input": Q1, "actual_output": "No.", "retrieval_context": [B], "config_id": "r1", "qid": "q1"},
    ]
    con, rep = _load(write_jsonl(tmp_path / "deep.jsonl", cases))
    assert rep.n_records == 2
    assert con.execute("SELECT run_id, query_id FROM records ORDER BY run_id").fetchall() == [
        ("r0", "q1"),
        ("r1", "q1"),
    ]

"""Identity sanity: passages logged as document ids, and one query id naming different questions."""

from __future__ import annotations

from ragaudit_core import workspace
from ragaudit_core.logs import sanity, store
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.selection import comparable_runs
from ragaudit_core.stability.compare import compare_runs
from tests.helpers import write_jsonl

P1 = "Stem cells divide asymmetrically, producing one daughter that keeps stemness and one that differentiates."
P2 = "Vitamin D supplementation did not reduce the incidence of fractures in the randomised trial of elderly adults."
P3 = "The cohort study followed 12,000 participants for ten years and found no association with the exposure."


def _load(tmp_path, name, records, **kw):
    con = kw.pop("con", None) or store.connect(":memory:")
    report = workspace.load_paths(con, [write_jsonl(tmp_path / name, records)], precompute_overview=False, **kw)
    return con, report


def test_passages_as_ids_are_flagged_and_can_be_read_as_texts(tmp_path):
    recs = [
        {"run_id": "a", "query_id": "q1", "query": "x?", "contexts": [P1, P2]},
        {"run_id": "b", "query_id": "q1", "query": "x?", "contexts": [P1, P3]},
        {"run_id": "ids", "query_id": "q1", "query": "x?", "contexts": ["4983", "NCT01234567", "doc-12#c3"]},
    ]
    con, report = _load(tmp_path, "p.jsonl", recs)
    flagged = sanity.passage_id_runs(con)
    assert [(p.run_id, p.n_entries, p.n_passage_like) for p in flagged] == [("a", 2, 2), ("b", 2, 2)]
    assert sum("look like passage texts" in str(w) for w in report.warnings) == 2
    assert compare_runs(con, "a", "b").pair_value("j_avg", "span") is None  # before: no spans, ids are texts
    assert sanity.read_ids_as_texts(con, ["a", "b"]) == 4
    rows = con.execute("SELECT doc_id, span_hash, text FROM evidence WHERE run_id = 'a' ORDER BY position").fetchall()
    assert rows == [
        ("text:" + span_hash(P1)[:16], span_hash(P1), P1),
        ("text:" + span_hash(P2)[:16], span_hash(P2), P2),
    ]
    assert sanity.passage_id_runs(con) == []  # ids now short hashes
    cmp = compare_runs(con, "a", "b")
    # one passage of two shared on each side: J_doc = J_span = 1 / 3
    assert abs(cmp.pair_value("j_avg", "doc") - 1 / 3) < 1e-12
    assert abs(cmp.pair_value("j_avg", "span") - 1 / 3) < 1e-12


def test_ids_are_texts_at_load(tmp_path):
    con, report = _load(tmp_path, "p.jsonl", [{"run_id": "a", "query_id": "q1", "contexts": [P1]}], ids_are_texts=True)
    assert con.execute("SELECT text FROM evidence").fetchall() == [(P1,)]
    (done,) = [w for w in report.warnings if "read 1 document id of this load as a passage text" in w.message]
    assert done.kind == "note"  # what was asked for, done: a note, not a warning


def test_colliding_query_ids_are_named_and_left_out_of_the_default_selection(tmp_path):
    base = [("0", "Does aspirin prevent stroke?"), ("1", "Is coffee harmful?"), ("2", "Do statins work?")]
    other = [("0", "What is the capital of France?"), ("1", "is coffee  HARMFUL?"), ("2", "Who wrote Hamlet?")]
    recs = [{"run_id": r, "query_id": q, "query": t, "evidence": ["d1"]} for r in ("s1", "s2") for q, t in base]
    recs += [{"run_id": "upload", "query_id": q, "query": t, "evidence": ["d1"]} for q, t in other]
    con, report = _load(tmp_path, "c.jsonl", recs)
    conflicts = sanity.query_text_conflicts(con)
    # "1" differs only in case and spaces: the same question; "0" and "2" differ: 2 of 3 > 5 %
    assert [(c.run_a, c.run_b, c.n_differ, c.n_smaller, c.example_id) for c in conflicts] == [
        ("s1", "upload", 2, 3, "0"),
        ("s2", "upload", 2, 3, "0"),
    ]
    assert all(c.disagree for c in conflicts)
    sel = comparable_runs(con)
    assert sel.runs == ["s1", "s2"] and sel.disagreeing == ["upload"]
    assert "whose query ids name other questions" in (sel.note or "")
    (msg,) = [str(w) for w in report.warnings if "name other questions" in str(w)]  # one sentence, both pairs
    assert "run 'upload': its query ids name other questions than in 2 runs ('s1', 's2'; up to 2 ids differ" in msg


def test_a_corrected_typo_is_not_a_disagreement(tmp_path):
    texts = [(str(i), f"question number {i}") for i in range(40)]
    recs = [{"run_id": "a", "query_id": q, "query": t, "evidence": ["d"]} for q, t in texts]
    recs += [
        {"run_id": "b", "query_id": q, "query": t if q != "7" else "question numbr 7", "evidence": ["d"]}
        for q, t in texts
    ]
    con, _ = _load(tmp_path, "t.jsonl", recs)
    (c,) = sanity.query_text_conflicts(con)
    assert (c.n_differ, c.n_smaller, c.disagree) == (1, 40, False)  # 1 of 40 = 2.5 % ≤ 5 %
    assert comparable_runs(con).runs == ["a", "b"]


def test_the_same_questions_under_other_ids_are_counted(tmp_path):
    """A Ragas export (no query ids: 'q:' + hash of the text) of two of the native run's questions:
    no id is shared, but two questions are, one example pair named; unrelated runs give None."""
    from ragaudit_core.logs.formats import query_id_for
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.logs.sanity import same_questions_other_ids

    native = [
        {"run_id": "native", "query_id": str(i), "query": q, "evidence": ["d"]}
        for i, q in enumerate(["What causes tides?", "Why is the sky blue?", "Who wrote Hamlet?"])
    ]
    ragas = [
        {"user_input": q, "retrieved_contexts": ["p"], "response": "a"}
        for q in ["what causes  tides?", "Why is the sky blue?"]
    ]
    other = [{"run_id": "other", "query_id": "x", "query": "Something else", "evidence": ["d"]}]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "n.jsonl", native + other), write_jsonl(tmp_path / "rag.jsonl", ragas)])
    same = same_questions_other_ids(con, "rag", "native")
    assert same is not None and same.n == 2
    pairs = [(query_id_for("What causes tides?"), "0"), (query_id_for("Why is the sky blue?"), "1")]
    assert (same.id_a, same.id_b) == min(pairs)  # the first by id in run a
    assert same_questions_other_ids(con, "native", "other") is None


def test_document_ids_that_are_places_in_the_list_are_flagged(tmp_path):
    """RAGChecker's examples number each query's passages 000, 001, …: two runs of unrelated
    passages then read "same documents, different spans". Flagged when ≥ 90 % of the entries past
    the first of their lists carry their place (0- or 1-based) and at least 2 do; real ids that are
    numbers (SciFact's 4983) and a run with one later entry are not."""
    placed = [
        {
            "run_id": "zero",
            "query_id": f"q{i}",
            "evidence": [{"doc_id": f"{j:03d}", "text": f"a{i}{j}"} for j in range(3)],
        }
        for i in range(2)
    ]  # 4 later entries, all placed
    one_based = [{"run_id": "one", "query_id": "q1", "evidence": ["1", "2", "3", "9"]}]  # 3 later: 2, 3 placed; 9 not
    real = [{"run_id": "scifact", "query_id": "q1", "evidence": ["4983", "0", "12", "1"]}]  # 3 later, none placed
    short = [{"run_id": "short", "query_id": "q1", "evidence": ["0", "1"]}]  # 1 later entry
    con, report = _load(tmp_path, "p.jsonl", placed + one_based + real + short)
    got = [(s.run_id, s.n_later, s.n_positional) for s in sanity.positional_id_runs(con)]
    assert got == [("zero", 4, 4)]  # "one": 2 of 3 later entries (67 %) is under 90 %
    [w] = [str(w) for w in report.warnings if "their places in the list" in str(w)]
    assert "run 'zero': the document ids of 100% of its entries" in w


def test_ranks_beside_the_list_order_are_named(tmp_path):
    """Every figure ranks by the list's order. An entry listed after one of a later rank is counted:
    q1's list z, y, x logged with ranks 2, 1, 0 has two (y after z, x after y); 1-based ranks (q2),
    ranks that skip (a filtered list keeping its retriever's ranks: 0, 3, 7) and ranks that repeat
    (chunks sharing their document's rank) are in order."""
    recs = [
        {
            "run_id": "r",
            "query_id": "q1",
            "evidence": [{"doc_id": "z", "rank": 2}, {"doc_id": "y", "rank": 1}, {"doc_id": "x", "rank": 0}],
        },
        {"run_id": "r", "query_id": "q2", "evidence": [{"doc_id": "x", "rank": 1}, {"doc_id": "y", "rank": 2}]},
        {"run_id": "s", "query_id": "q1", "evidence": [{"doc_id": "x", "rank": 0}, {"doc_id": "y", "rank": 1}]},
        {
            "run_id": "s",
            "query_id": "q2",
            "evidence": [{"doc_id": d, "rank": k} for d, k in (("a", 0), ("b", 3), ("c", 7))],
        },
        {
            "run_id": "s",
            "query_id": "q3",
            "evidence": [{"doc_id": "a", "text": f"chunk {i}", "rank": 1} for i in range(3)]
            + [{"doc_id": "b", "rank": 2}],
        },
    ]
    con, report = _load(tmp_path, "r.jsonl", recs)
    assert [(s.run_id, s.n_off_rank, s.off_example) for s in sanity.off_rank_runs(con)] == [("r", 2, "q1")]
    [w] = [str(w) for w in report.warnings if "later rank" in str(w)]
    assert "run 'r': 2 entries are listed after an entry of a later rank (e.g. query 'q1')" in w

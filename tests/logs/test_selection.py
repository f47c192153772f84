"""The default run selection, worked out by hand."""

from __future__ import annotations

from ragaudit_core.logs import store
from ragaudit_core.logs.formats.base import query_id_for
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.logs.selection import comparable_runs, natural_sorted
from tests.helpers import write_jsonl


def test_natural_order():
    assert natural_sorted(["k20-c128", "k5-c256", "k10-c128", "k5-c128", "B", "a"]) == [
        "a",
        "B",
        "k5-c128",
        "k5-c256",
        "k10-c128",
        "k20-c128",
    ]


def test_a_small_upload_sharing_no_query_is_left_out_and_named(tmp_path):
    """k5 and k10 log q1..q3, k20 logs q2..q3, 'upload' logs only q9: the default compares k5, k10
    and k20 over {q2, q3} and names 'upload'."""
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r in ("k10", "k5") for i in (1, 2, 3)]
    recs += [{"run_id": "k20", "query_id": f"q{i}", "evidence": ["d"]} for i in (2, 3)]
    recs += [{"run_id": "upload", "query_id": "q9", "evidence": ["d"]}]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    sel = comparable_runs(con)
    assert sel.runs == ["k5", "k10", "k20"] and sel.left_out == ["upload"] and sel.n_shared == 2
    assert sel.note == (
        "Left out 1 run that shares no query with the 3 compared (which share 2): 'upload'; "
        "pick runs to compare it instead."
    )
    assert comparable_runs(con, ["k5", "upload"]).runs == ["k5"]
    assert comparable_runs(con, ["k5", "k20"]).note is None
    assert comparable_runs(con, ["k20", "upload"]).note == (  # one run kept: not "the 1 compared"
        "Left out 1 run that shares no query with the one kept (2 queries): 'upload'; pick runs to compare it instead."
    )


def test_the_runs_table_lists_runs_in_natural_order(tmp_path):
    from ragaudit_core.logs import catalog

    recs = [{"run_id": r, "query_id": "q", "evidence": ["d"]} for r in ("k20", "k5", "k10")]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    assert catalog.runs_table(con)["run_id"].tolist() == ["k5", "k10", "k20"]


def test_a_query_id_made_from_the_question_is_named_with_its_question(tmp_path):
    """Ragas rows get ids from their question's text ('q:' and 16 hex digits), which mean nothing
    to a reader: the coverage sentence names the question beside such an id (shortened past 60
    characters); a logged id is named alone."""
    import csv

    from ragaudit_core.logs import catalog

    long_q = "Which of the randomised trials measured the effect of the dose on the outcome of the cohort?"
    rows = {"full.csv": ["What causes tides?", long_q, "Why is the sky blue?"], "short.csv": ["Why is the sky blue?"]}
    for name, questions in rows.items():
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["user_input", "retrieved_contexts", "response"])
            w.writerows([q, '["a passage"]', "an answer"] for q in questions)
    recs = [{"run_id": r, "query_id": q, "evidence": ["d"]} for r, q in (("n1", "q1"), ("n1", "q2"), ("n2", "q1"))]
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "full.csv", tmp_path / "short.csv", write_jsonl(tmp_path / "n.jsonl", recs)])
    gaps = catalog.coverage_gaps(con, ["full", "short"])
    tides, trials = (f"'{query_id_for(q)}'" for q in ("What causes tides?", long_q))
    first, second = sorted([(tides, "“What causes tides?”"), (trials, f"“{long_q[:59]}…”")])
    assert gaps == f"run 'short' lacks 2 queries: {first[0]} ({first[1]}), {second[0]} ({second[1]})"
    assert catalog.coverage_gaps(con, ["n1", "n2"]) == "run 'n2' lacks 1 query: 'q2'"


def test_coverage_differences_are_one_grouped_sentence(tmp_path):
    """Five runs log q1..q3, except: r2 and r3 both lack q3, r4 lacks q1 and q2. One sentence,
    runs lacking the same queries named together (largest group first)."""
    from ragaudit_core.logs import catalog
    from ragaudit_core.stability.metrics import evaluation_queries

    have = {"r1": (1, 2, 3), "r2": (1, 2), "r3": (1, 2), "r4": (3,), "r10": (1, 2, 3)}
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r, qs in have.items() for i in qs]
    con = store.connect(":memory:")
    report = ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    gaps = catalog.coverage_gaps(con)
    assert gaps == "2 runs ('r2', 'r3') each lack the same 1 query: 'q3'; run 'r4' lacks 2 queries: 'q1', 'q2'"
    assert catalog.coverage_gaps(con, ["r1", "r10"]) is None
    assert catalog.coverage_gaps(con, ["r1", "r2"]) == "run 'r2' lacks 1 query: 'q3'"
    assert catalog.coverage_gaps(con, ["r4"]) is None  # one run lacks nothing (no join is built)
    assert catalog.coverage_gaps(con, ["r4", "r4"]) is None
    assert catalog.coverage_gaps(con, ["r4", "none"]) == "run 'none' lacks 1 query: 'q3'"  # a run without records
    assert sum("coverage differs" in w.message for w in report.warnings) == 1  # one warning at ingest, not one per run
    qs, warnings = evaluation_queries(con, ["r1", "r2", "r3"], allow_missing=True)
    assert qs == ["q1", "q2"]
    assert warnings == [
        "query coverage differs; evaluating the queries every run has: "
        "2 runs ('r2', 'r3') each lack the same 1 query: 'q3'"
    ]


def test_digits_that_are_not_numbers_sort_as_text():
    """``"²".isdigit()`` is true but ``int("²")`` fails: a run id or a grid setting holding one
    sorts or is stored as text, never crashes; other scripts' decimal digits are numbers."""
    from ragaudit_core.logs.runs import grid_setting
    from ragaudit_core.logs.selection import natural_sorted

    assert natural_sorted(["5²", "k10", "k5", "٣"]) == ["٣", "5²", "k5", "k10"]
    assert grid_setting("²") is None and grid_setting(" 12 ") == 12 and grid_setting("١٢") == 12


def test_a_small_run_does_not_narrow_the_default_to_its_few_queries(tmp_path):
    """Three runs log q0..q9; 'tiny' logs q0 only (a stray upload of the same questions). Adding it
    would compare 4 runs over 1 query (6 pairs × 1 = 6 cells) instead of 3 runs over 10 (3 × 10 = 30):
    the default leaves it out and says why (the walk: 14 runs over 9 queries instead of 12 over 300).
    A run whose few queries still give more (query, pair) cells is kept (test above: k20)."""
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r in ("k5", "k10", "k20") for i in range(10)]
    recs += [{"run_id": "tiny", "query_id": "q0", "evidence": ["d"]}]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    sel = comparable_runs(con)
    assert sel.runs == ["k5", "k10", "k20"] and sel.n_shared == 10
    assert sel.narrowing == ["tiny"] and sel.left_out == []
    assert sel.note == (
        "Left out 1 run that would narrow the comparison from the 10 queries the 3 compared share to fewer: "
        "'tiny'; pick it to compare the queries they share."
    )
    assert comparable_runs(con, ["k5", "tiny"]).runs == ["k5", "tiny"]  # two runs: their one query is all there is


def test_the_default_comparison_leaves_out_what_the_note_says_it_leaves_out(tmp_path):
    """Every run shares queries, but 'other' asks other questions under the same ids: the default
    stability options name the kept runs — not None (every run), which compared the very run the note
    said was left out, whenever no run shared nothing with the others."""
    from ragaudit_core.stability.cache import default_options

    recs = [
        {"run_id": r, "query_id": f"q{i}", "query": f"question {i}", "evidence": ["d"]}
        for r in ("k5", "k10", "k20")
        for i in range(10)
    ]
    recs += [{"run_id": "other", "query_id": f"q{i}", "query": f"another {i}", "evidence": ["d"]} for i in range(10)]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    sel = comparable_runs(con)
    assert sel.disagreeing == ["other"] and sel.left_out == []
    assert default_options(con).runs == ["k5", "k10", "k20"]


def test_the_pair_the_pages_open_on_is_one_the_default_selection_compares(tmp_path):
    """'a1' and 'a2' share 3 queries with each other and none with 'z1'..'z3', which share 3 others:
    the default selection compares the z runs (3 pairs × 3 queries) and the home page says the a
    runs were left out. The compare page opened on ('a1', 'a2') anyway (every pair shares 3 queries;
    natural order decided the tie) — under that very note (a browser walk). It opens on a pair of
    the compared runs; with no run left out, every run's pairs are candidates again."""
    from ragaudit_core.logs.catalog import default_pair
    from ragaudit_core.stability.cache import opening_pair

    recs = [
        {"run_id": r, "query_id": f"{r[0]}{i}", "evidence": ["d"]}
        for r in ("a1", "a2", "z1", "z2", "z3")
        for i in range(3)
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    assert comparable_runs(con).left_out == ["a1", "a2"]
    assert default_pair(con, ["a1", "a2", "z1", "z2", "z3"]) == ("a1", "a2")  # among every run
    assert opening_pair(con) == ("z1", "z2")
    con2 = store.connect(":memory:")
    ingest_paths(con2, [write_jsonl(tmp_path / "a.jsonl", [r for r in recs if r["run_id"][0] == "a"])])
    assert opening_pair(con2) == ("a1", "a2")

"""Display words: counts read in the singular for one and in the plural otherwise."""

from __future__ import annotations

from ragaudit_core.wording import counted, listed


def test_counts_read_as_a_reader_writes_them():
    assert counted(1, "query") == "1 query"
    assert counted(0, "query") == "0 queries"
    assert counted(1204, "query") == "1,204 queries"
    assert counted(1, "run") == "1 run" and counted(2, "run") == "2 runs"
    assert counted(1, "run pair") == "1 run pair" and counted(66, "run pair") == "66 run pairs"
    assert counted(3, "similarity", "similarities") == "3 similarities"
    assert counted(1, "similarity", "similarities") == "1 similarity"


def test_names_follow_their_noun_in_the_singular_for_one():
    assert listed("run", ["'a'"]) == "run 'a'"
    assert listed("unknown run", ["'a'", "'b'"]) == "unknown runs 'a', 'b'"
    assert listed("query", ["'q1'", "'q2'"]) == "queries 'q1', 'q2'"


def test_an_unknown_attribution_option_is_named_in_the_singular_or_plural():
    import pytest

    from ragaudit_core.attribution.job import AttributionJob

    with pytest.raises(ValueError, match=r"^unknown attribution option: nope$"):
        AttributionJob().plan(None, "r", "q", nope=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^unknown attribution options: nah, nope$"):
        AttributionJob().plan(None, "r", "q", nope=1, nah=2)  # type: ignore[arg-type]


def test_the_ingest_report_counts_in_words():
    from ragaudit_core.logs.report import FileReport, IngestReport

    one = IngestReport(
        files=[FileReport(path="a.jsonl", sha256="0" * 64, status="loaded")], runs=["r"], n_records=1, n_entries=1
    )
    assert one.summary() == "loaded 1 record (1 evidence entry) from 1 file into 1 run; rejected 0 lines"
    # a load of files all loaded before (the walk uploaded one again): not "loaded 0 records … from 0 files into 0 runs"
    again = IngestReport(files=[FileReport(path="a.jsonl", sha256="0" * 64, status="already-loaded")])
    assert again.summary() == "nothing new loaded: 1 file was already in the database and was skipped"
    both = IngestReport(files=[*one.files, *again.files], runs=["r"], n_records=1, n_entries=1)
    assert both.summary() == one.summary() + "; 1 file was already in the database and was skipped"
    rejected = [FileReport(path=f"d/{n}.jsonl", sha256="0" * 64, status="rejected", n_rejected=n) for n in (1, 2)]
    assert [one.failure(f) for f in rejected] == [
        "no record of 1.jsonl could be loaded: its only line was rejected",
        "no record of 2.jsonl could be loaded: all 2 of its lines were rejected",
    ]


def test_the_default_selection_counts_the_runs_it_leaves_out():
    from ragaudit_core.logs.selection import RunSelection

    one = RunSelection(runs=["a", "b"], left_out=["x"], n_shared=3)
    assert one.note == (
        "Left out 1 run that shares no query with the 2 compared (which share 3): 'x'; pick runs to compare it instead."
    )
    two = RunSelection(runs=["a", "b"], left_out=["x", "y"], n_shared=3)
    assert two.note == (
        "Left out 2 runs that share no query with the 2 compared (which share 3): 'x', 'y'; "
        "pick runs to compare them instead."
    )
    assert RunSelection(runs=["a"], left_out=["x", "y"], n_shared=1).note == (
        "Left out 2 runs that share no query with the one kept (1 query): 'x', 'y'; pick runs to compare them instead."
    )
    narrowing = RunSelection(runs=["a", "b", "c"], narrowing=["t", "u"], n_shared=1)
    assert narrowing.note == (
        "Left out 2 runs that would narrow the comparison from the 1 query the 3 compared share to fewer: "
        "'t', 'u'; pick them to compare the queries they share."
    )
    assert RunSelection(runs=["a", "b"], disagreeing=["o"]).note == (
        "Left out 1 run whose query ids name other questions than the compared runs' (the same id, a different "
        "text): 'o'; pick it to compare anyway."
    )
    assert (RunSelection(runs=["a", "b"], disagreeing=["o", "p"]).note or "").startswith("Left out 2 runs whose")


def test_the_identity_warnings_count_runs_and_ids():
    from ragaudit_core.logs.sanity import PassageIds, TextConflict, conflict_messages

    one = TextConflict("a", "b", n_differ=1, n_smaller=3, example_id="q0")
    assert one.message().startswith("runs 'a' and 'b': 1 query id carries different question texts (e.g. 'q0')")
    two = TextConflict("a", "b", n_differ=2, n_smaller=3, example_id="q0")
    assert two.message().startswith("runs 'a' and 'b': 2 query ids carry different question texts")
    (msg,) = conflict_messages([one])
    assert msg.startswith("run 'a': its query ids name other questions than in 1 run ('b'; up to 1 id differs, e.g.")
    (msg,) = conflict_messages([one, TextConflict("a", "c", 2, 3, "q1")])
    assert msg.startswith("run 'a': its query ids name other questions than in 2 runs ('b', 'c'; up to 2 ids differ")
    apart = [TextConflict("a", "b", 1, 3, "q0"), TextConflict("c", "d", 1, 3, "q0"), TextConflict("e", "f", 1, 3, "q0")]
    assert conflict_messages(apart, limit=2)[-1] == "1 more run disagrees on query texts"
    assert conflict_messages(apart, limit=1)[-1] == "2 more runs disagree on query texts"
    single = PassageIds("r", n_entries=1, n_passage_like=1, example="a passage")
    assert single.message().startswith("run 'r': 100% of its 1 document id looks like a passage text (at least")
    many = PassageIds("r", n_entries=1204, n_passage_like=1204, example="a passage")
    assert many.message().startswith("run 'r': 100% of its 1,204 document ids look like passage texts (at least")


def test_a_removal_counts_what_it_removed():
    from ragaudit_core.logs.removal import Removed

    assert Removed(rows={"records": 1, "evidence": 1, "quarantine": 1}).summary() == (
        "removed 1 record with 1 evidence entry, 1 rejected line"
    )
    assert Removed(rows={"records": 2, "evidence": 1204, "prov_records": 2, "verdicts": 3}).summary() == (
        "removed 2 records with 1,204 evidence entries, 2 provenance records, "
        "3 stored results (attributions, verdicts, similarities…)"
    )


def test_the_report_counts_its_parts_and_rows():
    import pandas as pd
    import plotly.graph_objects as go

    from ragaudit_core.review.report.chart_table import figure_table
    from ragaudit_core.review.report.gather import ReportData
    from ragaudit_core.review.report.summary import _pointers

    def data(**kw):
        return ReportData("t", "v", "db", "1", pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), 0, 0, **kw)

    assert _pointers(data(omitted=["a"], failed=["b"])) == [
        "Left out of this report: 1 part, listed on the cover.",
        "Could not be built: 1 part, named with its reason on the cover.",
    ]
    assert _pointers(data(omitted=["a", "b"], failed=["c", "d"])) == [
        "Left out of this report: 2 parts, listed on the cover.",
        "Could not be built: 2 parts, named with their reasons on the cover.",
    ]
    fig = go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[1, 2, 3, 4], name="s"))
    assert figure_table(fig, max_rows=3)[1][-1] == ["… and 1 more row", "", ""]
    assert figure_table(fig, max_rows=2)[1][-1] == ["… and 2 more rows", "", ""]


def test_an_interval_without_bounds_is_not_written():
    from ragaudit_core.wording import bracket

    assert bracket(0.1234, 0.5) == "[0.123, 0.500]"
    assert bracket(-0.0031, 0.027, "+.3f") == "[-0.003, +0.027]"
    assert bracket(float("nan"), float("nan")) == "" and bracket(0.1, float("nan")) == ""
    assert bracket(None, 0.2) == ""


def test_a_shell_word_names_the_same_value_and_holds_no_control_character():
    import subprocess

    from ragaudit_core.wording import shell_word

    assert shell_word("k10-c256-o32") == "k10-c256-o32"
    assert shell_word("my runs/a b.duckdb") == "'my runs/a b.duckdb'"
    assert shell_word("it's") == "'it'\"'\"'s'"
    assert shell_word("a\nb") == "$'a\\nb'"
    assert shell_word("x\x1b[31my'\\") == "$'x\\x1b[31my\\'\\\\'"
    hostile = ["a\nb", "x\x1b[2J; rm -rf /", "tab\there", "quote ' and \\ back", "c1\x85end", "del\x7f", "ünï €"]
    for value in hostile:
        word = shell_word(value)
        assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in word)
        echoed = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True).stdout
        assert echoed.decode() == value  # the shell reads back the very value


def test_a_bound_that_rounds_to_zero_has_no_minus_sign():
    """The strict gate printed "0.000 [-0.000, 0.000]" for a difference of equal figures (-1e-17)."""
    from ragaudit_core.wording import bracket

    assert bracket(-1e-17, 0.0) == "[0.000, 0.000]"
    assert bracket(-0.0004, 0.2, "+.3f") == "[+0.000, +0.200]"
    assert bracket(-0.0006, 0.1) == "[-0.001, 0.100]"

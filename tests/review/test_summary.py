"""The executive summary's figures say what they are over: the reviewed pair's with their interval
and query count, CFS with the queries it rests on and whether the run is in the pair, settings
that were never logged as such, and the conclusion counts the runs its figures describe."""

from __future__ import annotations

import pandas as pd

from ragaudit_core.fidelity.score import RunFidelity
from ragaudit_core.review.gate import GateInputs, evaluate
from ragaudit_core.review.gate.rules import Rule
from ragaudit_core.review.logtext import isolate
from ragaudit_core.review.report.gather import ReportData
from ragaudit_core.review.report.summary import _figures, described_runs, what_changed


def _data(runs: pd.DataFrame | None = None, **kw) -> ReportData:
    return ReportData(
        generated_at="now",
        version="0",
        db_label="db",
        data_version="v",
        runs=runs if runs is not None else pd.DataFrame({"run_id": ["a", "b"]}),
        prov_runs=pd.DataFrame({"run_id": []}),
        files=pd.DataFrame(),
        n_queries=40,
        n_rejected=0,
        **kw,
    )


def _fid(run: str, p95: float, p50: float, n: int, cited: int) -> RunFidelity:
    summary = {"cfs_p95": p95, "cfs_p50": p50, "n_queries": n, "n_with_citations": cited}
    return RunFidelity(run, summary, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), [])


def test_the_reviewed_pairs_figures_carry_their_interval_and_query_count():
    from ragaudit_core.intervals import Estimate

    rules = [
        Rule(metric="j_avg", level="doc", op=">=", threshold=0.5),
        Rule(metric="j_avg", level="span", op=">=", threshold=0.5),
        Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2),
    ]
    pair = {("j_avg", "doc"): 0.321, ("j_avg", "span"): 0.326, ("collapse_rate", "span"): 0.0}
    ci = {
        ("j_avg", "doc"): Estimate(0.321, 0.300, 0.340, 40),
        ("j_avg", "span"): Estimate(0.326, 0.315, 0.333, 40),
        ("collapse_rate", "span"): Estimate(0.0, 0.0, 0.0, 40),
    }
    v = evaluate(rules, GateInputs("a", "b", pair, {}, pair_ci=ci))
    rows = _figures(_data(verdict=v))
    assert rows[0][1] == f"J_doc / J_span, the reviewed pair ({isolate('a')} → {isolate('b')}), over its 40 queries"
    assert rows[0][2] == "0.321 [0.300, 0.340] / 0.326 [0.315, 0.333]"
    assert rows[1][2] == "0.0% [0.0%, 0.0%]"


def test_cfs_rows_say_what_they_rest_on_and_which_run_is_outside_the_pair():
    v = evaluate([Rule(metric="j_avg", level="doc", op=">=", threshold=0.5)], GateInputs("a", "b", {}, {}))
    data = _data(verdict=v, fidelity={"x": _fid("x", 1.0, 0.0, 60, 28)})
    (row,) = [r for r in _figures(data) if "CFS" in r[1]]
    assert (
        row[1]
        == f"CFS of {isolate('x')} (not in the reviewed pair): 95th percentile / median / 5th percentile (the tail "
        "reading of p95), over the 28 of 60 queries with citations"
    )


def test_runs_without_logged_settings_are_not_said_to_differ_in_nothing():
    runs = pd.DataFrame({"run_id": ["a", "b"], "top_k": [None, None], "chunk_size": [None, None]})
    assert what_changed(_data(runs), "a", "b") == "neither run logs its settings (top-k, chunk size, overlap, embedder)"
    same = pd.DataFrame({"run_id": ["a", "b"], "top_k": [10, 10], "chunk_size": [256, 256]})
    assert what_changed(_data(same), "a", "b") == "no logged setting differs (top-k, chunk size, overlap, embedder)"


def test_the_conclusion_counts_the_runs_its_figures_describe():
    """14 evidence runs and 2 provenance runs named as 2 of them: the figures describe the 12
    compared runs and the 2 with provenance logs, 12 runs in all, not 16."""

    from types import SimpleNamespace

    stab = SimpleNamespace(summary=SimpleNamespace(runs=[f"r{i}" for i in range(12)]))

    runs = pd.DataFrame({"run_id": [f"r{i}" for i in range(12)] + ["extra", "ragas"]})
    data = _data(runs, stability=stab, fidelity={"r0": _fid("r0", 1, 0, 60, 28), "r1": _fid("r1", 1, 0, 60, 28)})
    assert described_runs(data) == 12


def test_without_a_pair_the_conclusion_says_which_runs_its_figures_leave_out():
    from ragaudit_core.review.report.conclusion import conclusion

    assert conclusion(None, {}, 12, of=14)[0].endswith(
        "the figures above describe 12 of the 14 runs (the others are named where they were left out)."
    )
    assert conclusion(None, {}, 12, of=12)[0].endswith("the figures above describe all 12 runs.")


def test_what_changed_names_settings_as_the_tables_do():
    runs = pd.DataFrame({"run_id": ["a", "b"], "top_k": [10, 6], "chunk_overlap": [32, 0]})
    assert what_changed(_data(runs), "a", "b") == "top-k 10 → 6; chunk overlap 32 → 0"


def test_cfs_row_shows_both_readings_of_p95_whichever_convention_computed_them():
    """Seed 002's p95 read as the 95th percentile (1.0) and as the tail (the 5th percentile, 0.0,
    the figure the gate's tail rule judges): the row shows both, in the same order, under either
    convention the run was computed with."""
    for convention, p95, other in (("upper", 1.0, 0.0), ("tail", 0.0, 1.0)):
        fid = _fid("x", p95, 0.25, 60, 28)
        fid.summary.update(percentile_convention=convention, cfs_p95_other=other)
        (row,) = [r for r in _figures(_data(fidelity={"x": fid})) if "CFS" in r[1]]
        assert row[2] == "1.000 / 0.250 / 0.000 — the median is far lower: most queries' citations fail"

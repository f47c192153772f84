"""Does jitter cost quality: the collapsed-query split and Spearman's ρ, by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.logs.qrels import load_qrels
from ragaudit_core.quality.jitter import jitter_cost, spearman
from ragaudit_core.stability.compare import compare_runs
from tests.helpers import ev, write_jsonl


@pytest.fixture
def pair(con, tmp_path):
    """A → B: q1..q4 collapse (no span in common), q5 keeps its one span.
    Labels: q1 d1 (kept by B), q2 d4 (lost by B), q3 d9 (A never found it), q5 d1; q4 none."""
    a = [
        ("q1", [("d1", "s1"), ("d2", "s2")]),
        ("q2", [("d4", "s4")]),
        ("q3", [("d6", "s6")]),
        ("q4", [("d8", "s8")]),
        ("q5", [("d1", "s1")]),
    ]
    b = [
        ("q1", [("d1", "s1b"), ("d3", "s3")]),
        ("q2", [("d5", "s5")]),
        ("q3", [("d7", "s7")]),
        ("q4", [("d8", "s9")]),
        ("q5", [("d1", "s1")]),
    ]
    for run, rows in (("A", a), ("B", b)):
        write_jsonl(
            tmp_path / f"{run}.jsonl",
            [{"run_id": run, "query_id": q, "evidence": [ev(d, s) for d, s in es]} for q, es in rows],
        )
    ingest_paths(con, [tmp_path / "A.jsonl", tmp_path / "B.jsonl"])
    (tmp_path / "q.tsv").write_text("q1\td1\t1\nq2\td4\t1\nq3\td9\t1\nq5\td1\t1\n")
    load_qrels(con, [tmp_path / "q.tsv"])
    return con


def test_collapsed_queries_split_by_what_happened_to_their_relevant_documents(pair):
    res = jitter_cost(pair, compare_runs(pair, "A", "B"), k=10, resamples=200)
    assert res.level == "span"
    assert res.collapsed == {"relevant kept": 1, "relevant lost": 1, "nothing relevant to lose": 1, "unlabelled": 1}
    out = res.queries.set_index("query_id")
    assert out.loc["q1", "outcome"] == "relevant kept" and out.loc["q2", "outcome"] == "relevant lost"
    assert out.loc["q5", "outcome"] is None  # not collapsed
    assert out.loc["q2", "delta"] == -1.0 and out.loc["q1", "delta"] == 0.0
    assert res.n_labelled == 4  # q4 has no label: no nDCG change


def test_spearman_by_hand(pair):
    # j = 0, 0, 0, 1 and ΔnDCG = 0, −1, 0, 0 (q1, q2, q3, q5): average ranks (2, 2, 2, 4) and
    # (3, 1, 3, 3), both of mean 2.5; centred: (−.5, −.5, −.5, 1.5) and (.5, −1.5, .5, .5);
    # products sum to 1, squares to 3 and 3 → ρ = 1 / 3
    res = jitter_cost(pair, compare_runs(pair, "A", "B"), k=10, resamples=200)
    assert res.rho.value == pytest.approx(1 / 3) and res.rho.n == 4
    js = res.to_json()
    assert js["spearman"]["rho"] == pytest.approx(1 / 3) and js["n_labelled"] == 4


def test_spearman_edge_cases():
    assert math.isnan(spearman(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])).value)  # a constant side
    assert spearman(np.arange(10.0), np.arange(10.0) ** 2).value == pytest.approx(1.0)
    e = spearman(np.arange(50.0), -np.arange(50.0), resamples=100)
    assert e.value == pytest.approx(-1.0) and e.lo == pytest.approx(-1.0) and e.hi == pytest.approx(-1.0)

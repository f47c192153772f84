"""Citation fidelity of a log with a run per record: the runs read together (a chunk of runs per
pair of queries) and summarised together (tables built per group of runs, figures shared) give
each run the numbers, tables and alerts that one run at a time gives."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from ragaudit_core.fidelity.frames import _signature, frames_by_key
from ragaudit_core.fidelity.graph import iter_graph_chunks, load_graphs, provenance_runs
from ragaudit_core.fidelity.score import FidelityRules, compute_query, fidelity_runs, summarise_run
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import pipeline, write_jsonl

N_RUNS = 2000

# one record per run, four kinds by the run's number mod 4: (text, CFS, outcome, product, lost at)
KINDS = [
    ("[Source: D1, p. 2]", 1.0, "exact_context_match", 1, None),
    ("[Source: D9, p. 1]", 0.0, "hallucinated_document_id", 0, "generation"),
    ("[Source: D1, p. 3]", 0.3, "valid_doc_invalid_page_or_unretrieved", 0, "generation"),  # a page not retrieved
    ("An answer without any citation.", None, None, 0, "generation"),
]


@pytest.fixture
def many(con, tmp_path):
    recs = [
        pipeline(f"req-{i:05d}", f"q{i}", text=KINDS[i % 4][0], stale=i % 4 == 1, mutate=i % 8 == 2)
        for i in range(N_RUNS)
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "many.jsonl", recs)])
    return con


def _unbatched(con, run, rules=FidelityRules()):
    return summarise_run(run, [compute_query(g) for g in load_graphs(con, run)], rules)


def _assert_same(a, b):
    assert a.run_id == b.run_id
    assert a.summary == b.summary and list(a.summary) == list(b.summary)
    assert a.alerts == b.alerts
    for x, y in ((a.queries, b.queries), (a.citations, b.citations), (a.findings, b.findings)):
        pd.testing.assert_frame_equal(x, y, check_dtype=True, check_index_type=True, check_column_type=True)
        assert [str(t) for t in x.dtypes] == [str(t) for t in y.dtypes]


def test_two_thousand_one_record_runs_by_hand(many):
    res = fidelity_runs(many)
    assert list(res) == [f"req-{i:05d}" for i in range(N_RUNS)]
    for i in (0, 1, 2, 3, 1234, 1235, 1998, 1999):
        _text, cfs, outcome, product, lost = KINDS[i % 4]
        r = res[f"req-{i:05d}"]
        s = r.summary
        assert s["n_queries"] == 1 and s["n_citations"] == (0 if cfs is None else 1)
        assert s["cfs_mean"] == s["cfs_p50"] == s["cfs_p95"] == s["cfs_p99"] == cfs
        assert s["outcomes"] == ({} if outcome is None else {outcome: 1})
        assert s["cfs_product_mean"] == product
        assert s["stage_survival"]["generation"] == product and s["stage_survival"]["chunking"] == 1.0
        if cfs is None:
            assert s["intervals"] == {}
        else:  # one value: every resample is that value (float32 products)
            assert s["intervals"]["cfs_mean"] == pytest.approx([cfs, cfs], abs=1e-7)
            assert s["intervals"]["cfs_p95"] == [cfs, cfs]
        assert r.queries["query_id"].tolist() == [f"q{i}"] and r.queries.index.tolist() == [0]
        assert r.queries["first_failed_stage"].tolist() == [lost]
        assert r.citations["diagnostic"].tolist() == ([] if outcome is None else [outcome])
        checks = {"stale_chunk"} if i % 4 == 1 else {"reranker_text_mutation"} if i % 8 == 2 else set()
        assert set(r.findings["check"]) == checks and s["failure_modes"] == dict.fromkeys(checks, 1)
        status = {a["rule"]: a["status"] for a in r.alerts}
        assert status["generation survival"] == ("ok" if product else "alert")
        assert status["p95 CFS"] == ("not applicable" if cfs is None else "ok" if cfs >= 0.85 else "alert")
        assert s["n_alerts"] == (cfs is not None and cfs < 0.85) + (not product)


def test_two_thousand_runs_equal_one_run_at_a_time(many):
    rules = FidelityRules(percentile="tail", stage_survival_min=0.5)
    res = fidelity_runs(many, rules=rules)
    for i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 777, 1500, 1999]:
        run = f"req-{i:05d}"
        _assert_same(res[run], _unbatched(many, run, rules))
    # the tables of runs alike are cut from one table; each is its own object, indexed from 0
    a, b = res["req-00000"].queries, res["req-00004"].queries
    assert a is not b and a.index.tolist() == b.index.tolist() == [0]
    assert res["req-00000"].summary["intervals"] is not res["req-00004"].summary["intervals"]


def test_runs_in_the_order_given_a_missing_run_and_a_repeated_one(con, tmp_path):
    recs = [pipeline("b", "q1"), pipeline("b", "q2", strip_rerank=True, text="[Document 1]"), pipeline("a", "q1")]
    recs += [pipeline(f"r{i}", "q", text=KINDS[i % 4][0]) for i in range(5)]
    ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", recs)])
    runs = ["r3", "b", "missing", "a", "b", "r0", "r1"]
    res = fidelity_runs(con, runs)
    assert list(res) == ["r3", "b", "missing", "a", "r0", "r1"]
    for run in res:
        _assert_same(res[run], _unbatched(con, run))
    assert res["missing"].summary["n_queries"] == 0 and res["missing"].queries.empty


def test_chunks_hold_runs_together_and_give_each_run_its_graphs(con, tmp_path):
    rng = random.Random(3)
    sizes = {f"run{i}": rng.choice([1, 1, 2, 5, 9]) for i in range(30)}
    recs = [pipeline(run, f"q{j:02d}", text=KINDS[j % 4][0]) for run, n in sizes.items() for j in range(n)]
    ingest_paths(con, [write_jsonl(tmp_path / "c.jsonl", recs)])
    runs = [*provenance_runs(con)[::-1], "nope"]
    chunks = list(iter_graph_chunks(con, runs, chunk_records=7))
    assert [run for c in chunks for run in c] == runs
    for c in chunks:  # at most 7 records a chunk, or one run alone
        assert len(c) == 1 or sum(len(g) for g in c.values()) <= 7
    graphs = {run: g for c in chunks for run, g in c.items()}
    assert graphs["nope"] == []
    for run, n in sizes.items():
        assert len(graphs[run]) == n and graphs[run] == load_graphs(con, run)


def _random_rows(rng: random.Random) -> list[dict]:
    kinds = [
        lambda: None,
        lambda: rng.choice([0, 1, 7]),
        lambda: rng.choice([0.0, 0.3, 1.0]),
        lambda: float("nan"),
        lambda: rng.choice(["a", "b", ""]),
        lambda: -3,
        lambda: True,
    ]
    pick = {c: rng.sample(kinds, rng.choice([1, 1, 2])) for c in "xyz"}
    n = rng.choice([0, 1, 1, 2, 3])
    rows = []
    for _ in range(n):
        row = {"id": f"q{rng.randrange(9)}"}
        for c in "xyz":
            if rng.random() < 0.9:  # a missing key is NaN to pandas
                row[c] = rng.choice(pick[c])()
        rows.append(row)
    return rows


@pytest.mark.parametrize("columns", [None, ["id", "x", "y", "z"]])
def test_tables_cut_from_one_equal_tables_built_alone(columns):
    rng = random.Random(7)
    rows = {k: _random_rows(rng) for k in range(800)}
    rows[800] = [{"id": "big", "x": i} for i in range(300)]  # longer than a group takes: built alone
    groups = Counter(_signature(r, columns) for r in rows.values())
    assert sum(n for n in groups.values() if n > 1) > 300  # many are cut from a table of their group
    got = frames_by_key(rows, columns)
    assert list(got) == list(rows)
    for k, r in rows.items():
        want = pd.DataFrame(r) if columns is None else pd.DataFrame(r, columns=columns)
        pd.testing.assert_frame_equal(got[k], want, check_dtype=True, check_index_type=True, check_column_type=True)
        assert [str(t) for t in got[k].dtypes] == [str(t) for t in want.dtypes]
        for c in want.columns:  # None stays None, NaN stays NaN
            assert [type(v) for v in got[k][c].tolist()] == [type(v) for v in want[c].tolist()]
            assert np.array_equal(got[k][c].isna(), want[c].isna())

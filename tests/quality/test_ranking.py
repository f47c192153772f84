"""Ranking quality by hand on a three-query fixture, and against trec_eval (pytrec_eval) on the
SciFact sample logs."""

from __future__ import annotations

import math

import pytest

from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.logs.qrels import QrelsError, load_qrels, parse_qrels
from ragaudit_core.quality import per_query_quality
from ragaudit_core.quality.reference import query_metrics
from ragaudit_core.quality.summary import compute_quality
from tests.helpers import ev, write_jsonl

L2, L3 = math.log2(2), math.log2(3)  # discounts of ranks 1 and 2
IDCG2 = 2 / 1 + 1 / L3  # q1's ideal top two: gains 2, 1
IDCG5 = 2 / 1 + 1 / L3 + 1 / 2  # q1's ideal list: gains 2, 1, 1


@pytest.fixture
def labelled(con, tmp_path):
    """Run A: q1 → d1, d2, d1 (a later chunk of d1), d3; q2 → d5, d6; q3 → d9 (no labels).
    Run B: q1 → d4, d1; q2 → nothing; q3 → d9. Labels: q1: d1 = 2, d3 = 1, d4 = 1;
    q2: d6 = 1, d7 = 0 (judged non-relevant)."""
    write_jsonl(
        tmp_path / "A.jsonl",
        [
            {"run_id": "A", "query_id": "q1", "evidence": [ev("d1"), ev("d2"), ev("D1"), ev("d3")]},
            {"run_id": "A", "query_id": "q2", "evidence": [ev("d5"), ev("d6")]},
            {"run_id": "A", "query_id": "q3", "evidence": [ev("d9")]},
        ],
    )
    write_jsonl(
        tmp_path / "B.jsonl",
        [
            {"run_id": "B", "query_id": "q1", "evidence": [ev("d4"), ev("d1")]},
            {"run_id": "B", "query_id": "q2", "evidence": []},
            {"run_id": "B", "query_id": "q3", "evidence": [ev("d9")]},
        ],
    )
    ingest_paths(con, [tmp_path / "A.jsonl", tmp_path / "B.jsonl"])
    q = tmp_path / "qrels" / "test.tsv"
    q.parent.mkdir()
    q.write_text("query-id\tcorpus-id\tscore\nq1\tD1\t2\nq1\td3\t1\nq1\td4\t1\nq2\td6\t1\nq2\td7\t0\n")
    rep = load_qrels(con, [q])
    assert (rep.n_labels, rep.n_queries, rep.n_relevant) == (5, 2, 4)
    return con


def test_every_metric_by_hand(labelled):
    df = per_query_quality(labelled, ["A", "B"], cutoffs=(2, 5)).set_index(["run_id", "query_id"])
    assert ("A", "q3") not in df.index and ("B", "q3") not in df.index  # no labels: left out, not 0
    a1, a2, b1, b2 = (df.loc[k] for k in (("A", "q1"), ("A", "q2"), ("B", "q1"), ("B", "q2")))
    # A q1: distinct documents d1 (2), d2 (0), d3 (1) — the second d1 chunk is skipped; R = 3
    assert a1["precision@2"] == 1 / 2 and a1["recall@2"] == pytest.approx(1 / 3) and a1["hit@2"] == 1
    assert a1["ndcg@2"] == pytest.approx((2 / L2) / IDCG2)
    assert a1["precision@5"] == 2 / 5  # k larger than the list: still divided by k
    assert a1["recall@5"] == pytest.approx(2 / 3) and a1["recall"] == pytest.approx(2 / 3)
    assert a1["ndcg@5"] == pytest.approx((2 + 1 / 2) / IDCG5) == a1["ndcg"]
    assert a1["mrr"] == 1 and a1["map"] == pytest.approx((1 / 1 + 2 / 3) / 3)
    # A q2: d5 (0), d6 (1); R = 1 (d7 judged 0 does not count)
    assert a2["ndcg@2"] == pytest.approx(1 / L3) and a2["mrr"] == 0.5 and a2["map"] == 0.5
    assert a2["precision@5"] == 1 / 5 and a2["recall@2"] == 1
    # B q1: d4 (1), d1 (2)
    assert b1["ndcg@2"] == pytest.approx((1 + 2 / L3) / IDCG2) and b1["map"] == pytest.approx((1 + 2 / 2) / 3)
    # B q2 retrieved nothing: a labelled miss scores 0
    assert b2[["ndcg@2", "recall@5", "precision@2", "hit@5", "mrr", "map", "ndcg"]].tolist() == [0] * 7


def test_the_reference_gives_the_same_numbers(labelled):
    df = per_query_quality(labelled, ["A"], cutoffs=(2, 5)).set_index("query_id")
    labels = {"q1": {"d1": 2, "d3": 1, "d4": 1}, "q2": {"d6": 1, "d7": 0}}
    lists = {"q1": ["d1", "d2", "d1", "d3"], "q2": ["d5", "d6"]}
    for q in ("q1", "q2"):
        ref = query_metrics(lists[q], labels[q], (2, 5))
        for k, v in ref.items():
            assert df.loc[q, k] == pytest.approx(v, abs=1e-12), (q, k)


def test_run_means_pair_change_and_coverage(labelled):
    res = compute_quality(labelled, ["A", "B"], cutoffs=(2,), resamples=200)
    a, b = res.run("A"), res.run("B")
    assert a is not None and b is not None
    assert (a.n_queries, a.n_unlabelled) == (2, 1) and (b.n_queries, b.n_unlabelled) == (2, 1)
    assert b.metrics["mrr"].value == pytest.approx(0.5)  # q1 first hit at rank 1, q2 nothing
    assert a.metrics["mrr"].value == pytest.approx(0.75)
    assert a.metrics["ndcg@2"].value == pytest.approx(((2 / L2) / IDCG2 + 1 / L3) / 2)
    ch = res.pairs[("A", "B")]["ndcg@2"]
    d1 = (1 + 2 / L3) / IDCG2 - (2 / L2) / IDCG2
    assert ch.delta == pytest.approx((d1 - 1 / L3) / 2) and ch.n == 2
    assert ch.lo <= ch.delta <= ch.hi
    assert 0 <= ch.p <= ch.p_holm <= 1
    js = res.to_json()
    assert js["runs"][0]["metrics"]["mrr"] == pytest.approx(0.75)
    assert set(js["pairs"][0]["metrics"]["ndcg@2"]) == {"delta", "ci", "p", "p_holm", "n"}


def test_qrels_formats_and_bad_lines(tmp_path):
    trec = tmp_path / "trec.qrels"
    trec.write_text("q1 0 d1 1\nq1 0 d2 2\nq1 0 d3 x\nq2 0 d1\n")
    labels, rejected = parse_qrels(trec)
    assert [(x.query_id, x.doc_id_raw, x.relevance) for x in labels] == [("q1", "d1", 1), ("q1", "d2", 2)]
    assert rejected == [
        "trec.qrels line 3: relevance 'x' is not an integer",
        "trec.qrels line 4: 3 columns; a qrels line has 4 (query-id, iteration, doc-id, relevance)",
    ]
    bare = tmp_path / "bare.tsv"
    bare.write_text("q1\td1\t1\n")
    assert [x.doc_id_raw for x in parse_qrels(bare)[0]] == ["d1"]
    empty = tmp_path / "empty.tsv"
    empty.write_text("query-id\tcorpus-id\tscore\n")
    with pytest.raises(QrelsError, match="holds no relevance judgement"):
        parse_qrels(empty)


def test_a_later_file_replaces_the_labels_of_the_queries_it_judges(labelled, tmp_path):
    f = tmp_path / "more.tsv"
    f.write_text("q2\td5\t1\nq9\td1\t1\n")
    rep = load_qrels(labelled, [f])
    assert rep.replaced_queries == 1
    rows = labelled.execute("SELECT query_id, doc_id, relevance FROM qrels ORDER BY 1, 2").fetchall()
    assert ("q2", "d6", 1) not in rows and ("q2", "d5", 1) in rows and ("q1", "d1", 2) in rows


@pytest.mark.parametrize("k", [5, 10, 20])
def test_scifact_sample_matches_trec_eval(sample_con, k):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    con = sample_con
    runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY 1").fetchall()]
    ours = per_query_quality(con, runs, cutoffs=(k,)).set_index(["run_id", "query_id"])
    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in con.execute("SELECT query_id, doc_id, relevance FROM qrels").fetchall():
        qrels.setdefault(q, {})[d] = r
    measures = {f"ndcg_cut.{k}", f"recall.{k}", f"P.{k}", f"success.{k}", "recip_rank", "map", "ndcg"}
    n = 0
    for run in runs:
        lists: dict[str, list[str]] = {}
        for q, d in con.execute(
            "SELECT query_id, doc_id FROM evidence WHERE run_id = ? ORDER BY query_id, position", [run]
        ).fetchall():
            lists.setdefault(q, []).append(d)
        trec_run = {}
        for q, docs in lists.items():
            if q in qrels:
                uniq = list(dict.fromkeys(docs))
                trec_run[q] = {d: float(len(uniq) - i) for i, d in enumerate(uniq)}  # scores in our rank order
        got = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in trec_run}, measures).evaluate(trec_run)
        for q, m in got.items():
            row = ours.loc[(run, q)]
            pairs = [
                (f"ndcg@{k}", f"ndcg_cut_{k}"),
                (f"recall@{k}", f"recall_{k}"),
                (f"precision@{k}", f"P_{k}"),
                (f"hit@{k}", f"success_{k}"),
                ("mrr", "recip_rank"),
                ("map", "map"),
                ("ndcg", "ndcg"),
            ]
            for a, b in pairs:
                assert row[a] == pytest.approx(m[b], abs=1e-9), (run, q, a)
            n += 1
    assert n == 12 * 300

"""The answer probe: hand-worked Table-1 figures, and real SBERT similarity."""

from __future__ import annotations

import pytest

from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.models import load_embedder
from ragaudit_core.stability.probe import (
    answer_similarity,
    probe_pair,
    spearman,
    stored_similarities,
    summarise_probe,
)
from tests.helpers import ev, write_jsonl


def test_summary_by_hand():
    # q:      a     b     c
    # J_span  0.0   0.5   1.0
    # Sim     0.95  0.85  0.70
    s = summarise_probe([0.0, 0.5, 1.0], [0.95, 0.85, 0.70])
    assert s["mean_j_span"] == pytest.approx(0.5)
    assert s["mean_sim"] == pytest.approx((0.95 + 0.85 + 0.70) / 3)
    assert s["drift_0.9"] == 2 and s["drift_rate_0.9"] == pytest.approx(2 / 3)
    assert s["drift_0.8"] == 1
    assert s["spearman_rho"] == pytest.approx(-1.0)  # ranks 1,2,3 vs 3,2,1
    assert s["silent_jitter"] == 1  # only a: evidence changed (J < 0.5) while Sim ≥ 0.9


def test_probe_intervals_bracket_the_figures_and_say_nothing_where_nothing_can_be_said():
    """Every Table-1 figure gets a 95 % interval over the answered queries: each resample's mean
    lies within the values' range (here Sim in [0.70, 0.95]); ρ is recomputed per resample (a
    resample drawing one query three times has constant ranks and gives no replicate). One query:
    no interval; a constant similarity: no ρ, so no ρ interval."""
    s = summarise_probe([0.0, 0.5, 1.0], [0.95, 0.85, 0.70])
    iv = s["intervals"]
    lo, hi = iv["mean_sim"]
    assert 0.70 - 1e-6 <= lo <= s["mean_sim"] <= hi <= 0.95 + 1e-6  # (float32 sums)
    assert 0.0 <= iv["drift_rate_0.9"][0] <= 2 / 3 <= iv["drift_rate_0.9"][1] <= 1.0
    rlo, rhi = iv["spearman_rho"]
    assert -1.0 <= rlo <= rhi <= 1.0
    assert rlo == pytest.approx(-1.0)  # every resample with two distinct queries is perfectly reversed
    assert summarise_probe([0.5], [0.9])["intervals"] == {}
    assert "spearman_rho" not in summarise_probe([0.1, 0.5, 0.9], [0.8, 0.8, 0.8])["intervals"]
    # the same seed: the same intervals
    assert summarise_probe([0.0, 0.5, 1.0], [0.95, 0.85, 0.70])["intervals"] == iv


def test_spearman_ties_and_undefined():
    # x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4 → ρ = cov/σσ of the ranks
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert spearman([1, 1, 1], [1, 2, 3]) is None
    assert spearman([1, 2], [2, 1]) is None


@pytest.fixture(scope="module")
def minilm():
    return load_embedder(device="cpu")


def test_real_sbert_similarity(minilm):
    sim = answer_similarity(
        minilm,
        ["Insulin lowers blood sugar.", "The cat sat on the mat."],
        ["Insulin lowers blood sugar.", "Quantum chromodynamics describes quarks."],
    )
    assert sim[0] == pytest.approx(1.0, abs=1e-5)
    assert sim[1] < 0.3


def test_probe_pair_on_hand_made_answers(con, tmp_path, minilm):
    write_jsonl(
        tmp_path / "a.jsonl",
        [
            {"run_id": "base", "query_id": "q1", "answer": "Insulin lowers blood sugar.", "evidence": [ev("d1", "s1")]},
            {"run_id": "base", "query_id": "q2", "answer": "The sky is blue.", "evidence": [ev("d2", "s2")]},
            {"run_id": "base", "query_id": "q3", "evidence": [ev("d3", "s3")]},
        ],
    )
    write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"run_id": "c128", "query_id": "q1", "answer": "Insulin lowers blood sugar.", "evidence": [ev("d1", "t1")]},
            {"run_id": "c128", "query_id": "q2", "answer": "Mitochondria make ATP.", "evidence": [ev("d2", "s2")]},
            {"run_id": "c128", "query_id": "q3", "answer": "unpaired", "evidence": [ev("d3", "s3")]},
        ],
    )
    ingest_paths(con, [tmp_path])
    res = probe_pair(con, "base", "c128", minilm)
    rows = res.rows.set_index("query_id")
    assert list(rows.index) == ["q1", "q2"]  # q3 has no answer in base
    assert rows.loc["q1", "j_span"] == 0.0 and rows.loc["q1", "j_doc"] == 1.0
    assert rows.loc["q1", "sim"] == pytest.approx(1.0, abs=1e-5)
    assert bool(rows.loc["q1", "silent_jitter"]) is True  # span changed, answer did not
    assert rows.loc["q2", "j_span"] == 1.0 and rows.loc["q2", "sim"] < 0.5
    assert res.summary["drift_0.9"] == 1 and res.summary["silent_jitter"] == 1
    assert res.summary["mean_j_span"] == pytest.approx(0.5)


def test_similarities_are_stored_once_and_read_back(con, minilm):
    """Computed similarities go to ``derived_answer_similarity`` (through Arrow) and are read back
    by the next call, which computes only what is missing (the encoder is not asked for again)."""
    first = stored_similarities(con, "a", "b", ["q1", "q2"], ["Insulin.", "Sky."], ["Insulin.", "Quarks."], minilm)
    rows = con.execute("SELECT * FROM derived_answer_similarity ORDER BY query_id").fetchall()
    assert [r[:3] for r in rows] == [("a", "b", "q1"), ("a", "b", "q2")]
    assert [r[4] for r in rows] == pytest.approx(list(first)) and first[0] == pytest.approx(1.0, abs=1e-5)

    def no_model():
        raise AssertionError("every similarity asked for is stored: no model is needed")

    again = stored_similarities(con, "a", "b", ["q2", "q1"], ["Sky.", "Insulin."], ["Quarks.", "Insulin."], no_model)
    assert list(again) == pytest.approx([first[1], first[0]])
    third = stored_similarities(con, "a", "b", ["q3", "q1"], ["Tides.", "x"], ["The moon.", "y"], minilm)
    assert third[1] == pytest.approx(first[0]) and con.execute(
        "SELECT count(*) FROM derived_answer_similarity"
    ).fetchall() == [(3,)]


def test_doc_only_runs_give_no_span_interval_either(con, tmp_path, minilm):
    """Runs of bare document ids: mean J_span is unavailable, and so is its interval — it was
    [0.000, 0.000], from the zeros standing in for the missing spans."""
    recs = [
        {"run_id": r, "query_id": f"q{i}", "answer": f"answer {i} {r}", "evidence": [f"d{i}"]}
        for r in ("base", "cand")
        for i in range(4)
    ]
    write_jsonl(tmp_path / "ids.jsonl", recs)
    ingest_paths(con, [tmp_path / "ids.jsonl"])
    res = probe_pair(con, "base", "cand", minilm)
    assert res.summary["mean_j_span"] is None and res.summary["note"] == "span information unavailable for this pair"
    assert "mean_j_span" not in res.summary["intervals"] and "spearman_rho" not in res.summary["intervals"]
    assert "mean_sim" in res.summary["intervals"]

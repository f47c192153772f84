"""Display labels: Jaccard columns in the metric's notation (as the charts, the metrics above the
tables and seed 000 write it: J_span), other keys in words."""

from __future__ import annotations

from ragaudit_core.review.labels import change_label, column_label


def test_jaccard_columns_read_as_the_metrics_above_them():
    keys = ("j_doc", "j_span", "j_min", "j_avg", "j_avg_span")
    assert [column_label(k) for k in keys] == ["J_doc", "J_span", "J_min", "J_avg", "J_avg, span"]
    assert column_label("first_failed_stage") == "ground truth lost at"
    assert column_label("a_new_key") == "a new key"  # readable before it has an entry
    assert [change_label(k) for k in ("chunk_size", "chunk_overlap", "top_k", "none")] == [
        "chunk size",
        "overlap",
        "top-k",
        "nothing",
    ]


def test_metrics_and_rules_read_as_labels_not_keys():
    """The report's rule column and quality tables: 'J_avg, span ≥ 0.5', 'nDCG@10', never the
    TOML keys 'j_avg,span >= 0.5' or 'ndcg@10'; a rule the user named keeps its name."""
    from ragaudit_core.review.gate.rules import Rule
    from ragaudit_core.review.labels import metric_label, rule_label

    assert [metric_label(m) for m in ("ndcg@10", "recall@10", "precision@5", "hit@10", "mrr", "map", "ndcg")] == [
        "nDCG@10",
        "recall@10",
        "precision@5",
        "hit rate@10",
        "MRR",
        "MAP",
        "nDCG",
    ]
    assert metric_label("j_avg", "span") == "J_avg, span"
    assert metric_label("stage_survival", "every") == "stage survival, every stage"
    assert metric_label("stage_survival", "generation") == "stage survival, generation"
    assert metric_label("cfs_p95_tail") == "CFS p95 (tail reading)"
    assert rule_label(Rule(metric="j_avg", level="span", op=">=", threshold=0.5)) == "J_avg, span ≥ 0.5"
    assert rule_label(Rule(metric="collapse_rate", level="span", op="<=", threshold=0.2)) == "collapse rate, span ≤ 0.2"
    assert (
        rule_label(Rule(metric="stage_survival", level="every", op=">=", threshold=-0.05, relative=True))
        == "Δ stage survival, every stage ≥ −0.05"
    )
    assert (
        rule_label(Rule(metric="ndcg@10", op=">=", threshold=-0.02, relative=True, significant=True))
        == "Δ nDCG@10 ≥ −0.02 (significant)"
    )
    assert rule_label(Rule(metric="warg", p=0.9, op="<=", threshold=0.05, relative=True)) == "Δ WARG(0.9) ≤ 0.05"
    assert rule_label(Rule(name="keep spans", metric="j_avg", level="span", op=">=", threshold=0.5)) == "keep spans"

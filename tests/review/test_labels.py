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

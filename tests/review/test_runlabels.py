"""Run ids shortened for a picker keep their beginning and end, and stay distinct from each other."""

from __future__ import annotations

from ragaudit_core.review.runlabels import (
    ELLIPSIS,
    RUN_LABEL_CHARS,
    middle_cut,
    pair_label,
    picker_labels,
    run_labels,
)

A = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-20.csv"
B = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-21.csv"
MIDDLE = "ragas_scifact_bm25_top10_chunk256_overlap32_2026-11-20.csv"  # differs from A only in its middle


def test_a_long_id_keeps_its_beginning_and_its_end_around_an_ellipsis():
    cut = middle_cut(A, 32)
    assert len(cut) == 32 and cut.count(ELLIPSIS) == 1
    head, tail = cut.split(ELLIPSIS)
    assert A.startswith(head) and A.endswith(tail) and len(tail) > len(head)
    assert tail.endswith("2026-11-20.csv")
    assert middle_cut("k5-c128-o0", 32) == "k5-c128-o0"  # short ids as they are
    assert middle_cut("x" * 32, 32) == "x" * 32 and len(middle_cut("x" * 33, 32)) == 32
    assert len(middle_cut(A, 1)) == 5  # never narrower than 5


def test_labels_of_runs_differing_at_the_end_or_in_the_middle_are_distinct():
    two = run_labels([A, B, "k5-c128-o0"])
    assert two["k5-c128-o0"] == "k5-c128-o0"
    assert len(two[A]) == len(two[B]) == RUN_LABEL_CHARS  # the end tells them apart
    assert two[A] != two[B] and two[B].endswith("11-21.csv")
    labels = run_labels([A, B, MIDDLE, "k5-c128-o0"])
    assert len(set(labels.values())) == 4
    # A and MIDDLE cut alike at 32 characters: both shown wider, until they read apart
    assert middle_cut(A) == middle_cut(MIDDLE)
    assert labels[A] != labels[MIDDLE] and RUN_LABEL_CHARS < len(labels[MIDDLE]) <= len(MIDDLE)


def test_labels_stay_distinct_whatever_the_ids():
    """Ids that differ in one character anywhere, and an id that looks like another's cut label:
    every label distinct, each the full id or a cut of it."""
    base = "r" * 60
    runs = [base[:i] + "X" + base[i + 1 :] for i in range(0, 60, 3)] + [middle_cut(A), A]
    labels = run_labels(runs, width=10)
    assert len(set(labels.values())) == len(runs)
    for r, label in labels.items():
        head, _, tail = label.partition(ELLIPSIS)
        assert label == r or (r.startswith(head) and r.endswith(tail))
    assert run_labels([]) == {}


def test_a_picker_label_holds_every_word_of_a_cut_id():
    """Before: a picker's label was the cut id, and a widget's type-to-search matches only the label,
    so typing a word of the cut middle ("top10") found nothing. The label keeps the cut (what a narrow
    widget shows) and ends with the whole id, which the search matches."""
    labels = picker_labels([B, MIDDLE, "k5-c128-o0"])
    assert labels["k5-c128-o0"] == "k5-c128-o0"  # shown whole already: as it is
    cut = run_labels([B, MIDDLE, "k5-c128-o0"])
    for run in (B, MIDDLE):
        assert labels[run] == f"{cut[run]} ({run})" and "top10" not in cut[MIDDLE]
    assert "top10" in labels[MIDDLE] and len(set(labels.values())) == 3


def test_a_pair_label_holds_both_ids_whole():
    labels = run_labels([B, MIDDLE, "k5"])
    assert labels[B] != B and labels[MIDDLE] != MIDDLE
    assert pair_label(labels, B, MIDDLE) == f"{labels[B]} vs {labels[MIDDLE]} ({B} vs {MIDDLE})"
    assert pair_label(labels, "k5", B) == f"k5 vs {labels[B]} (k5 vs {B})"
    assert pair_label({"a": "a", "b": "b"}, "a", "b") == "a vs b"  # nothing cut: nothing repeated

"""Intervals of a run's attribution figures (attribution/uncertainty.py), worked by hand on a
four-query batch and a one-query condition."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ragaudit_core.attribution.uncertainty import figure_intervals, paired_change


def _batch() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "condition": ["original"] * 4 + ["shuffled"],
            "wasted_retrieval": [True, False, False, False, True],
            "noise_distraction": [False] * 5,
            "spearman": [0.5, 1.0, np.nan, 0.0, 0.2],  # q3's ranking was constant: no Spearman
            "warg_0.9": [0.6, 0.7, 0.8, 0.9, 0.5],
        }
    )


def test_rates_get_wilson_intervals_worked_by_hand():
    """1 of 4 wasted: z = 1.95996, d = 1 + z²/4 = 1.96036, centre = (0.25 + z²/8) / d = 0.37247,
    half = z·sqrt(0.25·0.75/4 + z²/64) / d = 0.32688 → [0.04559, 0.69936]. 0 of 4 in noise
    distraction: [0, z²/(n + z²)] = [0, 0.48989] — not the [0, 0] a percentile bootstrap gives."""
    iv = figure_intervals(_batch()).set_index(["condition", "metric"])
    w = iv.loc[("original", "wasted_retrieval")]
    assert (w.value, w.n, w.method) == (0.25, 4, "wilson")
    assert w.lo == pytest.approx(0.04559, abs=1e-5) and w.hi == pytest.approx(0.69936, abs=1e-5)
    nd = iv.loc[("original", "noise_distraction")]
    z2 = 1.959964**2
    assert nd.value == 0.0 and nd.lo == 0.0 and nd.hi == pytest.approx(z2 / (4 + z2), abs=1e-5)


def test_means_get_bootstrap_intervals_and_one_query_gets_none():
    """Mean WARG(0.9) of 0.6, 0.7, 0.8, 0.9 is 0.75; every resample's mean lies in [0.6, 0.9], and
    the interval holds the mean. Spearman's mean leaves q3 out: (0.5 + 1 + 0) / 3 = 0.5 over n = 3.
    The shuffled condition explained one query: its values, no interval (NaN bounds)."""
    iv = figure_intervals(_batch()).set_index(["condition", "metric"])
    warg = iv.loc[("original", "warg_0.9")]
    assert warg.value == pytest.approx(0.75) and warg.method == "bootstrap"
    assert 0.6 <= warg.lo < 0.75 < warg.hi <= 0.9
    sp = iv.loc[("original", "spearman")]
    assert sp.value == pytest.approx(0.5) and sp.n == 3
    one = iv.loc[("shuffled", "warg_0.9")]
    assert one.value == pytest.approx(0.5) and one.n == 1 and math.isnan(one.lo) and math.isnan(one.hi)
    assert iv.loc[("shuffled", "wasted_retrieval")].lo > 0  # Wilson is defined on one query


def test_paired_change_is_the_mean_of_per_query_differences():
    """Differences 0.1, 0.0, 0.3 over the shared queries a, b, c (d is the baseline's alone): mean
    0.1333 over n = 3; a constant difference has a point interval; one shared query, NaN bounds."""
    base = {"a": {"w": 0.1, "x": 0.0}, "b": {"w": 0.2, "x": 0.0}, "c": {"w": 0.3, "x": 0.0}, "d": {"w": 9.0}}
    cand = {"a": {"w": 0.2, "x": 1.0}, "b": {"w": 0.2, "x": 1.0}, "c": {"w": 0.6, "x": 1.0}}
    ch = paired_change(base, cand, ["w", "x"])
    assert ch["w"].value == pytest.approx(0.4 / 3) and ch["w"].n == 3
    assert 0.0 <= ch["w"].lo <= ch["w"].value <= ch["w"].hi <= 0.3 + 1e-6
    assert (ch["x"].value, ch["x"].lo, ch["x"].hi) == (pytest.approx(1.0), pytest.approx(1.0), pytest.approx(1.0))
    one = paired_change({"a": {"w": 0.1}}, {"a": {"w": 0.4}}, ["w"])["w"]
    assert one.value == pytest.approx(0.3) and math.isnan(one.lo) and one.n == 1
    assert paired_change({"a": {"w": 0.1}}, {"b": {"w": 0.4}}, ["w"]) == {}

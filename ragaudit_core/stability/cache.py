"""Results computed once per data version and kept in the database.

The stability metrics over every run pair take seconds on a million evidence entries.
They depend only on the stored data and the options, so they are computed once — at
ingest time for the default options, on first request otherwise — and stored in
``derived_results`` keyed by (data version, options). A restarted dashboard, another
session, or the CLI then reads them back in milliseconds.

Stored as Arrow IPC tables plus JSON (never pickle: a database file may come from
someone else, and reading it must not run code).
"""

from __future__ import annotations

import json
from dataclasses import asdict

import duckdb
import pandas as pd

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import catalog, derived
from ragaudit_core.logs.selection import comparable_runs, natural_sorted
from ragaudit_core.stability.compare import CompareResult, CompareSummary, compare_runs
from ragaudit_core.stability.metrics import StabilityOptions, StabilityResult, compute_stability
from ragaudit_core.stability.summary import StabilitySummary
from ragaudit_core.stability.uncertainty import StabilityIntervals

__all__ = [
    "DEFAULT_DENSITY_BINS",
    "compare_cached",
    "default_options",
    "opening_pair",
    "precompute",
    "stability_cached",
]

DEFAULT_DENSITY_BINS = 20
_TABLES = ("runs", "pairs", "queries", "density")


def _frames(d: dict[str, str]) -> dict[str, pd.DataFrame]:
    return {name: derived.FRAME.decode(bytes.fromhex(hexdata)) for name, hexdata in d.items()}


def _encode(res: StabilityResult) -> bytes:
    parts = {name: derived.FRAME.encode(df).hex() for name in _TABLES if (df := getattr(res, name)) is not None}
    intervals = res.intervals.to_json() if res.intervals is not None else None
    return json.dumps({"summary": res.summary.to_json(), "tables": parts, "intervals": intervals}).encode()


def _decode(payload: bytes) -> StabilityResult:
    d = json.loads(payload)
    frames: dict[str, pd.DataFrame | None] = {**dict.fromkeys(_TABLES), **_frames(d["tables"])}
    return StabilityResult(
        runs=frames["runs"],
        pairs=frames["pairs"],
        queries=frames["queries"],
        summary=StabilitySummary.from_json(d["summary"]),
        density=frames["density"],
        intervals=StabilityIntervals.from_json(d["intervals"]) if d.get("intervals") else None,
    )


def _encode_compare(res: CompareResult) -> bytes:
    intervals = res.intervals.to_json() if res.intervals is not None else None
    return json.dumps(
        {
            "baseline": res.baseline,
            "candidate": res.candidate,
            "tables": {n: derived.FRAME.encode(getattr(res, n)).hex() for n in ("pair", "runs", "queries")},
            "summary": asdict(res.summary),
            "intervals": intervals,
        }
    ).encode()


def _decode_compare(payload: bytes) -> CompareResult:
    d = json.loads(payload)
    t = _frames(d["tables"])
    return CompareResult(
        d["baseline"],
        d["candidate"],
        t["pair"],
        t["runs"],
        t["queries"],
        CompareSummary(**d["summary"]),
        StabilityIntervals.from_json(d["intervals"]) if d.get("intervals") else None,
    )


_STABILITY = derived.Codec(_encode, _decode)
_COMPARE = derived.Codec(_encode_compare, _decode_compare)


def _options_json(opts: StabilityOptions) -> dict:
    return {k: (list(v) if isinstance(v, (tuple, list)) else v) for k, v in asdict(opts).items()}


def stability_cached(
    con: duckdb.DuckDBPyConnection,
    opts: StabilityOptions = StabilityOptions(),
    *,
    density_bins: int | None = DEFAULT_DENSITY_BINS,
) -> StabilityResult:
    """:func:`compute_stability` (without cells), read from the database when stored."""
    return derived.stored(
        con,
        "stability/7",  # 4: gap ratio interval; 5: effects intervals; 6: mixed-id pairs left out; 7: baseline
        # pairs oriented, gap ratio interval over the span-compared pairs
        {"opts": _options_json(opts), "bins": density_bins},
        lambda: compute_stability(con, opts, density_bins=density_bins),
        _STABILITY,
    )


def compare_cached(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    candidate: str,
    *,
    tau: float = FLIP_THRESHOLD,
    resamples: int = DEFAULT_RESAMPLES,
) -> CompareResult:
    """:func:`compare_runs` of the two runs (every shared query, no top-k cut), read from the
    database when stored for this data version; the compare page's default pair is stored at ingest."""
    return derived.stored(
        con,
        "compare/2",  # 2: CompareSummary.ids_meet
        [baseline, candidate, tau, resamples],
        lambda: compare_runs(con, baseline, candidate, tau=tau, resamples=resamples),
        _COMPARE,
    )


def default_options(con: duckdb.DuckDBPyConnection, tau: float = FLIP_THRESHOLD) -> StabilityOptions:
    """What the dashboard and the CLI compare when the user picks no runs: every run, or, when the
    default selection (:func:`logs.selection.comparable_runs`) leaves some out — sharing no query,
    asking other questions under the same ids, or narrowing the shared queries — the runs it keeps."""
    sel = comparable_runs(con)
    return StabilityOptions(
        runs=sel.runs if sel.partial else None, flip_threshold=tau, allow_missing=True, resamples=DEFAULT_RESAMPLES
    )


@derived.at_ingest("stability.overview")
def precompute(con: duckdb.DuckDBPyConnection) -> StabilityResult | None:
    """Compute and store what the dashboard opens on (stability over every pair, τ = 0.5).

    Returns None when fewer than two runs are loaded (there is nothing to compare).
    """
    cur = con.cursor()
    try:
        n_runs = cur.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    finally:
        cur.close()
    if n_runs < 2:
        return None
    try:
        return stability_cached(con, default_options(con))
    except ValueError:  # e.g. no query in common: the page reports it when opened
        return None


def opening_pair(con: duckdb.DuckDBPyConnection) -> tuple[str, str] | None:
    """The pair the compare, stability and drill-down pages open on: :func:`catalog.default_pair`
    among the runs the default selection compares (:func:`logs.selection.comparable_runs`), so that
    a run it leaves out — asking other questions under the same ids, sharing no query, narrowing
    the shared queries — is not opened on while the pages say it was left out; among every run
    with evidence when the selection leaves none out or its runs share no query. None when no two
    runs share a query."""
    sel = comparable_runs(con)
    pair = catalog.default_pair(con, natural_sorted(sel.runs)) if sel.partial else None
    return pair or catalog.default_pair(con, natural_sorted(catalog.evidence_run_ids(con)))


@derived.at_ingest("stability.default_pair")
def precompute_default_pair(con: duckdb.DuckDBPyConnection) -> CompareResult | None:
    """Store the comparison the compare and stability pages open on (:func:`opening_pair`,
    τ = 0.5); None when no two runs share a query."""
    pair = opening_pair(con)
    if pair is None:
        return None
    try:
        return compare_cached(con, *pair)
    except ValueError:
        return None

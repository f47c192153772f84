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

import hashlib
import io
import json
from dataclasses import asdict

import duckdb
import pandas as pd
import pyarrow as pa

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import store
from ragaudit_core.logs.selection import comparable_runs
from ragaudit_core.stability.metrics import StabilityOptions, StabilityResult, compute_stability
from ragaudit_core.stability.summary import StabilitySummary
from ragaudit_core.stability.uncertainty import StabilityIntervals

__all__ = ["DEFAULT_DENSITY_BINS", "default_options", "precompute", "stability_cached"]

DEFAULT_DENSITY_BINS = 20
_TABLES = ("runs", "pairs", "queries", "density")


def _key(version: str, opts: StabilityOptions, density_bins: int | None) -> str:
    d = asdict(opts)
    d = {k: (list(v) if isinstance(v, (tuple, list)) else v) for k, v in d.items()}
    blob = json.dumps(
        {"v": version, "opts": d, "bins": density_bins, "kind": "stability/2"}, sort_keys=True, default=list
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _encode(res: StabilityResult) -> bytes:
    parts = {}
    for name in _TABLES:
        df = getattr(res, name)
        if df is None:
            continue
        sink = io.BytesIO()
        table = pa.Table.from_pandas(df, preserve_index=False)
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        parts[name] = sink.getvalue().hex()
    intervals = res.intervals.to_json() if res.intervals is not None else None
    return json.dumps({"summary": res.summary.to_json(), "tables": parts, "intervals": intervals}).encode()


def _decode(payload: bytes) -> StabilityResult:
    d = json.loads(payload)
    frames: dict[str, pd.DataFrame | None] = dict.fromkeys(_TABLES)
    for name, hexdata in d["tables"].items():
        with pa.ipc.open_stream(io.BytesIO(bytes.fromhex(hexdata))) as r:
            frames[name] = r.read_all().to_pandas()
    return StabilityResult(
        runs=frames["runs"],
        pairs=frames["pairs"],
        queries=frames["queries"],
        summary=StabilitySummary.from_json(d["summary"]),
        density=frames["density"],
        intervals=StabilityIntervals.from_json(d["intervals"]) if d.get("intervals") else None,
    )


def stability_cached(
    con: duckdb.DuckDBPyConnection,
    opts: StabilityOptions = StabilityOptions(),
    *,
    density_bins: int | None = DEFAULT_DENSITY_BINS,
) -> StabilityResult:
    """:func:`compute_stability` (without cells), read from the database when stored."""
    version = store.data_version(con)
    key = _key(version, opts, density_bins)
    cur = con.cursor()
    try:
        rows = cur.execute("SELECT payload FROM derived_results WHERE key = ?", [key]).fetchall()
        if rows:
            return _decode(bytes(rows[0][0]))
        res = compute_stability(cur, opts, density_bins=density_bins)
        cur.execute("DELETE FROM derived_results WHERE data_version <> ?", [version])
        cur.execute(
            "INSERT OR REPLACE INTO derived_results VALUES (?, ?, 'stability', ?, now())", [key, version, _encode(res)]
        )
        return res
    finally:
        cur.close()


def default_options(con: duckdb.DuckDBPyConnection, tau: float = FLIP_THRESHOLD) -> StabilityOptions:
    """What the dashboard and the CLI compare when the user picks no runs: every run, or, when
    some share no query with the others, the default selection (:func:`logs.selection.comparable_runs`)."""
    sel = comparable_runs(con)
    return StabilityOptions(
        runs=sel.runs if sel.left_out else None, flip_threshold=tau, allow_missing=True, resamples=DEFAULT_RESAMPLES
    )


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

"""The ``runs`` table's rows: one per run, with the grid settings (top-k, chunk size, overlap,
embedder) its first logged config names. The config itself is kept as logged; a setting that is
not an integer in the column's range is stored as NULL."""

from __future__ import annotations

import json

import duckdb

from ragaudit_core.defaults import INT32_MAX, INT32_MIN

__all__ = ["grid_setting", "new_run_rows"]


def grid_setting(v: object) -> int | None:
    """A grid setting (top-k, chunk size, overlap) as an INTEGER column value; None when the
    config holds none, or a value that is not an integer in the column's range (the config
    itself is kept as logged)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    elif isinstance(v, str) and v.strip().isdecimal():
        v = int(v.strip())
    return v if isinstance(v, int) and INT32_MIN <= v <= INT32_MAX else None


def new_run_rows(con: duckdb.DuckDBPyConnection, run_configs: dict[str, tuple[dict | None, str, int]]) -> list[tuple]:
    """Rows for the runs table: runs not yet stored, with the grid settings their config names."""
    existing = {r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()}
    rows = []
    for run_id, (cfg, _p, _l) in run_configs.items():
        if run_id in existing:
            continue
        c = cfg or {}
        rows.append(
            (
                run_id,
                None if cfg is None else json.dumps(cfg, ensure_ascii=False, sort_keys=True),
                grid_setting(c.get("top_k")),
                grid_setting(c.get("chunk_size")),
                grid_setting(c.get("chunk_overlap")),
                None if c.get("embedder") is None else str(c.get("embedder")),
            )
        )
    return rows

"""The cells every stability metric is an aggregate of (seed 000, §3): for each (level, pair of
runs, query), the sizes of the two evidence sets, their intersection and the Jaccard index

    J(A, B) = |A ∩ B| / |A ∪ B| = n_inter / (n_a + n_b − n_inter),   J = 1 when both are empty,

built chunk of queries by chunk (every metric is per query, so a chunk is independent) into the
temporary tables ``_cells`` (level, ra, rb, qi, n_a, n_b, n_inter, j), ``_sizes_all`` (the
distinct documents of each run and query) and ``_evn`` (its entries), over the views
:func:`.metrics._compute` registers (``_sel_runs``, ``_eval_q``, ``_span_runs``, ``_pair_levels``,
``_map``).

Two ways to the same numbers (``tests/stability/test_cells.py`` compares them table by table):

* **Run masks** (up to :data:`MASK_MAX_RUNS` compared runs). One ``GROUP BY`` of a chunk's entries
  per (query, item) gives each item's set of runs as the bits of a ``UBIGINT``; ``_mcount`` counts
  the items of each (level, query, mask). A run's set size is the sum of the counts whose mask
  holds its bit, a pair's intersection the sum of those holding both — a few ``bincount`` calls per
  run and per pair over ``_mcount``, which holds one row per distinct mask of a query, not one per
  (item, run). The cells then go back to DuckDB as Arrow tables of :data:`PART_CELLS`, and while
  they are in numpy the per-query figures that would otherwise join or group all of ``_cells`` are
  kept (:mod:`.joint`, :mod:`.worst`).
* **The items' self-join** (:data:`.sql.CELLS_SQL`, :data:`.sql.KEYED_CELLS_SQL`), for more runs
  than a mask has bits.

An item is a document id at the document level and a (document id, span hash) at the span level,
keyed by DuckDB's 64-bit ``hash`` where :func:`ragaudit_core.logs.catalog.hash_keys_unique` has
verified the stored ids collision-free, else by the (canonical) ids themselves. A duplicate within
one run's list counts once; entries past the top-k cut (``position < topk``) are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.stability.joint import Joint, joint_by_sql
from ragaudit_core.stability.sql import CELLS_SQL, EV_KEYED_SQL, EV_MAPPED_SQL, KEYED_CELLS_SQL, MASKS_SQL
from ragaudit_core.stability.worst import Worst, worst_by_sql

__all__ = ["CHUNK_CELLS", "CHUNK_ENTRIES", "MASK_MAX_RUNS", "PART_CELLS", "build_cells"]

CHUNK_ENTRIES = 2_000_000
"""Evidence entries per chunk of queries the cells are built from: about what DuckDB's default
512 MB holds without spilling."""

MASK_MAX_RUNS = 64
"""Run masks hold one bit per compared run in a ``UBIGINT``: up to 64 runs."""

PART_CELLS = 1 << 20
"""Cells of the run-mask path handed to DuckDB at once (47 MB of numpy columns): a chunk of 4M cells
was built whole before it went over, 180 MB at 24 runs."""

CHUNK_CELLS = 4_000_000
"""Cells (pairs × levels × queries) per chunk of the run-mask path, whose cells are numpy arrays
before they go to DuckDB: 12 runs (132 pair-levels) keep chunks by entries alone up to 30,000
queries; 64 runs (4,032 pair-levels) take about 1,000 queries a chunk (a review measured 1.0 GB
against the self-join's 0.78 GB for 6M cells in one chunk)."""

_CELL_TYPES = {
    "level": np.int8,  # 0 doc, 1 span; a string column in the table
    "ra": np.int32,
    "rb": np.int32,
    "qi": np.int32,
    "n_a": np.int64,
    "n_b": np.int64,
    "n_inter": np.int64,
    "j": np.float64,
}


def build_cells(
    cur: duckdb.DuckDBPyConnection,
    keyed: bool,
    topk: int,
    queries: list[str],
    pair_runs: list[str],
    density_bins: int | None = None,
    tau: float = FLIP_THRESHOLD,
) -> None:
    """``_cells``, ``_sizes_all`` and ``_evn`` for ``queries`` (indexed as in ``_eval_q``) over the
    entries of ``pair_runs`` at positions below ``topk``; by run masks up to :data:`MASK_MAX_RUNS`
    runs, by the items' self-join beyond. Then the levels side by side (:mod:`.joint`): ``_sdds``,
    and ``_density`` on a ``density_bins`` grid when asked; and each query's worst pair, collapse and
    flip at threshold ``tau`` (:mod:`.worst`): ``_qworst``."""
    entries = cur.execute(
        "SELECT count(*) FROM evidence WHERE list_contains(?::VARCHAR[], run_id)", [pair_runs]
    ).fetchall()[0][0]
    n_chunks = max(1, math.ceil(entries / CHUNK_ENTRIES))
    size = max(1, math.ceil(len(queries) / n_chunks))
    masked = len(pair_runs) <= MASK_MAX_RUNS
    if masked:
        sql = (EV_KEYED_SQL if keyed else EV_MAPPED_SQL) + MASKS_SQL
    else:
        sql = KEYED_CELLS_SQL if keyed else CELLS_SQL
    statements = [stmt for stmt in sql.split(";") if stmt.strip()]
    pairs = cur.execute("SELECT (level = 'span')::INTEGER AS lv, ra, rb FROM _pair_levels").fetchnumpy()
    if masked:  # bounded in cells too: many runs make many cells per query
        size = min(size, max(1, CHUNK_CELLS // max(1, len(pairs["lv"]))))
    # a chunk's cross product of pairs and queries is estimated smaller than the sizes it joins,
    # so DuckDB would build its hash tables on it and run out of its 512 MB (measured at 10M);
    # the joins' written order (the large side built) holds within 512 MB
    cur.execute("SET disabled_optimizers = 'build_side_probe_side'")
    made = False
    joint = Joint({(int(a), int(b)) for lv, a, b in zip(*pairs.values(), strict=True) if lv == 1}, density_bins)
    worst = Worst(len(queries), tau)

    def emit(part: pa.Table) -> None:  # a part of a chunk's run-mask cells into _cells
        nonlocal made
        _part(cur, part, create=not made)
        made = True

    try:
        for i, lo in enumerate(range(0, len(queries), size)):
            hi = min(lo + size, len(queries))
            chunk = pd.DataFrame(
                {"query_id": pd.Series(queries[lo:hi], dtype="string"), "qi": pd.Series(range(lo, hi), dtype="int32")}
            )
            cur.register("_chunk_q", chunk)
            for stmt in statements:
                cur.execute(stmt, [topk] if "e.position < ?" in stmt else [])
            if masked:
                cur.register("_sizes", _mask_cells(cur, lo, hi - lo, pairs, emit, (joint, worst)))
            _append(cur, i == 0, cells=not masked)
            if masked:
                cur.unregister("_sizes")
            cur.unregister("_chunk_q")
    finally:
        cur.execute("RESET disabled_optimizers")
    if masked:
        joint.store(cur)
        worst.store(cur)
    else:
        joint_by_sql(cur, density_bins)
        worst_by_sql(cur, tau)
    for table in ("_ev", "_items", "_mcount", "_inter", "_cells_part", "_sizes"):
        cur.execute(f"DROP TABLE IF EXISTS {table}")


_CELLS_SELECT = "SELECT level, ra, rb, qi, n_a, n_b, n_inter, j FROM _cells_part"


def _append(cur: duckdb.DuckDBPyConnection, first: bool, *, cells: bool = True) -> None:
    """Append a chunk's cells (unless handed over part by part, :func:`_part`), document sizes and
    entry counts to the whole call's tables."""
    for table, select in (
        *((("_cells", _CELLS_SELECT),) if cells else ()),
        ("_sizes_all", "SELECT lv, level, ri, qi, n FROM _sizes"),
        ("_evn", "SELECT ri, qi, count(*) AS n FROM _ev GROUP BY ri, qi"),
    ):
        cur.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {select}" if first else f"INSERT INTO {table} {select}")


def _part(cur: duckdb.DuckDBPyConnection, part: pa.Table, create: bool) -> None:
    """Append a part of a chunk's run-mask cells to ``_cells`` (``create``: the table's first)."""
    cur.register("_cells_part", part)
    try:
        cur.execute(
            f"CREATE OR REPLACE TEMP TABLE _cells AS {_CELLS_SELECT}"
            if create
            else f"INSERT INTO _cells {_CELLS_SELECT}"
        )
    finally:
        cur.unregister("_cells_part")


def _mask_cells(
    cur: duckdb.DuckDBPyConnection,
    lo: int,
    n_q: int,
    pairs: dict,
    emit: Callable[[pa.Table], None],
    sinks: tuple[Joint, Worst],
) -> pa.Table:
    """A chunk's cells from ``_mcount`` (level, query, run mask → items), handed to ``emit`` about
    :data:`PART_CELLS` at a time (doc pairs, then span pairs, in ``pairs``' order) and to ``sinks``
    pair by pair, and its document sizes, returned: ``n(r, q)`` sums the items whose mask holds r's
    bit, ``n_inter(a, b, q)`` those holding both (queries ``lo`` … ``lo + n_q − 1``, local index
    ``qi − lo``)."""
    m = cur.execute("SELECT lv::INTEGER AS lv, (qi - ?)::INTEGER AS q, mask, n FROM _mcount", [lo]).fetchnumpy()
    lv_all, q_all = np.asarray(m["lv"]), np.asarray(m["q"])
    mask_all, n_all = np.asarray(m["mask"], dtype=np.uint64), np.asarray(m["n"], dtype=np.float64)
    del m
    p_lv, p_ra, p_rb = (np.asarray(pairs[k]) for k in ("lv", "ra", "rb"))
    qi = np.arange(lo, lo + n_q, dtype=np.int32)
    per_part = max(1, PART_CELLS // max(n_q, 1))
    doc_sizes: dict[int, np.ndarray] = {}
    for lv in (0, 1):
        at = lv_all == lv
        q, mask, n = q_all[at], mask_all[at], n_all[at]
        here = p_lv == lv
        ra, rb = p_ra[here], p_rb[here]
        # each run's rows: the masks holding its bit (a byte a row, not float64 weights); its items
        # are the counts of those rows
        held = {int(r): ((mask >> np.uint64(r)) & np.uint64(1)).astype(bool) for r in np.union1d(ra, rb)}
        sizes = {r: np.bincount(q, weights=n * w, minlength=n_q).astype(np.int64) for r, w in held.items()}
        if lv == 0:
            doc_sizes = sizes
        for start in range(0, len(ra), per_part):
            part = slice(start, start + per_part)
            emit(_cells_part(lv, ra[part].tolist(), rb[part].tolist(), qi, q, n, held, sizes, sinks))
        del held
    ri = np.array(sorted(doc_sizes), dtype=np.int32)
    counts = np.stack([doc_sizes[r] for r in ri.tolist()]) if len(ri) else np.zeros((0, n_q), np.int64)
    r_idx, q_idx = np.nonzero(counts)
    sizes_t = pa.table(
        {
            "lv": np.zeros(len(r_idx), np.uint8),
            "level": pa.array(["doc"] * len(r_idx), pa.string()),
            "ri": ri[r_idx],
            "qi": qi[q_idx],
            "n": counts[r_idx, q_idx],
        }
    )
    return sizes_t


def _cells_part(
    lv: int,
    ra: list[int],
    rb: list[int],
    qi: np.ndarray,
    q: np.ndarray,
    n: np.ndarray,
    held: dict[int, np.ndarray],
    sizes: dict[int, np.ndarray],
    sinks: tuple[Joint, Worst],
) -> pa.Table:
    """The cells of pairs ``ra[i], rb[i]`` at level ``lv`` over the chunk's queries ``qi``, each
    column written in place (lists of per-pair arrays concatenated held a chunk's cells twice)."""
    n_q = len(qi)
    out = {k: np.empty(len(ra) * n_q, dtype=t) for k, t in _CELL_TYPES.items()}
    out["level"][:] = lv
    out["ra"][:] = np.repeat(np.asarray(ra, dtype=np.int32), n_q)
    out["rb"][:] = np.repeat(np.asarray(rb, dtype=np.int32), n_q)
    out["qi"][:] = np.tile(qi, len(ra))
    for i, (a, b) in enumerate(zip(ra, rb, strict=True)):
        at = slice(i * n_q, (i + 1) * n_q)
        inter = np.bincount(q, weights=n * (held[a] & held[b]), minlength=n_q).astype(np.int64)
        union = sizes[a] + sizes[b] - inter
        j = out["j"][at]
        j[:] = 1.0
        np.divide(inter, union, out=j, where=union > 0)  # as the SQL: n_inter * 1.0 / union
        out["n_a"][at], out["n_b"][at], out["n_inter"][at] = sizes[a], sizes[b], inter
        for sink in sinks:
            sink.add(lv, a, b, sizes[a], sizes[b], inter, j, int(qi[0]))
    level = pa.DictionaryArray.from_arrays(out.pop("level"), pa.array(["doc", "span"]))
    return pa.table({"level": level.cast(pa.string()), **out})

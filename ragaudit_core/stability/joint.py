"""The two levels of one (pair, query) side by side (seed 000, §3): the cells where the document
sets are equal while the span sets differ ("same documents, different spans", per pair), and the
(``J_doc``, ``J_span``) points counted on a ``bins × bins`` grid (the scatter's density view; bin
``i`` holds ``i/bins ≤ J < (i+1)/bins``, ``J = 1`` in the last bin).

Into the temporary tables ``_sdds`` (ra, rb, n: span-level pairs only) and ``_density`` (doc_bin,
span_bin, n: non-empty bins only), two ways to the same counts (``tests/stability/test_cells.py``):

* :class:`Joint` totals them chunk by chunk from the run-mask cells while they are in numpy
  (:mod:`.cells`): a chunk's doc cells of a pair are kept until its span cells come;
* :func:`joint_by_sql` joins the two levels of ``_cells`` (the items' self-join path, past 64 runs).

Each was a join of ``_cells`` with itself before — 11.5M span cells against 11.5M doc cells for 24
runs of 41,666 queries, twice (3.0 s each on 2 cores).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

__all__ = ["Joint", "joint_by_sql"]

_ON = "d.level = 'doc' AND s.level = 'span' AND d.ra = s.ra AND d.rb = s.rb AND d.qi = s.qi"

_SDDS_SQL = f"""
CREATE OR REPLACE TEMP TABLE _sdds AS
SELECT s.ra, s.rb, sum(CASE WHEN d.n_inter = d.n_a AND d.n_a = d.n_b
                              AND NOT (s.n_inter = s.n_a AND s.n_a = s.n_b) THEN 1 ELSE 0 END) AS n
FROM _cells s JOIN _cells d ON {_ON}
GROUP BY s.ra, s.rb
"""

_DENSITY_SQL = f"""
CREATE OR REPLACE TEMP TABLE _density AS
SELECT least(floor(d.j * $bins), $bins - 1)::INTEGER AS doc_bin,
       least(floor(s.j * $bins), $bins - 1)::INTEGER AS span_bin,
       count(*) AS n
FROM _cells s JOIN _cells d ON {_ON}
GROUP BY ALL
"""


def joint_by_sql(cur: duckdb.DuckDBPyConnection, bins: int | None) -> None:
    """``_sdds`` and, with ``bins``, ``_density`` from the two levels of ``_cells`` joined."""
    cur.execute(_SDDS_SQL)
    if bins is not None:
        cur.execute(_DENSITY_SQL, {"bins": bins})


class Joint:
    """``_sdds`` and ``_density`` totalled from cells as they are made: ``add`` each pair's cells of
    one chunk of queries (the first, ``lo``, not needed here), its doc level before its span level;
    ``store`` writes the tables. Only the pairs compared at span level (``span_pairs``, run indices)
    count."""

    def __init__(self, span_pairs: set[tuple[int, int]], bins: int | None) -> None:
        self.span_pairs, self.bins = span_pairs, bins
        self._doc: dict[tuple[int, int], tuple[np.ndarray, np.ndarray | None]] = {}
        self.sdds: dict[tuple[int, int], int] = {}
        self.grid = np.zeros(bins * bins if bins else 0, dtype=np.int64)

    def add(
        self, lv: int, a: int, b: int, n_a: np.ndarray, n_b: np.ndarray, inter: np.ndarray, j: np.ndarray, lo: int
    ) -> None:
        if (a, b) not in self.span_pairs:
            return
        same = (inter == n_a) & (n_a == n_b)  # the two sets are equal
        # as the SQL: least(floor(j * bins), bins - 1), j a double times an integer
        cell_bin = None if self.bins is None else np.minimum(np.floor(j * self.bins), self.bins - 1).astype(np.int64)
        if lv == 0:
            self._doc[(a, b)] = (same, cell_bin)
            return
        doc_same, doc_bin = self._doc.pop((a, b))
        self.sdds[(a, b)] = self.sdds.get((a, b), 0) + int(np.count_nonzero(doc_same & ~same))
        if self.bins is not None and doc_bin is not None and cell_bin is not None:
            self.grid += np.bincount(doc_bin * self.bins + cell_bin, minlength=self.bins * self.bins)

    def store(self, cur: duckdb.DuckDBPyConnection) -> None:
        keys = sorted(self.sdds)
        sdds = pd.DataFrame(
            {
                "ra": np.array([a for a, _b in keys], dtype=np.int32),
                "rb": np.array([b for _a, b in keys], dtype=np.int32),
                "n": np.array([self.sdds[k] for k in keys], dtype=np.int64),
            }
        )
        _table(cur, "_sdds", sdds)
        if self.bins is not None:
            (at,) = np.nonzero(self.grid)
            density = pd.DataFrame(
                {
                    "doc_bin": (at // self.bins).astype(np.int32),
                    "span_bin": (at % self.bins).astype(np.int32),
                    "n": self.grid[at],
                }
            )
            _table(cur, "_density", density)


def _table(cur: duckdb.DuckDBPyConnection, name: str, df: pd.DataFrame) -> None:
    cur.register("_joint_part", df)
    try:
        cur.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM _joint_part")
    finally:
        cur.unregister("_joint_part")

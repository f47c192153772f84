"""Per (level, query), over its pairs (seed 000, §3): the worst pair — the lowest ``J``, ties to
the first pair in (run_a, run_b) order, as ``min(struct_pack(j, ra, rb))`` orders them — whether
some pair collapsed (``J = 0`` with both sides non-empty) and whether some pair flipped
(``J < τ``). Into the temporary table ``_qworst`` (level, qi, j, ra, rb, collapsed, flipped) that
:data:`.sql.QUERIES_SQL` names, two ways to the same rows (``tests/stability/test_cells.py``):

* :class:`Worst` keeps them per query while the run-mask cells are in numpy (:mod:`.cells`);
* :func:`worst_by_sql` groups ``_cells`` (the items' self-join path, past 64 runs).

The grouping of ``_cells`` by (level, query) took 1.9–2.3 s for 24 runs of 41,666 queries (23M
cells) on 2 cores; kept per pair as the cells are made it is a few comparisons per cell.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

__all__ = ["Worst", "worst_by_sql"]

_WORST_SQL = """
CREATE OR REPLACE TEMP TABLE _qworst AS
SELECT level, qi, w.j AS j, w.ra AS ra, w.rb AS rb, collapsed, flipped
FROM (SELECT level, qi, min(struct_pack(j := j, ra := ra, rb := rb)) AS w,
             max(CASE WHEN n_a > 0 AND n_b > 0 AND n_inter = 0 THEN 1 ELSE 0 END) AS collapsed,
             max(CASE WHEN j < $tau THEN 1 ELSE 0 END) AS flipped
      FROM _cells GROUP BY level, qi)
"""


def worst_by_sql(cur: duckdb.DuckDBPyConnection, tau: float) -> None:
    """``_qworst`` from ``_cells``."""
    cur.execute(_WORST_SQL, {"tau": tau})


class Worst:
    """``_qworst`` kept per query as cells are made: ``add`` a pair's cells of the queries
    ``lo`` … ``lo + len(j) − 1``, in any order of pairs and chunks; ``store`` writes the table."""

    def __init__(self, n_q: int, tau: float) -> None:
        self.n_q, self.tau = n_q, tau
        self.levels: dict[int, dict[str, np.ndarray]] = {}

    def _level(self, lv: int) -> dict[str, np.ndarray]:
        if lv not in self.levels:
            big = np.iinfo(np.int32).max
            self.levels[lv] = {
                "j": np.full(self.n_q, np.inf),
                "ra": np.full(self.n_q, big, dtype=np.int32),
                "rb": np.full(self.n_q, big, dtype=np.int32),
                "collapsed": np.zeros(self.n_q, dtype=np.int32),
                "flipped": np.zeros(self.n_q, dtype=np.int32),
            }
        return self.levels[lv]

    def add(
        self, lv: int, a: int, b: int, n_a: np.ndarray, n_b: np.ndarray, inter: np.ndarray, j: np.ndarray, lo: int
    ) -> None:
        w = self._level(lv)
        at = slice(lo, lo + len(j))
        bj, bra, brb = w["j"][at], w["ra"][at], w["rb"][at]
        # (j, ra, rb) below the kept one, compared as a struct: j first, then the runs' indices
        lower = (j < bj) | ((j == bj) & ((a < bra) | ((a == bra) & (b < brb))))
        bj[lower], bra[lower], brb[lower] = j[lower], a, b
        w["collapsed"][at] |= (n_a > 0) & (n_b > 0) & (inter == 0)
        w["flipped"][at] |= j < self.tau

    def store(self, cur: duckdb.DuckDBPyConnection) -> None:
        levels = sorted(self.levels)
        qi = np.arange(self.n_q, dtype=np.int32)
        df = pd.DataFrame(
            {
                "level": pd.Series(
                    np.repeat(np.array(["doc", "span"], dtype=object)[levels], self.n_q), dtype="string"
                ),
                "qi": np.tile(qi, len(levels)),
                **{
                    k: np.concatenate([self.levels[lv][k] for lv in levels]) if levels else np.array([], dtype=t)
                    for k, t in (
                        ("j", np.float64),
                        ("ra", np.int32),
                        ("rb", np.int32),
                        ("collapsed", np.int32),
                        ("flipped", np.int32),
                    )
                },
            }
        )
        cur.register("_qworst_part", df)
        try:
            cur.execute("CREATE OR REPLACE TEMP TABLE _qworst AS SELECT * FROM _qworst_part")
        finally:
            cur.unregister("_qworst_part")

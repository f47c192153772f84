"""Which runs to compare when the user has not said: the largest set of runs that share queries.

A stability comparison is over the queries every compared run logged. One small upload that
shares no query with the loaded runs would make that intersection empty ("nothing to compare"),
so the default selection is the largest group of runs that share queries: from each seed run
(the largest first) the others are added, the most overlapping first, while the shared queries
stay non-empty; the group with the most runs wins (ties: the most shared queries). A run left
out is named in one sentence. (Greedy: the largest group is NP-hard in general; on real logs,
where runs differ by settings over one query set, the greedy group is the whole set.) Runs are
listed in natural order (``k5 < k10 < k20``). Runs whose query ids name other questions than
the kept runs' (:mod:`.sanity`: the same id, a different text) are left out first, named apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.logs import derived
from ragaudit_core.logs.sanity import query_text_conflicts

__all__ = ["RunSelection", "comparable_runs", "natural_key", "natural_sorted"]

_DIGITS = re.compile(r"(\d+)")


def natural_key(s: str) -> tuple:
    """Sort key reading digit runs as numbers: ``k5-c128 < k10-c128 < k20-c128``."""
    return tuple((0, int(p), "") if p.isdecimal() else (1, 0, p.casefold()) for p in _DIGITS.split(str(s)) if p)


def natural_sorted(items: Iterable[str]) -> list[str]:
    return sorted(items, key=natural_key)


@dataclass(frozen=True)
class RunSelection:
    """The runs compared by default, the runs left out, and the sentence that says why."""

    runs: list[str]
    left_out: list[str] = field(default_factory=list)
    n_shared: int = 0  # queries every selected run logged
    disagreeing: list[str] = field(default_factory=list)  # left out: same query ids, other questions

    @property
    def partial(self) -> bool:
        """Some run is left out (for any of the reasons): compare ``runs``, not every run."""
        return bool(self.left_out or self.disagreeing)

    @property
    def note(self) -> str | None:
        parts = []
        if self.disagreeing:
            names = ", ".join(repr(r) for r in self.disagreeing[:5]) + (" …" if len(self.disagreeing) > 5 else "")
            parts.append(
                f"Left out {len(self.disagreeing)} run(s) whose query ids name other questions than the compared "
                f"runs' (the same id, a different text): {names}; pick them to compare anyway."
            )
        if self.left_out:
            names = ", ".join(repr(r) for r in self.left_out[:5]) + (" …" if len(self.left_out) > 5 else "")
            parts.append(
                f"Left out {len(self.left_out)} run(s) that share no query with the {len(self.runs)} compared "
                f"(which share {self.n_shared:,}): {names}; pick runs to compare them instead."
            )
        return " ".join(parts) or None


def comparable_runs(con: duckdb.DuckDBPyConnection, candidates: list[str] | None = None) -> RunSelection:
    """The default selection among ``candidates`` (default: every run with evidence records);
    stored per data version (computed at ingest for every run)."""
    return _comparable_runs(con, None if candidates is None else sorted(set(candidates)))


def _selection_of(blob: bytes) -> RunSelection:
    return RunSelection(**json.loads(blob))


@derived.memoized("selection.comparable/1", derived.Codec(lambda s: json.dumps(asdict(s)).encode(), _selection_of))
def _comparable_runs(con: duckdb.DuckDBPyConnection, candidates: list[str] | None) -> RunSelection:
    sets = _query_sets(con, candidates)
    disagreeing = _disagreeing(con, {r: int(m.sum()) for r, m in sets.items()})
    for r in disagreeing:
        del sets[r]
    if len(sets) < 2:
        n = int(next(iter(sets.values())).sum()) if sets else 0
        return RunSelection(natural_sorted(sets), [], n, natural_sorted(disagreeing))
    seeds = sorted(sets, key=lambda r: (-int(sets[r].sum()), natural_key(r)))[:MAX_SEEDS]
    best = max((_grow(sets, seed) for seed in seeds), key=lambda g: (len(g[0]), g[1]))
    chosen, n_common = best
    left = [r for r in sets if r not in chosen]
    return RunSelection(natural_sorted(chosen), natural_sorted(left), n_common, natural_sorted(disagreeing))


@derived.at_ingest("selection.comparable")
def _precompute(con: duckdb.DuckDBPyConnection) -> RunSelection:
    return comparable_runs(con)


def _query_sets(con: duckdb.DuckDBPyConnection, candidates: list[str] | None) -> dict[str, np.ndarray]:
    """Each run's logged queries as a boolean mask over every query id (one column per id)."""
    rows = con.execute(
        """SELECT run_id, (dense_rank() OVER (ORDER BY query_id) - 1)::INTEGER AS qi FROM records
           WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], run_id)""",
        [candidates, candidates],
    ).fetchnumpy()
    run_ids, qi = rows["run_id"], np.asarray(rows["qi"], dtype=np.int64)
    n = int(qi.max()) + 1 if len(qi) else 0
    codes, names = pd.factorize(np.asarray(run_ids, dtype=object))
    sets = {}
    for i, r in enumerate(names):
        mask = np.zeros(n, dtype=bool)
        mask[qi[codes == i]] = True
        sets[str(r)] = mask
    return sets


def _disagreeing(con: duckdb.DuckDBPyConnection, sizes: dict[str, int]) -> list[str]:
    """Runs to leave out because their query ids name other questions (:mod:`.sanity`): runs are
    kept greedily, the largest first (ties in natural order), unless they disagree with a kept run."""
    pairs = {frozenset((c.run_a, c.run_b)) for c in query_text_conflicts(con) if c.disagree}
    if not pairs:
        return []
    kept: list[str] = []
    out = []
    for r in sorted(sizes, key=lambda r: (-sizes[r], natural_key(r))):
        if any(frozenset((r, k)) in pairs for k in kept):
            out.append(r)
        else:
            kept.append(r)
    return out


MAX_SEEDS = 50
"""Runs tried as the seed of a group (the largest first): the group with the most runs wins."""


def _grow(sets: dict[str, np.ndarray], first: str) -> tuple[list[str], int]:
    """Greedy group from ``first``: add runs, the most overlapping first, while queries stay
    shared; the group and how many queries it shares."""
    chosen, common = [first], sets[first].copy()
    overlap = {r: int(np.count_nonzero(sets[r] & sets[first])) for r in sets if r != first}
    for r in sorted(overlap, key=lambda r: (-overlap[r], natural_key(r))):
        shared = common & sets[r]
        if shared.any():
            chosen.append(r)
            common = shared
    return chosen, int(np.count_nonzero(common))

"""Which runs to compare when the user has not said: the most runs over the most shared queries.

A stability comparison is over the queries every compared run logged. One small upload that
shares no query with the loaded runs would make that intersection empty ("nothing to compare"),
so the default selection is the group of runs that gives the most (query, run pair) cells to
compare — shared queries × pairs: from each seed run (the largest first) the others are tried, the
most overlapping first, and each is added when it does not lower that count; the group with the
most cells wins (ties: the most runs, then the most shared queries). So a run sharing no query is
left out, and so is a small run that would narrow twelve runs over 300 queries to fourteen over 9
(a stray upload of a few of the same questions); each kind is named in one sentence. (Greedy: the
best group is NP-hard in general; on real logs, where runs differ by settings over one query set,
the greedy group is the whole set.) Runs are
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
from ragaudit_core.wording import counted

__all__ = ["RunSelection", "comparable_runs", "natural_key", "natural_sorted", "runs_sharing_queries"]

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
    narrowing: list[str] = field(default_factory=list)  # left out: would cut the shared queries to a few

    @property
    def partial(self) -> bool:
        """Some run is left out (for any of the reasons): compare ``runs``, not every run."""
        return bool(self.left_out or self.disagreeing or self.narrowing)

    @property
    def note(self) -> str | None:
        parts = []
        if self.disagreeing:
            names = ", ".join(repr(r) for r in self.disagreeing[:5]) + (" …" if len(self.disagreeing) > 5 else "")
            it = "it" if len(self.disagreeing) == 1 else "them"
            parts.append(
                f"Left out {counted(len(self.disagreeing), 'run')} whose query ids name other questions than the "
                f"compared runs' (the same id, a different text): {names}; pick {it} to compare anyway."
            )
        if self.narrowing:
            names = ", ".join(repr(r) for r in self.narrowing[:5]) + (" …" if len(self.narrowing) > 5 else "")
            it = "it" if len(self.narrowing) == 1 else "them"
            parts.append(
                f"Left out {counted(len(self.narrowing), 'run')} that would narrow the comparison from the "
                f"{counted(self.n_shared, 'query')} the {len(self.runs)} compared share to fewer: {names}; pick {it} "
                "to compare the queries they share."
            )
        if self.left_out:
            names = ", ".join(repr(r) for r in self.left_out[:5]) + (" …" if len(self.left_out) > 5 else "")
            one = len(self.left_out) == 1
            parts.append(
                f"Left out {counted(len(self.left_out), 'run')} that {'shares' if one else 'share'} no query with "
                + (
                    f"the {len(self.runs)} compared (which share {self.n_shared:,})"
                    if len(self.runs) > 1
                    else f"the one kept ({counted(self.n_shared, 'query')})"
                )
                + f": {names}; pick runs to compare {'it' if one else 'them'} instead."
            )
        return " ".join(parts) or None


def comparable_runs(con: duckdb.DuckDBPyConnection, candidates: list[str] | None = None) -> RunSelection:
    """The default selection among ``candidates`` (default: every run with evidence records);
    stored per data version (computed at ingest for every run)."""
    return _comparable_runs(con, None if candidates is None else sorted(set(candidates)))


def _selection_of(blob: bytes) -> RunSelection:
    return RunSelection(**json.loads(blob))


@derived.memoized("selection.comparable/2", derived.Codec(lambda s: json.dumps(asdict(s)).encode(), _selection_of))
def _comparable_runs(con: duckdb.DuckDBPyConnection, candidates: list[str] | None) -> RunSelection:
    qs = _QuerySets.load(con, candidates)
    disagreeing = _disagreeing(con, {r: len(ix) for r, ix in qs.sets.items()})
    for r in disagreeing:
        del qs.sets[r]
    sets = qs.sets
    if len(sets) < 2:
        n = len(next(iter(sets.values()))) if sets else 0
        return RunSelection(natural_sorted(sets), [], n, natural_sorted(disagreeing))
    seeds = sorted(sets, key=lambda r: (-len(sets[r]), natural_key(r)))[:MAX_SEEDS]
    best = max((qs.grow(seed) for seed in seeds), key=lambda g: (_cells(len(g[0]), len(g[1])), len(g[0]), len(g[1])))
    chosen, common = best
    in_common = qs.mask(common)
    taken = set(chosen)
    left = [r for r in sets if r not in taken and not in_common[sets[r]].any()]
    out = taken.union(left)
    narrowing = [r for r in sets if r not in out]
    return RunSelection(
        natural_sorted(chosen),
        natural_sorted(left),
        len(common),
        natural_sorted(disagreeing),
        natural_sorted(narrowing),
    )


@derived.at_ingest("selection.comparable")
def _precompute(con: duckdb.DuckDBPyConnection) -> RunSelection:
    return comparable_runs(con)


@dataclass
class _QuerySets:
    """Each run's logged queries as a sorted array of query indices (``sets``), with every
    (run, query) pair as two flat arrays (``run_of``, ``query_of``): memory and time grow with the
    records, not with runs × queries — a log naming a run per record has as many runs as queries
    (20,000 of each: 400 MB of dense masks and 21.6 s before)."""

    sets: dict[str, np.ndarray]
    names: list[str]
    run_of: np.ndarray
    query_of: np.ndarray
    n_queries: int

    @classmethod
    def load(cls, con: duckdb.DuckDBPyConnection, candidates: list[str] | None) -> _QuerySets:
        rows = con.execute(
            """SELECT run_id, (dense_rank() OVER (ORDER BY query_id) - 1)::INTEGER AS qi FROM records
               WHERE ?::VARCHAR[] IS NULL OR list_contains(?::VARCHAR[], run_id)""",
            [candidates, candidates],
        ).fetchnumpy()
        qi = np.asarray(rows["qi"], dtype=np.int64)
        codes, names = pd.factorize(np.asarray(rows["run_id"], dtype=object))
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
        sets = {str(r): np.sort(qi[order[bounds[i] : bounds[i + 1]]]) for i, r in enumerate(names)}
        return cls(sets, [str(r) for r in names], codes, qi, int(qi.max()) + 1 if len(qi) else 0)

    def mask(self, queries: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n_queries, dtype=bool)
        out[queries] = True
        return out

    def grow(self, first: str) -> tuple[list[str], np.ndarray]:
        """Greedy group from ``first``: try runs, the most overlapping first, adding each that keeps
        queries shared without lowering the cells compared; the group and the queries it shares.
        Runs sharing no query with ``first`` cannot join (the shared queries are ``first``'s)."""
        sets, common = self.sets, self.sets[first]
        in_common = self.mask(common)
        overlap = np.bincount(self.run_of[in_common[self.query_of]], minlength=len(self.names))
        tried = [r for r, n in zip(self.names, overlap.tolist()) if n and r != first and r in sets]
        chosen = [first]
        by_overlap = dict(zip(self.names, overlap.tolist()))
        for r in sorted(tried, key=lambda r: (-by_overlap[r], natural_key(r))):
            shared = sets[r][in_common[sets[r]]]
            if len(shared) and _cells(len(chosen) + 1, len(shared)) >= _cells(len(chosen), len(common)):
                chosen.append(r)
                in_common[common] = False
                in_common[shared] = True
                common = shared
        return chosen, common


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
"""Runs tried as the seed of a group (the largest first): the group with the most cells wins."""


def _cells(n_runs: int, n_shared: int) -> int:
    """The (query, run pair) cells a group of runs compares."""
    return n_shared * n_runs * (n_runs - 1) // 2


def runs_sharing_queries(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """The other runs that logged at least one of ``run_id``'s query ids, in natural order (what
    the compare page names when two picked runs share no query)."""
    rows = con.execute(
        "SELECT DISTINCT o.run_id FROM records o JOIN records r USING (query_id) WHERE r.run_id = ? AND o.run_id <> ?",
        [run_id, run_id],
    ).fetchall()
    return natural_sorted(r for (r,) in rows)

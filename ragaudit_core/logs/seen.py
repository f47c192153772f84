"""The (run, query) pairs an ingest has loaded, for "the first record of a (run, query) wins".

One call of the ingest remembers every pair it admitted and where (file, line), to reject a later
record of the same pair with a sentence naming the first; pairs stored by earlier ingests are
remembered without a place. At millions of records this is the ingest's largest state, so a pair
is one string, ``f"{len(run)}:{run}{query}"`` (unambiguous: the run's length says where the query
starts), and its place one integer, ``line << 24 | file`` — about 150 bytes a pair, against about
300 as a tuple key with a ``(path, line)`` tuple (measured: 4M one-entry records held 1.2 GB of
Python objects that way).

The ``records`` and ``prov_records`` tables of a new database have no primary key: its index held
about 150 bytes a pair in memory and slowed the insert 2.3x (2M pairs: +312 MB, 3.0 s against
1.3 s); older files keep theirs, which changes nothing. The pairs are unique because an ingest
admits a pair only when neither the table nor the call has it, and ingests of one process run one
at a time (:data:`ONE_INGEST_AT_A_TIME`: two dashboard sessions loading into one shared database
would otherwise both find a pair free in their own transactions); another process cannot write
the file at the same time (DuckDB's file lock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import duckdb

__all__ = ["ONE_INGEST_AT_A_TIME", "SeenPairs", "pair_key"]

ONE_INGEST_AT_A_TIME = threading.RLock()
"""Held by every ingest call for its whole transaction (module docstring)."""

_FILE_BITS = 24  # files of one call (the line number above them is unbounded)
_FILE_MASK = (1 << _FILE_BITS) - 1


def pair_key(run_id: str, query_id: str) -> str:
    """The one-string key of a (run, query) pair."""
    return f"{len(run_id)}:{run_id}{query_id}"


class SeenPairs:
    """Pairs stored before the call (:meth:`from_table`) and pairs admitted by it, with their place."""

    def __init__(self, stored: Iterable[str] = ()) -> None:
        self._stored = set(stored)
        self._first: dict[str, int] = {}
        self._paths: list[str] = []
        self._path_no: dict[str, int] = {}

    @classmethod
    def from_table(cls, con: duckdb.DuckDBPyConnection, table: str) -> SeenPairs:
        """The pairs of ``table`` (``records`` or ``prov_records``), keyed in SQL (DuckDB's
        ``length`` counts characters, as Python's ``len`` does)."""
        rows = con.execute(f"SELECT length(run_id)::VARCHAR || ':' || run_id || query_id FROM {table}").fetchall()
        return cls(k for (k,) in rows)

    def taken(self, run_id: str, query_id: str) -> bool:
        key = pair_key(run_id, query_id)
        return key in self._stored or key in self._first

    def first_place(self, run_id: str, query_id: str) -> tuple[str, int] | None:
        """Where this call admitted the pair (path, line), or None when an earlier ingest did."""
        at = self._first.get(pair_key(run_id, query_id))
        return None if at is None else (self._paths[at & _FILE_MASK], at >> _FILE_BITS)

    def add(self, run_id: str, query_id: str, path: str, line_no: int) -> None:
        no = self._path_no.get(path)
        if no is None:
            if len(self._paths) > _FILE_MASK:
                raise ValueError(f"more than {_FILE_MASK + 1:,} files in one ingest call")
            no = self._path_no[path] = len(self._paths)
            self._paths.append(path)
        self._first[pair_key(run_id, query_id)] = line_no << _FILE_BITS | no

    def forget_file(self, path: str) -> None:
        """Give back the pairs a file admitted (the file was refused after it had begun)."""
        no = self._path_no.get(path)
        if no is None:
            return
        for key in [k for k, at in self._first.items() if at & _FILE_MASK == no]:
            del self._first[key]

    def __len__(self) -> int:
        return len(self._stored) + len(self._first)

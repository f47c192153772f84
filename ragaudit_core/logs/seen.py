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
admits a pair only when neither the table nor the call has it, and ingests into one database run
one at a time in a process (:func:`one_ingest_at_a_time`; another process cannot write the file
meanwhile: DuckDB's file lock). Without that, two dashboard sessions loading into one shared
database at once each checked the pairs in their own transaction, and the second failed on a
conflict in ``meta`` at its commit; now it waits, then finds the pairs taken and rejects its
records with the sentence.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import duckdb

__all__ = ["SeenPairs", "one_ingest_at_a_time", "pair_key"]

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_HELD = threading.local()


@contextmanager
def one_ingest_at_a_time(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Hold the lock of ``con``'s database (its file; every in-memory database shares one) for an
    ingest's whole transaction. An ingest started from inside another on the same thread (from a
    progress callback) would wait for itself: it is refused instead."""
    rows = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    path = rows[0][0] if rows else None
    key = os.path.realpath(path) if path else ":memory:"
    held: set[str] = getattr(_HELD, "keys", set())
    if key in held:
        raise RuntimeError(f"an ingest into {key} was started from inside another ingest into it")
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(key, threading.Lock())
    with lock:
        _HELD.keys = held | {key}
        try:
            yield
        finally:
            _HELD.keys = held


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
        cur = con.execute(f"SELECT length(run_id)::VARCHAR || ':' || run_id || query_id FROM {table}")
        seen = cls()
        while rows := cur.fetchmany(100_000):  # not a list of every key beside the set
            seen._stored.update(k for (k,) in rows)
        return seen

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

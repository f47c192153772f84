"""Results derived from the stored logs, kept in the database once per data version.

What a page opens on (the loaded counts, the runs table, the default run selection, the
stability overview, ranking quality…) depends only on the stored data and a few options. Each
such result is computed once — at ingest for what the pages open on, on first request otherwise —
and stored in ``derived_results`` under ``sha256(kind, data version, parameters)``. A restarted
dashboard, a second browser session or the CLI then reads it back in milliseconds instead of
scanning every record; any change to the data bumps the version (:func:`store.bump_data_version`),
so a stored result never outlives its data (older versions' rows are deleted on the next write).

Payloads are JSON or Arrow IPC, never pickle: a database file may come from someone else and
reading it must not run code; a payload that does not decode (damaged, or another version's) is
computed again and replaced. A connection that cannot write (read-only, or a file another
process holds) computes and returns without storing.

Extend by registering: :func:`memoized` turns a function of ``(con, *params)`` into its stored
form; :func:`at_ingest` registers a function of ``(con)`` that :func:`precompute` runs after
every load, so that the pages' first visit after an ingest reads and never scans.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Generic, ParamSpec, TypeVar

import duckdb
import pandas as pd
import pyarrow as pa

from ragaudit_core.logs import store

__all__ = [
    "FRAME",
    "JSON",
    "Codec",
    "at_ingest",
    "dataclass_codec",
    "dataclasses_codec",
    "memoized",
    "precompute",
    "stored",
]

P = ParamSpec("P")
T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a result becomes bytes in ``derived_results`` and back."""

    encode: Callable[[T], bytes]
    decode: Callable[[bytes], T]


def _frame_bytes(df: pd.DataFrame) -> bytes:
    sink = io.BytesIO()
    table = pa.Table.from_pandas(df, preserve_index=False)
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue()


def _frame_of(payload: bytes) -> pd.DataFrame:
    with pa.ipc.open_stream(io.BytesIO(payload)) as r:
        return r.read_all().to_pandas()


JSON: Codec[Any] = Codec(lambda v: json.dumps(v).encode(), lambda b: json.loads(b))
"""Plain JSON values (dicts, lists, strings, numbers, None); tuples come back as lists."""
FRAME: Codec[pd.DataFrame] = Codec(_frame_bytes, _frame_of)
"""A pandas frame as one Arrow IPC stream (dtypes kept; the index is not)."""

D = TypeVar("D")


def dataclass_codec(cls: Callable[..., D]) -> Codec[D]:
    """One dataclass instance of JSON-able fields, as its fields."""
    return Codec(lambda v: json.dumps(asdict(v)).encode(), lambda b: cls(**json.loads(b)))  # type: ignore[call-overload]


def dataclasses_codec(cls: Callable[..., D]) -> Codec[list[D]]:
    """A list of dataclass instances of JSON-able fields."""
    return Codec(
        lambda v: json.dumps([asdict(x) for x in v]).encode(),  # type: ignore[call-overload]
        lambda b: [cls(**d) for d in json.loads(b)],
    )


def _key(kind: str, version: str, params: object) -> str:
    blob = json.dumps({"kind": kind, "v": version, "p": params}, sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()


def stored(con: duckdb.DuckDBPyConnection, kind: str, params: object, compute: Callable[[], T], codec: Codec[T]) -> T:
    """``compute()``, read from ``derived_results`` when stored for this data version and
    ``params`` (any JSON-able value), else computed and stored. Inside a transaction open on
    ``con`` (an ingest's last steps, a removal) it is computed and neither read nor stored: the
    stored rows and the version are the committed data's, which that transaction is changing (a
    result of its data stored under the old version would outlive a rollback)."""
    if _in_transaction(con):
        return compute()
    cur = con.cursor()
    try:
        version = store.data_version(cur)
        key = _key(kind, version, params)
        rows = cur.execute("SELECT payload FROM derived_results WHERE key = ?", [key]).fetchall()
        if rows:
            try:
                return codec.decode(bytes(rows[0][0]))
            except Exception as e:  # noqa: BLE001 — a damaged or foreign payload: computed again, never trusted
                log.warning("stored %s result could not be read (%s); computing it again", kind, e)
        value = compute()
        try:
            cur.execute("DELETE FROM derived_results WHERE data_version <> ?", [version])
            cur.execute(
                "INSERT OR REPLACE INTO derived_results VALUES (?, ?, ?, ?, now())",
                [key, version, kind, codec.encode(value)],
            )
        except duckdb.Error as e:  # read-only or held elsewhere: the result is still right, only not kept
            log.debug("derived result %s not stored: %s", kind, e)
        return value
    finally:
        cur.close()


def _in_transaction(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` has a transaction open: outside one, each statement runs in its own (a new
    transaction id each time); inside, they share one."""
    first = con.execute("SELECT txid_current()").fetchall()
    return first == con.execute("SELECT txid_current()").fetchall()


def memoized(kind: str, codec: Codec[T]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorator: ``f(con, *params)`` read from / stored in ``derived_results`` under ``kind``
    and the JSON of its other arguments (which must be JSON-able: run ids, lists, numbers)."""

    def wrap(f: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(f)
        def cached(*args: P.args, **kwargs: P.kwargs) -> T:
            con = args[0]
            if not isinstance(con, duckdb.DuckDBPyConnection):
                raise TypeError(
                    f"{f.__name__}: the first argument must be a DuckDB connection, not {type(con).__name__}"
                )
            params = [list(a) if isinstance(a, (tuple, set, frozenset)) else a for a in args[1:]]
            return stored(con, kind, [params, kwargs], lambda: f(*args, **kwargs), codec)

        cached.uncached = f  # type: ignore[attr-defined]  # the computation itself, for tests and benches
        return cached

    return wrap


_AT_INGEST: dict[str, Callable[[duckdb.DuckDBPyConnection], object]] = {}


def at_ingest(
    name: str,
) -> Callable[[Callable[[duckdb.DuckDBPyConnection], T]], Callable[[duckdb.DuckDBPyConnection], T]]:
    """Decorator: run ``f(con)`` after every load (:func:`precompute`), so that what it stores
    is there before a page asks. Registered once by name, in import order."""

    def register(f: Callable[[duckdb.DuckDBPyConnection], T]) -> Callable[[duckdb.DuckDBPyConnection], T]:
        _AT_INGEST[name] = f
        return f

    return register


def precompute(con: duckdb.DuckDBPyConnection, only: Callable[[str], bool] | None = None) -> list[str]:
    """Run every registered :func:`at_ingest` function (those ``only`` accepts) and return their
    names. Importing the registering modules is the caller's business: ``ragaudit_core.workspace``
    imports the catalog, stability and quality caches."""
    done = []
    for name, f in list(_AT_INGEST.items()):
        if only is not None and not only(name):
            continue
        f(con)
        done.append(name)
    return done

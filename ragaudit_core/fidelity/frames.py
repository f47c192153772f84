"""Many small tables at the cost of a few: ``pd.DataFrame(rows, columns=columns)`` for each of many
lists of row dicts (a run's queries, citations or findings), equal to building each alone.

Building a table costs about 0.2 ms however few its rows (pandas infers each column's type and
makes its index), which a log with a run per record pays thousands of times. Here the short lists
whose values are of the same kinds, column by column, are built as one table and cut into
pieces; pandas infers a column's type from the kinds of the values in it (int, float, NaN,
None, str, …), so a piece has the type its list alone would get, and each value converts alone.
The first list of every group is also built alone and its column types compared with the
group's: a group that differs (never seen) is built list by list. Lists over
:data:`GROUP_MAX` rows are built alone, as before: their fixed cost is small beside their rows.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np
import pandas as pd

__all__ = ["GROUP_MAX", "frames_by_key"]

K = TypeVar("K", bound=Hashable)

GROUP_MAX = 256
"""Longest list of rows built together with others; a longer one is built alone."""

_INT64_MAX = 2**63


def _kind(v: object) -> object:
    """What pandas's type inference sees of a value: its type, with NaN apart from other floats
    and integers by sign and by whether they fit int64 (they decide int64, uint64 or object)."""
    t = type(v)
    if t is float:
        return "nan" if v != v else float
    if t is int:
        return "int<0" if v < 0 else ("int" if v < _INT64_MAX else "int>int64")  # type: ignore[operator]
    return t


def _columns(rows: Sequence[dict]) -> tuple[str, ...]:
    """The columns pandas makes of row dicts without ``columns``: the keys, first seen first."""
    return tuple(dict.fromkeys(k for r in rows for k in r))


def _signature(rows: Sequence[dict], columns: Sequence[str] | None) -> tuple:
    cols = _columns(rows) if columns is None else tuple(columns)
    return (
        len(rows) == 0,
        cols,
        tuple(frozenset(_kind(r.get(c, np.nan)) for r in rows) for c in cols),
    )


def _same_shape(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    return (
        a.columns.equals(b.columns)
        and a.columns.dtype == b.columns.dtype
        and [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes]
    )


def _build(rows: Sequence[dict], columns: Sequence[str] | None) -> pd.DataFrame:
    return pd.DataFrame(list(rows)) if columns is None else pd.DataFrame(list(rows), columns=list(columns))


def frames_by_key(
    rows_by_key: Mapping[K, Sequence[dict]], columns: Sequence[str] | None = None
) -> dict[K, pd.DataFrame]:
    """For each key, the table ``pd.DataFrame(rows)`` (``columns`` given: ``pd.DataFrame(rows,
    columns=columns)``) of its rows: the same columns, types, values and index (0…n−1).

    Cost: one table per group of short lists with the same kinds of values, then a slice per
    key (about 20 µs), instead of one table per key (about 200 µs)."""
    groups: dict[tuple, list[K]] = {}
    out: dict[K, pd.DataFrame] = {}
    for key, rows in rows_by_key.items():
        if len(rows) > GROUP_MAX:
            out[key] = _build(rows, columns)
        else:
            groups.setdefault(_signature(rows, columns), []).append(key)
    for keys in groups.values():
        out.update(_cut(keys, rows_by_key, columns))
    return {key: out[key] for key in rows_by_key}


def _cut(keys: list[K], rows_by_key: Mapping[K, Sequence[dict]], columns: Sequence[str] | None) -> dict[K, Any]:
    """The tables of one group of keys: one table of all their rows, cut at the keys' bounds."""
    first = _build(rows_by_key[keys[0]], columns)
    if len(keys) == 1:
        return {keys[0]: first}
    every = [r for key in keys for r in rows_by_key[key]]
    whole = _build(every, columns)
    if not _same_shape(whole, first):  # the kinds did not decide the types: build each alone
        return {key: _build(rows_by_key[key], columns) for key in keys}
    out: dict[K, Any] = {}
    start = 0
    for key in keys:
        n = len(rows_by_key[key])
        piece = whole.iloc[start : start + n]
        piece.index = pd.RangeIndex(n)
        out[key] = piece
        start += n
    return out

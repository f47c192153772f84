"""Counts in sentences, as a reader writes them: ``1 query``, ``2 queries`` (not ``1 queries`` or
``query(s)``). Used wherever a count meets a noun: the ingest's report, the CLI, the pages."""

from __future__ import annotations

__all__ = ["counted"]

_PLURALS = {"query": "queries", "entry": "entries", "evidence entry": "evidence entries", "run pair": "run pairs"}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun`` as a reader writes them: ``1 query``, ``1,204 queries``, ``0 runs``
    (thousands separated; the plural is ``plural``, else a known irregular one, else ``noun + "s"``)."""
    many = plural or _PLURALS.get(noun, noun + "s")
    return f"{n:,} {noun if n == 1 else many}"

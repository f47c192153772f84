"""A record's evidence entries → rows of the ``evidence`` table (one function, used by the
ingest in the process and by its worker processes alike).

Identity (DESIGN.md, "Identity"; seed 000, §3): the document is ``canonical_doc_id(doc_id)``;
the span is the logged ``span_hash``, else (or with ``recompute``) the hash of the entry's
text; without either the span is unknown (``None``). An entry whose (document, span) repeats an
earlier entry of the same record is dropped (the first is kept) and named in the returned list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ragaudit_core.logs.identity import CanonOptions, canonical_doc_id, span_hash
from ragaudit_core.logs.jsontext import compact_json

__all__ = ["HASH_CACHE", "HASH_CACHE_CHARS", "RowCaches", "RowOptions", "duplicate_message", "evidence_rows"]

HASH_CACHE = 100_000
"""Distinct raw doc ids whose canonical id is remembered (and at most as many texts); a cache is
emptied when full, so it saves the repeats of neighbouring records without growing."""
HASH_CACHE_CHARS = 16_000_000
"""Characters of text held by the span-hash cache at most (about 16 MB for ASCII text): the bound
is on size, not count, so long passages cannot make it large."""


@dataclass(frozen=True)
class RowOptions:
    """The ingest options that decide stored identities."""

    canon: CanonOptions = CanonOptions()
    casefold: bool = False
    recompute: bool = False


class RowCaches:
    """Bounded memo tables: raw id → canonical id, text → span hash."""

    def __init__(self) -> None:
        self.canon: dict[str, str] = {}
        self.hash: dict[str, str] = {}
        self.hash_chars = 0

    def trim(self) -> None:
        if self.hash_chars > HASH_CACHE_CHARS or len(self.hash) > HASH_CACHE:
            self.hash.clear()
            self.hash_chars = 0
        if len(self.canon) > HASH_CACHE:
            self.canon.clear()


def evidence_rows(
    rec: Any, opts: RowOptions, caches: RowCaches, add_row: Callable[[tuple], None]
) -> tuple[int, list[str]]:
    """Append one row per kept entry of ``rec`` (an ``EvidenceRecord`` or a ``FastRecord``) in
    the ``evidence`` column order; return (entries kept, the duplicates dropped as
    ``"evidence[j] repeats evidence[i]"``)."""
    caches.trim()
    seen_ids: dict[tuple[str, str | None], int] = {}
    dropped: list[str] = []
    canon, casefold, recompute = opts.canon, opts.casefold, opts.recompute
    canon_cache, hash_cache = caches.canon, caches.hash
    run_id, query_id = rec.run_id, rec.query_id
    for j, e in enumerate(rec.evidence):
        raw_id = e.doc_id
        cid = canon_cache.get(raw_id)
        if cid is None:
            cid = canon_cache[raw_id] = canonical_doc_id(raw_id, canon)
        sh = e.span_hash
        text = e.text
        if text is not None and (sh is None or recompute):
            sh = hash_cache.get(text)
            if sh is None:
                sh = hash_cache[text] = span_hash(text, casefold=casefold)
                caches.hash_chars += len(text)
        ident = (cid, sh)
        if ident in seen_ids:
            dropped.append(f"evidence[{j}] repeats evidence[{seen_ids[ident]}]")
            continue
        seen_ids[ident] = j
        md = e.metadata
        add_row(
            (
                run_id,
                query_id,
                j,
                cid,
                raw_id,
                sh,
                e.chunk_id,
                text,
                e.rank,
                e.score,
                e.char_start,
                e.char_end,
                e.page,
                None if md is None else compact_json(md),  # stored JSON text (:mod:`.jsontext`)
            )
        )
    return len(seen_ids), dropped


def duplicate_message(run_id: str, query_id: str, dropped: list[str]) -> str:
    return (
        f"run {run_id!r}, query {query_id!r}: "
        + ", ".join(dropped)
        + " (same document and span); duplicates were dropped"
    )

"""One query under the microscope: its Jaccard matrix across runs, two evidence lists
side by side, and what two overlapping chunks of one document share.

Identities are those of :mod:`ragaudit_core.stability.metrics` (seed 000, §3): a document is its
canonical ``doc_id``; a span is (``doc_id``, ``span_hash``), the hash of the normalised
chunk text. The matrix is computed by :func:`stability.compute_stability` restricted to
the query, so every number here equals the one on the stability pages.
"""

from __future__ import annotations

import difflib
import html
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from ragaudit_core.defaults import INT32_MAX
from ragaudit_core.stability.metrics import NoComparablePairs, StabilityOptions, compute_stability, span_capable_runs

__all__ = [
    "ChunkOverlap",
    "Segment",
    "chunk_overlap",
    "evidence_side_by_side",
    "overlap_candidates",
    "passage_ids_note",
    "query_matrix",
    "query_runs",
    "question_groups",
    "segments_html",
]


def query_runs(con: duckdb.DuckDBPyConnection, query_id: str) -> pd.DataFrame:
    """The runs that logged ``query_id``: run_id, query text, answer, evidence count."""
    cur = con.cursor()
    try:
        return cur.execute(
            """SELECT run_id, query, answer, n_evidence FROM records WHERE query_id = ? ORDER BY run_id""", [query_id]
        ).df()
    finally:
        cur.close()


def question_groups(logged: pd.DataFrame) -> list[tuple[str, list[str]]]:
    """The different questions one query id names across runs (``query_runs``' frame): ``(text,
    runs)`` per question, the most-logged first; texts compared lower-cased with white space
    collapsed (as :mod:`ragaudit_core.logs.sanity` does); runs without a text join no group. One
    group (or none) means the id is one question everywhere."""
    groups: dict[str, tuple[str, list[str]]] = {}
    for run, text in zip(logged["run_id"], logged["query"]):
        if not isinstance(text, str) or not text.strip():
            continue
        key = " ".join(text.lower().split())
        groups.setdefault(key, (text, []))[1].append(run)
    return sorted(groups.values(), key=lambda g: (-len(g[1]), g[0]))


def query_matrix(
    con: duckdb.DuckDBPyConnection, query_id: str, *, runs: Sequence[str] | None = None, topk: int | None = None
) -> dict[str, pd.DataFrame]:
    """Square run × run Jaccard matrices for one query, ``{"doc": …, "span": …}``.

    The diagonal is 1.0 (a list compared with itself). ``span`` is absent when fewer
    than two of the runs carry span information. Runs that did not log the query are
    left out. A pair of a run that logged no document ids and one that did is NaN (n/a): its J
    is 0 by how they were logged (:mod:`.mixed_ids`), so it is not compared.
    """
    logged = query_runs(con, query_id)["run_id"].tolist()
    runs = [r for r in (runs if runs is not None else logged) if r in logged]
    if len(runs) < 2:
        return {}
    # allow_missing: the runs all logged this query; their coverage of other queries does not matter here
    try:
        res = compute_stability(
            con, StabilityOptions(runs=runs, queries=[query_id], topk=topk, allow_missing=True), keep_cells=True
        )
        assert res.cells is not None  # keep_cells=True
        cells = res.cells
    except NoComparablePairs:  # every pair sets a run without document ids beside one with: all n/a
        cells = pd.DataFrame(columns=["level", "run_a", "run_b", "j"])
    spans = span_capable_runs(con, runs)
    out = {}
    for level, names in (("doc", sorted(runs)), ("span", sorted(r for r in runs if r in spans))):
        if len(names) < 2:
            continue
        grid = np.full((len(names), len(names)), np.nan)  # a pair left out (mixed ids) stays n/a, never 0
        np.fill_diagonal(grid, 1.0)
        m = pd.DataFrame(grid, index=names, columns=names)
        at = cells[cells["level"] == level]
        for a, b, j in zip(at["run_a"], at["run_b"], at["j"]):
            m.loc[a, b] = m.loc[b, a] = j
        out[level] = m
    return out


_STATUS_BOTH, _ONLY_A, _ONLY_B = "in both", "only in A", "only in B"


def evidence_side_by_side(
    con: duckdb.DuckDBPyConnection, query_id: str, run_a: str, run_b: str, *, topk: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two runs' evidence lists for one query, in logged (rank) order; ``rank`` counts from 1
    (the position in the stored list), ``logged_rank`` is the rank as the log gave it (0-based in
    many tools).

    Each row carries ``status``: "in both" when the same span (or, for runs without
    span information, the same document) is in the other list, else "only in A" /
    "only in B"; and ``same_doc_other_span``: the document is in the other list but
    with a different span — the Stability Gap in one row; ``same_text_other_id``: the same
    passage text (span hash) is in the other list under another document id (a run that logged
    no ids beside one that did: the same words, not the same evidence by identity).
    """
    cur = con.cursor()
    try:
        df = cur.execute(
            """SELECT run_id, position, position + 1 AS rank, rank AS logged_rank, doc_id, chunk_id, span_hash,
                      char_start, char_end, score, text
               FROM evidence WHERE query_id = ? AND run_id IN (?, ?) AND position < ?
               ORDER BY run_id, position""",
            [query_id, run_a, run_b, topk if topk is not None else INT32_MAX],
        ).df()
    finally:
        cur.close()
    a, b = (df[df.run_id == r].drop(columns="run_id").reset_index(drop=True) for r in (run_a, run_b))
    span_mode = a["span_hash"].notna().all() and b["span_hash"].notna().all() and len(a) and len(b)

    def key(frame: pd.DataFrame) -> pd.Series:
        return frame["doc_id"] + "\x00" + frame["span_hash"].fillna("") if span_mode else frame["doc_id"]

    ka, kb = key(a), key(b)
    a["status"] = np.where(ka.isin(set(kb)), _STATUS_BOTH, _ONLY_A)
    b["status"] = np.where(kb.isin(set(ka)), _STATUS_BOTH, _ONLY_B)
    a["same_doc_other_span"] = (a["status"] != _STATUS_BOTH) & a["doc_id"].isin(set(b["doc_id"]))
    b["same_doc_other_span"] = (b["status"] != _STATUS_BOTH) & b["doc_id"].isin(set(a["doc_id"]))
    # the same passage text (span hash) under another document id: a run that logged no ids beside
    # one that did, or a passage two documents hold — not the same evidence by identity, but the words
    a["same_text_other_id"] = (a["status"] != _STATUS_BOTH) & a["span_hash"].isin(set(b["span_hash"].dropna()))
    b["same_text_other_id"] = (b["status"] != _STATUS_BOTH) & b["span_hash"].isin(set(a["span_hash"].dropna()))
    return a, b


def passage_ids_note(a: pd.DataFrame, b: pd.DataFrame, run_a: str, run_b: str) -> str | None:
    """Why two lists of :func:`evidence_side_by_side` share nothing when one run logged no document
    ids (every id ``text:`` and its passage's hash: a Ragas row or a trace without ids) and the other
    did: no document, so no span, is the same between them by how they were logged, not what they
    retrieved (the stability page's words, :func:`~ragaudit_core.logs.catalog.text_id_runs`). Says
    how many of its passages the other list holds word for word (the same span hash); None otherwise."""

    def hashed(d: pd.DataFrame) -> bool:
        return bool(len(d)) and bool(d["doc_id"].astype(str).str.startswith("text:").all())

    if hashed(a) == hashed(b) or not (len(a) and len(b)):
        return None
    run, other, mine, theirs = (run_a, run_b, a, b) if hashed(a) else (run_b, run_a, b, a)
    same = mine["span_hash"].dropna().isin(set(theirs["span_hash"].dropna())).sum()
    n = len(mine)
    return (
        f"{run} logged no document ids: its document ids are its passages' text hashes (text:…), so it shares no "
        f"document and no span with {other} (J would be 0, from how it was logged, not what it retrieved). "
        f"{same:,} of its {n:,} passage{'' if n == 1 else 's'} {'is' if same == 1 else 'are'} in {other}'s list word "
        "for word. To compare them, load its logs again with its document ids: a Ragas export's "
        "retrieved_context_ids column, or for a trace export the metadata key that holds them (--doc-id-key, or "
        "'Document id key' when uploading)"
        + (
            f"; or remove its file (on the home page: “Remove a file or a run…”) and load it again: the passages "
            f"{other} holds word for word then take {other}'s document ids."
            if same
            else "."
        )
    )


def overlap_candidates(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Pairs of chunks of one document, one from each list, whose spans differ.

    Ordered by shared characters (by offsets when both carry them), largest first.
    Columns: doc_id, pos_a, pos_b, shared_chars (<NA> without offsets), label (for a picker).
    """
    rows = []
    for i, ra in a[a["same_doc_other_span"]].iterrows():
        for j, rb in b[(b["doc_id"] == ra["doc_id"]) & b["same_doc_other_span"]].iterrows():
            shared = None
            if _has_offsets(ra) and _has_offsets(rb):
                shared = max(0, min(ra.char_end, rb.char_end) - max(ra.char_start, rb.char_start))
            label = f"document {ra['doc_id']} · A rank {ra['rank']} · B rank {rb['rank']}" + (
                f" · {int(shared)} shared characters" if shared is not None else ""
            )
            rows.append(
                {"doc_id": ra["doc_id"], "pos_a": int(i), "pos_b": int(j), "shared_chars": shared, "label": label}
            )
    out = pd.DataFrame(rows, columns=["doc_id", "pos_a", "pos_b", "shared_chars", "label"])
    out["shared_chars"] = out["shared_chars"].astype("Int64")
    if len(out):
        out = out.sort_values(
            ["shared_chars", "pos_a", "pos_b"], ascending=[False, True, True], na_position="last", kind="stable"
        ).reset_index(drop=True)
    return out


@dataclass(frozen=True)
class Segment:
    text: str
    shared: bool


@dataclass(frozen=True)
class ChunkOverlap:
    """What two chunks share: each chunk's text cut into shared / own segments."""

    a: list[Segment]
    b: list[Segment]
    method: str  # "offsets" or "text diff"
    shared_chars: int
    note: str | None = None


def _has_offsets(row: pd.Series) -> bool:
    return not (pd.isna(row.get("char_start")) or pd.isna(row.get("char_end")))


def _cut(text: str, lo: int, hi: int) -> list[Segment]:
    parts = [Segment(text[:lo], False), Segment(text[lo:hi], True), Segment(text[hi:], False)]
    return [p for p in parts if p.text]


def chunk_overlap(
    text_a: str,
    text_b: str,
    *,
    start_a: int | None = None,
    end_a: int | None = None,
    start_b: int | None = None,
    end_b: int | None = None,
) -> ChunkOverlap:
    """Shared and differing characters of two chunks of one document.

    With offsets on both sides whose span length equals the text length, the shared
    part is the intersection of the two character intervals in the source document
    (exact). Otherwise a character diff (``difflib``, no junk heuristic) marks the
    matching blocks; ``note`` says why offsets were not used.
    """
    text_a, text_b = text_a or "", text_b or ""
    note = None
    offsets = start_a is not None and end_a is not None and start_b is not None and end_b is not None
    if offsets and (end_a - start_a != len(text_a) or end_b - start_b != len(text_b)):  # type: ignore[operator]
        offsets = False
        note = "offsets do not match the chunk text length; compared the texts instead"
    if start_a is not None and end_a is not None and start_b is not None and end_b is not None and offsets:
        lo, hi = max(start_a, start_b), min(end_a, end_b)
        if hi <= lo:
            return ChunkOverlap(
                [Segment(text_a, False)] if text_a else [], [Segment(text_b, False)] if text_b else [], "offsets", 0
            )
        return ChunkOverlap(
            _cut(text_a, lo - start_a, hi - start_a), _cut(text_b, lo - start_b, hi - start_b), "offsets", hi - lo
        )
    sm = difflib.SequenceMatcher(None, text_a, text_b, autojunk=False)
    blocks = [m for m in sm.get_matching_blocks() if m.size >= 3] if text_a and text_b else []

    def segments(text: str, spans: list[tuple[int, int]]) -> list[Segment]:
        out, pos = [], 0
        for s, n in spans:
            if s > pos:
                out.append(Segment(text[pos:s], False))
            out.append(Segment(text[s : s + n], True))
            pos = s + n
        if pos < len(text):
            out.append(Segment(text[pos:], False))
        return out

    return ChunkOverlap(
        segments(text_a, [(m.a, m.size) for m in blocks]),
        segments(text_b, [(m.b, m.size) for m in blocks]),
        "text diff",
        sum(m.size for m in blocks),
        note,
    )


def segments_html(
    segments: Sequence[Segment], *, shared_style: str = "background:#cce3f0", own_style: str = "background:#fae6b3"
) -> str:
    """The segments as HTML, every character of log text escaped (``html.escape``); shared text on a
    tint of the charts' blue, text only in one chunk on a tint of their orange (no red-green pair).

    Log text is data: escaping here is what makes a chunk holding ``<script>`` show as
    text. Styles are fixed strings of this module, never taken from a log.
    """
    parts = []
    for s in segments:
        style = shared_style if s.shared else own_style
        parts.append(f'<span style="{style}">{html.escape(s.text, quote=True)}</span>')
    return (
        '<div style="white-space:pre-wrap;font-family:monospace;font-size:0.85em;line-height:1.5">'
        + "".join(parts)
        + "</div>"
    )

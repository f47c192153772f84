"""Identity sanity after a load: ids that silently mislead the metrics, found in SQL over what is stored.

Two mistakes load without a single rejected line and still change every figure:

- **Passages where document ids belong.** A log whose evidence entries are passage texts (a
  ``contexts`` list of strings) stores each passage as a document id: span metrics say
  "unavailable" and document Jaccard compares texts. A document id *looks like a passage* when it
  is at least :data:`PASSAGE_MIN_CHARS` characters long and holds at least
  :data:`PASSAGE_MIN_SPACES` spaces and the entry carries no text of its own (real ids — ``4983``,
  ``NCT01234567``, ``doc-12#c3``, a URL, a short title — do not); a run is flagged when at least
  :data:`PASSAGE_MIN_SHARE` of its entries do. :func:`read_ids_as_texts` re-reads such a run: each
  id becomes the entry's text, its span hash is the text's, and its document id is ``text:`` + 16
  hex digits of that hash (as for another tool's passages without ids), so document-level figures
  equal span-level ones, as said.
- **One query id, different questions.** Two unrelated uploads numbering their queries ``0, 1, …``
  are joined on those ids. Query texts are compared after lower-casing and collapsing white space
  (as query ids are derived from texts); two runs *disagree* when more than
  :data:`DISAGREE_SHARE` of the smaller run's queries carry a different text in the other. The
  default run selection (:mod:`.selection`) leaves out runs that disagree with the runs it keeps,
  naming them; they can still be picked.
- **Places in a list where document ids belong** (:func:`positional_id_runs`). RAGChecker's
  examples number each query's passages ``000``, ``001``, …: run to run, ids pair positions, and
  two runs sharing no passage read "same documents, different spans".
- **Ranks beside the list's order** (:func:`off_rank_runs`). Every figure ranks by the order of the
  list (the contract's); an entry logging another rank is named, so a list written out of order
  (or a reranked list keeping its retriever's ranks) is not read silently.

One scan of every entry per data version serves the passage, place and rank checks
(:func:`_run_ids_scan`, stored at ingest).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from ragaudit_core.logs import derived
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.store import bump_data_version, get_json_meta
from ragaudit_core.wording import counted

__all__ = [
    "DISAGREE_SHARE",
    "PASSAGE_MIN_CHARS",
    "PASSAGE_MIN_SHARE",
    "PASSAGE_MIN_SPACES",
    "POSITIONAL_MIN_LATER",
    "POSITIONAL_MIN_SHARE",
    "PassageIds",
    "RunIdScan",
    "SameQuestions",
    "TextConflict",
    "conflict_messages",
    "identity_warnings",
    "off_rank_runs",
    "order_messages",
    "passage_id_runs",
    "positional_id_runs",
    "query_text_conflicts",
    "read_ids_as_texts",
    "same_questions_other_ids",
]

PASSAGE_MIN_CHARS = 60
PASSAGE_MIN_SPACES = 6
PASSAGE_MIN_SHARE = 0.5
DISAGREE_SHARE = 0.05

_NORM = "lower(trim(regexp_replace(query, '\\s+', ' ', 'g')))"


@dataclass(frozen=True)
class PassageIds:
    """A run whose document ids look like passages: how many of its entries, and one example."""

    run_id: str
    n_entries: int
    n_passage_like: int
    example: str

    def message(self) -> str:
        share = self.n_passage_like / self.n_entries if self.n_entries else 0.0
        shown = self.example[:60] + ("…" if len(self.example) > 60 else "")
        return (
            f"run {self.run_id!r}: {share:.0%} of its {counted(self.n_entries, 'document id')} "
            f"{'looks like a passage text' if self.n_entries == 1 else 'look like passage texts'} "
            f"(at least {PASSAGE_MIN_CHARS} characters with spaces, e.g. {shown!r}); the log probably holds texts "
            "where ids belong, so span metrics are unavailable and documents are compared as texts — load it with "
            "--ids-are-texts (or “Read these ids as texts” on the home page) to read them as passages"
        )


@dataclass(frozen=True)
class TextConflict:
    """Two runs whose shared query ids carry different question texts."""

    run_a: str
    run_b: str
    n_differ: int
    n_smaller: int  # queries with a text in the smaller of the two runs
    example_id: str

    @property
    def disagree(self) -> bool:
        return self.n_differ > DISAGREE_SHARE * self.n_smaller

    def message(self) -> str:
        return (
            f"runs {self.run_a!r} and {self.run_b!r}: {counted(self.n_differ, 'query id')} "
            f"{'carries' if self.n_differ == 1 else 'carry'} different question texts "
            f"(e.g. {self.example_id!r}) — the same id names another question, so comparing them pairs unrelated "
            "queries; the default selection leaves out runs that disagree (pick them to compare anyway)"
        )


def passage_id_runs(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[PassageIds]:
    """Runs (all, or ``runs``) at least :data:`PASSAGE_MIN_SHARE` of whose entries have passage-like ids.
    One scan of every entry, once per data version (:func:`_passage_id_runs`, stored at ingest)."""
    flagged = _passage_id_runs(con)
    if runs is None:
        return flagged
    wanted = set(runs)  # a log naming a run per record loads 100,000s of runs
    return [p for p in flagged if p.run_id in wanted]


def _passage_id_runs(con: duckdb.DuckDBPyConnection) -> list[PassageIds]:
    return [
        PassageIds(s.run_id, s.n_entries, s.n_passage_like, s.example)
        for s in _run_ids_scan(con)
        if s.n_entries and s.n_passage_like >= PASSAGE_MIN_SHARE * s.n_entries
    ]


@dataclass(frozen=True)
class RunIdScan:
    """One run's entries as :func:`_run_ids_scan` counts them (one scan of every entry serves
    the passage-like ids, the positional ids and the ranks beside the list's order)."""

    run_id: str
    n_entries: int
    n_passage_like: int
    example: str
    n_later: int  # entries past the first of their list
    n_positional: int  # of those, entries whose document id is their place in the list (0- or 1-based)
    n_off_rank: int  # entries listed after an entry of a later logged rank (a rank lower than the one before)
    off_example: str  # a query id with such an entry


_IS_PLACE = (  # a document id that is the entry's place in its list, 0- or 1-based ("3", "003", "4")
    "(doc_id_raw = CAST(position AS VARCHAR) OR doc_id_raw = CAST(position + 1 AS VARCHAR) "
    "OR (doc_id_raw[1] = '0' AND TRY_CAST(doc_id_raw AS BIGINT) IN (position, position + 1)))"
)
_OFF_RANK = "rank IS NOT NULL AND rank <> position AND rank <> position + 1"


@derived.at_ingest("sanity.run_ids")
@derived.memoized("sanity.run_ids/2", derived.dataclasses_codec(RunIdScan))
def _run_ids_scan(con: duckdb.DuckDBPyConnection) -> list[RunIdScan]:
    rows = con.execute(
        f"""
        SELECT run_id, count(*) AS n,
               count(*) FILTER (WHERE text IS NULL AND length(doc_id_raw) >= {PASSAGE_MIN_CHARS}
                   AND length(doc_id_raw) - length(replace(doc_id_raw, ' ', '')) >= {PASSAGE_MIN_SPACES}) AS p,
               any_value(doc_id_raw) FILTER (WHERE length(doc_id_raw) >= {PASSAGE_MIN_CHARS}) AS ex,
               count(*) FILTER (WHERE position > 0) AS later,
               count(*) FILTER (WHERE position > 0 AND {_IS_PLACE}) AS placed,
               count(*) FILTER (WHERE {_OFF_RANK}) AS off
        FROM evidence GROUP BY run_id ORDER BY run_id"""
    ).fetchall()
    order = _out_of_order(con, [r for r, *_x, off in rows if off])
    return [
        RunIdScan(r, int(n), int(p), ex or "", int(la), int(pl), *order.get(r, (0, "")))
        for r, n, p, ex, la, pl, _off in rows
    ]


def _out_of_order(con: duckdb.DuckDBPyConnection, runs: list[str]) -> dict[str, tuple[int, str]]:
    """Per run of ``runs`` (those whose ranks are not all their places, 0- or 1-based: the scan's
    cheap filter, so a log whose ranks are its order pays nothing more), the entries whose logged
    rank is lower than the one before them in the list, and a query with one. Ranks that skip (0, 3,
    7: a filtered list keeping its retriever's ranks) or repeat (chunks sharing their document's
    rank) are in order."""
    if not runs:
        return {}
    rows = con.execute(
        """
        SELECT run_id, count(*), min(query_id) FROM (
            SELECT run_id, query_id, rank,
                   lag(rank) OVER (PARTITION BY run_id, query_id ORDER BY position) AS before
            FROM evidence WHERE list_contains(?::VARCHAR[], run_id) AND rank IS NOT NULL)
        WHERE rank < before GROUP BY run_id""",
        [runs],
    ).fetchall()
    return {r: (int(n), q) for r, n, q in rows}


def positional_id_runs(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[RunIdScan]:
    """Runs (all, or ``runs``) whose document ids name places in a list, not documents: at least
    :data:`POSITIONAL_MIN_SHARE` of their entries past the first of their list carry their place
    (0- or 1-based, ``"3"`` or ``"003"``) as document id, and at least :data:`POSITIONAL_MIN_LATER` such
    entries (RAGChecker's examples number each query's passages ``000``, ``001``, …). Run to run they
    pair positions: "same documents, different spans" for lists that share no passage."""
    wanted = None if runs is None else set(runs)
    return [
        s
        for s in _run_ids_scan(con)
        if (wanted is None or s.run_id in wanted)
        and s.n_later >= POSITIONAL_MIN_LATER
        and s.n_positional >= POSITIONAL_MIN_SHARE * s.n_later
    ]


def off_rank_runs(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[RunIdScan]:
    """Runs (all, or ``runs``) some of whose lists log ranks out of order (an entry after one of a
    later rank): every figure takes the list's order, as the contract defines it, not the rank field
    (trec_eval would sort by score) — a list written in another order than its ranks, or a reranked
    list keeping its retriever's ranks."""
    wanted = None if runs is None else set(runs)
    return [s for s in _run_ids_scan(con) if (wanted is None or s.run_id in wanted) and s.n_off_rank]


POSITIONAL_MIN_SHARE = 0.9
POSITIONAL_MIN_LATER = 2


@derived.at_ingest("sanity.query_texts")
@derived.memoized("sanity.query_texts/1", derived.dataclasses_codec(TextConflict))
def query_text_conflicts(con: duckdb.DuckDBPyConnection) -> list[TextConflict]:
    """Pairs of runs sharing a query id with different (normalised) question texts; only ids with
    more than one text are joined, so the work is small unless ids really collide."""
    rows = con.execute(
        f"""
        WITH norm AS (SELECT run_id, query_id, {_NORM} AS t FROM records WHERE query IS NOT NULL),
        bad AS (SELECT query_id FROM norm GROUP BY query_id HAVING count(DISTINCT t) > 1),
        x AS (SELECT * FROM norm WHERE query_id IN (SELECT query_id FROM bad)),
        sizes AS (SELECT run_id, count(*) AS n FROM norm GROUP BY run_id)
        SELECT a.run_id, b.run_id, count(*) AS differ, least(sa.n, sb.n) AS smaller, min(a.query_id) AS ex
        FROM x a JOIN x b ON a.query_id = b.query_id AND a.run_id < b.run_id AND a.t <> b.t
        JOIN sizes sa ON sa.run_id = a.run_id JOIN sizes sb ON sb.run_id = b.run_id
        GROUP BY a.run_id, b.run_id, sa.n, sb.n ORDER BY a.run_id, b.run_id"""
    ).fetchall()
    return [TextConflict(a, b, int(d), int(s), ex) for a, b, d, s, ex in rows]


def conflict_messages(conflicts: list[TextConflict], limit: int = 10) -> list[str]:
    """One sentence per run whose query ids name other questions than other runs' do: the pairs
    that disagree, grouped by the run on the smaller side of more of them (an upload that collides
    with twelve sample runs is one sentence, not twelve)."""
    bad = [c for c in conflicts if c.disagree]
    if not bad:
        return []
    sides: dict[str, list[TextConflict]] = {}
    for c in bad:
        sides.setdefault(c.run_a, []).append(c)
        sides.setdefault(c.run_b, []).append(c)
    out: list[str] = []
    done: set[int] = set()
    for run in sorted(sides, key=lambda r: (-len(sides[r]), r)):
        pairs = [c for c in sides[run] if id(c) not in done]
        if not pairs:
            continue
        done.update(id(c) for c in pairs)
        others = sorted(c.run_b if c.run_a == run else c.run_a for c in pairs)
        shown = ", ".join(repr(o) for o in others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        n = max(c.n_differ for c in pairs)
        out.append(
            f"run {run!r}: its query ids name other questions than in {counted(len(others), 'run')} ({shown}; up to "
            f"{counted(n, 'id')} {'differs' if n == 1 else 'differ'}, e.g. {pairs[0].example_id!r}) — comparing them "
            "pairs unrelated queries; the default "
            "selection leaves out runs that disagree (pick them to compare anyway)"
        )
    rest = len(out) - limit
    return out[:limit] + (
        [f"{counted(rest, 'more run')} {'disagrees' if rest == 1 else 'disagree'} on query texts"] if rest > 0 else []
    )


def identity_warnings(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[str]:
    """One sentence per flagged run (passage-like ids, among ``runs`` or all; past
    :data:`PASSAGE_MESSAGES` runs, one more for the rest) and per run whose query ids name other
    questions (:func:`conflict_messages`, the pairs touching ``runs``)."""
    flagged = passage_id_runs(con, runs)
    out = [p.message() for p in flagged[:PASSAGE_MESSAGES]]
    if len(flagged) > PASSAGE_MESSAGES:
        more = flagged[PASSAGE_MESSAGES:]
        names = ", ".join(repr(p.run_id) for p in more[:5]) + (" …" if len(more) > 5 else "")
        whose = "1 more run's" if len(more) == 1 else f"{len(more):,} more runs'"
        out.append(f"{whose} document ids look like passage texts too ({names})")
    out += order_messages(con, runs)
    conflicts = query_text_conflicts(con)
    if runs is not None:
        wanted = set(runs)
        conflicts = [c for c in conflicts if c.run_a in wanted or c.run_b in wanted]
    return out + conflict_messages(conflicts)


def order_messages(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None) -> list[str]:
    """One sentence per run (all, or among ``runs``) whose document ids are places in a list
    (:func:`positional_id_runs`), then per run whose lists log ranks out of order
    (:func:`off_rank_runs`); past :data:`PASSAGE_MESSAGES` of either, one more for the rest."""
    return _capped([_positional_message(s) for s in positional_id_runs(con, runs)], "name places in a list too") + (
        _capped([_off_rank_message(s) for s in off_rank_runs(con, runs)], "log ranks out of their lists' order too")
    )


def _capped(messages: list[str], too: str) -> list[str]:
    """The first :data:`PASSAGE_MESSAGES` sentences, then one for the rest (their runs' ids ``too``)."""
    rest = len(messages) - PASSAGE_MESSAGES
    return messages[:PASSAGE_MESSAGES] + ([f"{counted(rest, 'more run')} {too}"] if rest > 0 else [])


def _positional_message(s: RunIdScan) -> str:
    return (
        f"run {s.run_id!r}: the document ids of {s.n_positional / s.n_later:.0%} of its entries past the first "
        "of their list are their places in the list (0, 1, 2, … or 000, 001, …): such ids name positions, not "
        "documents, so document-level figures compare positions — give the log its real document ids, or leave "
        "them out (a passage without an id is identified by its text)"
    )


def _off_rank_message(s: RunIdScan) -> str:
    verb = "is" if s.n_off_rank == 1 else "are"
    return (
        f"run {s.run_id!r}: {counted(s.n_off_rank, 'entry', 'entries')} {verb} listed after an entry of a later "
        f"rank (e.g. query {s.off_example!r}): every figure ranks by the list's order, as the log contract "
        "defines it, not by the rank field — sort each list by rank before loading if the ranks are the order"
    )


PASSAGE_MESSAGES = 10
"""Runs with passage-like ids named one sentence each; the rest in one more sentence."""


def read_ids_as_texts(con: duckdb.DuckDBPyConnection, runs: list[str]) -> int:
    """Re-read ``runs``' document ids as passage texts (see the module), in one transaction;
    returns the number of entries changed. Entries that already carry a text are left alone; span
    hashes follow the database's span options (``casefold_spans``, fixed at its first load)."""
    opts = get_json_meta(con, "ingest_options")
    casefold = bool(opts.get("casefold_spans")) if isinstance(opts, dict) else False
    cur = con.cursor()
    cur.execute("BEGIN TRANSACTION")
    try:
        texts = [
            t
            for (t,) in cur.execute(
                "SELECT DISTINCT doc_id_raw FROM evidence WHERE list_contains(?::VARCHAR[], run_id) AND text IS NULL",
                [runs],
            ).fetchall()
        ]
        hashes = pa.table(  # through Arrow: executemany binds 0.26 ms a row (a run holds 100,000s of ids)
            {"raw": pa.array(texts, pa.string()), "h": pa.array([span_hash(t, casefold=casefold) for t in texts])}
        )
        cur.register("_as_text_rows", hashes)
        cur.execute("CREATE OR REPLACE TEMP TABLE _as_text AS SELECT raw, h FROM _as_text_rows")
        cur.unregister("_as_text_rows")
        (n,) = cur.execute(
            """SELECT count(*) FROM evidence WHERE list_contains(?::VARCHAR[], run_id) AND text IS NULL""", [runs]
        ).fetchone() or (0,)
        cur.execute(
            """UPDATE evidence SET text = evidence.doc_id_raw, span_hash = m.h,
                   doc_id = 'text:' || substr(m.h, 1, 16)
               FROM _as_text m
               WHERE m.raw = evidence.doc_id_raw AND list_contains(?::VARCHAR[], evidence.run_id)
                 AND evidence.text IS NULL""",
            [runs],
        )
        cur.execute("DROP TABLE _as_text")
        bump_data_version(cur)
        cur.execute("COMMIT")
        return int(n)
    except BaseException:
        cur.execute("ROLLBACK")
        raise
    finally:
        cur.close()


@dataclass(frozen=True)
class SameQuestions:
    """Two runs asking ``n`` of the same questions (normalised texts) under other query ids; one example."""

    n: int
    id_a: str
    id_b: str


def same_questions_other_ids(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str) -> SameQuestions | None:
    """The questions both runs ask under different query ids — a tool that logs no query id gets one
    from its text's hash (``q:…``), so its run shares no id with a run that numbers the same
    questions; None when there are none (for runs that share no query: say why, not just that)."""
    row = con.execute(
        f"""
        WITH a AS (SELECT DISTINCT query_id, {_NORM} AS t FROM records WHERE run_id = ? AND query IS NOT NULL),
        b AS (SELECT DISTINCT query_id, {_NORM} AS t FROM records WHERE run_id = ? AND query IS NOT NULL),
        j AS (SELECT a.t, a.query_id AS qa, b.query_id AS qb FROM a JOIN b ON a.t = b.t AND a.query_id <> b.query_id)
        SELECT count(DISTINCT t), arg_min(qa, (qa, qb)), arg_min(qb, (qa, qb)) FROM j""",
        [run_a, run_b],
    ).fetchone()
    return SameQuestions(int(row[0]), row[1], row[2]) if row and row[0] else None

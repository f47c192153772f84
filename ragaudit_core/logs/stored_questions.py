"""Query ids from the stored runs' questions: a load given no questions file (``--queries``) takes
the questions the database already holds as one.

A Ragas export or a trace export logs no query ids, so each record gets ``q:`` + the hash of its
question (:func:`~ragaudit_core.logs.formats.base.query_id_for`) and never pairs with a native run
that logs the benchmark's ids ("1", "3", …). But a native run stores its questions with its ids: so
when a load has no questions file, the records already stored serve as one — each stored question
id with a text, keyed by the text's hash exactly as :func:`~ragaudit_core.logs.questions.read_questions`
keys a file's — by the same rules (:mod:`ragaudit_core.logs.questions`): only hashed ids change,
never an id a record logs itself; a text two stored ids share once normalised keeps its hash (no
guess); a repeat is numbered after it takes its id (``1#2``); each run is counted in one sentence.

What serves: every stored record with a question text whose id is not a hash (``q:`` + 16 hex
digits, numbered or not) — native runs, RAGChecker's, another tool's run loaded with a questions
file. An id stored with several texts (a run that logs a templated prompt, another the question)
gives itself to each: a text names one id, which is what a record's match needs; runs whose ids name
other questions are the identity checks' business (:mod:`.sanity`). A stored ``1#2`` whose ``1``
holds the same text is a sample of question ``1``, not another question sharing its text.

Order: only records stored **before** the load serve — not those a native file of the same load
adds (a load's ids would then depend on the order of its files, and a file read before its native
run would need a second pass); and, as with a questions file, a later native load never renames a
stored run. :func:`unpaired` says so after a load, naming the run and how to pair it (remove it and
load its file again, or give ``--queries``).

Cost: nothing until the load makes a hashed id (a native load never asks), then one SQL query, and
nothing more where nothing is stored (an empty database): see docs/benchmarks.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from ragaudit_core.logs.formats.base import query_id_for
from ragaudit_core.logs.options import IngestOptions
from ragaudit_core.logs.questions import SHARED, TOOK, QuestionIds
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.wording import Said, listed

__all__ = ["HASHED_ID", "StoredQuestions", "hashed_id", "settle_shared", "stored_questions", "unpaired"]

HASHED_ID = r"q:[0-9a-f]{16}(#[0-9]+)?"
"""A query id the ingest made from a question's text (numbered as a repeat or not)."""


def hashed_id(query_id: str) -> bool:
    """Whether ``query_id`` looks made from a question's text (:data:`HASHED_ID`)."""
    return re.fullmatch(HASHED_ID, query_id) is not None


_NORM = "lower(trim(regexp_replace(query, '\\s+', ' ', 'g')))"  # (as sanity compares texts)


def stored_questions(con: duckdb.DuckDBPyConnection, options: IngestOptions) -> StoredQuestions | None:
    """The stored questions a load takes ids from: None with a questions file (it wins) or when the
    options turn them off (``--no-stored-questions``). Read lazily (:meth:`StoredQuestions.gives_ids`),
    from the records of the loads before this one (call it before the load writes a file)."""
    if options.queries or not options.stored_questions:
        return None
    (last,) = con.execute("SELECT coalesce(max(file_id), 0) FROM files").fetchone() or (0,)
    return StoredQuestions("the stored runs' questions", con=con, last_file=int(last))


def settle_shared(con: duckdb.DuckDBPyConnection, options: IngestOptions, questions: QuestionIds | None) -> None:
    """A questions file's texts that several of its ids share (SciFact's claims 1291 and 1292) take
    the one id of them the stored runs ask, where they ask exactly one (:meth:`QuestionIds.settle`);
    not with ``--no-stored-questions`` (the stored runs then give no id). One query, only when the
    file has such a text; call it before the load writes a file (the stored runs are those before)."""
    if questions is None or not questions.shared or not options.stored_questions:
        return
    ids = sorted({i for got in questions.shared.values() for i in got})
    rows = con.execute("SELECT DISTINCT query_id FROM records WHERE list_contains(?::VARCHAR[], query_id)", [ids])
    questions.settle({q for (q,) in rows.fetchall()})


@dataclass
class StoredQuestions(QuestionIds):
    """:class:`QuestionIds` read from the database when a load first makes a hashed id; ``runs_of``:
    question id → the runs that stored it (named in the load's sentences)."""

    con: duckdb.DuckDBPyConnection | None = None
    last_file: int = 0  # records of files up to this id were stored before the load
    runs_of: dict[str, set[str]] = field(default_factory=dict)
    read: bool = False

    def gives_ids(self) -> bool:
        """Whether any stored question may give a hashed id another (read on the first call)."""
        if not self.read:
            self.read = True
            self._read()
        return bool(self.by_hash or self.shared)

    def id_for(self, hashed: str) -> tuple[str, str]:
        self.gives_ids()
        return super().id_for(hashed)

    def _read(self) -> None:
        """One query: each stored (id, text) with a text whose id is not a hash, and its runs."""
        assert self.con is not None
        rows = self.con.execute(
            "SELECT query_id, query, list(DISTINCT run_id) FROM records WHERE file_id <= ? AND query IS NOT NULL "
            "AND NOT regexp_full_match(query_id, ?) GROUP BY query_id, query",
            [self.last_file, HASHED_ID],
        ).fetchall()
        ids: dict[str, set[str]] = {}
        for qid, text, runs in rows:
            ids.setdefault(query_id_for(text), set()).add(qid)
            self.runs_of.setdefault(qid, set()).update(runs)
        for h, got in ids.items():
            got = {q for q in got if not _sample_of(q, got)}
            if len(got) == 1:
                self.by_hash[h] = next(iter(got))
            else:
                self.shared[h] = natural_sorted(got)

    def sentences(self, admitted_from: object, *, loaded: bool = True) -> list[Said]:
        """One sentence per run some of whose records took a stored question's id or matched several
        (a load whose questions the database does not hold says nothing: it asked for nothing; so does
        one that added no record, whatever ``loaded`` says)."""
        counts, shared_ids, took = self.tally(admitted_from, {})
        out = []
        for run in natural_sorted(counts):
            n = counts[run]
            if not (n[TOOK] or n[SHARED]):
                continue
            runs, n_runs = self._runs((took or {}).get(run, set()))
            # (the runs asking those questions under those ids: the run they came from, and any run loaded
            # later that took them from it too — which one gave them is not stored, so none is called the source)
            source = f"{self.name} (as {runs} {'asks' if n_runs == 1 else 'ask'} them)" if runs else self.name
            shared = sorted(shared_ids.get(run, ()))
            out.append(self.sentence(run, n, shared, source, "none of them", "of their questions"))
        return out

    def _runs(self, took: set[str]) -> tuple[str, int]:
        """The runs that stored the questions ``took`` names (up to 3, then how many more; "" for
        none), and how many they are."""
        runs = natural_sorted(
            {r for qid in took for r in self.runs_of.get(qid if qid in self.runs_of else qid.rpartition("#")[0], ())}
        )
        shown = [repr(r) for r in runs[:3]] + ([f"{len(runs) - 3:,} more"] if len(runs) > 3 else [])
        return (listed("run", shown) if runs else "", len(runs))


def _sample_of(qid: str, ids: set[str]) -> bool:
    """Whether ``qid`` is a numbered asking (``1#2``) of an id among ``ids`` (the same text's)."""
    base, sep, n = qid.rpartition("#")
    return bool(sep) and n.isdigit() and base in ids


def unpaired(con: duckdb.DuckDBPyConnection, loaded: list[str]) -> list[str]:
    """After a load (``loaded``: the sha256 of its files loaded), one sentence per run holding hashed
    ids that asks questions a run of this load logs with query ids (by normalised text, as
    :func:`~ragaudit_core.logs.sanity.same_questions_other_ids`): a run stored before (never renamed)
    or of this same load (whose records do not serve it) — saying how to pair them. Nothing is read
    unless the load stored a record with its own id and the database holds a hashed one."""
    if not loaded:
        return []
    this = "file_id IN (SELECT file_id FROM files WHERE list_contains($loaded, sha256))"
    gate = con.execute(
        f"""SELECT EXISTS (SELECT 1 FROM records WHERE {this} AND NOT starts_with(query_id, 'q:')),
                   EXISTS (SELECT 1 FROM records WHERE starts_with(query_id, 'q:'))""",
        {"loaded": loaded},
    ).fetchone()
    if not gate or not all(gate):
        return []
    rows = con.execute(
        f"""WITH logged AS (SELECT DISTINCT run_id, {_NORM} AS t FROM records
                            WHERE {this} AND query IS NOT NULL AND NOT regexp_full_match(query_id, $hashed)),
                 hashed AS (SELECT DISTINCT run_id, {_NORM} AS t, {this} AS here FROM records
                            WHERE query IS NOT NULL AND regexp_full_match(query_id, $hashed))
            SELECT h.run_id, bool_or(h.here), count(DISTINCT h.t), list(DISTINCT l.run_id)
            FROM hashed h JOIN logged l USING (t) WHERE h.run_id <> l.run_id
            GROUP BY h.run_id ORDER BY h.run_id""",
        {"loaded": loaded, "hashed": HASHED_ID},
    ).fetchall()
    by_run = {r[0]: r for r in rows}
    return [_unpaired_sentence(*by_run[run]) for run in natural_sorted(by_run)]


def _unpaired_sentence(run: str, here: bool, n: int, logging: list[str]) -> str:
    names = [repr(r) for r in natural_sorted(logging)]
    shown = listed("run", names[:3] + ([f"{len(names) - 3:,} more"] if len(names) > 3 else []))
    asks = f"asks {n:,} of the questions of {shown}{', loaded with it,' if here else ''} under hashed ids (q:…)"
    again = "remove its file (on the home page: “Remove a file or a run…”) and load it again"
    if here:
        return (
            f"run {run!r} {asks}, so they share no query: the stored runs' questions give ids to later loads only; "
            f"to pair them, {again}, or load it with the benchmark's questions (--queries, the upload's “Questions "
            "file”)"
        )
    return (
        f"run {run!r}, loaded before, {asks}, so they share no query: stored runs are not renamed; to pair them, "
        f"{again}: its records then take the stored runs' ids"
    )

"""Document ids from the stored runs' passages: a passage a load gives a ``text:`` id takes the
document id the runs already stored log for the same passage, word for word.

A Ragas export without ``retrieved_context_ids`` or a trace export without a document-id key logs no
document ids, so each passage gets ``text:`` + 16 hex digits of its span hash
(:func:`~ragaudit_core.logs.formats.base.text_doc_id`): beside a native run that logs the corpus's
ids for the same passages, every document and every span differs by id, and J is 0 by how the two
were logged (:mod:`ragaudit_core.stability.mixed_ids`). But the native run stores its passages with
their ids: so, mirroring the stored questions (:mod:`.stored_questions`), the passages the database
already holds serve as the id source. Rules (docs/log-contract.md, "Document ids from the stored
runs' passages"):

* **Matched by the span hash**: the hash of the normalised passage (:func:`~ragaudit_core.logs.identity.span_hash`,
  with the database's span options), so a passage matches a stored one word for word once
  normalised. The entry takes the stored entries' document id (canonical) and their raw id.
* **Only made ids change**: an entry of a record whose mapping made a ``text:`` id
  (:attr:`~ragaudit_core.logs.formats.base.MapContext.made`) whose id is ``text:`` and its own
  passage's hash; never an id a record logs itself — a native record's, or a Ragas row's
  ``retrieved_context_ids`` — even one that looks made.
* **No guess**: a passage stored under two or more document ids keeps its ``text:`` id, and is
  counted; so does a passage no stored run holds (another chunking: at the document level it meets
  no other run's documents, and the run's sentence says so).
* **Order**: only entries stored by loads **before** this one serve (records of files up to the last
  file id before the load, read on a cursor of their own, which sees what was committed): not a
  native file of the same load (its ids would depend on the order of the files). Stored runs are
  never renamed afterwards; :func:`unpaired` says, after a load, which run still holds ``text:`` ids
  for passages a run with ids of this load logs (or was loaded with it), and how to pair them
  (remove it and load it again).
* **Counted**: one sentence per run (its entries: a passage retrieved for two questions counts
  twice) — how many took a stored id (from which runs, up to 3 named), how many kept their hash
  because no stored run holds the passage, how many because several ids share it.

Where: in the rows the ingest hands to its writer — the evidence tuples of records read in the
process (renamed when the writer flushes them), the Arrow rows the worker processes return and the
rows of held trace spans (renamed as they are added) — so the worker path and the in-process path
store the same rows. Everything that stores an id for the same entries agrees: the relevance labels
of Ragas reference contexts are found from the stored evidence after it is renamed, and a reference
passage no entry of its query retrieved takes the stored id by the same rules
(:func:`ragaudit_core.logs.qrels.store_reference_labels`). Not renamed: the provenance graphs a trace
export with a reranker gives (their document nodes without an id are ``text:`` + the passage's
position, never a span hash: nothing to match) and the ids ``--ids-are-texts`` makes after the load
(:func:`ragaudit_core.logs.sanity.read_ids_as_texts`: ids the records logged, read again).

Cost: nothing until the load admits an entry whose mapping made a ``text:`` id (a native load never
asks), then one SQL query: per distinct stored span hash with a real document id, its id, its raw
id and whether several ids share it — held as 32 bytes of key (numpy, sorted, looked up by binary
search) plus the two ids (Arrow strings) per such hash, nothing per entry; nothing more where nothing
is stored with ids.
"""

from __future__ import annotations

import dataclasses

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ragaudit_core.logs.formats.base import ALL_HASHED, NO_DOC_IDS
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.options import IngestOptions
from ragaudit_core.logs.report import Issue
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.wording import NOTE, WARNING, Said, counted, listed

__all__ = ["StoredPassages", "stored_passages", "unpaired"]

TOOK, MISSED, SHARED = 0, 1, 2
_DOC, _RAW, _SPAN, _TEXT = 3, 4, 5, 7  # columns of an evidence row (rows.evidence_rows)
_HEX = np.zeros(256, np.uint8)
_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)


def _keys(hashes: pa.Array) -> np.ndarray:
    """Span hashes (64 lowercase hex digits) as 32-byte keys, ordered as the hex strings are."""
    if not len(hashes):
        return np.empty(0, "S32")
    fixed = pc.cast(pc.cast(hashes, pa.binary()), pa.binary(64))
    raw = np.frombuffer(fixed.buffers()[1], np.uint8, count=64 * len(fixed), offset=64 * fixed.offset)
    nib = _HEX[raw.reshape(-1, 64)]
    return np.ascontiguousarray((nib[:, 0::2] << 4) | nib[:, 1::2]).view("S32").ravel()


def stored_passages(con: duckdb.DuckDBPyConnection, options: IngestOptions) -> StoredPassages:
    """The stored passages a load takes document ids from: none serve when the options turn them off
    (``--no-stored-passages``) or nothing is stored. Read lazily (:meth:`StoredPassages.rename_table`),
    from the records of the loads before this one (call it before the load writes a file)."""
    if not options.stored_passages:
        return StoredPassages()
    (last,) = con.execute("SELECT coalesce(max(file_id), 0) FROM files").fetchone() or (0,)
    return StoredPassages(con.cursor() if last else None, int(last), options.casefold_spans)


class StoredPassages:
    """The stored passages (see the module), and what the load's entries took from them.

    ``path``: the file being read (its entries are counted under it, and forgotten with it when the
    file is refused); ``pending``: ranges of the writer's evidence tuples that records whose mapping
    made a ``text:`` id added, renamed at the writer's next flush."""

    def __init__(
        self, cur: duckdb.DuckDBPyConnection | None = None, last_file: int = 0, casefold: bool = False
    ) -> None:
        self.cur, self.last_file, self.casefold = cur, last_file, casefold
        self.active = cur is not None  # False: nothing serves (turned off, nothing stored, or read and none)
        self.read = False
        self.path = ""
        self.pending: list[tuple[int, int, str]] = []
        self.counts: dict[tuple[str, str], list[int]] = {}  # (file, run) -> [took, missed, shared]
        self.keys = np.empty(0, "S32")
        self.shared = np.empty(0, bool)
        self.docs = self.raws = pa.array([], pa.string())

    # ------------------------------------------------------------------ what the ingest hands over

    def made_rows(self, start: int, end: int) -> None:
        """Evidence tuples ``start:end`` of the writer's buffer come from a record that made a ``text:`` id."""
        if not self.active or start == end:
            return
        if self.pending and self.pending[-1][1] == start and self.pending[-1][2] == self.path:
            self.pending[-1] = (self.pending[-1][0], end, self.path)
        else:
            self.pending.append((start, end, self.path))

    def rename_rows(self, rows: list[tuple]) -> None:
        """Rename the pending evidence tuples of ``rows`` in place (the writer's buffer, as it flushes)."""
        pending, self.pending = self.pending, []
        by_path: dict[str, list[int]] = {}
        for start, end, path in pending if self.active else ():
            by_path.setdefault(path, []).extend(i for i in range(start, end) if rows[i][_RAW].startswith("text:"))
        for path, at in by_path.items():
            cols = [pa.array([rows[i][c] for i in at], pa.string()) for c in (0, _RAW, _SPAN, _TEXT)]
            idx, kind, pos = self._resolve(path, *cols)
            took = kind == TOOK
            docs = self.docs.take(pa.array(pos[took])).to_pylist()
            raws = self.raws.take(pa.array(pos[took])).to_pylist()
            for i, doc, raw in zip(idx[took].tolist(), docs, raws, strict=True):
                r = rows[at[i]]
                rows[at[i]] = (*r[:_DOC], doc, raw, *r[_SPAN:])

    def rename_table(self, table: pa.Table, made: list[int]) -> pa.Table:
        """``table`` (evidence rows with ``rec_idx``) with the rows of the lines ``made`` renamed."""
        if not self.active or not made:
            return table
        lines = pc.is_in(table["rec_idx"], pa.array(made, pa.int32()))
        hashed = pc.and_(lines, pc.starts_with(table["doc_id_raw"], "text:")).combine_chunks()
        at = np.flatnonzero(hashed.to_numpy(zero_copy_only=False))
        if not len(at):
            return table
        sub = table.take(at)
        idx, kind, pos = self._resolve(self.path, *(sub[c].combine_chunks() for c in _COLUMNS))
        took = kind == TOOK
        if not took.any():
            return table
        mask = np.zeros(table.num_rows, bool)
        mask[at[idx[took]]] = True
        for name, values in (("doc_id", self.docs), ("doc_id_raw", self.raws)):
            col = pc.replace_with_mask(table[name].combine_chunks(), pa.array(mask), values.take(pa.array(pos[took])))
            table = table.set_column(table.schema.get_field_index(name), name, col)
        return table

    def forget_file(self, path: str) -> None:
        """A refused file's entries are not counted (the writer has flushed them: nothing pending)."""
        self.counts = {k: n for k, n in self.counts.items() if k[0] != path}

    def drop_answered(self, warnings: list[Issue], warn_rows: list[tuple]) -> None:
        """Drop, from a load's ``warnings`` (issues) and ``warn_rows`` (``ingest_warnings`` rows), the
        warning that a file's records carry no document ids (:data:`~.formats.base.NO_DOC_IDS`) where
        every passage of that file took a stored run's id: its passages have ids now, and the run's
        sentence says where they came from. Where only some did, the warning no longer says that each
        passage's id is its text's hash (:data:`~.formats.base.ALL_HASHED`): only the others' is."""
        whole: dict[str, bool] = {}
        some: set[str] = set()
        for (path, _run), n in self.counts.items():
            whole[path] = whole.get(path, True) and n[TOOK] > 0 and not (n[MISSED] or n[SHARED])
            if n[TOOK]:
                some.add(path)
        answered = {p for p, ok in whole.items() if ok}
        if not some:
            return

        def said(path: object, code: object, message: object) -> bool:
            return code == "mapping" and path in some and NO_DOC_IDS in str(message)

        def partly(message: str) -> str:
            return message.replace(ALL_HASHED, PARTLY_HASHED)

        warnings[:] = [
            dataclasses.replace(w, message=partly(w.message)) if said(w.path, w.code, w.message) else w
            for w in warnings
            if not (said(w.path, w.code, w.message) and w.path in answered)
        ]
        warn_rows[:] = [
            (*r[:4], partly(r[4]), *r[5:]) if said(r[1], r[3], r[4]) else r
            for r in warn_rows
            if not (said(r[1], r[3], r[4]) and r[1] in answered)
        ]

    def doc_id_of(self, h: str) -> str | None:
        """The raw document id the stored passage of span hash ``h`` gives, by the rules (None: it
        keeps its ``text:`` id) — for a reference passage no entry of its query retrieved."""
        if not self.active or not self._stored() or len(h) != 64:
            return None
        key = _keys(pa.array([h]))[0]
        p = min(int(np.searchsorted(self.keys, key)), len(self.keys) - 1)
        return str(self.raws[p].as_py()) if self.keys[p] == key and not self.shared[p] else None

    # ------------------------------------------------------------------ the lookup

    def _resolve(
        self, path: str, runs: pa.Array, raws: pa.Array, hashes: pa.Array, texts: pa.Array
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Of entries with a ``text:`` id: which are made (their indices), what each got (``TOOK``,
        ``MISSED``, ``SHARED``) and where a taken id is (its index in ``docs``); counted under ``path``."""
        made = self._made(raws, hashes, texts)
        idx = np.flatnonzero(made)
        none = np.empty(0, np.int64)
        if not len(idx) or not self._stored():
            return none, none, none
        keys = _keys(hashes.take(pa.array(idx)))
        pos = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        found = self.keys[pos] == keys
        kind = np.where(found, np.where(self.shared[pos], SHARED, TOOK), MISSED)
        for run, k in zip(runs.take(pa.array(idx)).to_pylist(), kind.tolist(), strict=True):
            self.counts.setdefault((path, run), [0, 0, 0])[k] += 1
        return idx, kind, pos

    def _made(self, raws: pa.Array, hashes: pa.Array, texts: pa.Array) -> np.ndarray:
        """Whether each id is ``text:`` and its own passage's hash as the ingest makes it (the hash
        without case folding: with ``casefold_spans`` the stored hash is another, so it is made again)."""
        if self.casefold:
            return np.array(
                [
                    t is not None and r == "text:" + span_hash(t)[:16]
                    for r, t in zip(raws.to_pylist(), texts.to_pylist())
                ],
                bool,
            )
        made = pc.binary_join_element_wise("text:", pc.utf8_slice_codeunits(hashes, 0, 16), "")
        ok = pc.and_(pc.equal(raws, made), pc.equal(pc.utf8_length(hashes), 64))
        return ok.fill_null(False).to_numpy(zero_copy_only=False)

    def _stored(self) -> bool:
        """Whether any stored passage has an id (read on the first call)."""
        if not self.read:
            self.read = True
            self._read()
            self.active = bool(len(self.keys))
        return self.active

    def _read(self) -> None:
        """One query: per distinct stored span hash with a real document id, its id, raw id and whether
        several ids share it (records of the files stored before the load)."""
        assert self.cur is not None
        try:
            t: pa.Table = self.cur.sql(
                """SELECT e.span_hash, min(e.doc_id) AS doc_id, min(e.doc_id_raw) AS doc_id_raw,
                          count(DISTINCT e.doc_id) > 1 AS shared
                   FROM evidence e JOIN records r ON r.run_id = e.run_id AND r.query_id = e.query_id
                   WHERE r.file_id <= ? AND NOT starts_with(e.doc_id, 'text:')
                     AND regexp_full_match(e.span_hash, '[0-9a-f]{64}')
                   GROUP BY e.span_hash ORDER BY e.span_hash""",
                params=[self.last_file],
            ).to_arrow_table()
        finally:
            self.close()
        self.keys = _keys(t["span_hash"].combine_chunks())
        self.shared = t["shared"].combine_chunks().to_numpy(zero_copy_only=False)
        self.docs, self.raws = t["doc_id"].combine_chunks(), t["doc_id_raw"].combine_chunks()

    def close(self) -> None:
        if self.cur is not None:
            self.cur.close()
            self.cur = None

    # ------------------------------------------------------------------ what the load says

    def sentences(self, con: duckdb.DuckDBPyConnection) -> list[Said]:
        """One sentence per run some of whose entries made a ``text:`` id, when passages with ids are
        stored (a load beside no stored id says nothing: it asked for nothing). ``con``: the load's."""
        self.close()
        per_run: dict[str, list[int]] = {}
        for (_path, run), n in self.counts.items():
            got = per_run.setdefault(run, [0, 0, 0])
            for k in (TOOK, MISSED, SHARED):
                got[k] += n[k]
        if not per_run:
            return []
        sources = self._sources(con, [r for r, n in per_run.items() if n[TOOK]])
        return [  # a note where every passage took an id; a warning where some kept their hashes
            Said(_sentence(run, n, sources.get(run, [])), NOTE if not (n[MISSED] or n[SHARED]) else WARNING)
            for run in natural_sorted(per_run)
            for n in (per_run[run],)
        ]

    def _sources(self, con: duckdb.DuckDBPyConnection, runs: list[str]) -> dict[str, list[str]]:
        """Per run of ``runs``, the stored runs holding its entries' passages under the same ids."""
        if not runs:
            return {}
        entries = "FROM evidence e JOIN records r ON r.run_id = e.run_id AND r.query_id = e.query_id"
        rows = con.execute(
            f"""WITH t AS (SELECT DISTINCT e.run_id, e.doc_id, e.span_hash {entries}
                           WHERE r.file_id > $last AND list_contains($runs, e.run_id)
                             AND NOT starts_with(e.doc_id, 'text:') AND e.span_hash IS NOT NULL),
                     s AS (SELECT DISTINCT e.run_id, e.doc_id, e.span_hash {entries}
                           WHERE r.file_id <= $last AND e.span_hash IN (SELECT span_hash FROM t))
                SELECT t.run_id, list(DISTINCT s.run_id) FROM t JOIN s USING (doc_id, span_hash)
                WHERE s.run_id <> t.run_id GROUP BY t.run_id""",
            {"last": self.last_file, "runs": runs},
        ).fetchall()
        return dict(rows)


_COLUMNS = ("run_id", "doc_id_raw", "span_hash", "text")
PARTLY_HASHED = (
    ": the passages that took no stored run's document id keep their text's hash as theirs (the run's sentence "
    "counts them)"
)
"""What a file's 'carry no document ids' warning says of its passages when some took a stored run's id."""


def _named(runs: list[str]) -> str:
    names = [repr(r) for r in natural_sorted(runs)]
    return listed("run", names[:3] + ([f"{len(names) - 3:,} more"] if len(names) > 3 else []))


def _keeps(n: int) -> str:
    return "keeps its text hash" if n == 1 else "keep their text hashes"


def _sentence(run: str, n: list[int], sources: list[str]) -> str:
    took, missed, shared = n[TOOK], n[MISSED], n[SHARED]
    ids = "its document id" if took == 1 else "their document ids"
    s = f"{counted(took, 'passage')} of run {run!r} took {ids} from the stored runs' passages"
    # (the runs that hold those passages under those ids: the run they came from, and any run loaded
    # later that took them from it too — which one gave them is not stored, so none is called the source)
    s += f" (as {_named(sources)} {'holds' if len(sources) == 1 else 'hold'} them)" if sources else ""
    if missed:
        meets = "it meets" if missed == 1 else "they meet"
        s += (
            f"; {missed:,} matched no stored passage word for word and {_keeps(missed)} (text:…): at the document "
            f"level {meets} no other run's documents (a different chunking?)"
        )
    if shared:
        s += (
            f"; {shared:,} matched a passage stored under several document ids and {_keeps(shared)} (which one "
            "cannot be told)"
        )
    return s


def unpaired(con: duckdb.DuckDBPyConnection, loaded: list[str]) -> list[str]:
    """After a load (``loaded``: the sha256 of its files loaded), one sentence per run holding
    ``text:`` ids for passages a run of this load logs with a document id (word for word, by span
    hash; a passage stored under several ids is not counted: loading again would not pair it): a run
    stored before (never renamed) or of this same load (whose entries do not serve it) — saying how
    to pair them. Nothing is read unless the database holds a ``text:`` id and the load stored an
    entry with an id (two EXISTS)."""
    if not loaded:
        return []
    files = "SELECT file_id FROM files WHERE list_contains($loaded, sha256)"
    this = f"SELECT run_id, query_id FROM records WHERE file_id IN ({files})"
    on = "e.run_id = t.run_id AND e.query_id = t.query_id"
    gate = con.execute("SELECT EXISTS (SELECT 1 FROM evidence WHERE starts_with(doc_id, 'text:'))").fetchone()
    if not gate or not gate[0]:
        return []
    gate = con.execute(
        f"SELECT EXISTS (SELECT 1 FROM evidence e JOIN ({this}) t ON {on} WHERE NOT starts_with(e.doc_id, 'text:'))",
        {"loaded": loaded},
    ).fetchone()
    if not gate or not gate[0]:
        return []
    rows = con.execute(
        f"""WITH this AS ({this}),
                 logged AS (SELECT DISTINCT e.run_id, e.span_hash FROM evidence e JOIN this t ON {on}
                            WHERE NOT starts_with(e.doc_id, 'text:') AND e.span_hash IS NOT NULL),
                 one AS (SELECT span_hash FROM evidence WHERE NOT starts_with(doc_id, 'text:')
                           AND span_hash IN (SELECT span_hash FROM logged)
                         GROUP BY span_hash HAVING count(DISTINCT doc_id) = 1),
                 hashed AS (SELECT DISTINCT e.run_id, e.span_hash, t.run_id IS NOT NULL AS here
                            FROM evidence e LEFT JOIN this t ON {on}
                            WHERE starts_with(e.doc_id, 'text:') AND e.span_hash IN (SELECT span_hash FROM one))
            SELECT h.run_id, bool_or(h.here), count(DISTINCT h.span_hash), list(DISTINCT l.run_id)
            FROM hashed h JOIN logged l USING (span_hash) WHERE h.run_id <> l.run_id
            GROUP BY h.run_id""",
        {"loaded": loaded},
    ).fetchall()
    by_run = {r[0]: r for r in rows}
    return [_unpaired_sentence(*by_run[run]) for run in natural_sorted(by_run)]


def _unpaired_sentence(run: str, here: bool, n: int, logging: list[str]) -> str:
    again = "remove its file (on the home page: “Remove a file or a run…”) and load it again"
    held = f"{counted(n, 'distinct passage')} of {_named(logging)}"  # (texts; a load's sentence counts entries)
    hashed = "word for word under hashed document ids (text:…), so they share no document"
    if here:
        return (
            f"run {run!r} holds {held}, loaded with it, {hashed}: the stored runs' passages give document ids to "
            f"later loads only; to pair them, {again}"
        )
    return (
        f"run {run!r}, loaded before, holds {held} {hashed}: stored runs are not renamed; to pair them, {again}: "
        "its passages then take the stored runs' document ids"
    )

"""Relevance labels (qrels) as data: TREC and BEIR files read into the ``qrels`` table.

Accepted files (plain or gzip), one judgement per line:

* **BEIR** — tab-separated ``query-id  corpus-id  score``, with or without that header line;
* **TREC** — whitespace-separated ``query-id  iteration  doc-id  relevance`` (the iteration
  column is ignored, as trec_eval does);
* three whitespace-separated columns without a header (``query-id doc-id relevance``).

Relevance is an integer (graded labels kept as they are; 0 and negative values are judged
non-relevant). Document ids are canonicalised exactly as evidence ids are
(:func:`~ragaudit_core.logs.identity.canonical_doc_id` with the database's identity options), so a
label meets the evidence entry it names. A bad line is reported with its file, line and reason and
the rest of the file loads; within one file a repeated (query, document) keeps its first judgement
(a warning names the line).

Labels belong to queries, not to runs: they apply to every run that asked the query. A file
replaces the labels of the queries it judges (its own judgements, whole), and says how many it
replaced; labels of other queries stay. ``source`` says where a label came from (the file name, or
``ragas:<file>`` for labels carried by a Ragas dataset).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import duckdb
import pyarrow as pa

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store
from ragaudit_core.logs.formats.base import query_id_for
from ragaudit_core.logs.identity import CanonOptions, canonical_doc_id, span_hash
from ragaudit_core.logs.options import stored_canon
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.wording import counted, listed

__all__ = [
    "QrelsError",
    "QrelsReport",
    "load_qrels",
    "parse_qrels",
    "qrels_files",
    "query_labels",
    "store_labels",
    "store_reference_labels",
    "unlabelled_runs_note",
]

_QUESTION_FILES = (".jsonl", ".jsonl.gz")  # BEIR's queries.jsonl, given with the labels
_BY_TEXT = " (by question text)"  # the source of a file's labels stored again under their questions' hashed ids
_HEADER = re.compile(r"^\s*query[-_ ]?id\s+(corpus|doc(ument)?)[-_ ]?id\s+(score|relevance|rel|label)\s*$", re.I)


class QrelsError(RagAuditError, ValueError):
    """A qrels file that cannot be read at all (the message names it and says what to do)."""


class Label(NamedTuple):
    query_id: str
    doc_id_raw: str
    relevance: int
    line_no: int


@dataclass
class _Columns:
    """Judgements column by column (a million labels as four lists, not a million objects)."""

    query_id: list[str] = field(default_factory=list)
    doc_id_raw: list[str] = field(default_factory=list)
    relevance: list[int] = field(default_factory=list)
    line_no: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.query_id)

    def add(self, qid: str, doc: str, rel: int, line_no: int) -> None:
        self.query_id.append(qid)
        self.doc_id_raw.append(doc)
        self.relevance.append(rel)
        self.line_no.append(line_no)

    @classmethod
    def of(cls, labels: Iterable[Label]) -> _Columns:
        out = cls()
        for lab in labels:
            out.add(*lab)
        return out


@dataclass
class QrelsReport:
    """What one load of label files did."""

    files: list[str] = field(default_factory=list)
    n_labels: int = 0
    n_queries: int = 0
    n_relevant: int = 0
    replaced_queries: int = 0
    rejected: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    n_by_text: int = 0  # queries whose labels are also stored under their question's hashed id

    def summary(self) -> str:
        s = (
            f"loaded {counted(self.n_labels, 'relevance label')} for {counted(self.n_queries, 'query')} "
            f"({self.n_relevant:,} relevant) from {counted(len(self.files), 'file')}"
        )
        if self.n_by_text:
            s += (
                f"; the labels of {counted(self.n_by_text, 'query')} also under their questions' hashed ids "
                "(queries.jsonl), for logs without query ids"
            )
        if self.replaced_queries:
            s += f"; replaced the earlier labels of {counted(self.replaced_queries, 'query')}"
        if self.rejected:
            s += f"; rejected {counted(len(self.rejected), 'line')}"
        return s


_GRADE = re.compile(r"[+-]?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?")  # ASCII digits: no "1_0", no "١"
_INT32 = (-(2**31), 2**31 - 1)  # the qrels table's INTEGER


def _lines(path: Path) -> Iterator[tuple[int, str | None, str | None]]:
    """``(line_no, text, why)`` per line of a plain or gzipped file: the line's text, or None and
    why it is not UTF-8 (that line alone is lost; a byte-order mark opening the file is dropped)."""
    try:
        with open(path, "rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        with gzip.open(path, "rb") if gz else open(path, "rb") as f:
            line_no = 0
            for chunk in f:  # a chunk ends at "\n"; a file ending its lines with "\r" alone is split here
                for raw in chunk.splitlines() if b"\r" in chunk else (chunk,):
                    line_no += 1
                    if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                        raw = raw[3:]
                    try:
                        yield line_no, raw.decode("utf-8"), None
                    except UnicodeDecodeError as e:
                        why = f"not UTF-8 text (byte {e.start + 1} of the line); save the file as UTF-8"
                        yield line_no, None, why
    except (OSError, EOFError) as e:
        raise QrelsError(f"{path}: cannot read the file ({e})") from None


def _columns(line: str) -> list[str]:
    cols = line.split("\t") if "\t" in line else line.split()
    return [c.strip() for c in cols]


def _judgements(path: Path) -> Iterator[tuple[int, list[str] | None, str | None]]:
    """``(line_no, columns, why)`` per judgement line: blank lines, ``#`` comments and a header on
    the first line are passed over; a line that is not UTF-8 comes with why."""
    for line_no, text, why in _lines(path):
        if text is None:
            yield line_no, None, why
            continue
        line = text.strip()
        if not line or line.startswith("#") or (line_no == 1 and _HEADER.match(line)):
            continue
        yield line_no, _columns(line), None


def _layout(path: Path) -> int | None:
    """The file's column count, 3 or 4: the one most of its judgement lines have (a first line
    of the other count, cut short or with a stray column, does not decide it; a tie goes to the
    count seen first)."""
    seen: dict[int, int] = {}
    for _n, cols, _why in _judgements(path):
        if cols is not None and len(cols) in (3, 4):
            seen[len(cols)] = seen.get(len(cols), 0) + 1
    return max(seen, key=lambda w: seen[w]) if seen else None  # dicts keep the first-seen order on ties


def _grade(rel: str) -> int | str:
    """A relevance grade as an integer (``2``, ``1.0``, ``1e0``), or why it is not one."""
    if len(rel) == 1 and "0" <= rel <= "9":  # nearly every grade of every file: one ASCII digit
        return ord(rel) - 48
    if not _GRADE.fullmatch(rel):
        return f"relevance {rel!r} is not an integer"
    try:
        grade = int(rel)
    except ValueError:
        f = float(rel)
        if not f.is_integer():
            return f"relevance {rel!r} is not an integer"
        grade = int(f)
    if not _INT32[0] <= grade <= _INT32[1]:
        return f"relevance {rel!r} is outside the integers a label holds ({_INT32[0]:,} to {_INT32[1]:,})"
    return grade


def parse_qrels(path: str | Path) -> tuple[list[Label], list[str]]:
    """The judgements of one file and the reasons of its rejected lines (``file line N: why``).

    The column layout (3 or 4 columns) is the one most judgement lines of the file have, and a
    line of another count is rejected; a header line (``query-id corpus-id score``) is skipped
    where the file has one on its first line. A grade is an integer written in ASCII digits
    (``1.0`` and ``1e0`` read as 1) within the table's 32-bit range; a line that is not UTF-8 is
    rejected alone."""
    rejected: list[str] = []
    labels = [
        Label(*row)
        for cols in _batches(Path(path), rejected)
        for row in zip(cols.query_id, cols.doc_id_raw, cols.relevance, cols.line_no)
    ]
    return labels, rejected


_BATCH = 65_536  # labels held as Python strings at a time; the file's labels as a whole are Arrow columns


def _batches(p: Path, rejected: list[str]) -> Iterator[_Columns]:
    """:func:`parse_qrels` in batches of up to :data:`_BATCH` labels (the reasons of rejected
    lines appended to ``rejected``): a file of millions of judgements is never held as Python
    objects at once."""
    labels = _Columns()
    width = _layout(p)
    for line_no, cols, why in _judgements(p):
        if cols is None:
            rejected.append(f"{p.name} line {line_no}: {why}")
            continue
        if len(cols) != width:
            rejected.append(
                f"{p.name} line {line_no}: {counted(len(cols), 'column')}; a qrels line has " + _LAYOUTS[width == 4]
            )
            continue
        qid, doc, rel = (cols[0], cols[2], cols[3]) if width == 4 else (cols[0], cols[1], cols[2])
        if not qid or not doc:
            rejected.append(f"{p.name} line {line_no}: empty query or document id")
            continue
        grade = _grade(rel)
        if isinstance(grade, str):
            rejected.append(f"{p.name} line {line_no}: {grade}")
            continue
        labels.add(qid, doc, grade, line_no)
        if len(labels) == _BATCH:
            yield labels
            labels = _Columns()
    if width is None and not rejected:
        raise QrelsError(f"{p}: holds no relevance judgement (expected 'query-id<TAB>doc-id<TAB>relevance' lines)")
    if len(labels):
        yield labels


_LAYOUTS = ("3 (query-id, doc-id, relevance)", "4 (query-id, iteration, doc-id, relevance)")


def qrels_files(folder: str | Path) -> list[Path]:
    """The label files of a log folder: the ``.tsv``, ``.txt`` or ``.qrels`` files (optionally
    ``.gz``) in any ``qrels/`` folder under it (BEIR's layout), sorted by path. Hidden folders and
    files (``.git``) are left out and a folder that cannot be read is passed over, as the logs'
    listing does (:mod:`.listing`, which warns about it)."""
    ok = (".tsv", ".txt", ".qrels", ".tsv.gz", ".txt.gz", ".qrels.gz")
    root = Path(folder)
    dirs = [root] if root.name == "qrels" else []
    for parent, subfolders, _files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        dirs += [Path(parent, d) for d in subfolders if d == "qrels"]
    found = set()
    for d in dirs:
        try:
            found |= {p for p in d.iterdir() if p.is_file() and p.name.lower().endswith(ok) and p.name[0] != "."}
        except OSError:
            continue
    return sorted(found)


def store_labels(
    con: duckdb.DuckDBPyConnection, labels: Iterable[Label], source: str, report: QrelsReport | None = None
) -> QrelsReport:
    """Replace the labels of the judged queries by ``labels`` (one source), canonicalising ids."""
    return _store(con, [_arrow(_Columns.of(labels), stored_canon(con), 0)], source, report)


_SCHEMA = pa.schema(
    [
        ("ord", pa.int64()),
        ("line_no", pa.int64()),
        ("query_id", pa.string()),
        ("doc_id", pa.string()),
        ("doc_id_raw", pa.string()),
        ("relevance", pa.int32()),
    ]
)


def _arrow(labels: _Columns, canon: CanonOptions, start: int) -> pa.RecordBatch:
    """A batch of labels as Arrow columns, document ids canonicalised exactly as evidence ids are
    (the same function), ``ord`` numbering the labels in file order from ``start``."""
    docs = [canonical_doc_id(raw, canon) for raw in labels.doc_id_raw]
    return pa.record_batch(
        [
            pa.array(range(start, start + len(labels)), pa.int64()),
            pa.array(labels.line_no, pa.int64()),
            pa.array(labels.query_id, pa.string()),
            pa.array(docs, pa.string()),
            pa.array(labels.doc_id_raw, pa.string()),
            pa.array(labels.relevance, pa.int32()),
        ],
        schema=_SCHEMA,
    )


_DUPLICATES_SQL = """
SELECT line_no, query_id, doc_id FROM (
    SELECT *, row_number() OVER (PARTITION BY query_id, doc_id ORDER BY ord) AS nth FROM _new_qrels
) WHERE nth > 1 ORDER BY ord
"""
_FIRST = "QUALIFY row_number() OVER (PARTITION BY query_id, doc_id ORDER BY ord) = 1"


def _store(
    con: duckdb.DuckDBPyConnection, batches: list[pa.RecordBatch], source: str, report: QrelsReport | None
) -> QrelsReport:
    """:func:`store_labels` on Arrow batches: the first judgement of a repeated (query, document)
    kept (by ``ord``: file order), a warning naming each later one."""
    rep = report or QrelsReport()
    new = pa.Table.from_batches(batches, schema=_SCHEMA)
    if not new.num_rows:
        return rep
    con.register("_new_qrels", new)
    try:
        rep.warnings += [
            f"{source} line {line_no}: query {qid!r} judges document {doc!r} again; the first judgement is kept"
            for line_no, qid, doc in con.execute(_DUPLICATES_SQL).fetchall()
        ]
        ((replaced,),) = con.execute(
            "SELECT count(DISTINCT query_id) FROM qrels WHERE query_id IN (SELECT query_id FROM _new_qrels)"
        ).fetchall()
        ((n, n_queries, n_relevant),) = con.execute(
            "SELECT count(*), count(DISTINCT query_id), count(*) FILTER (relevance > 0) "
            f"FROM (SELECT * FROM _new_qrels {_FIRST})"
        ).fetchall()
        con.execute("DELETE FROM qrels WHERE query_id IN (SELECT DISTINCT query_id FROM _new_qrels)")
        con.execute(
            f"INSERT INTO qrels SELECT query_id, doc_id, doc_id_raw, relevance, ? FROM _new_qrels {_FIRST}",
            [source],
        )
    finally:
        con.unregister("_new_qrels")
    rep.files.append(source)
    rep.n_labels += n
    rep.n_queries += n_queries
    rep.n_relevant += n_relevant
    rep.replaced_queries += int(replaced)
    return rep


def load_qrels(con: duckdb.DuckDBPyConnection, paths: Iterable[str | Path]) -> QrelsReport:
    """Read and store label files (each in its own transaction: a bad file loses nothing else).
    A file none of whose lines is a judgement raises :class:`QrelsError` (files before it stay
    loaded); a file with some bad lines loads the good ones and reports the others.

    Questions (BEIR's ``queries.jsonl``: ``{"_id", "text"}`` per line) — given among ``paths``, else
    beside a label file's ``qrels/`` folder as BEIR lays them out — store each label of a question
    also under the question's hashed id (:func:`~ragaudit_core.logs.formats.base.query_id_for`), the
    id a log without query ids (Ragas, a trace export) gives it."""
    rep = QrelsReport()
    files = [Path(f) for f in paths]
    given = [f for f in files if f.name.lower().endswith(_QUESTION_FILES)]
    questions = {qid: text for q in given for qid, text in _questions(q).items()}
    if given and len(given) == len(files):
        raise QrelsError(f"{given[0]} holds questions, not relevance labels: give the qrels file with it")
    canon = stored_canon(con)
    for p in (f for f in files if f not in given):
        beside = p.parent.parent / "queries.jsonl"
        texts = questions or (_questions(beside) if p.parent.name == "qrels" and beside.is_file() else {})
        rejected: list[str] = []
        labels, by_text = _read(p, canon, texts, rejected)
        if not sum(b.num_rows for b in labels):
            shown = "; ".join(rejected[:3]) + (" …" if len(rejected) > 3 else "")
            raise QrelsError(
                f"{p}: no line is a relevance judgement ({shown}); a qrels line is 'query-id<TAB>doc-id<TAB>relevance' "
                "or TREC's 'query-id 0 doc-id relevance'"
            )
        rep.rejected += rejected
        with store.transaction(con) as cur:
            _store(cur, labels, p.name, rep)
            if by_text:
                rep.n_by_text += _store(cur, by_text, p.name + _BY_TEXT, None).n_queries
            store.bump_data_version(cur)
    if rep.files and (note := unlabelled_runs_note(con)):
        rep.warnings.append(note)
    return rep


def _read(
    p: Path, canon: CanonOptions, texts: dict[str, str], rejected: list[str]
) -> tuple[list[pa.RecordBatch], list[pa.RecordBatch]]:
    """The labels of file ``p`` as Arrow batches, and the same labels of the queries ``texts``
    names under their questions' hashed ids."""
    labels: list[pa.RecordBatch] = []
    by_text: list[pa.RecordBatch] = []
    n = n_text = 0
    for cols in _batches(p, rejected):
        labels.append(_arrow(cols, canon, n))
        n += len(cols)
        if texts and len(
            hashed := _Columns.of(
                Label(query_id_for(texts[q]), doc, rel, line)
                for q, doc, rel, line in zip(cols.query_id, cols.doc_id_raw, cols.relevance, cols.line_no)
                if q in texts
            )
        ):
            by_text.append(_arrow(hashed, canon, n_text))
            n_text += len(hashed)
    return labels, by_text


def _questions(path: Path) -> dict[str, str]:
    """BEIR's questions file: query id → question text (lines that are not ``{"_id", "text"}`` skipped)."""
    out: dict[str, str] = {}
    for _n, raw, _why in _lines(path):
        if raw is None:
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        qid, text = (obj.get("_id"), obj.get("text")) if isinstance(obj, dict) else (None, None)
        if isinstance(qid, (str, int)) and not isinstance(qid, bool) and isinstance(text, str) and text.strip():
            out[str(qid)] = text
    return out


def store_reference_labels(
    con: duckdb.DuckDBPyConnection,
    refs: Iterable[tuple[str, str, str, str]],
    casefold: bool = False,
    stored: Callable[[str], str | None] | None = None,
) -> QrelsReport:
    """Store relevance labels a log carries (``(query_id, kind, reference, file)``; Ragas
    ``reference_context_ids`` are ``"id"`` references, ``reference_contexts`` ``"text"`` ones), each
    relevant with grade 1, per file as one source replacing its queries' earlier labels.

    A text reference is a passage: it labels the document of every evidence entry of the same
    query whose span hash is the passage's (span identity, :func:`span_hash` with the database's
    span options), else the document id ``stored`` gives that hash (the stored runs' passages, by
    their rules: :meth:`~ragaudit_core.logs.stored_passages.StoredPassages.doc_id_of` — the id the
    load's entries of that passage took), else ``text:`` + 16 hex digits of that hash — the id another
    tool's passage without an id is stored under, so a passage retrieved later still matches."""
    by_file: dict[str, list[tuple[str, str, str]]] = {}
    for qid, kind, ref, path in refs:
        by_file.setdefault(path, []).append((qid, kind, ref))
    rep = QrelsReport()
    for path, items in by_file.items():
        texts = {ref: span_hash(ref, casefold=casefold) for _q, kind, ref in items if kind == "text"}
        found: dict[tuple[str, str], list[str]] = {}
        if texts:
            pairs = sorted({(q, texts[ref]) for q, kind, ref in items if kind == "text"})
            rows = con.execute(
                """SELECT DISTINCT e.query_id, e.span_hash, e.doc_id_raw
                   FROM evidence e JOIN (SELECT unnest(?::VARCHAR[]) AS q, unnest(?::VARCHAR[]) AS h) p
                     ON e.query_id = p.q AND e.span_hash = p.h""",
                [[q for q, _h in pairs], [h for _q, h in pairs]],
            ).fetchall()
            for q, h, doc in rows:
                found.setdefault((q, h), []).append(doc)
        labels = []
        for qid, kind, ref in items:
            if kind == "id":
                labels.append(Label(qid, ref, 1, 0))
                continue
            h = texts[ref]
            ids = found.get((qid, h)) or [(stored(h) if stored is not None else None) or f"text:{h[:16]}"]
            labels += [Label(qid, doc, 1, 0) for doc in ids]
        store_labels(con, labels, f"{Path(path).name} (references)", rep)
    return rep


def query_labels(con: duckdb.DuckDBPyConnection, query_id: str) -> dict[str, int]:
    """The labels of one query: canonical document id → relevance (empty without labels)."""
    cur = con.cursor()
    try:
        return dict(cur.execute("SELECT doc_id, relevance FROM qrels WHERE query_id = ?", [query_id]).fetchall())
    finally:
        cur.close()


def unlabelled_runs_note(con: duckdb.DuckDBPyConnection, runs: Iterable[str] | None = None) -> str | None:
    """Why relevance labels are loaded and yet score no query of some of ``runs`` (every run with
    records when None): one sentence naming those runs, an example of the labels' query ids and of
    theirs, and what to do — when their query ids are hashes of the question texts (``q:…``, given to
    the records of a log without query ids: Ragas, tracing exports), or when a run logged no document
    ids (its labelled queries are not scored: a label of a document cannot meet a passage's hash).
    None when no relevant label is loaded, or when each of the runs has a scored query."""
    from ragaudit_core.logs.catalog import text_id_runs

    cur = con.cursor()
    try:
        judged = cur.execute(  # as the labels name them (not the copies under their questions' hashes)
            """SELECT query_id FROM qrels GROUP BY query_id
               HAVING max(relevance) > 0 AND NOT bool_and(ends_with(source, ?))
               ORDER BY length(query_id), query_id""",
            [_BY_TEXT],
        ).fetchall()
        if not judged:
            return None
        wanted = None if runs is None else sorted(set(runs))
        rows = cur.execute(
            """WITH judged AS (
                   SELECT query_id, bool_or(relevance > 0 AND starts_with(doc_id, 'text:')) AS by_text
                   FROM qrels GROUP BY query_id HAVING max(relevance) > 0
               )
               SELECT r.run_id, bool_and(starts_with(r.query_id, 'q:')), min(r.query_id), count(j.query_id) > 0
               FROM records r LEFT JOIN judged j USING (query_id)
               WHERE ? IS NULL OR list_contains(?, r.run_id)
               GROUP BY r.run_id
               HAVING count(j.query_id) FILTER (j.by_text OR NOT list_contains(?, r.run_id)) = 0
               ORDER BY r.run_id""",
            [wanted, wanted, text_id_runs(cur)],
        ).fetchall()
        doc = cur.execute("SELECT min(doc_id_raw) FROM qrels WHERE NOT starts_with(doc_id, 'text:')").fetchall()[0][0]
    finally:
        cur.close()
    if not rows:
        return None
    ids = ", ".join(repr(q) for (q,) in judged[:3]) + (" …" if len(judged) > 3 else "")
    head = f"relevance labels are loaded for {counted(len(judged), 'query')} ({ids}) but "
    parts = []
    text_ids = [r for r, _h, _q, labelled in rows if labelled]
    if text_ids:
        they = "it" if len(text_ids) == 1 else "they"
        parts.append(
            f"score no query of {_runs(text_ids)}: {they} logged no document ids (each is its passage's text "
            "hash, text:…), which "
            f"labels of documents (such as {doc!r}) cannot meet. Give the passages their document ids (Ragas: a "
            "retrieved_context_ids column; a trace export: the metadata key, --doc-id-key), or label passages "
            "(Ragas' reference_contexts)"
        )
    other = [(r, hashed, q) for r, hashed, q, labelled in rows if not labelled]
    if other:
        their = "their" if len(other) > 1 else "its"
        why = (
            f"{their} query ids are hashes of the question texts (such as {other[0][2]!r}), as the log gave none. "
            "Give the records the query ids the labels use (a query_id column or key; or remove the log's file and "
            "load it again after a run that logs those ids, whose ids its questions then take, or with the "
            "benchmark's questions: ingest --queries queries.jsonl — either also pairs the run with runs logging "
            "those ids), or load the questions with the labels (BEIR's queries.jsonl: each label is then also "
            "stored under its question's hash)"
            if all(hashed for _r, hashed, _q in other)
            else f"{their} query ids (such as {other[0][2]!r}) are not the ones the labels use"
        )
        parts.append(
            f"label no query of {_runs([r for r, _h, _q in other])}, so {their} ranking quality is not scored: {why}"
        )
    return head + "; and ".join(parts)


def _runs(names: list[str]) -> str:
    """``run 'a'`` / ``runs 'a', 'b', 'c', 4 more``, in natural order (k5 before k10)."""
    names = natural_sorted(names)
    shown = [repr(r) for r in names[:3]] + ([f"{len(names) - 3:,} more"] if len(names) > 3 else [])
    return listed("run", shown)

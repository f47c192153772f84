"""Query ids from a questions file (``ragaudit ingest --queries FILE``, the upload's "Questions file").

A log that logs no query ids (a Ragas dataset, a trace export) gives each record ``q:`` + the hash
of its question text (:func:`~ragaudit_core.logs.formats.base.query_id_for`), which pairs it with
another such log over the same questions but never with a native run that logs the benchmark's ids
("1", "3", … for SciFact): stability, compare and the gate then see no shared query. Given the
benchmark's questions, such a record takes its question's id instead.

The files read (plain or gzip, UTF-8):

* **JSON Lines** — BEIR's ``queries.jsonl`` (``{"_id": …, "text": …}``) or ours
  (``{"query_id": …, "query": …}``); other keys (BEIR's ``metadata``) are ignored;
* **TSV or CSV** — ``id, text`` per row (tab-separated when the first line holds a tab), with or
  without a header; a header (``id``/``_id``/``query_id``/``qid`` and ``text``/``query``/``question``)
  finds the columns wherever they are.

Rules (docs/log-contract.md, "Query ids from a questions file"):

* **Matched by the hash**: a question's key is ``query_id_for(text)`` — the same normalisation (NFKC,
  whitespace collapsed, case-folded) the record's id was made with, so a record matches exactly the
  questions its hashed id stands for.
* **Only hashed ids change**: an id a record logs itself (native ``query_id``, RAGChecker's) is never
  rewritten, even when it looks like a hash; only an id the ingest made from a question text is.
* **Occurrences**: the id is given before a repeated question is numbered, so the second asking of
  question ``1`` in a run is ``1#2`` (as it would have been ``q:…#2``): the first asking pairs with
  the native run's ``1``, the later ones stay samples of their own.
* **No guess**: a question the file lacks keeps its hashed id; so does one whose text two ids of the
  file share once normalised (which one the log asked cannot be told) — unless the stored runs ask
  exactly one of them (:meth:`QuestionIds.settle`: the only id the record can pair with). A line that is not a question
  is said and passed over; an id given again with another text keeps its first.
* **Counted**: the load says, per run, how many records took their ids and how many kept their hash
  ("412 queries of run 'ragas_k5' took their ids from queries.jsonl; 3 matched no question of it …").

Records already stored are not renamed afterwards: an id the audit has reported (judge verdicts,
reviews, a cited gate) keeps meaning what it meant. To pair a stored run, remove its file and load
it again with the questions file. Without a questions file the stored runs' questions serve as one
(:mod:`.stored_questions`, a subclass of :class:`QuestionIds`).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit_core.logs.formats.base import query_id_for
from ragaudit_core.logs.options import IngestError
from ragaudit_core.logs.selection import natural_sorted
from ragaudit_core.wording import NOTE, WARNING, Said, counted, listed

__all__ = ["QuestionIds", "read_questions"]

_ID_KEYS = ("_id", "query_id")
_TEXT_KEYS = ("text", "query")
_ID_HEADERS = {"_id", "id", "query_id", "query-id", "qid"}
_TEXT_HEADERS = {"text", "query", "question"}
TOOK, MISSED, SHARED = "took", "missed", "shared"


@dataclass
class QuestionIds:
    """A questions file read: hashed id → the question's id (``by_hash``), the hashed ids several of
    its questions share (``shared``: hashed id → their ids), what reading it noticed (``notes``), and
    the records given an id while a load reads its logs (counted by :meth:`sentences`)."""

    name: str
    by_hash: dict[str, str] = field(default_factory=dict)
    shared: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    given: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)  # (run, id) → (kind, file)
    settled: dict[str, list[str]] = field(default_factory=dict)  # id → the ids sharing its text (:meth:`settle`)
    path: str = ""  # the log file being read

    def gives_ids(self) -> bool:
        """Whether a hashed id may take another here (a file read holds a question: always)."""
        return True

    def id_for(self, hashed: str) -> tuple[str, str]:
        """The id a hashed query id takes and why (``took``, ``missed`` or ``shared``)."""
        got = self.by_hash.get(hashed)
        if got is not None:
            return got, TOOK
        return hashed, SHARED if hashed in self.shared else MISSED

    def settle(self, stored: set[str]) -> None:
        """A text several ids of the file share takes the one of them the database's runs ask, when they
        ask exactly one (``stored``: the query ids stored): it is the only one a record asking that text
        can pair with, and a retriever given that text saw the same question under either id. Both
        asked, or neither: the hash stays (no guess)."""
        for h, ids in list(self.shared.items()):
            asked = [i for i in ids if i in stored]
            if len(asked) == 1:
                self.by_hash[h] = asked[0]
                self.settled[asked[0]] = ids
                del self.shared[h]

    def given_to(self, run_id: str, query_id: str, kind: str) -> None:
        """A record of ``run_id`` given ``query_id`` (its final id, numbered) by the file being read."""
        self.given[(run_id, query_id)] = (kind, self.path)

    def sentences(self, admitted_from: object, *, loaded: bool = True) -> list[Said]:
        """What reading the file noticed (its first 3 notes), then one sentence per run whose records
        had hashed ids, counting those admitted (``admitted_from(run, id)``: where the load admitted
        the pair, ``(path, line)``, or None). ``loaded``: whether the load added any record (a load
        whose files were all loaded before, or all rejected, gave no id because it read none)."""
        more = f"; and {len(self.notes) - 3:,} more" if len(self.notes) > 3 else ""
        said = [Said("; ".join(self.notes[:3]) + more)] if self.notes else []  # lines passed over: a warning
        counts, shared_ids, took = self.tally(admitted_from, {})
        if not counts:
            why = (
                "every record of this load logs its own query id (only ids made from question texts, q:…, take "
                "the file's)"
                if loaded
                else "this load added no record (its files were loaded before, or none of their lines was loaded)"
            )
            return [*said, Said(f"the questions file {self.name} gave no query its id: {why}")]
        words = (self.name, "no question of it", "questions of it")
        return said + [
            self._settled_said(
                self.sentence(run, counts[run], sorted(shared_ids.get(run, ())), *words), (took or {}).get(run, set())
            )
            for run in natural_sorted(counts)
        ]

    def _settled_said(self, said: Said, took: set[str]) -> Said:
        """``said`` with how many of the ids ``took`` were settled (:meth:`settle`), and how."""
        chosen = natural_sorted({q.split("#", 1)[0] for q in took} & self.settled.keys())
        n = sum(q.split("#", 1)[0] in self.settled for q in took)
        if not chosen:
            return said
        if len(chosen) == 1:
            ids = [repr(i) for i in self.settled[chosen[0]]]
            how = f"asked a text {len(ids)} ids of it share ({listed('id', ids)}) and took {chosen[0]!r}, the one"
        else:
            names = listed("id", [repr(i) for i in chosen])
            how = f"asked texts several ids of it share and took, of each, the one ({names})"
        return Said(f"{said.text}; {n:,} of them {how} the stored runs ask", said.kind)

    def tally(
        self, admitted_from: object, took: dict[str, set[str]] | None = None
    ) -> tuple[dict[str, Counter[str]], dict[str, set[str]], dict[str, set[str]] | None]:
        """Per run, the admitted records' kinds (``admitted_from`` as for :meth:`sentences`), the ids
        of the questions sharing a text they asked, and (into ``took``, when given) the ids they took."""
        counts: dict[str, Counter[str]] = {}
        shared_ids: dict[str, set[str]] = {}
        for (run, qid), (kind, path) in self.given.items():
            at = admitted_from(run, qid)  # type: ignore[operator]
            if at is None or at[0] != path:
                continue  # rejected, or its file refused
            counts.setdefault(run, Counter())[kind] += 1
            if kind == SHARED:
                shared_ids.setdefault(run, set()).update(self.shared[qid.split("#", 1)[0]])
            elif kind == TOOK and took is not None:
                took.setdefault(run, set()).add(qid)
        return counts, shared_ids, took

    @staticmethod
    def sentence(run: str, n: Counter[str], shared: list[str], source: str, none_of: str, of: str) -> Said:
        """A run's sentence: how many took their ids from ``source``, matched ``none_of`` it, or matched
        several ``of`` it sharing a text (``shared``: their ids) — a note when every one took its id, a
        warning when some kept their hash (they do not pair)."""
        took = n[TOOK]
        s = f"{counted(took, 'query')} of run {run!r} took {'its id' if took == 1 else 'their ids'} from {source}"
        if n[MISSED]:
            s += f"; {n[MISSED]:,} matched {none_of} and {_keeps(n[MISSED])} (q:…)"
        if n[SHARED]:
            ids = [repr(i) for i in shared[:4]] + (["…"] if len(shared) > 4 else [])
            s += (
                f"; {n[SHARED]:,} matched {len(shared)} {of} ({listed('id', ids)}: the same text once "
                f"normalised) and {_keeps(n[SHARED])}"
            )
        return Said(s, NOTE if not (n[MISSED] or n[SHARED]) else WARNING)


def _keeps(n: int) -> str:
    return "keeps its hashed id" if n == 1 else "keep their hashed ids"


def read_questions(path: str | Path) -> QuestionIds:
    """The questions of a file (see the module's docstring). Raises :class:`IngestError` when the
    file cannot be read or holds no question."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            data = f.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        text = data.decode("utf-8-sig")
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise IngestError(f"cannot read the questions file {p} ({e})") from None
    except UnicodeDecodeError as e:
        raise IngestError(f"the questions file {p} is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    out = QuestionIds(p.name)
    first = text.lstrip()[:1]
    rows = _json_rows(text, out) if first == "{" else _table_rows(text, out)
    ids: dict[str, list[str]] = {}
    texts: dict[str, str] = {}
    for line_no, qid, question in rows:
        if qid in texts:
            if query_id_for(texts[qid]) != query_id_for(question):
                out.notes.append(f"{out.name} line {line_no}: id {qid!r} again with another text; the first is kept")
            continue
        texts[qid] = question
        ids.setdefault(query_id_for(question), []).append(qid)
    if not texts:
        raise IngestError(
            f'{p} holds no question (expected BEIR\'s queries.jsonl lines {{"_id": …, "text": …}}, '
            "ours {\"query_id\": …, \"query\": …}, or 'id<TAB>text' / 'id,text' rows)"
        )
    out.by_hash = {h: q[0] for h, q in ids.items() if len(q) == 1}
    out.shared = {h: q for h, q in ids.items() if len(q) > 1}
    return out


def _json_rows(text: str, out: QuestionIds) -> list[tuple[int, str, str]]:
    rows = []
    for line_no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            obj = None
        qid = _first(obj, _ID_KEYS)
        question = _first(obj, _TEXT_KEYS)
        if _is_id(qid) and isinstance(question, str) and question.strip():
            rows.append((line_no, str(qid), question))
        else:
            out.notes.append(
                f"{out.name} line {line_no}: not a question (an id under _id or query_id, a text under text or query)"
            )
    return rows


def _first(obj: object, keys: tuple[str, ...]) -> object:
    if not isinstance(obj, dict):
        return None
    return next((obj[k] for k in keys if obj.get(k) is not None), None)


def _is_id(v: object) -> bool:
    return (isinstance(v, str) and bool(v.strip())) or (isinstance(v, int) and not isinstance(v, bool))


def _table_rows(text: str, out: QuestionIds) -> list[tuple[int, str, str]]:
    """``id, text`` rows (tab- or comma-separated); a header names the columns."""
    head = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text), delimiter="\t" if "\t" in head else ",")
    rows: list[tuple[int, str, str]] = []
    cols = (0, 1)
    for i, cells in enumerate(reader):
        names = [c.strip().lower() for c in cells]
        if i == 0 and set(names) & _ID_HEADERS and set(names) & _TEXT_HEADERS:
            cols = (
                next(j for j, c in enumerate(names) if c in _ID_HEADERS),
                next(j for j, c in enumerate(names) if c in _TEXT_HEADERS),
            )
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) <= max(cols) or not cells[cols[0]].strip() or not cells[cols[1]].strip():
            out.notes.append(f"{out.name} line {reader.line_num}: not a question (an id and a text)")
            continue
        rows.append((reader.line_num, cells[cols[0]].strip(), cells[cols[1]]))
    return rows

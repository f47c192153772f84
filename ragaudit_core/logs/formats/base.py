"""What every log format shares: the format object (:class:`LogFormat`), the mapping context,
the span a tracing format reads, and the identities of a mapped record.

A format is one module of this package holding one :class:`LogFormat`: a **detector** (does
this decoded record look like mine?) and a **mapper** — ``map_record`` for formats whose record
is one query (Ragas, RAGChecker), ``read_span`` for tracing formats whose record is one span
joined per trace (:mod:`ragaudit_core.logs.traces`). The native contract is a format too, with
neither (its records go through :mod:`ragaudit_core.logs.lines`).

Identities of a mapped record, in order of preference:

* document id — the metadata key named by ``doc_id_key`` where a passage's metadata holds it (the
  user's choice wins over a logged chunk or node id), else the format's id field
  (``retrieved_context_ids[i]``, ``doc_id``), else ``"text:" + span_hash(text)[:16]`` — with a
  warning, because document identity then equals span identity and doc-level metrics equal
  span-level ones;
* run id — the record's (``run_id``), else the ``run_id`` option, else the file name
  without its extensions;
* query id — the record's (``query_id``), else ``"q:"`` + the first 16 hex digits of the
  SHA-256 of the normalised query text (NFKC, whitespace collapsed, case-folded), so runs
  over the same questions pair up. A hashed id seen again for the same run (a dataset that
  asks a question twice) is numbered by occurrence: ``q:…#2``, ``q:…#3`` (with a warning), so
  every row is a sample and two runs pair by occurrence.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.identity import float_id_hint, span_hash

if TYPE_CHECKING:
    from ragaudit_core.logs.questions import QuestionIds

__all__ = [
    "ALL_HASHED",
    "NO_DOC_IDS",
    "FormatError",
    "LogFormat",
    "MapContext",
    "Span",
    "build_record",
    "check_id",
    "evidence_entries",
    "query_id_for",
    "retrieval_key",
    "run_id_for",
    "text_doc_id",
]


class FormatError(RagAuditError, ValueError):
    """A record of a foreign format that cannot be mapped (the message says what is missing)."""


@dataclass
class MapContext:
    """What a mapping needs beyond the record: the run id to use when the record has none, the
    metadata key holding document ids, the warnings it raised (each once per file), and —
    set by the ingest — ``taken(run_id, query_id)``, whether a (run, query) is already loaded,
    which numbers repeated hashed query ids by occurrence. ``labels`` collects the relevance
    labels a format carries (a Ragas row's reference contexts), stored with the file's records.
    ``questions`` (set by the ingest: ``--queries``, or the stored runs' questions): the ids hashed
    query ids take (:mod:`ragaudit_core.logs.questions`), given before a repeat is numbered. ``made``
    counts the ``text:`` document ids made from passages (:func:`text_doc_id`): a record whose mapping
    made one may take the stored runs' ids for them (:mod:`ragaudit_core.logs.stored_passages`)."""

    run_id: str
    doc_id_key: str | None = None
    warnings: list[str] = field(default_factory=list)
    taken: Callable[[str, str], bool] | None = None
    repeats: list[str] = field(default_factory=list)  # per-row warnings of the record being mapped
    labels: list[tuple[str, str, str]] = field(default_factory=list)  # (query_id, "id" | "text", reference)
    questions: QuestionIds | None = None
    made: int = 0

    def warn_once(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def occurrence_id(self, run_id: str, query_id: str) -> str:
        """``query_id`` (a hashed id; its question's id with ``questions``) when (run, query) is
        free, else ``query_id#n`` for the first free n ≥ 2."""
        if self.questions is not None and self.questions.gives_ids():
            query_id, kind = self.questions.id_for(query_id)
            numbered = self._numbered(run_id, query_id)
            self.questions.given_to(run_id, numbered, kind)
            return numbered
        return self._numbered(run_id, query_id)

    def _numbered(self, run_id: str, query_id: str) -> str:
        if self.taken is None or not self.taken(run_id, query_id):
            return query_id
        n = 2
        while self.taken(run_id, f"{query_id}#{n}"):
            n += 1
        numbered = f"{query_id}#{n}"
        self.repeats.append(
            f"run {run_id!r} asks the same question again (query id {query_id!r}): kept as sample {n}, "
            f"query id {numbered!r}; runs pair by occurrence"
        )
        return numbered


@dataclass
class Span:
    """What one span contributes: evidence (a retriever span), an answer, or nothing."""

    trace_id: str | None
    kind: str  # "retriever", "reranker", "answer" or "other"
    query: str | None = None
    texts: list[str] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    metadata: list[dict | None] = field(default_factory=list)
    answer: str | None = None
    root: bool = False  # a root run's answer wins over an LLM call's
    reranked: list[dict] = field(default_factory=list)  # a RERANKER span's output documents (id, content)
    notes: list[str] = field(default_factory=list)  # warnings about this span (documents renumbered, …)
    scores: list[float | None] = field(default_factory=list)  # the retriever's score per document, where logged
    # the run settings it logs (formats.settings): a retriever span's own; on another span only where it is its
    # trace's root, for the trace's retriever spans (each overlays them with its own)
    settings: dict[str, Any] | None = None
    # an embedding span's model (OpenInference's embedding.model_name, a Langfuse EMBEDDING observation's model): its
    # trace's embedder where no metadata names one
    embedder: str | None = None


def retrieval_key(span: Span) -> str:
    """What makes two retriever spans of one trace the same retrieval: the question and the
    documents in order (their texts and ids as logged). A LangChain retrieval chain traced to
    Langfuse reports its retriever's documents twice — on the chain's span and on the retriever's —
    and an OpenInference retriever may wrap another: read as two records, the question became two
    samples of itself (``q:…#2``) with the same evidence."""
    parts = [span.query or "", *span.texts, "", *("" if i is None else str(i) for i in span.ids)]
    h = hashlib.sha256()
    for part in parts:
        b = part.encode("utf-8", "surrogatepass")
        h.update(len(b).to_bytes(8, "little") + b)
    return h.hexdigest()


@dataclass(frozen=True)
class LogFormat:
    """One log format: its name (``--format NAME``), a label for messages, how to recognise one
    of its records, and how to map it. ``kind``: ``native`` (our contract), ``record`` (one
    record → native records by ``map_record``) or ``trace`` (one span by ``read_span``, joined
    per trace). ``unit`` and ``kind_of`` word what a file holds when it holds nothing to audit
    ("12 Langfuse observations (GENERATION 3, SPAN 9)"). ``keys``: top-level keys that mark the
    format; a native record carrying some is still native, and the ingest names them in a
    warning as ignored."""

    name: str
    label: str
    kind: Literal["native", "record", "trace"]
    detect: Callable[[dict], bool]
    keys: frozenset[str] = frozenset()
    map_record: Callable[[dict, MapContext], list[dict]] | None = None
    read_span: Callable[[dict], Span] | None = None
    unit: str = "record"  # what one record is called in messages ("observation", "run", "span", "row")
    kind_of: Callable[[dict], str] | None = None  # a record's own type (a span's kind), for messages
    # a fast path for the format's common shape: one line's bytes -> its mapped records (typed like
    # logs.decode.FastRecord), or None when the line is not in that shape (the general path reads it)
    decode_fast: Callable[[bytes, MapContext], list[Any] | None] | None = None
    # the same for a tracing format: one line's bytes -> its span, or None (the general path reads it)
    read_span_fast: Callable[[bytes], Span | None] | None = None


def run_id_for(path: str | Path, option: str | None = None) -> str:
    """``option`` when given, else the file name without its extensions (``a.jsonl.gz`` → ``a``)."""
    if option:
        return option
    name = Path(path).name
    return name.split(".", 1)[0] or name


def query_id_for(query: str) -> str:
    """A stable id for a query text: ``q:`` + 16 hex digits of SHA-256 of its normalised form."""
    norm = " ".join(unicodedata.normalize("NFKC", query).split()).casefold()
    return "q:" + hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


def check_id(v: Any, what: str) -> str | int | None:
    """An id as logged (a string or an integer; None/empty: absent). An array, object, number
    with a fraction, or boolean raises :class:`FormatError` naming ``what``."""
    if v is None or v == "":
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        kind = {dict: "an object", list: "an array", bool: "a boolean", float: "a number"}.get(
            type(v), type(v).__name__
        )
        raise FormatError(f"{what} must be a string or an integer, got {kind}{float_id_hint(v)}")
    return v


NO_DOC_IDS = " records carry no document ids"
"""What the warning :func:`text_doc_id` raises says after the format's label (a load whose every
such passage took a stored run's id drops it: :mod:`ragaudit_core.logs.stored_passages`)."""

ALL_HASHED = ": each passage's document id is the hash of its text, so document-level metrics equal span-level ones"
"""What that warning says of the file's passages (a load some of whose passages took a stored run's id
says instead that the others keep their hash: :mod:`ragaudit_core.logs.stored_passages`)."""


def text_doc_id(text: str, ctx: MapContext, label: str) -> str:
    """The document id of a passage logged without one: ``"text:"`` + 16 hex digits of its span
    hash, with the warning (once per mapping) that document identity then equals span identity."""
    ctx.warn_once(
        f"{label}{NO_DOC_IDS}"
        + (f" (and no metadata key {ctx.doc_id_key!r})" if ctx.doc_id_key else "")
        + ALL_HASHED
        + "; to use real ids, "
        + _ID_HINTS.get(
            label, "name the metadata key that holds them (--doc-id-key, or 'Document id key' when uploading)"
        )
    )
    ctx.made += 1
    return "text:" + span_hash(text)[:16]


# where a format without passage metadata keeps its ids (the others: a metadata key, --doc-id-key)
_ID_HINTS = {
    "Ragas": "give the rows a retrieved_context_ids column (one id per retrieved context)",
    "RAGChecker": "give each retrieved_context its doc_id",
    "DeepEval": "load a log of the same run that has them first: its passages give theirs by their text",
    "TruLens": "load a log of the same run that has them first: its passages give theirs by their text",
}


def evidence_entries(
    texts: list[str],
    ids: list[Any] | None,
    metadata: list[Any] | None,
    ctx: MapContext,
    label: str,
    scores: list[float | None] | None = None,
) -> list[dict]:
    """Native evidence entries in retrieved order, with the document id chosen as documented (and
    the retriever's score where ``scores`` has one)."""
    out = []
    for i, text in enumerate(texts):
        md = metadata[i] if metadata and i < len(metadata) and isinstance(metadata[i], dict) else None
        # a metadata key the user names wins over the logged id (a chunk's node id, as LlamaIndex logs it)
        doc = None
        if ctx.doc_id_key and md is not None:
            doc = check_id(md.get(ctx.doc_id_key), f"metadata {ctx.doc_id_key!r} of passage {i}")
        if doc is None and ids and i < len(ids):
            doc = check_id(ids[i], f"document id of passage {i}")
        if doc is None:
            doc = text_doc_id(text, ctx, label)
        entry = {"doc_id": str(doc) if not isinstance(doc, str) else doc, "text": text, "rank": i}
        if md is not None:
            entry["metadata"] = md
        if scores and i < len(scores) and scores[i] is not None:
            entry["score"] = scores[i]
        out.append(entry)
    return out


def native_record(
    obj: dict, ctx: MapContext, query: str, answer: Any, evidence: list[dict], config: dict | None = None
) -> dict:
    """The native record: the record's own run and query ids when it has them (under the
    contract's keys or their aliases, :data:`RUN_ID_KEYS` and :data:`QUERY_ID_KEYS`; not ``id``,
    which another tool's row uses for itself), else the context's run id and the query text's hash
    (numbered by occurrence when repeated); ``config``: the run settings its format read (none: no
    ``config`` key, as a native record without one)."""
    qid = _own_id(obj, QUERY_ID_KEYS)
    run = _own_id(obj, RUN_ID_KEYS) or ctx.run_id
    if qid is None:
        qid = ctx.occurrence_id(str(run), query_id_for(query))
    rec: dict[str, Any] = {
        "run_id": run,
        "query_id": qid,
        "query": query,
        "answer": answer if isinstance(answer, str) else None,
        "evidence": evidence,
    }
    if config is not None:
        rec["config"] = config
    return rec


RUN_ID_KEYS = ("run_id", "runId", "config_id", "run")
QUERY_ID_KEYS = ("query_id", "qid")


def _own_id(obj: dict, keys: tuple[str, ...]) -> str | int | None:
    """The first of ``keys`` that holds an id (an empty, null or NaN one — a table's missing cell —
    is absent)."""
    for k in keys:
        raw = obj.get(k)
        if isinstance(raw, float) and raw != raw:
            continue
        v = check_id(raw, k)
        if v is not None:
            return v
    return None


def build_record(
    label: str,
    ctx: MapContext,
    query: str,
    answer: str | None,
    texts: list[str],
    ids: list[Any] | None = None,
    metadata: list[Any] | None = None,
    scores: list[float | None] | None = None,
    config: dict | None = None,
    own: dict | None = None,
) -> dict:
    """A native record from a query, its retrieved texts (with ids, metadata and scores when the
    format has them), an answer and the run settings read for it, with the identities documented
    above; ``own``: the logged object, when its own run and query ids count (a record format's row)."""
    evidence = evidence_entries(texts, ids, metadata, ctx, label, scores)
    return native_record(own or {}, ctx, query, answer, evidence, config)


def query_text(obj: dict, keys: tuple[str, ...], label: str) -> str:
    """The first non-blank string under ``keys`` (raises :class:`FormatError` naming them)."""
    for k in keys:
        v = obj.get(k)
        if isinstance(v, str) and v.strip():
            return v
    raise FormatError(f"{label} record without a query ({' or '.join(keys)})")

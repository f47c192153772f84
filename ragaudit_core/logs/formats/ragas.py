"""Ragas datasets: v0.2+ ``SingleTurnSample`` rows (``user_input``, ``retrieved_contexts``,
``retrieved_context_ids``, ``response``, ``reference``) and v0.1 rows (``question``,
``contexts``, ``answer``, ``ground_truth``/``ground_truths``).

Detector: ``user_input`` with any of ``retrieved_contexts``, ``contexts``, ``response``,
``reference``, ``reference_contexts``; or ``question`` with ``contexts`` (a native record, which
has an evidence key and ids, is recognised before this one). Mapper: one row → one record, each
context string a passage **text** (span identity), never a document id; ``retrieved_context_ids``
(one per context, else the row is rejected) gives document ids. ``reference_context_ids`` (else
``reference_contexts``, matched by span identity) are read as relevance labels of the row's query
(``qrels``, relevance 1). A row without a retrieved-contexts key (a test set's row:
``user_input``, ``reference_contexts``, ``reference``) maps to no record: it is counted as holding
no retrieval, and a file of such rows is refused as a test set (``retrieved_contexts: []`` is a
record that retrieved nothing).

Fast path (:func:`decode_fast`): a row in the common v0.2 shape — a non-blank ``user_input``, a
``retrieved_contexts`` list of strings, optionally ``retrieved_context_ids`` (strings, integers
or nulls, one per context) and ``response`` — is decoded by msgspec in one pass and mapped by
the same functions as :func:`map_record`, without the general decoder or the pydantic contract.
A row with any key that could make it another thing (an evidence or id key of our contract,
``contexts``, a container key, a key of another format, reference contexts: their labels are read
there), a value of another type, ``NaN``, or
an id the contract would trim takes the general path (property-tested: same stored rows).
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from ragaudit_core.logs.decode import FastEntry, FastRecord
from ragaudit_core.logs.formats.base import (
    FormatError,
    LogFormat,
    MapContext,
    check_id,
    evidence_entries,
    native_record,
    query_id_for,
    query_text,
    text_doc_id,
)
from ragaudit_core.logs.formats.lists import data_string, text_list
from ragaudit_core.logs.formats.spans import absent

__all__ = ["FORMAT"]

_V2_COMPANIONS = (
    *("retrieved_contexts", "contexts", "response", "reference", "reference_contexts"),
    *("retrieved_context_ids", "reference_context_ids"),  # the ID-based context precision and recall's columns
)


def detect(obj: dict) -> bool:
    if "user_input" in obj and any(k in obj for k in _V2_COMPANIONS):
        return True
    return "question" in obj and "contexts" in obj


def map_record(obj: dict, ctx: MapContext) -> list[dict]:
    """One record; none for a row that retrieved nothing at all (no retrieved contexts key: a
    test-set row), which the ingest counts as a row without retrieval."""
    if _conversation(obj.get("user_input")):
        raise FormatError(MULTI_TURN)
    query = query_text(obj, ("user_input", "question"), "Ragas")
    key = next((k for k in ("retrieved_contexts", "contexts") if not absent(obj.get(k))), None)
    if key is None:  # no contexts, or a cell that holds none (null, empty, NaN): not "retrieved nothing"
        return _ids_only(obj, ctx, query) if not absent(obj.get("retrieved_context_ids")) else []
    texts = text_list(obj.get(key), key)
    raw_ids = _list_cell(obj.get("retrieved_context_ids"), "retrieved_context_ids")
    if raw_ids is not None and len(raw_ids) != len(texts):
        raise FormatError(f"retrieved_context_ids must list one id per retrieved context ({len(texts)})")
    ids = list(raw_ids) if raw_ids is not None else None
    answer = obj.get("response", obj.get("answer"))
    rec = native_record(obj, ctx, query, answer, evidence_entries(texts, ids, None, ctx, "Ragas"))
    _reference_labels(obj, rec["query_id"], ctx)
    return [rec]


MULTI_TURN = (
    "a Ragas multi-turn sample (its user_input is a conversation): it logs no retrieved contexts, nothing to "
    "audit — log the retrieval of each turn as a single-turn sample (user_input, retrieved_contexts)"
)


def _conversation(v: Any) -> bool:
    """Whether ``user_input`` is a multi-turn conversation: a list of messages (``content``/``type``),
    or a CSV cell holding one."""
    if isinstance(v, str) and v.lstrip()[:2] == "[{":
        try:
            v = data_string(v, "user_input")
        except FormatError:
            return False
    v = v.tolist() if hasattr(v, "tolist") else v
    return isinstance(v, (list, tuple)) and bool(v) and all(isinstance(m, dict) and "content" in m for m in v)


def _ids_only(obj: dict, ctx: MapContext, query: str) -> list[dict]:
    """A row of Ragas' ID-based metrics (``retrieved_context_ids`` without the contexts' texts):
    one entry per id, without text — document-level figures only (no span identity to compare)."""
    raw = _list_cell(obj["retrieved_context_ids"], "retrieved_context_ids") or []
    entries = []
    for i, v in enumerate(raw):
        doc = check_id(v, f"retrieved_context_ids[{i}]")
        if doc is None:
            raise FormatError(
                f"retrieved_context_ids[{i}] is empty and the row has no retrieved_contexts to stand for it"
            )
        entries.append({"doc_id": str(doc), "rank": i})
    ctx.warn_once(
        "Ragas rows carry retrieved_context_ids without retrieved_contexts: their evidence is document ids "
        "without texts, so span-level figures are unavailable for them"
    )
    answer = obj.get("response", obj.get("answer"))
    rec = native_record(obj, ctx, query, answer, entries)
    _reference_labels(obj, rec["query_id"], ctx)
    return [rec]


def _reference_labels(obj: dict, query_id: str, ctx: MapContext) -> None:
    """The row's relevance labels: each of ``reference_context_ids`` a relevant document, else each
    of ``reference_contexts`` a relevant passage (matched to the evidence by span identity when
    stored). A malformed reference list is skipped with a warning; it never rejects the row."""
    for key, kind in (("reference_context_ids", "id"), ("reference_contexts", "text")):
        raw = obj.get(key)
        if absent(raw):
            continue
        try:
            if kind == "id":
                refs = [check_id(r, f"{key}[{i}]") for i, r in enumerate(_list_cell(raw, key) or [])]
            else:
                refs = list(text_list(raw, key))
        except FormatError as e:
            ctx.warn_once(f"Ragas {key} could not be read as relevance labels ({e}); those rows carry none from it")
            continue  # (reference_contexts may still give them)
        ctx.labels += [(query_id, kind, str(r)) for r in refs if r not in (None, "")]
        return


def _list_cell(raw: Any, key: str) -> list | None:
    """A list-valued column as logged: a list, a numpy array (Parquet), or a CSV cell holding JSON or
    the Python literal pandas writes (``"[1969, 11]"``: integer ids stay integers); None for an
    absent value. Raises :class:`FormatError` naming ``key`` for anything else."""
    if absent(raw):
        return None
    if isinstance(raw, str):
        raw = data_string(raw, key)
    if raw is None:
        return None
    raw = raw.tolist() if hasattr(raw, "tolist") else raw
    if not isinstance(raw, (list, tuple)):
        raise FormatError(f"{key} must be a list, got {type(raw).__name__}")
    return list(raw)


_Id = str | Annotated[int, msgspec.Meta(gt=-(10**17), lt=10**17)] | None
_DECLINED = (
    *("evidence", "cited", "docs", "documents", "retrieved", "contexts"),
    *("run_id", "runId", "config_id", "run", "query_id", "qid"),
    *("nodes", "schema", "observations", "post", "patch", "child_runs", "data", "results", "question"),
    *("retrieved_context", "gt_answer", "span_kind", "run_type", "inputs", "outputs", "dotted_order"),
    *("traceId", "parentObservationId", "attributes", "context"),
    *("reference_context_ids", "reference_contexts"),  # relevance labels: read by map_record
)
_Row = msgspec.defstruct(
    "_Row",
    [
        ("user_input", str),
        ("retrieved_contexts", list[str]),
        ("retrieved_context_ids", list[_Id] | None, None),
        ("response", Any, msgspec.UNSET),
        ("answer", Any, msgspec.UNSET),
        *[(k, msgspec.UnsetType, msgspec.UNSET) for k in _DECLINED],
    ],
)
_DECODER = msgspec.json.Decoder(_Row)


def decode_fast(data: bytes, ctx: MapContext) -> list[Any] | None:
    """The mapped record of a row in the common shape (see the module's docstring), else None.

    Built as :class:`~ragaudit_core.logs.decode.FastRecord` directly (what ``native_record`` and
    ``fast_record`` give, without a dict per passage: measured 1.27 -> 0.79 us per passage): the
    decoder has typed every value, the record's ``__post_init__`` declines a padded or empty id."""
    try:
        row: Any = _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    texts, ids, query = row.retrieved_contexts, row.retrieved_context_ids, row.user_input
    if not query.strip() or (ids is not None and len(ids) != len(texts)):
        return None
    entries: list[FastEntry | str] = []
    for i, text in enumerate(texts):
        doc = None if ids is None else ids[i]
        if doc is None or doc == "":
            doc = text_doc_id(text, ctx, "Ragas")
        elif type(doc) is not str:
            doc = str(doc)
        entries.append(FastEntry(doc, text, rank=i))
    answer = row.response if row.response is not msgspec.UNSET else row.answer
    qid = ctx.occurrence_id(ctx.run_id, query_id_for(query))
    try:
        return [FastRecord(ctx.run_id, qid, entries, None, query, answer if isinstance(answer, str) else None)]
    except ValueError:  # a padded or empty id: the general path trims or rejects it
        return None


FORMAT = LogFormat(
    name="ragas",
    label="Ragas",
    kind="record",
    detect=detect,
    keys=frozenset(
        {
            "user_input",
            "retrieved_contexts",
            "retrieved_context_ids",
            "response",
            "reference",
            "reference_contexts",
            "question",
            "ground_truth",
            "ground_truths",
            "rubrics",
        }
    ),
    map_record=map_record,
    unit="row",
    decode_fast=decode_fast,
)

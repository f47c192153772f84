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
"""

from __future__ import annotations

from ragaudit_core.logs.formats.base import (
    FormatError,
    LogFormat,
    MapContext,
    evidence_entries,
    native_record,
    query_text,
)
from ragaudit_core.logs.formats.lists import text_list

__all__ = ["FORMAT"]

_V2_COMPANIONS = ("retrieved_contexts", "contexts", "response", "reference", "reference_contexts")


def detect(obj: dict) -> bool:
    if "user_input" in obj and any(k in obj for k in _V2_COMPANIONS):
        return True
    return "question" in obj and "contexts" in obj


def map_record(obj: dict, ctx: MapContext) -> list[dict]:
    """One record; none for a row that retrieved nothing at all (no retrieved contexts key: a
    test-set row), which the ingest counts as a row without retrieval."""
    query = query_text(obj, ("user_input", "question"), "Ragas")
    if "retrieved_contexts" not in obj and "contexts" not in obj:
        return []
    key = "retrieved_contexts" if "retrieved_contexts" in obj else "contexts"
    texts = text_list(obj.get(key), key)
    raw_ids = obj.get("retrieved_context_ids")
    raw_ids = text_list(raw_ids, "retrieved_context_ids") if isinstance(raw_ids, str) else raw_ids
    if raw_ids is not None and hasattr(raw_ids, "tolist"):  # numpy arrays from Parquet
        raw_ids = raw_ids.tolist()
    if raw_ids is not None and (not isinstance(raw_ids, (list, tuple)) or len(raw_ids) != len(texts)):
        raise FormatError(f"retrieved_context_ids must list one id per retrieved context ({len(texts)})")
    ids = list(raw_ids) if raw_ids is not None else None
    answer = obj.get("response", obj.get("answer"))
    rec = native_record(obj, ctx, query, answer, evidence_entries(texts, ids, None, ctx, "Ragas"))
    _reference_labels(obj, rec["query_id"], ctx)
    return [rec]


def _reference_labels(obj: dict, query_id: str, ctx: MapContext) -> None:
    """The row's relevance labels: each of ``reference_context_ids`` a relevant document, else each
    of ``reference_contexts`` a relevant passage (matched to the evidence by span identity when
    stored). A malformed reference list is skipped with a warning; it never rejects the row."""
    for key, kind in (("reference_context_ids", "id"), ("reference_contexts", "text")):
        raw = obj.get(key)
        if raw is None:
            continue
        try:
            refs = text_list(raw, key) if isinstance(raw, str) else raw
            refs = refs.tolist() if hasattr(refs, "tolist") else refs
            if not isinstance(refs, (list, tuple)):
                raise FormatError(f"{key} is not a list")
        except FormatError as e:
            ctx.warn_once(f"Ragas {key} could not be read as relevance labels ({e}); those rows carry none")
            return
        ctx.labels += [(query_id, kind, str(r)) for r in refs if r not in (None, "")]
        return


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
)

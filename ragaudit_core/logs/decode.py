"""The fast decoder: canonical evidence lines straight to typed records (msgspec).

Most lines of a log are in the contract's *canonical shape*: ``run_id``, ``query_id`` and an
``evidence`` list of objects with a ``doc_id`` (or bare ids). :func:`decode_canonical` parses
and type-checks such a line in one C pass (msgspec) into :class:`FastRecord` /
:class:`FastEntry`, which carry the same fields as
:class:`~ragaudit_core.logs.contracts.EvidenceRecord` and hold the same values.

It accepts a **strict subset** of what the contract accepts and returns ``None`` for anything
else — an alias key, a nested or padded id, a number where a string belongs (or ``3.0`` for an
integer), a broken constraint, invalid JSON, a provenance line — and the caller then takes the
general path (orjson + the pydantic contract), which decides the line and words the reason
a person reads. So the contract's semantics and messages do not depend on this module; a
property test (``tests/logs/test_decode.py``) checks that both paths give the same record.

Why msgspec (measured on the ingest bench's lines, ~4 kB with eight ~470-character passages, on
this project's 2 cores): msgspec 2.3 µs per line against 14.3 µs for ``orjson.loads`` +
``EvidenceRecord.model_validate`` (orjson alone 2.5 µs); DuckDB's ``read_json`` was measured
earlier and needs a strict per-line gate on top (it accepts ``NaN``, trailing commas and
``1e400``), which made it slower than pydantic (docs/benchmarks.md).

**Aliases** (:func:`decode_native`): a line the canonical decoder declines is tried once more by a
second struct that reads the contract's alias keys — run id ``run_id``/``runId``/``config_id``/``run``,
query id ``query_id``/``qid`` (first non-null wins), the evidence list under the first present of
``evidence``/``cited``/``docs``/``documents``/``retrieved``/``contexts`` — and integer ids (read as
their decimal string, as the contract does). The entries are the same :class:`FastEntry` (or bare
string ids). A record whose ids need the ambiguous ``id`` key, an integer id of 18 digits or more, or
anything the canonical struct declines (another format's key, a provenance key) goes the general
path. RagCiteCheck's dialect (``docs``/``cited``/``retrieved``/``contexts``, plain string lists)
takes this path: the same property test covers it.

Edge cases follow the contract: on this path ids are non-empty strings without surrounding
white space (integer ids and padded ids go the general path, which reads integers as their
decimal string and trims); a ``span_hash`` that is empty or padded goes the general path too
(which trims it, empty meaning absent); ``char_end`` before ``char_start`` is rejected there.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from ragaudit_core.defaults import INT32_MAX
from ragaudit_core.logs.contracts import EVIDENCE_KEYS, QUERY_ID_KEYS, RUN_ID_KEYS

__all__ = ["FastEntry", "FastRecord", "decode_canonical", "decode_native", "fast_record"]

_Count = Annotated[int, msgspec.Meta(ge=0, le=INT32_MAX)]
_Id = str  # non-empty and trimmed: checked in FastRecord.__post_init__ (a msgspec pattern costs 0.7 us per id)


class FastEntry(msgspec.Struct):
    """One evidence entry in canonical shape (the fields of ``EvidenceEntry``).

    Checks run in msgspec's C code where a type can say them: ids are strings, counts are
    INTEGER-sized, and an alias key (``spanHash``/``spanhash``) is typed ``UnsetType`` so that
    any value under it fails (the general path resolves aliases); the rest in
    :meth:`FastRecord.__post_init__`, one loop per record."""

    doc_id: _Id
    text: str | None = None
    span_hash: _Id | None = None
    rank: _Count | None = None
    score: float | None = None
    chunk_id: _Id | None = None
    char_start: _Count | None = None
    char_end: _Count | None = None
    page: _Count | None = None
    metadata: dict[str, Any] | None = None
    spanHash: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — the contract's own key
    spanhash: msgspec.UnsetType = msgspec.UNSET


class FastRecord(msgspec.Struct):
    """One evidence record in canonical shape (the fields of ``EvidenceRecord``); a ``nodes`` or
    ``schema`` key (a provenance line), or a key of another log format, fails like an alias key."""

    run_id: _Id
    query_id: _Id
    evidence: list[FastEntry | _Id]
    config: dict[str, Any] | None = None
    query: str | None = None
    answer: str | None = None
    nodes: msgspec.UnsetType = msgspec.UNSET
    schema: msgspec.UnsetType = msgspec.UNSET
    # keys of other log formats (formats.FORMATS' ``keys``; tests/logs/test_detection.py checks the
    # list): a native line carrying one takes the general path, which names them in a warning
    user_input: msgspec.UnsetType = msgspec.UNSET
    retrieved_contexts: msgspec.UnsetType = msgspec.UNSET
    retrieved_context_ids: msgspec.UnsetType = msgspec.UNSET
    reference_contexts: msgspec.UnsetType = msgspec.UNSET
    response: msgspec.UnsetType = msgspec.UNSET
    reference: msgspec.UnsetType = msgspec.UNSET
    question: msgspec.UnsetType = msgspec.UNSET
    ground_truth: msgspec.UnsetType = msgspec.UNSET
    ground_truths: msgspec.UnsetType = msgspec.UNSET
    rubrics: msgspec.UnsetType = msgspec.UNSET
    retrieved_context: msgspec.UnsetType = msgspec.UNSET
    gt_answer: msgspec.UnsetType = msgspec.UNSET
    span_kind: msgspec.UnsetType = msgspec.UNSET
    run_type: msgspec.UnsetType = msgspec.UNSET
    inputs: msgspec.UnsetType = msgspec.UNSET
    outputs: msgspec.UnsetType = msgspec.UNSET
    dotted_order: msgspec.UnsetType = msgspec.UNSET
    child_runs: msgspec.UnsetType = msgspec.UNSET
    traceId: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — Langfuse's key
    parentObservationId: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — Langfuse's key
    observations: msgspec.UnsetType = msgspec.UNSET
    actual_output: msgspec.UnsetType = msgspec.UNSET
    actualOutput: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — DeepEval's key
    expected_output: msgspec.UnsetType = msgspec.UNSET
    expectedOutput: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — DeepEval's key
    retrieval_context: msgspec.UnsetType = msgspec.UNSET
    retrievalContext: msgspec.UnsetType = msgspec.UNSET  # noqa: N815 — DeepEval's key
    record_attributes: msgspec.UnsetType = msgspec.UNSET  # TruLens' event table
    resource_attributes: msgspec.UnsetType = msgspec.UNSET

    def __post_init__(self) -> None:
        if _padded(self.run_id) or _padded(self.query_id):
            raise ValueError("empty or padded id")
        ev = self.evidence
        for i, e in enumerate(ev):
            if isinstance(e, str):  # a bare id
                if _padded(e):
                    raise ValueError("empty or padded id")
                ev[i] = FastEntry(e)
                continue
            if (
                _padded(e.doc_id)
                or (e.chunk_id is not None and _padded(e.chunk_id))
                or (e.span_hash is not None and _padded(e.span_hash))
            ):
                raise ValueError("empty or padded id")
            if e.char_end is not None and e.char_start is not None and e.char_end < e.char_start:
                raise ValueError("char_end before char_start")


def _padded(s: str) -> bool:
    """Empty, or with white space around it (str.strip's notion of white space)."""
    return not s or s[0].isspace() or s[-1].isspace()


_DECODER = msgspec.json.Decoder(FastRecord)


def decode_canonical(data: bytes) -> FastRecord | None:
    """The record on one line when it is in canonical shape and valid, else ``None`` (then the
    general path decides the line)."""
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # too deep: the general path words it
        return None


# ------------------------------------------------------------------ aliases

_BigId = Annotated[int, msgspec.Meta(gt=-(10**17), lt=10**17)]  # exact in every JSON reader we use
_AliasId = str | _BigId | None | msgspec.UnsetType
_Entries = list[FastEntry | _Id] | msgspec.UnsetType
_DECLINED = tuple(f.name for f in msgspec.structs.fields(FastRecord) if f.type is msgspec.UnsetType)

_AliasRecord = msgspec.defstruct(
    "_AliasRecord",
    [
        *[(k, _AliasId, msgspec.UNSET) for k in (*RUN_ID_KEYS, *QUERY_ID_KEYS)],
        ("id", Any, None),
        *[(k, _Entries, msgspec.UNSET) for k in EVIDENCE_KEYS],
        ("config", dict[str, Any] | None, None),
        ("query", str | None, None),
        ("answer", str | None, None),
        *[(k, msgspec.UnsetType, msgspec.UNSET) for k in _DECLINED],
    ],
)
_ALIAS_DECODER = msgspec.json.Decoder(_AliasRecord)


def _first(rec: Any, keys: tuple[str, ...]) -> str | None:
    """The first id under ``keys`` that is neither absent nor null, as a string."""
    for k in keys:
        v = getattr(rec, k)
        if v is not None and v is not msgspec.UNSET:
            return v if isinstance(v, str) else str(v)
    return None


def decode_alias(data: bytes) -> FastRecord | None:
    """The record on one line written with the contract's alias keys (or integer ids), else ``None``."""
    try:
        a: Any = _ALIAS_DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    if a.run_id is not msgspec.UNSET and a.query_id is not msgspec.UNSET and a.evidence is not msgspec.UNSET:
        # the contract's canonical shape: these keys are read as they are (a null is an error)
        run, query = _first(a, ("run_id",)), _first(a, ("query_id",))
        if a.run_id is None or a.query_id is None:
            return None
    else:
        run, query = _first(a, RUN_ID_KEYS), _first(a, QUERY_ID_KEYS)
    if run is None or query is None:  # the contract may read ``id`` here, or word what is missing
        return None
    ev = next((v for v in (getattr(a, k) for k in EVIDENCE_KEYS) if v is not msgspec.UNSET), None)
    if ev is None:
        return None
    try:
        return FastRecord(run, query, ev, a.config, a.query, a.answer)
    except ValueError:  # padded or empty id, offsets: the general path words it
        return None


def decode_native(data: bytes) -> FastRecord | None:
    """:func:`decode_canonical`, else :func:`decode_alias`: a native evidence line on the fast path."""
    rec = decode_canonical(data)
    return rec if rec is not None else decode_alias(data)


def fast_record(rec: dict) -> FastRecord | None:
    """A mapped native record (``formats.build_record``'s dict: string ids, entries with ``doc_id``,
    ``text``, ``rank`` and maybe ``metadata``) as a :class:`FastRecord` without the pydantic
    contract (``msgspec.convert``: typed in C, 5.6 us for 8 entries instead of 12 through the
    constructors); ``None`` when an id is empty or padded (the contract trims or rejects it), or
    anything else is not of the contract's types (the general path words it)."""
    try:
        return msgspec.convert(rec, FastRecord)
    except msgspec.ValidationError:
        return None

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

Edge cases follow the contract: ids are strings or integers (integers read as their decimal
string, exact beyond 64 bits), non-empty, without surrounding white space on this path (padded
ids go the general path, which trims them); ``span_hash`` is trimmed, and empty means absent;
``char_end`` before ``char_start`` is rejected (general path).
"""

from __future__ import annotations

from typing import Annotated, Any, Union

import msgspec

__all__ = ["FastEntry", "FastRecord", "decode_canonical"]

_INT32_MAX = 2**31 - 1
_Count = Annotated[int, msgspec.Meta(ge=0, le=_INT32_MAX)]
# non-empty and already trimmed (str.strip and re's \s agree on what white space is)
_Id = Annotated[str, msgspec.Meta(pattern=r"^\S(?:[\s\S]*\S)?$")]


class FastEntry(msgspec.Struct):
    """One evidence entry in canonical shape (the fields of ``EvidenceEntry``)."""

    doc_id: Union[_Id, int]
    text: Union[str, None] = None
    span_hash: Union[str, None] = None
    rank: Union[_Count, None] = None
    score: Union[float, None] = None
    chunk_id: Union[_Id, int, None] = None
    char_start: Union[_Count, None] = None
    char_end: Union[_Count, None] = None
    page: Union[_Count, None] = None
    metadata: Union[dict[str, Any], None] = None
    spanHash: Any = msgspec.UNSET         # alias keys: such an entry takes the general path
    spanhash: Any = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.spanHash is not msgspec.UNSET or self.spanhash is not msgspec.UNSET:
            raise ValueError("span-hash alias")
        if type(self.doc_id) is int:
            self.doc_id = str(self.doc_id)
        if type(self.chunk_id) is int:
            self.chunk_id = str(self.chunk_id)
        sh = self.span_hash
        if sh is not None:
            self.span_hash = sh.strip() or None
        if self.char_end is not None and self.char_start is not None and self.char_end < self.char_start:
            raise ValueError("char_end before char_start")


class FastRecord(msgspec.Struct):
    """One evidence record in canonical shape (the fields of ``EvidenceRecord``)."""

    run_id: Union[_Id, int]
    query_id: Union[_Id, int]
    evidence: list[Union[FastEntry, _Id, int]]
    config: Union[dict[str, Any], None] = None
    query: Union[str, None] = None
    answer: Union[str, None] = None
    nodes: Any = msgspec.UNSET            # a provenance line: the general path reads it as one
    schema: Any = msgspec.UNSET

    def __post_init__(self) -> None:
        if self.nodes is not msgspec.UNSET or self.schema is not msgspec.UNSET:
            raise ValueError("provenance line")
        if type(self.run_id) is int:
            self.run_id = str(self.run_id)
        if type(self.query_id) is int:
            self.query_id = str(self.query_id)
        ev = self.evidence
        for i, e in enumerate(ev):
            if type(e) is not FastEntry:          # a bare id
                ev[i] = FastEntry(str(e))


_DECODER = msgspec.json.Decoder(FastRecord)


def decode_canonical(data: bytes) -> FastRecord | None:
    """The record on one line when it is in canonical shape and valid, else ``None`` (then the
    general path decides the line)."""
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None

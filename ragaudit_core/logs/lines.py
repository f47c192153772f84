"""One line of a log file → a validated record, or the reason a person reads when it is not one.

Evidence lines become :class:`~ragaudit_core.logs.contracts.EvidenceRecord`, provenance lines
:class:`~ragaudit_core.logs.provenance.ProvenanceRecord` (graph checks included); a provenance
record's rows for the ``prov_records`` and ``prov_nodes`` tables are built here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson
from pydantic import ValidationError

from ragaudit_core.logs.contracts import EvidenceRecord, describe_validation_error
from ragaudit_core.logs.identity import CanonOptions, canonical_doc_id
from ragaudit_core.logs.jsontext import compact_json, lone_surrogate
from ragaudit_core.logs.provenance import ProvenanceRecord, ProvNode
from ragaudit_core.logs.provfast import CoordinatesView, NodeView, RecordView, canonical_record

__all__ = [
    "buffer_provenance",
    "decode_json",
    "parse_evidence_object",
    "parse_provenance_object",
]

_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TWENTY_DIGITS = b"0" * 20  # a run of 20 digits: an integer orjson may have read as a float

_NO_COORDINATES = CoordinatesView()


def parse_provenance_object(obj: dict) -> tuple[str | None, ProvenanceRecord | RecordView | None]:
    """(reason, None) for a provenance record that does not validate, else (None, record): read
    without pydantic when it is already in the contract's form (:func:`.provfast.canonical_record`,
    the same stored rows), else validated."""
    fast = canonical_record(obj)
    if fast is not None:
        return (None, fast)
    try:
        return (None, ProvenanceRecord.model_validate(obj))
    except ValidationError as e:
        return (describe_validation_error(e), None)


def buffer_provenance(
    rec: ProvenanceRecord | RecordView,
    file_id: int,
    line_no: int,
    canon: CanonOptions,
    cache: dict[str, str],
    rec_rows: list,
    node_rows: list,
) -> None:
    def cid(raw: str | None) -> str | None:
        if raw is None:
            return None
        c = cache.get(raw)
        if c is None:
            c = cache[raw] = canonical_doc_id(raw, canon)
        return c

    rec_rows.append(
        (
            rec.run_id,
            rec.query_id,
            file_id,
            line_no,
            rec.query,
            rec.generated_text,
            None if rec.config is None else compact_json(rec.config),
            compact_json([{"doc_id": cid(t.doc_id), "page": t.page} for t in rec.ground_truth]),
            compact_json([{"doc_id": cid(d.doc_id), "pages": d.pages} for d in rec.documents]),
            compact_json([{"node_id": d.node_id, "stage": d.stage, "reason": d.reason} for d in rec.dropped]),
            len(rec.nodes),
        )
    )
    nodes: Sequence[ProvNode | NodeView] = rec.nodes
    for i, n in enumerate(nodes):
        c = n.coordinates or _NO_COORDINATES
        node_rows.append(
            (
                rec.run_id,
                rec.query_id,
                i,
                n.node_id,
                n.stage,
                n.artifact_type,
                cid(c.doc_id),
                c.doc_id,
                c.page,
                c.paragraph,
                c.char_start,
                c.char_end,
                n.transformation,
                list(n.derived_from),
                compact_json(n.metadata) if n.metadata else None,
            )
        )


_NON_FINITE = re.compile(rb"NaN|Infinity")


class _NonFinite:
    """Where ``NaN``/``Infinity`` stood in a line (replaced by None after decoding)."""


def decode_json(data: bytes) -> tuple[str | None, Any, list[str]]:
    """(reason, None, []) when a line is not one UTF-8 JSON value, else (None, the value, the
    paths of ``NaN``/``Infinity`` tokens read as null).

    ``NaN``, ``Infinity`` and ``-Infinity`` are not JSON, but pandas writes them for missing
    numbers (Phoenix's ``document.score``): they are read as null wherever they are, so a field
    the mapping does not use never rejects a record, and the caller warns naming the paths.
    Integers beyond 64 bits keep every digit; nesting too deep for the parser is a reason."""
    if b"\x00" in data:
        return ("line contains NUL bytes (\\x00); the file may be binary or corrupted", None, [])
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        return (
            f"line is not valid UTF-8 (byte 0x{data[e.start]:02x} at byte offset {e.start}); "
            "re-encode the file as UTF-8",
            None,
            [],
        )
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        if not _NON_FINITE.search(data):
            return (f"invalid JSON: {e}", None, [])
        try:
            obj = json.loads(data, parse_constant=lambda _c: _NonFinite)
        except ValueError:
            return (f"invalid JSON: {e}", None, [])
        except RecursionError:
            return ("JSON nested too deep to read", None, [])
        half = lone_surrogate(obj) if b"\\u" in data else None  # (orjson refuses it; json reads it)
        if half is not None:
            return (f"invalid JSON: a string holds {half}, half of a UTF-16 surrogate pair, not a character", None, [])
        paths: list[str] = []
        return (None, _nulls(obj, "", paths), paths)
    if _TWENTY_DIGITS in data.translate(_DIGITS_TO_ZERO):
        try:
            obj = json.loads(data)  # integers beyond 64 bits stay exact (orjson reads them as floats)
        except RecursionError:
            return ("JSON nested too deep to read", None, [])
    return (None, obj, [])


def _nulls(v: Any, path: str, found: list[str]) -> Any:
    """``v`` with each NaN/Infinity marker replaced by None, its path noted (iterative: no depth limit)."""
    if v is _NonFinite:
        found.append(path or "(the line)")
        return None
    stack = [(v, path)]
    while stack:
        cur, where = stack.pop()
        items = cur.items() if isinstance(cur, dict) else enumerate(cur) if isinstance(cur, list) else ()
        for k, x in items:
            sub = f"{where}.{k}" if where else str(k)
            if x is _NonFinite:
                cur[k] = None
                found.append(sub)
            elif isinstance(x, (dict, list)):
                stack.append((x, sub))
    return v


def parse_evidence_object(obj: dict) -> tuple[str | None, EvidenceRecord | None]:
    """(reason, None) for an evidence record that does not validate, else (None, record)."""
    try:
        return (None, EvidenceRecord.model_validate(obj))
    except ValidationError as e:
        return (describe_validation_error(e), None)

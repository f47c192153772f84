"""Log contracts, version 1 (DESIGN.md, "Log contracts"), as pydantic v2 models.

An **evidence record** is one JSON object per (run, query)::

    {"run_id": "base", "query_id": "q1", "config": {"top_k": 10},
     "query": "...", "answer": "...",
     "evidence": ["docA", {"doc_id": "docB", "text": "...", "rank": 1}]}

Accepted aliases (first present wins, in this order):

* run id — ``run_id``, ``runId``, ``config_id``, ``run``, then ``id``;
* query id — ``query_id``, ``qid``, then ``id`` (``id`` is never both: a record whose
  only id key is ``id`` is rejected as ambiguous);
* evidence list — ``evidence``, ``cited``, ``docs``, ``documents``, ``retrieved``,
  ``contexts``;
* document id inside an entry — ``doc_id``, ``document_id``, ``docid``, ``id``,
  ``source_id``; when none is at the top of the entry, the same keys are searched in
  nested objects (and lists) up to three levels down, e.g. ``{"source": {"doc_id": ..}}``;
* span hash — ``span_hash``, ``spanHash``, ``spanhash`` (also found nested).

Ids may be strings or integers (integers are read as their decimal string, as
RagCiteCheck does); they are trimmed and must not be empty. This is a superset of
the RagCiteCheck run format, which loads unchanged. Unknown keys are ignored.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ragaudit_core.defaults import INT32_MAX
from ragaudit_core.logs.identity import float_id_hint

__all__ = [
    "DOC_ID_KEYS",
    "EVIDENCE_KEYS",
    "QUERY_ID_KEYS",
    "RUN_ID_KEYS",
    "EvidenceEntry",
    "EvidenceRecord",
    "describe_validation_error",
    "nothing_of_a_log",
]


RUN_ID_KEYS: tuple[str, ...] = ("run_id", "runId", "config_id", "run")
QUERY_ID_KEYS: tuple[str, ...] = ("query_id", "qid")
EVIDENCE_KEYS: tuple[str, ...] = ("evidence", "cited", "docs", "documents", "retrieved", "contexts")
DOC_ID_KEYS: tuple[str, ...] = ("doc_id", "document_id", "docid", "id", "source_id")
SPAN_HASH_KEYS: tuple[str, ...] = ("span_hash", "spanHash", "spanhash")
_NESTED_DEPTH = 3

_JSON_TYPE = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def json_type(v: Any) -> str:
    return _JSON_TYPE.get(type(v), type(v).__name__)


def _id_value(v: Any, what: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise ValueError(f"{what} must be a string or an integer, got {json_type(v)}{float_id_hint(v)}")
    s = v.strip() if isinstance(v, str) else str(v)
    if not s:
        raise ValueError(f"{what} is an empty string")
    return s


def _as_id(what: str) -> BeforeValidator:
    return BeforeValidator(lambda v: _id_value(v, what))


def _deep_find(obj: Any, keys: tuple[str, ...], depth: int) -> Any:
    """First non-null value under one of ``keys``, breadth of one object at a time,
    descending into nested objects and lists at most ``depth`` levels."""
    if isinstance(obj, dict):
        for k in keys:
            v = obj.get(k)
            if v is not None and v != "":
                return v
        if depth > 0:
            for v in obj.values():
                if isinstance(v, (dict, list)):
                    found = _deep_find(v, keys, depth - 1)
                    if found is not None:
                        return found
    elif isinstance(obj, list) and depth > 0:
        for v in obj:
            if isinstance(v, (dict, list)):
                found = _deep_find(v, keys, depth - 1)
                if found is not None:
                    return found
    return None


class EvidenceEntry(BaseModel):
    """One evidence item, in rank order inside its record.

    A bare string is read as ``{"doc_id": <string>}``. ``char_start``/``char_end`` are
    character offsets into the source document (end exclusive).
    """

    model_config = ConfigDict(extra="ignore")

    doc_id: Annotated[str, _as_id("doc_id")]
    text: str | None = None
    span_hash: Annotated[str | None, BeforeValidator(lambda v: (v.strip() or None) if isinstance(v, str) else v)] = None
    rank: int | None = Field(default=None, ge=0, le=INT32_MAX)
    score: float | None = None
    chunk_id: Annotated[str | None, BeforeValidator(lambda v: None if v is None else _id_value(v, "chunk_id"))] = None
    char_start: int | None = Field(default=None, ge=0, le=INT32_MAX)
    char_end: int | None = Field(default=None, ge=0, le=INT32_MAX)
    page: int | None = Field(default=None, ge=0, le=INT32_MAX)
    metadata: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, v: Any) -> Any:
        if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
            return {"doc_id": v}
        if not isinstance(v, dict):
            raise ValueError(f"an evidence entry must be a string (a doc_id) or an object, got {json_type(v)}")
        d = v.get("doc_id")
        if d is not None and d != "" and "spanHash" not in v and "spanhash" not in v:
            return v  # canonical shape: nothing to resolve
        out = dict(v)
        doc = next((v[k] for k in DOC_ID_KEYS if v.get(k) is not None and v.get(k) != ""), None)
        nested = doc is None
        if nested:
            doc = _deep_find(
                {k: val for k, val in v.items() if isinstance(val, (dict, list))}, DOC_ID_KEYS, _NESTED_DEPTH
            )
        if doc is None:
            raise ValueError(
                "evidence entry has no document id: none of "
                + ", ".join(DOC_ID_KEYS)
                + " is present (also searched 3 levels of nesting)"
            )
        out["doc_id"] = doc
        sh = next((v[k] for k in SPAN_HASH_KEYS if v.get(k) is not None), None)
        if sh is None and nested:  # a wrapper entry: span hash and text sit beside the nested id
            sh = _deep_find(v, SPAN_HASH_KEYS, _NESTED_DEPTH)
            if "text" not in v:
                t = _deep_find(v, ("text",), _NESTED_DEPTH)
                if isinstance(t, str):
                    out["text"] = t
        if sh is not None:
            out["span_hash"] = sh
        return out

    @model_validator(mode="after")
    def _offsets(self) -> EvidenceEntry:
        if self.char_end is not None and self.char_start is not None and self.char_end < self.char_start:
            raise ValueError(f"char_end ({self.char_end}) is before char_start ({self.char_start})")
        return self


def nothing_of_a_log(v: dict) -> bool:
    """Whether a JSON object holds no key of a record: no run id, no query id, no ``id`` and no evidence
    list (a configuration, a row of something else) — nothing of a log, not a record with a flaw."""
    ids = (*RUN_ID_KEYS, *QUERY_ID_KEYS, "id")
    return all(v.get(k) is None for k in ids) and not any(k in v for k in EVIDENCE_KEYS)


class EvidenceRecord(BaseModel):
    """One (run, query) record: the ordered evidence list a run produced for a query."""

    model_config = ConfigDict(extra="ignore")

    run_id: Annotated[str, _as_id("run_id")]
    query_id: Annotated[str, _as_id("query_id")]
    config: dict[str, Any] | None = None
    query: str | None = None
    evidence: list[EvidenceEntry]
    answer: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            raise ValueError(f"a record must be a JSON object, got {json_type(v)}")
        if "run_id" in v and "query_id" in v and isinstance(v.get("evidence"), list):
            return v  # canonical shape
        out = dict(v)
        run_key = next((k for k in RUN_ID_KEYS if v.get(k) is not None), None)
        query_key = next((k for k in QUERY_ID_KEYS if v.get(k) is not None), None)
        has_id = v.get("id") is not None
        if run_key is None and query_key is None and has_id:
            raise ValueError(
                "the only id key is 'id', which could be the run or the query; name them 'run_id' and 'query_id'"
            )
        if nothing_of_a_log(v):
            keys = sorted(v)  # nothing of a log at all (a CSV of something else): not "missing run id"
            raise ValueError(
                "not an evidence record: it has no run id, no query id and no evidence list (keys found: "
                + (", ".join(keys[:12]) + (f" and {len(keys) - 12} more" if len(keys) > 12 else "") or "none")
                + ")"
            )
        if run_key is None:
            run_key = "id" if has_id else None
        elif query_key is None and has_id:
            query_key = "id"
        if run_key is None:
            raise ValueError("missing run id: none of " + ", ".join((*RUN_ID_KEYS, "id")) + " is present")
        if query_key is None:
            raise ValueError("missing query id: none of " + ", ".join((*QUERY_ID_KEYS, "id")) + " is present")
        out["run_id"] = v[run_key]
        out["query_id"] = v[query_key]
        ev_key = next((k for k in EVIDENCE_KEYS if k in v), None)
        if ev_key is None:
            raise ValueError(
                "missing evidence list: none of "
                + ", ".join(EVIDENCE_KEYS)
                + f" is present (keys found: {', '.join(sorted(v)) or 'none'})"
            )
        ev = v[ev_key]
        if not isinstance(ev, list):
            raise ValueError(f"'{ev_key}' must be a list of evidence entries, got {json_type(ev)}")
        out["evidence"] = ev
        return out


def describe_validation_error(err: ValidationError) -> str:
    """A one-line, human message for a pydantic error: ``field path: what is wrong``."""
    parts = []
    for e in err.errors(include_url=False):
        loc = ""
        for item in e["loc"]:
            if isinstance(item, int):
                loc += f"[{item}]"
            else:
                loc += ("." if loc else "") + str(item)
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "missing":
            msg = "is required"
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)

"""Our own contract (``docs/log-contract.md``): read by :mod:`ragaudit_core.logs.lines`, not mapped.

Detector: the record has an evidence key other than ``contexts`` (``evidence``, ``cited``,
``docs``, ``documents``, ``retrieved``), or ``contexts`` beside a run or query id key
(``run_id``, ``runId``, ``config_id``, ``run``, ``query_id``, ``qid``). It is tried before every
other format, so keys of other formats on a native record (``user_input``, ``response``) do not
change what it is: they are ignored, and the ingest names them in one warning per file. A record
no format recognises is read as native too (and rejected with the contract's reason).
"""

from __future__ import annotations

from ragaudit_core.logs.contracts import EVIDENCE_KEYS, QUERY_ID_KEYS, RUN_ID_KEYS
from ragaudit_core.logs.formats.base import LogFormat
from ragaudit_core.logs.formats.lists import data_string

__all__ = ["CELL_KEYS", "FORMAT", "KNOWN_KEYS", "is_provenance", "read_cells"]

_STRONG = tuple(k for k in EVIDENCE_KEYS if k != "contexts")
_IDS = (*RUN_ID_KEYS, *QUERY_ID_KEYS)
KNOWN_KEYS = frozenset({*EVIDENCE_KEYS, *_IDS, "id", "config", "query", "answer", "nodes", "schema"})
"""Keys the contract reads (``nodes``/``schema`` mark provenance records)."""


def detect(obj: dict) -> bool:
    return any(k in obj for k in _STRONG) or ("contexts" in obj and any(k in obj for k in _IDS))


FORMAT = LogFormat(name="native", label="native", kind="native", detect=detect)


def is_provenance(obj: dict) -> bool:
    """A provenance record (``docs/provenance-contract.md``): it says so (``schema``), or has a
    non-empty ``nodes`` list, or a ``nodes`` list and no evidence record's keys — so a native
    evidence record with an extra ``nodes: []`` stays an evidence record."""
    if str(obj.get("schema", "")).startswith("ragaudit.provenance/"):
        return True
    nodes = obj.get("nodes")
    return isinstance(nodes, list) and (bool(nodes) or not detect(obj))


CELL_KEYS = (*EVIDENCE_KEYS, "config")
"""The contract's list and object fields, which a CSV cell (or a Parquet text column) holds as text."""


def read_cells(obj: dict) -> dict:
    """A native record read from a CSV or Parquet row, its list and object fields written as text
    (JSON, or the Python literal pandas' ``to_csv`` writes) parsed as data — bounded, never executed
    (:func:`~.lists.data_string`, which raises :class:`~.base.FormatError` naming the field). Only
    rows: in JSON a string there is the wrong type, and the contract rejects it."""
    out = obj
    for k in CELL_KEYS:
        v = obj.get(k)
        if isinstance(v, str):
            out = dict(out) if out is obj else out
            out[k] = data_string(v, repr(k))
    return out

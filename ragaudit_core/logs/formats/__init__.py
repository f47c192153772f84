"""Log formats, registered in one place: our contract and other tools' logs.

Each format is one module holding a :class:`~.base.LogFormat` — a detector and a mapper:

========================  ======  ==================================================
format                    kind    module
========================  ======  ==================================================
``native``                native  :mod:`.native` (our contract, read by ``lines``)
``ragchecker``            record  :mod:`.ragchecker`
``ragas``                 record  :mod:`.ragas`
``openinference``         trace   :mod:`.openinference`
``langsmith``             trace   :mod:`.langsmith`
``langfuse``              trace   :mod:`.langfuse`
``mlflow``                trace   :mod:`.mlflow`
``trulens``               trace   :mod:`.trulens`
``deepeval``              record  :mod:`.deepeval`
========================  ======  ==================================================

**Detection is per record** (:func:`detect`): the first format in :data:`FORMATS` whose detector
accepts the record, else native; native is tried first, so keys of other formats on a native
record never change what it is (:func:`foreign_keys` names them for a warning). A file may mix
formats. Adding a format is adding a module and one entry to :data:`FORMATS`. The tracing formats
read the run settings their metadata names with :mod:`.settings` (one alias table for all).
"""

from __future__ import annotations

from typing import Any

from ragaudit_core.logs.formats import (
    deepeval,
    langfuse,
    langsmith,
    mlflow,
    native,
    openinference,
    ragas,
    ragchecker,
    trulens,
)
from ragaudit_core.logs.formats.base import (
    FormatError,
    LogFormat,
    MapContext,
    Span,
    build_record,
    query_id_for,
    retrieval_key,
    run_id_for,
)

__all__ = [
    "FAST_FORMATS",
    "FAST_TRACE_FORMATS",
    "FOREIGN_FORMATS",
    "FORMATS",
    "NAMES",
    "TRACE_FORMATS",
    "FormatError",
    "LogFormat",
    "MapContext",
    "Span",
    "build_record",
    "detect",
    "foreign_keys",
    "get",
    "ignored_keys_message",
    "map_record",
    "query_id_for",
    "retrieval_key",
    "run_id_for",
]

FORMATS: tuple[LogFormat, ...] = (
    native.FORMAT,
    ragchecker.FORMAT,
    ragas.FORMAT,
    openinference.FORMAT,
    langsmith.FORMAT,
    langfuse.FORMAT,
    mlflow.FORMAT,
    trulens.FORMAT,
    deepeval.FORMAT,
)
"""Every format, in detection order."""

_BY_NAME = {f.name: f for f in FORMATS}
NAMES: tuple[str, ...] = tuple(_BY_NAME)
FOREIGN_FORMATS: tuple[str, ...] = tuple(f.name for f in FORMATS if f.kind == "record")
TRACE_FORMATS: tuple[str, ...] = tuple(f.name for f in FORMATS if f.kind == "trace")
FAST_FORMATS: tuple[LogFormat, ...] = tuple(f for f in FORMATS if f.decode_fast is not None)
"""Formats with a fast path for their common shape (``LogFormat.decode_fast``), tried in order."""
FAST_TRACE_FORMATS: tuple[LogFormat, ...] = tuple(f for f in FORMATS if f.read_span_fast is not None)
"""Tracing formats with a fast path for their common span shape (``LogFormat.read_span_fast``)."""
_OTHER_KEYS = frozenset().union(*(f.keys for f in FORMATS)) - native.KNOWN_KEYS


def get(name: str) -> LogFormat:
    """The format called ``name`` (raises :class:`FormatError` listing the names)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r}; formats are: {', '.join(NAMES)}") from None


def detect(obj: Any) -> LogFormat:
    """The format of one decoded record: the first whose detector accepts it, else native."""
    if isinstance(obj, dict):
        for f in FORMATS:
            if f.detect(obj):
                return f
    return native.FORMAT


def foreign_keys(obj: dict) -> list[str]:
    """Keys of a native record that other formats use (ignored by the contract), sorted."""
    return [] if _OTHER_KEYS.isdisjoint(obj) else sorted(k for k in obj if k in _OTHER_KEYS)


def ignored_keys_message(ignored: set[str]) -> str:
    """The warning about other formats' keys on native records, naming the format they suggest and
    how to read the file as that format instead (a Ragas frame with run_id and query_id columns reads
    as native: its contexts are then document ids, not passages)."""
    keys = ", ".join(sorted(ignored))
    whose = [f for f in FORMATS if f.kind == "record" and f.keys & ignored]
    hint = ""
    if len(whose) == 1:
        f = whose[0]
        hint = (
            f"; if they are {f.label} {f.unit}s with run and query ids of their own, load the file with "
            f"--format {f.name} (or 'Read the files as: {f.label}' when uploading) to read them as such "
            "(a native record's contexts are document ids, not passages)"
        )
    return (
        f"native records carry keys of other log formats ({keys}): they are read as native records "
        f"and those keys are ignored{hint}"
    )


def map_record(name: str, obj: Any, ctx: MapContext) -> list[dict]:
    """Native evidence records for one record of the record format ``name`` (raises :class:`FormatError`)."""
    fmt = get(name)
    if fmt.map_record is None:
        raise FormatError(f"{fmt.label} records are not mapped one by one")
    if not isinstance(obj, dict):
        raise FormatError(f"a {name} record is a JSON object")
    return fmt.map_record(obj, ctx)

"""Run settings a tracing export logs in its metadata, read as the native contract's ``config``.

LangSmith keeps a run's metadata in ``extra.metadata``, Langfuse in a trace's or an observation's
``metadata``, OpenInference in a span's ``metadata`` attribute (a JSON string by its semantic
conventions; an object where a tool decoded it, as Phoenix's span dataframe does; the Python
literal of one where pandas' ``to_csv`` wrote that dataframe). A retrieval
pipeline that logs its settings there names them as its framework does; each of our settings is
the first of its aliases (in this order) that the metadata holds as a value that is not blank:

==================  =========================================================================
setting             metadata keys read
==================  =========================================================================
``top_k``           ``top_k``, ``similarity_top_k`` (LlamaIndex), ``search_kwargs.k``
                    (LangChain's ``as_retriever(search_kwargs=…)``), ``k``, ``topK``,
                    ``similarityTopK`` (the JavaScript libraries)
``chunk_size``      ``chunk_size``, ``chunkSize``
``chunk_overlap``   ``chunk_overlap``, ``chunkOverlap``
``embedder``        ``embedder``, ``embedding_model``, ``embed_model`` (LlamaIndex's
                    ``Settings.embed_model``; its ``model_name`` where it is an object),
                    ``ls_embedding_model`` (LangChain's tracing parameter), ``embeddingModel``
==================  =========================================================================

A dotted alias is read nested (``{"search_kwargs": {"k": 5}}``, the inner object also as JSON
text) or as one dotted key (``{"search_kwargs.k": 5}``). A value is kept as logged (a text, a
number with a fraction: the runs table's grid column is then NULL, as for a native config); an
object or a list is no setting (the next alias is read). The config holds only the settings
found — the rest of the metadata (user and session ids, ``ls_run_depth`` …) is not a setting —
and is None when none is. ``ls_embedding_provider`` (LangChain's embeddings class name, not the
model) is not read.

Levels (:func:`merged`): a record's config is its trace's settings overlaid, key by key, with the
retriever span's own — the retriever's win — see ``docs/log-contract.md``.
"""

from __future__ import annotations

import math
from typing import Any

from ragaudit_core.logs.formats.base import FormatError
from ragaudit_core.logs.formats.lists import data_string
from ragaudit_core.logs.formats.spans import json_maybe

__all__ = ["ALIASES", "merged", "observation_attributes", "read_observation_settings", "read_settings"]

ALIASES: dict[str, tuple[str, ...]] = {
    "top_k": ("top_k", "similarity_top_k", "search_kwargs.k", "k", "topK", "similarityTopK"),
    "chunk_size": ("chunk_size", "chunkSize"),
    "chunk_overlap": ("chunk_overlap", "chunkOverlap"),
    "embedder": (
        "embedder",
        "embedding_model",
        "embed_model",
        "embed_model.model_name",
        "embedding_model.model_name",
        "ls_embedding_model",
        "embeddingModel",
    ),
}
"""Our setting → the metadata keys read for it, in order (the first that holds a value wins)."""

_PATHS = tuple(
    (key, tuple((a, a.partition(".")[0] if "." in a else None) for a in aliases)) for key, aliases in ALIASES.items()
)
"""(setting, ((alias, the key it is nested under or None), …)) in order."""
_HEADS = frozenset(k for _key, paths in _PATHS for a, head in paths for k in (a, head) if k is not None)
"""The top-level keys an alias is read under: metadata holding none of them names no setting (one
set test: LangChain gives every run metadata, mostly its own tracing keys)."""


def _lookup(md: dict, path: str, depth: int = 0) -> Any:
    """The value at a dotted ``path``: the key itself, else its head's object (or JSON text of
    one) read for the rest."""
    v = md.get(path)
    if v is None and "." in path and depth < 4:
        head, _, rest = path.partition(".")
        sub = json_maybe(md.get(head))
        if isinstance(sub, dict):
            return _lookup(sub, rest, depth + 1)
    return v


def _is_setting(v: Any) -> bool:
    """A value a setting may hold: a text that is not blank, a finite number, a boolean."""
    if isinstance(v, str):
        return bool(v.strip())
    if isinstance(v, float):
        return math.isfinite(v)
    return isinstance(v, (int, bool))


def read_settings(metadata: Any) -> dict[str, Any] | None:
    """The settings a metadata object names — or its JSON text, or the Python literal pandas'
    ``to_csv`` writes for a column of dicts (parsed as data, bounded: :func:`~.lists.data_string`)
    — as a config; None when it names none (or is no object)."""
    md = json_maybe(metadata)
    if isinstance(md, str) and md[:1] == "{":  # not JSON (only then: JSON text is decoded above)
        try:
            md = data_string(md, "metadata")
        except FormatError:
            return None
    if not isinstance(md, dict) or _HEADS.isdisjoint(md):
        return None
    out: dict[str, Any] = {}
    for key, paths in _PATHS:
        for alias, head in paths:
            v = md.get(alias)
            if v is None and head is not None and head in md:
                v = _lookup(md, alias)
            if v is not None and _is_setting(v):
                out[key] = v
                break
    return out or None


def read_observation_settings(metadata: Any) -> dict[str, Any] | None:
    """The settings a Langfuse observation's (or trace's) ``metadata`` names: its own keys over
    those of the OpenTelemetry span it was ingested from. Langfuse's OTel endpoint keeps the span's
    attributes under ``metadata.attributes`` (each a text: a number as its JSON, ``"5"``; the
    object itself JSON text where the API returns it so); there the span's plain attributes go
    over its ``metadata`` attribute (OpenInference's JSON text, written on every span of a
    ``using_metadata`` context). ``resourceAttributes`` and ``scope`` (the service's, the
    instrumentation library's) are not read."""
    md = json_maybe(metadata)
    if not isinstance(md, dict):
        return None
    own = read_settings(md)
    attrs = observation_attributes(md)
    if attrs is None:
        return own
    return merged(read_settings(attrs.get("metadata")), read_settings(attrs), own)


def observation_attributes(metadata: Any) -> dict[str, Any] | None:
    """The attributes of the OpenTelemetry span a Langfuse observation (or trace) was ingested from:
    its ``metadata.attributes`` (the metadata, and the attributes, an object or its JSON text; each
    attribute that is not a text written as its JSON by Langfuse); None where there are none."""
    md = json_maybe(metadata)
    attrs = json_maybe(md.get("attributes")) if isinstance(md, dict) else None
    return attrs if isinstance(attrs, dict) else None


def merged(*levels: dict[str, Any] | None) -> dict[str, Any] | None:
    """Settings levels overlaid in order, key by key (a later level's value wins); None when no
    level names any."""
    present = [lv for lv in levels if lv]
    if not present:
        return None
    if len(present) == 1:
        return dict(present[0])
    out: dict[str, Any] = {}
    for lv in present:
        out.update(lv)
    return out

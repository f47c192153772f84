"""OpenInference spans (Arize Phoenix), nested (``{"attributes": {"retrieval": {"documents":
[{"document": {...}}]}}}``), flattened (``attributes.retrieval.documents.0.document.id``, or
``retrieval.documents`` as a list of ``{"document.id", …}``), or Phoenix's span dataframe.

Kind ``openinference.span.kind`` or ``span_kind``; trace ``context.trace_id``; query
``input.value``; documents ``retrieval.documents[i].document.{id, content, score, metadata}``
(metadata may be a JSON string); answer: the LLM span's ``llm.output_messages.0.message.content``,
else its ``output.value``. A RERANKER span (``reranker.output_documents``) makes the trace a
provenance record too (:func:`ragaudit_core.logs.traces.provenance_record`). Run settings
(:mod:`.settings`): the RETRIEVER span's ``metadata`` attribute over its trace's root span's (no
``parent_id``) — a JSON string by the conventions, the Python literal of an object (Phoenix's
dataframe saved by ``to_csv``), or an object, whole or spread over keys of its own
(``attributes.metadata.top_k``, ``metadata.top_k``: :func:`_span_settings`). An EMBEDDING
span's ``embedding.model_name`` names its trace's embedder where no metadata does
(:class:`~ragaudit_core.logs.traces.TraceJoiner`).

The list attribute a span's kind uses (``retrieval.documents``, ``reranker.output_documents``,
``llm.output_messages``) may be written as text — a JSON string, or the Python literal pandas'
``to_csv`` writes for a Phoenix dataframe's list column — and is then parsed as data
(:func:`_read_lists`, bounded by :func:`~.lists.data_string`); a text that is not a list rejects
the span. A RETRIEVER span without documents is read with a note (loaded, with a warning), and a
``document.score`` that is not a number is left out with one.

Flattened document indices: the same index written twice (``documents.0`` and
``documents.00``) rejects the span (which one is meant is unknown); indices with gaps (0, 2, 7)
are read in their order as ranks 0, 1, 2, with a warning.

Fast path (:func:`read_span_fast`): a RETRIEVER span as OpenTelemetry exporters write it —
``context.trace_id`` a string, ``attributes`` a flat object of scalar values, and only the
exporter's other top-level keys (``name``, ``parent_id``, ``kind``, times, ``status``, empty
``events``/``links``, ``resource``) — is decoded by msgspec in one pass into the dotted keys
:func:`flatten` would give and read by the same code (:func:`_read_flat`) — or, when its keys
need nothing but looking up (no gaps, no index written twice, no metadata sub-keys), by a layout
of its keys compiled once per key sequence (:func:`_layout`: every span of a log repeats the same
keys; 13 µs a span instead of 32). Anything else (a
nested or Phoenix-flattened span, another key, ``NaN``) takes the general path; tests check both
store the same rows.
"""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple

import msgspec

from ragaudit_core.logs.formats.base import FormatError, LogFormat, Span, check_id
from ragaudit_core.logs.formats.lists import data_string
from ragaudit_core.logs.formats.settings import merged, read_settings
from ragaudit_core.logs.formats.spans import flatten, json_maybe, number, text_of, trace_id

__all__ = ["FORMAT", "retrieved_documents"]


def detect(obj: dict) -> bool:
    """An OpenInference span: a dotted key (:func:`~.spans.flatten`) ending in
    ``openinference.span.kind``, or ``span_kind`` beside ``attributes.*``/``context.*`` keys.
    Other formats' records are told apart without flattening them (:func:`_names_a_kind`). A key
    under a top-level ``metadata`` does not count: a Langfuse observation ingested from
    OpenTelemetry keeps its span's attributes there (``metadata.attributes``), and is Langfuse's."""
    if "span_kind" not in obj and not _names_a_kind(obj, 0):
        return False
    flat = flatten(obj)
    return any(k.endswith("openinference.span.kind") and not k.startswith("metadata.") for k in flat) or (
        "span_kind" in obj and any(k.startswith(("attributes.", "context.")) for k in flat)
    )


def _names_a_kind(v: Any, depth: int) -> bool:
    """Whether a key :func:`~.spans.flatten` reaches ends in ``kind`` once its trailing dots are
    stripped — true of any record whose dotted keys include one ending in ``openinference.span.kind``
    (a dotted key ends with the last key on its path that is not only dots). It walks what
    ``flatten`` walks, to the same depth, without building the dotted keys: a LangSmith run with
    8 documents took 29 us to flatten."""
    if depth > 12:
        return False
    if isinstance(v, dict):
        for k, x in v.items():
            if k.endswith("kind") or (k.endswith(".") and k.rstrip(".").endswith("kind")):
                return True
            if isinstance(x, (dict, list)) and _names_a_kind(x, depth + 1):
                return True
        return False
    if isinstance(v, list) and v:
        for x in v:
            if not isinstance(x, (dict, list)):
                return False
        for x in v:
            if _names_a_kind(x, depth + 1):
                return True
    return False


def _get(flat: dict, key: str) -> Any:
    for k in (key, "attributes." + key):
        if k in flat:
            return flat[k]
    return None


def read_span(obj: dict) -> Span:
    return _read_flat(flatten(obj), obj)


def _read_flat(flat: dict, obj: dict) -> Span:
    """The span of a record (``obj``) given its dotted keys (``flat``)."""
    kind = str(_get(flat, "openinference.span.kind") or obj.get("span_kind") or "").upper()
    lists = _LISTS_OF.get(kind)
    if lists is not None and not lists.isdisjoint(flat):
        _read_lists(flat, lists)
    for k in flat:  # an id given as an object is flattened into sub-keys: name it, never drop it
        if ".document.id." not in k and "context.trace_id." not in k:
            continue  # (a cheap test first: the exact one below implies it)
        rest = k.removeprefix("attributes.")
        if rest.startswith("context.trace_id.") or ".document.id." in rest:
            raise FormatError(f"{k.rsplit('.', 1)[0]} must be a string or an integer, got an object")
    trace = trace_id(_get(flat, "context.trace_id") or obj.get("trace_id"))
    notes: list[str] = []
    if kind == "RETRIEVER":
        query = _get(flat, "input.value")
        if not isinstance(query, str) or not query.strip():
            raise FormatError("RETRIEVER span without input.value (the query)")
        texts, ids, md, scores = retrieved_documents(flat, notes)
        if not texts:
            notes.append(_NO_DOCUMENTS)
        settings = _span_settings(flat)
        return Span(trace, "retriever", query, texts, ids, md, notes=notes, scores=scores, settings=settings)
    if kind == "RERANKER":
        _not_documents(flat, "reranker.output_documents")
        outs = _documents(flat, "reranker.output_documents.", notes)
        for i, d in enumerate(outs):
            d["id"] = check_id(d.get("id"), f"reranker output document {i}'s document.id")
            if not isinstance(d.get("content"), str) and d["id"] is None:
                raise FormatError("a reranker output document has neither document.id nor document.content")
        return Span(trace, "reranker", _get(flat, "reranker.query"), reranked=outs, notes=notes)
    # a root span's settings (no parent): its trace's RETRIEVER spans read them
    settings = None if flat.get("parent_id") else _span_settings(flat)
    if kind == "LLM":
        answer = _get(flat, "llm.output_messages.0.message.content")
        if not isinstance(answer, str):
            answer = text_of(json_maybe(_get(flat, "output.value")))
        return Span(trace, "answer", answer=answer, settings=settings)
    if kind == "EMBEDDING":  # its model: the trace's embedder where no metadata names one
        model = _get(flat, "embedding.model_name")
        return Span(
            trace, "other", settings=settings, embedder=model if isinstance(model, str) and model.strip() else None
        )
    return Span(trace, "other", settings=settings)


def retrieved_documents(
    flat: dict, notes: list[str]
) -> tuple[list[str], list[str | int | None], list[dict | None], list[float | None]]:
    """Texts, ids, metadata and scores of the documents a RETRIEVER span's dotted keys hold
    (``retrieval.documents.{i}.document.*``, with or without the ``attributes.`` prefix; the list
    written as text is parsed first) in index order: an index written twice, a document without a
    text or with an id that is neither a string nor an integer raises; gaps and scores that are not
    numbers are noted. A Langfuse observation's span attributes are read by it too."""
    _read_lists(flat, _LISTS_OF["RETRIEVER"])
    _not_documents(flat, "retrieval.documents")
    items = _documents(flat, "retrieval.documents.", notes)
    if any(not isinstance(d.get("content"), str) for d in items):
        raise FormatError("a retrieved document has no document.content text")
    md = [_metadata(d) for d in items]
    ids = [check_id(d.get("id"), f"retrieved document {i}'s document.id") for i, d in enumerate(items)]
    scores = _scores([d.get("score") for d in items], notes)
    return [d["content"] for d in items], ids, md, scores


_METADATA_KEYS = ("attributes.metadata.", "metadata.")


def _span_settings(flat: dict) -> dict[str, Any] | None:
    """The run settings a span's ``metadata`` attribute names: its text under
    ``attributes.metadata`` (else ``metadata``, as :func:`_get` reads any attribute) — JSON, or the
    Python literal ``to_csv`` writes for Phoenix's dataframe column — overlaid by the keys an
    object was spread into (``attributes.metadata.top_k``: the object flattened, nested as
    ``attributes: {"metadata": {…}}``, decoded in Phoenix's column, or spread into columns of
    their own by ``pd.json_normalize``; ``metadata.top_k``). None when it names none."""
    whole = flat.get("attributes.metadata")
    if whole is None:
        whole = flat.get("metadata")
    spread = {k.partition("metadata.")[2]: v for k, v in flat.items() if k.startswith(_METADATA_KEYS)}
    return merged(read_settings(whole), read_settings(spread) if spread else None)


_LISTS = {"RETRIEVER": "retrieval.documents", "RERANKER": "reranker.output_documents", "LLM": "llm.output_messages"}
"""The list-valued attribute the reader uses, by span kind (as dotted keys it is flattened to its
items); only these are parsed when written as text: another kind's, unused, is left as it is."""
_LISTS_OF = {kind: frozenset({k, f"attributes.{k}"}) for kind, k in _LISTS.items()}
_LIST_KEYS = frozenset().union(*_LISTS_OF.values())
_NO_DOCUMENTS = (
    "RETRIEVER span without documents (retrieval.documents is absent or empty): loaded as a record "
    "that retrieved nothing"
)


def _read_lists(flat: dict, keys: frozenset[str]) -> None:
    """The list attributes ``keys`` written as text — a JSON string, or the Python literal pandas'
    ``to_csv`` writes for a Phoenix dataframe's list column — parsed as data (bounded:
    :func:`~.lists.data_string`) and flattened in place; a text that is not a list raises."""
    for k in [k for k in keys if isinstance(flat.get(k), str)]:
        value = data_string(flat.pop(k), k)
        if value is None or value == []:
            continue  # blank: absent (an empty list too: no items)
        if not isinstance(value, list):
            got = "an object" if isinstance(value, dict) else "a text" if isinstance(value, str) else "a number"
            raise FormatError(f"{k} must be a list, got {got} written as text")
        flatten(value, f"{k}.", flat)


def _not_documents(flat: dict, name: str) -> None:
    """Raise when ``name`` holds something other than documents (a list of texts, a number):
    read as dotted keys its documents would have left no value under the bare name."""
    for k in (name, f"attributes.{name}"):
        v = flat.get(k)
        if v is not None and v != []:
            shown = repr(v)[:60]
            raise FormatError(
                f"{k} must be a list of documents (objects with document.id and document.content), got {shown}"
            )


def _scores(raw: list[Any], notes: list[str]) -> list[float | None]:
    """The documents' ``document.score`` as numbers (None where absent); one that is not a number
    is left out with a note, never rejecting the span."""
    out = [number(v) for v in raw]
    bad = [i for i, (v, n) in enumerate(zip(raw, out)) if n is None and v is not None and not isinstance(v, float)]
    if bad:
        notes.append(
            f"document.score of retrieved document{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad[:8]))}"
            f"{' …' if len(bad) > 8 else ''} is not a number: stored without a score"
        )
    return out


def _kind_of(obj: dict) -> str:
    flat = flatten(obj)
    return str(_get(flat, "openinference.span.kind") or obj.get("span_kind") or "untyped").upper()


_KEYS: dict[tuple[str, str], tuple[int, str, str] | None] = {}
"""Parsed document keys (``attributes.retrieval.documents.3.document.id`` → (3, "3", "id")): every
span of a log repeats the same keys, so each is parsed once (bounded: cleared past 100,000)."""


def _parse_key(k: str, prefix: str) -> tuple[int, str, str] | None:
    rest = k.removeprefix("attributes.")
    if not rest.startswith(prefix):
        return None
    parts = rest[len(prefix) :].split(".", 1)
    if not (parts[0].isascii() and parts[0].isdigit() and len(parts) == 2):  # ("²".isdigit(), but no int)
        return None
    return int(parts[0]), parts[0], parts[1].removeprefix("document.")


def _documents(flat: dict, prefix: str, notes: list[str]) -> list[dict]:
    """The documents under ``prefix`` (``retrieval.documents.`` …) as ``{id, content, score, …}`` in
    index order; an index written twice raises, gaps are noted."""
    docs: dict[int, dict] = {}
    spelled: dict[int, str] = {}
    if len(_KEYS) > 100_000:
        _KEYS.clear()
    for k, v in flat.items():
        if prefix not in k:
            continue  # (a cheap test first: the exact one implies it)
        try:
            parsed = _KEYS[(k, prefix)]
        except KeyError:
            parsed = _KEYS[(k, prefix)] = _parse_key(k, prefix)
        if parsed is None:
            continue
        i, spelling, field = parsed
        if spelled.setdefault(i, spelling) != spelling:
            raise FormatError(
                f"document index {i} is written twice ({prefix}{spelled[i]} and {prefix}{spelling}); "
                "which one is meant is unknown"
            )
        docs.setdefault(i, {})[field] = v
    order = sorted(docs)
    if order and order != list(range(len(order))):
        shown = ", ".join(map(str, order[:8])) + (" …" if len(order) > 8 else "")
        notes.append(f"{prefix.rstrip('.')} indices {shown} have gaps: read in that order as ranks 0–{len(order) - 1}")
    return [docs[i] for i in order]


def _metadata(d: dict) -> dict | None:
    md = json_maybe(d.get("metadata"))
    if isinstance(md, dict):
        return md
    sub = {k.removeprefix("metadata."): v for k, v in d.items() if k.startswith("metadata.")}
    return sub or None


_Scalar = str | Annotated[int, msgspec.Meta(gt=-(10**17), lt=10**17)] | float | bool | None


class _Context(msgspec.Struct, forbid_unknown_fields=True):
    trace_id: str
    span_id: _Scalar = None
    trace_state: _Scalar = None


class _ExportedSpan(msgspec.Struct, forbid_unknown_fields=True):
    context: _Context
    attributes: dict[str, _Scalar]
    name: _Scalar = None
    parent_id: _Scalar = None
    kind: _Scalar = None
    start_time: _Scalar = None
    end_time: _Scalar = None
    status: dict[str, _Scalar] | None = None
    events: list[Any] = []
    links: list[Any] = []
    resource: Any = None


_DECODER = msgspec.json.Decoder(_ExportedSpan)


def read_span_fast(data: bytes) -> Span | None:
    """The span of a line in the exporters' common RETRIEVER shape (module docstring), else None."""
    try:
        s = _DECODER.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    kind = s.attributes.get("openinference.span.kind")
    if not isinstance(kind, str) or kind.upper() != "RETRIEVER" or not s.context.trace_id or s.events or s.links:
        return None
    if s.resource is not None and any(".document.id." in k for k in flatten(s.resource, "resource.")):
        return None
    keys = tuple(s.attributes)
    if keys not in _LAYOUTS:
        if len(_LAYOUTS) > 1000:
            _LAYOUTS.clear()
        _LAYOUTS[keys] = _layout(keys)
    layout = _LAYOUTS[keys]
    if layout is not None:
        return _read_laid_out(layout, list(s.attributes.values()), s.context.trace_id)
    flat: dict[str, Any] = {"context.trace_id": s.context.trace_id}
    for k, v in s.attributes.items():
        if not k or k.endswith("."):  # flatten() would strip the dots: keys could collide
            return None
        flat["attributes." + k] = v
    try:
        return _read_flat(flat, {})
    except FormatError:  # the general path words it
        return None


class _Layout(NamedTuple):
    """Where a span's values are, by position in its ``attributes`` (every span of a log has the
    same keys in the same order): the query, and each document's content, id and metadata."""

    query: int | None
    content: tuple[int | None, ...]
    ids: tuple[int | None, ...]
    metadata: tuple[int | None, ...]
    scores: tuple[int | None, ...]
    settings: int | None = None  # the span's own ``metadata`` attribute (its run settings)


_LAYOUTS: dict[tuple[str, ...], _Layout | None] = {}
"""Layouts by the attributes' keys; None: keys the layout does not cover (read by ``_read_flat``)."""
_DOCS = "retrieval.documents."


def _layout(keys: tuple[str, ...]) -> _Layout | None:
    """The layout ``_read_flat`` reads these keys by; None when it would do more than look values
    up (a key it rejects or words a note about, document metadata or the span's own spread over
    sub-keys, a list attribute written as text, no documents at all)."""
    docs: dict[int, dict[str, int]] = {}
    spelled: dict[int, str] = {}
    for pos, k in enumerate(keys):
        if not k or k.endswith(".") or k.startswith(("context.trace_id.", "metadata.")) or ".document.id." in k:
            return None
        if k in _LIST_KEYS:
            return None
        parsed = _parse_key(k, _DOCS) if k.startswith(_DOCS) else None
        if parsed is None:
            continue
        i, spelling, field = parsed
        if spelled.setdefault(i, spelling) != spelling or field.startswith("metadata."):
            return None
        docs.setdefault(i, {})[field] = pos
    if not docs or sorted(docs) != list(range(len(docs))):
        return None  # no documents, or gaps: a note
    fields = [docs[i] for i in range(len(docs))]
    return _Layout(
        keys.index("input.value") if "input.value" in keys else None,
        tuple(d.get("content") for d in fields),
        tuple(d.get("id") for d in fields),
        tuple(d.get("metadata") for d in fields),
        tuple(d.get("score") for d in fields),
        keys.index("metadata") if "metadata" in keys else None,
    )


def _read_laid_out(layout: _Layout, values: list[Any], trace: str) -> Span | None:
    """What ``_read_flat`` reads from a RETRIEVER span of this layout (None where it raises)."""
    query = None if layout.query is None else values[layout.query]
    if not isinstance(query, str) or not query.strip():
        return None
    texts: list[str] = [values[c] for c in layout.content if c is not None and isinstance(values[c], str)]
    if len(texts) < len(layout.content):
        return None
    md = [None if m is None else json_maybe(values[m]) for m in layout.metadata]
    try:
        ids = [None if j is None else check_id(values[j], "") for j in layout.ids]
    except FormatError:
        return None
    notes: list[str] = []
    scores = _scores([None if j is None else values[j] for j in layout.scores], notes)
    metadata = [m if isinstance(m, dict) else None for m in md]
    settings = None if layout.settings is None else read_settings(values[layout.settings])
    return Span(trace, "retriever", query, texts, ids, metadata, notes=notes, scores=scores, settings=settings)


FORMAT = LogFormat(
    name="openinference",
    label="OpenInference",
    kind="trace",
    detect=detect,
    keys=frozenset({"span_kind"}),
    read_span=read_span,
    unit="span",
    kind_of=_kind_of,
    read_span_fast=read_span_fast,
)

"""Tracing exports joined per trace: a retriever span gives one evidence record, completed with
the answer of its trace and — with a reranker span — the trace's provenance graph.

The spans are read by the tracing formats of :mod:`ragaudit_core.logs.formats` (OpenInference,
LangSmith, Langfuse). The answer comes from another span of the same trace (an LLM span /
generation, or the root chain's output), which may come before or after it in the file, so a
file's retriever spans are held (:class:`TraceJoiner`) until the file is read, then completed
with their trace's answer. Traces are keyed by (format, trace id), so one file may mix tracing
formats. Spans that carry no evidence (LLM, chain, embedding, tool, …) are counted as such,
neither loaded nor rejected.

Run settings (:mod:`ragaudit_core.logs.formats.settings`) join the same way: a retriever span's
record gets as its ``config`` the settings of its trace — the trace's own (a Langfuse trace
export's ``trace.metadata``), overlaid with its root span's — overlaid, key by key, with the
retriever span's own: the retriever's win, then the root span's. The first root span (and trace)
naming settings counts for its trace. Under all of them, the model an embedding span of the trace
names (OpenInference's EMBEDDING span, ``embedding.model_name``; Langfuse's EMBEDDING observation,
``model``) is its embedder where no metadata names one: the first such span counts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ragaudit_core.logs.formats import LogFormat, Span, retrieval_key
from ragaudit_core.logs.formats import get as get_format
from ragaudit_core.logs.formats.settings import merged
from ragaudit_core.logs.formats.spans import number
from ragaudit_core.logs.held import SpillMap, SpillQueue

__all__ = ["REPORTED_AGAIN", "DecodedSpan", "Span", "TraceJoiner", "provenance_record"]


class DecodedSpan:
    """A retriever span the worker pool read and mapped (``decoded``: its
    :class:`~ragaudit_core.logs.parallel.DecodedLine`; ``key``: where its rows wait), held like
    any other span until the file is read — with only what the joiner asks of a span (a slotted
    object: a 640 MB export holds 125,000 of them)."""

    __slots__ = ("decoded", "key", "trace_id")
    kind = "retriever"

    def __init__(self, trace_id: str | None, decoded: Any, key: Any) -> None:
        self.trace_id, self.decoded, self.key = trace_id, decoded, key


def _pack(item: tuple[Any, LogFormat, DecodedSpan]) -> tuple:
    line, fmt, span = item
    return line, fmt.name, span.trace_id, span.decoded, span.key


def _unpack(packed: tuple) -> tuple[Any, LogFormat, DecodedSpan]:
    line, name, trace_id, decoded, key = packed
    return line, get_format(name), DecodedSpan(trace_id, decoded, key)


@dataclass
class TraceJoiner:
    """The tracing spans of one file: retriever spans held with their line (those mapped
    elsewhere, past :data:`~ragaudit_core.logs.held.HELD_SPANS`, in a temporary file), the first
    reranker span per trace, the answer per trace (a root run's answer wins over an LLM
    call's) and the run settings per trace (module docstring) — those three past as many traces in
    another (:class:`~ragaudit_core.logs.held.SpillMap`)."""

    pending: SpillQueue = field(default_factory=lambda: SpillQueue(_pack, _unpack))
    rerankers: SpillMap = field(default_factory=SpillMap)  # (format, trace) → (line, reranker span)
    answers: SpillMap = field(default_factory=SpillMap)  # (format, trace) → (a root run's?, answer)
    # (format, trace) → (its embedding span's model as settings, the trace's settings, its root span's)
    settings: SpillMap = field(default_factory=SpillMap)
    reported: dict[tuple[str, str, str], int] = field(default_factory=dict)  # (format, trace, retrieval) → line

    def add(self, line: Any, fmt: LogFormat, span: Span) -> bool:
        """Hold a span; True when it carries no evidence (counted as skipped by the caller)."""
        key = (fmt.name, span.trace_id) if span.trace_id is not None else None
        if span.kind == "retriever":
            self.pending.append((line, fmt, span))
            return False
        if span.settings is not None and key is not None:  # (only a root span's are read)
            self._settle(key, 2, span.settings)
        if span.embedder is not None and key is not None:
            self._settle(key, 0, {"embedder": span.embedder})
        if span.kind == "reranker" and key is not None and key not in self.rerankers:
            self.rerankers[key] = (line, span)
            return False
        answered = key is not None and self.answers.get(key, (False, ""))[0]
        if span.kind == "answer" and span.answer and key is not None and (span.root or not answered):
            self.answers[key] = (span.root, span.answer)
        return True

    def trace_settings(self, fmt: str, trace_id: str, settings: dict[str, Any]) -> None:
        """The run settings a trace itself names (not one of its spans: a Langfuse trace
        export's ``trace.metadata``), under its root span's."""
        self._settle((fmt, trace_id), 1, settings)

    def trace_answer(self, fmt: str, trace_id: str, answer: str) -> None:
        """The answer a trace itself gives (a Langfuse trace export's ``trace.output``): a root
        answer where no root span has given one (a root span's, before or after, wins)."""
        key = (fmt, trace_id)
        if answer and not self.answers.get(key, (False, ""))[0]:
            self.answers[key] = (True, answer)

    def _settle(self, key: tuple, level: int, settings: dict[str, Any]) -> None:
        """Keep a trace's settings of one level (0: its embedding span's model, 1: the trace's, 2:
        its root span's; a later level wins key by key), the first given."""
        got = self.settings.get(key, (None, None, None))
        if got[level] is None:
            self.settings[key] = (*got[:level], settings, *got[level + 1 :])

    def hold(self, line: Any, fmt: LogFormat, span: DecodedSpan) -> None:
        """Hold a retriever span mapped elsewhere (the worker pool, or as it was read): past
        :data:`~ragaudit_core.logs.held.HELD_SPANS` of them it waits in a temporary file."""
        self.pending.append((line, fmt, span), spillable=True)

    def records(self) -> Iterator[tuple[Any, LogFormat, Span | DecodedSpan, str | None, dict[str, Any] | None]]:
        """Each held retriever span with its trace's answer and its trace's run settings (its
        embedding span's model, overlaid with the trace's, then its root span's: the span's own go
        over them), in file order."""
        with_settings = len(self.settings) > 0
        for line, fmt, span in self.pending:
            if span.trace_id is None:
                yield line, fmt, span, None, None
                continue
            key = (fmt.name, span.trace_id)
            settings = merged(*self.settings.get(key, ())) if with_settings else None
            yield line, fmt, span, self.answers.get(key, (False, None))[1], settings

    def reported_on(self, fmt: LogFormat, span: Span | DecodedSpan, line_no: int) -> int | None:
        """The earlier line whose span reported the same retrieval in the same trace (the same
        question and documents: :func:`~ragaudit_core.logs.formats.retrieval_key`), else None —
        remembering this one. A LangChain retrieval chain traced to Langfuse reports its
        retriever's documents on the chain's span and on the retriever's."""
        if span.trace_id is None:
            return None
        key = retrieval_key(span) if isinstance(span, Span) else span.decoded.retrieval
        if key is None:
            return None
        seen = (fmt.name, span.trace_id, key)
        if seen in self.reported:  # (an earlier span: of another line, or of the same one — a trace export's)
            return self.reported[seen]
        self.reported[seen] = line_no
        return None

    def has_reranker(self, fmt: LogFormat, span: Span | DecodedSpan) -> bool:
        """Whether a reranker span of the retriever span's trace is held."""
        return span.trace_id is not None and (fmt.name, span.trace_id) in self.rerankers

    def take_reranker(self, fmt: LogFormat, span: Span) -> tuple[Any, Span] | None:
        """The reranker span (with its line) of a retriever span's trace, once."""
        return self.rerankers.pop((fmt.name, span.trace_id), None) if span.trace_id is not None else None

    def close(self) -> int:
        """Let the held rerankers and answers go (their temporary file too); return how many
        rerankers no retriever span took."""
        left = len(self.rerankers)
        self.rerankers.close()
        self.answers.close()
        self.settings.close()
        return left


REPORTED_AGAIN = (
    "a {} span reports the retrieval of {} again (the same question and documents in the same trace: "
    "a chain span carrying its retriever's output, or a retriever wrapping another): loaded once"
)
"""The warning of a retriever span :meth:`TraceJoiner.reported_on` finds reported before (format,
where: ``line N``, or ``an earlier span of this line`` — a trace export holds its spans on one line)."""


def provenance_record(
    run_id: str,
    query_id: str,
    retriever: Span,
    reranker: Span,
    answer: str | None,
    doc_ids: list[str] | None = None,
) -> dict:
    """A provenance record (``docs/provenance-contract.md``) for a trace with a reranker: the
    retrieved documents (stage 2), the reranker's output (stage 3, each linked to the retrieved
    document with its id and text, else its id, else its text: :func:`_parent`), the context in
    that order (stage 4) and the generation (stage 5); retrieved documents the reranker left out
    are ``dropped`` at stage 3. ``doc_ids``: the retrieved documents' ids as their evidence record
    stores them (a ``--doc-id-key`` read from metadata, a passage's hash), so the graph and the
    evidence name the same documents; a reranked document takes the id of the one it comes from."""
    nodes: list[dict[str, Any]] = []
    retrieved: list[str] = []  # each retrieved document's id in the graph, in rank order
    by_key: dict[object, list[str]] = {}  # (id, text), id, text → the retrieved nodes carrying it, in rank order
    scores = retriever.scores
    for i, (text, doc) in enumerate(zip(retriever.texts, retriever.ids)):
        nid = f"r{i}"
        retrieved.append(_stage2_id(doc_ids, i, doc))
        nodes.append(
            {
                "node_id": nid,
                "stage": 2,
                "artifact_type": "rank_result",
                "derived_from": [],
                "coordinates": {"doc_id": retrieved[i]},
                "metadata": _scored({"text": text, "rank": i}, scores[i] if i < len(scores) else None),
            }
        )
        if isinstance(doc, (str, int)):  # ids are checked when the span is read; never a list or dict here
            by_key.setdefault(("pair", doc, text), []).append(nid)
            by_key.setdefault(("id", doc), []).append(nid)
        by_key.setdefault(("text", text), []).append(nid)
    kept: set[str | None] = set()
    for j, d in enumerate(reranker.reranked):
        parent = _parent(by_key, d.get("id"), d.get("content"), kept)
        node = {
            "node_id": f"k{j}",
            "stage": 3,
            "artifact_type": "rank_result",
            "derived_from": [parent] if parent else [],
            "metadata": _scored({"rank": j}, d.get("score")),
        }
        if parent is not None:
            node["coordinates"] = {"doc_id": retrieved[int(parent[1:])]}
        elif d.get("id") not in (None, ""):
            node["coordinates"] = {"doc_id": str(d["id"])}
        nodes.append(node)
        nodes.append(
            {
                "node_id": f"x{j}",
                "stage": 4,
                "artifact_type": "context_element",
                "derived_from": [f"k{j}"],
                "metadata": {"context_index": j + 1},
            }
        )
        kept.add(parent)
    dropped = [
        {"node_id": n["node_id"], "stage": 3, "reason": "not among the reranker's output documents"}
        for n in nodes
        if n["stage"] == 2 and n["node_id"] not in kept
    ]
    nodes.append(
        {
            "node_id": "g",
            "stage": 5,
            "artifact_type": "generation",
            "derived_from": [f"x{j}" for j in range(len(reranker.reranked))],
        }
    )
    return {
        "run_id": run_id,
        "query_id": query_id,
        "query": retriever.query,
        "nodes": nodes,
        "dropped": dropped,
        "generated_text": answer,
    }


def _stage2_id(doc_ids: list[str] | None, i: int, doc: Any) -> str:
    if doc_ids is not None:
        return doc_ids[i]
    return str(doc) if doc not in (None, "") else f"text:{i}"


def _parent(by_key: dict[object, list[str]], rid: Any, content: Any, kept: set[str | None]) -> str | None:
    """The retrieved node a reranked document comes from: the one with its id and its text, else its
    id, else its text — the first such node not yet taken (chunks of one document share its id: the
    reranker's second chunk of a file is the retrieved second chunk, not the first again); a node
    already taken only when every candidate is."""
    keys: list[tuple] = []
    if isinstance(rid, (str, int)) and rid != "":
        keys += [("pair", rid, content)] if isinstance(content, str) else []  # (a list is no key)
        keys.append(("id", rid))
    if isinstance(content, str):
        keys.append(("text", content))
    for key in keys:
        free = [n for n in by_key.get(key, []) if n not in kept]
        if free:
            return free[0]
    return next((by_key[k][0] for k in keys if by_key.get(k)), None)


def _scored(metadata: dict, score: Any) -> dict:
    """A rank result's metadata with its score (the retriever's or the reranker's), when it is a number."""
    if number(score) is not None:
        metadata["score"] = number(score)
    return metadata

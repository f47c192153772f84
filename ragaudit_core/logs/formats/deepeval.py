"""DeepEval test cases: an ``LLMTestCase`` (or a ``Golden``) as JSON — ``input``,
``actual_output``, ``expected_output``, ``context``, ``retrieval_context`` as
``EvaluationDataset.add_test_cases_from_json_file`` reads them, or the camelCase keys DeepEval
serialises them with (``actualOutput``, ``expectedOutput``, ``retrievalContext``: a test run's
``testCases``, a pulled dataset's ``goldens``; those containers are unwrapped by
:mod:`ragaudit_core.logs.shapes`).

Detector: ``input`` with any of ``actual_output``, ``expected_output``, ``retrieval_context`` (or
their camelCase forms), and no Langfuse ``traceId``/``type`` (an observation has an ``input``
too). Mapper: one test case → one record: the query its ``input``, the passages its
``retrieval_context`` in order (texts, never ids: DeepEval keeps no document ids, so each passage's
id is its text's hash, which takes the id the stored runs log for the same passage, as a Ragas
row's does), the answer its ``actual_output``, the run settings those its ``additional_metadata`` names
(:mod:`.settings`: ``top_k``, ``chunk_size`` …). ``context`` — in DeepEval's words "the ideal
retrieval results" for the input — is read as relevance labels (passages, matched by span
identity), as a Ragas row's ``reference_contexts``; a ``context`` that is not a list of texts is
skipped with a warning, never rejecting the test case. A test case without ``retrieval_context``
(a golden as ``save_as`` writes it: ``input``, ``expected_output``, ``context``) retrieved
nothing: counted, and a file of only such test cases is refused as a test set.

Reading: a ``retrieval_context`` (or ``context``) written as text in a table's cell is read as
data (JSON, or the Python literal pandas writes); a text that is neither is split on ``;`` —
DeepEval's CSV reader (``add_test_cases_from_csv_file``) splits those columns so by default — with
a warning once; an empty or ``null`` cell is no retrieval (a golden's). Text that is JSON but not a
list of texts rejects the test case.
"""

from __future__ import annotations

import json
from typing import Any

from ragaudit_core.logs.formats.base import FormatError, LogFormat, MapContext, build_record, query_text
from ragaudit_core.logs.formats.lists import text_list
from ragaudit_core.logs.formats.settings import read_settings
from ragaudit_core.logs.formats.spans import absent, json_maybe

__all__ = ["FORMAT"]

_ANSWER = ("actual_output", "actualOutput")
_EXPECTED = ("expected_output", "expectedOutput")
_RETRIEVED = ("retrieval_context", "retrievalContext")
_COMPANIONS = (*_ANSWER, *_EXPECTED, *_RETRIEVED)
_METADATA = ("additional_metadata", "additionalMetadata")
SPLIT = (
    "DeepEval retrieval_context given as text that is not a list: split on ';', as DeepEval's CSV "
    "reader splits that column"
)


def detect(obj: dict) -> bool:
    """``input`` with a DeepEval key; not a Langfuse observation (``traceId``, ``type``) nor a
    Langfuse dataset item (``datasetId``, ``expectedOutput``), which share ``input``."""
    if "input" not in obj or ("traceId" in obj and "type" in obj) or "datasetId" in obj:
        return False
    return any(k in obj for k in _COMPANIONS)


def _first(obj: dict, keys: tuple[str, ...]) -> Any:
    return next((obj[k] for k in keys if obj.get(k) is not None), None)


def _texts(raw: Any, what: str, ctx: MapContext) -> list[str]:
    """A list of texts: a list, or text in a cell read as data (JSON, a Python literal); a text that
    is not data at all is split on ``;`` as DeepEval's CSV reader splits it (warned once). Text
    that is JSON but not a list of texts, or that is printed as a list and cannot be read as one
    (numpy's printed array, a ``None`` element, past a size limit: :func:`_bracketed`), raises :class:`FormatError` —
    split on ``;``, it would be one passage made of the printed list."""
    try:
        return text_list(raw, what)
    except FormatError:
        if not isinstance(raw, str) or _is_json(raw) or _bracketed(raw):  # (a JSON scalar, "2024", is a passage)
            raise
    ctx.warn_once(SPLIT.replace("retrieval_context", what))
    return [p for p in raw.split(";") if p.strip()]


def _bracketed(s: str) -> bool:
    """Whether ``s`` is printed as a list: ``[`` then a quote, a bracket or a brace, … ``]`` — not a
    passage that starts with a bracketed title or marker (``[Aspirin] lowers stroke risk [1]``)."""
    t = s.strip()
    return t.startswith("[") and t.endswith("]") and t[1:].lstrip()[:1] in ("'", '"', "[", "{", "]")


def _is_json(s: str) -> bool:
    """Whether ``s`` is a JSON list or object (data of the wrong shape); a JSON scalar — a passage
    that reads as a number, ``2024`` — is text, split on ``;`` as DeepEval's reader splits it."""
    try:
        v = json.loads(s)
    except (ValueError, RecursionError):
        return False
    return isinstance(v, (list, dict))


def map_record(obj: dict, ctx: MapContext) -> list[dict]:
    """One record; none for a test case without ``retrieval_context`` (a golden), which the ingest
    counts as a test case without retrieval."""
    query = query_text(obj, ("input",), "DeepEval")
    raw = _first(obj, _RETRIEVED)
    if absent(raw):  # (null, or as a table's cell writes it)
        return []
    answer = _first(obj, _ANSWER)
    texts = _texts(raw, "retrieval_context", ctx)
    config = read_settings(json_maybe(_first(obj, _METADATA)))
    answer = answer if isinstance(answer, str) else None
    rec = build_record("DeepEval", ctx, query, answer, texts, config=config, own=obj)
    _ideal_context(obj.get("context"), rec["query_id"], ctx)
    return [rec]


def _ideal_context(raw: Any, query_id: str, ctx: MapContext) -> None:
    """``context`` as relevance labels of the query (passages); a malformed one is skipped with a warning."""
    if absent(raw):
        return
    try:
        refs = _texts(raw, "context", ctx)
    except FormatError as e:
        ctx.warn_once(f"DeepEval context could not be read as relevance labels ({e}); those test cases carry none")
        return
    ctx.labels += [(query_id, "text", r) for r in refs if r.strip()]


FORMAT = LogFormat(
    name="deepeval",
    label="DeepEval",
    kind="record",
    detect=detect,
    keys=frozenset(
        {"actual_output", "actualOutput", "expected_output", "expectedOutput", "retrieval_context", "retrievalContext"}
    ),
    map_record=map_record,
    unit="test case",
)

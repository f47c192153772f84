"""Pairs whose two runs logged their documents in two ways that cannot meet.

A run that logged no document ids (a Ragas export without ``retrieved_context_ids``, a trace export
without a document-id key: :func:`ragaudit_core.logs.catalog.text_id_runs`) has ``text:`` and its
passage's hash as each document id. Beside a run that logged real ids, every document differs by
id, and so every span (a span is a document's passage): J is 0 at both levels by how the two were
logged, whatever they retrieved. Such a *mixed* pair is left out wherever pairs are formed by
default (every pair of the compared runs, or each run against a baseline), as the default selection
leaves out a run that would narrow the shared queries, and one sentence names it; a pair the caller
names (the compare page's, the gate's, the probe's) is compared as asked, its sentence saying what
its J means. Pairs of two runs without ids stay: their document level is their span level.
"""

from __future__ import annotations

from collections.abc import Collection

from ragaudit_core.wording import counted

__all__ = ["left_out_sentence", "named_pairs_sentence", "nothing_left_sentence", "pairs_to_compare", "split_mixed"]

_WHERE_IDS = "a Ragas export's retrieved_context_ids column, or for a trace export the metadata key that holds them"
_ID_KEY = "--doc-id-key, or 'Document id key' when uploading"
_LOAD_WITH_IDS = f"{_WHERE_IDS}: {_ID_KEY}"
_RELOAD = (
    "; or, where the runs with ids hold the same passages, remove {its} file{s} (on the home page: “Remove a file or a "
    "run…”) and load {it} again: a passage a stored run holds word for word takes its document id "
    "(logs.stored_passages)"
)


def split_mixed(
    pairs: list[tuple[str, str]], text_id_runs: Collection[str]
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """``pairs`` as (comparable, mixed), each in the given order: a mixed pair sets a run of
    ``text_id_runs`` beside one that is not."""
    kept: list[tuple[str, str]] = []
    mixed: list[tuple[str, str]] = []
    for a, b in pairs:
        (mixed if (a in text_id_runs) != (b in text_id_runs) else kept).append((a, b))
    return kept, mixed


def pairs_to_compare(
    pairs: list[tuple[str, str]], text_id_runs: Collection[str], named: bool
) -> tuple[list[tuple[str, str]], list[str], str | None]:
    """The pairs to compare, the sentences about mixed ones, and why nothing is left (else None).
    Pairs formed by default leave the mixed ones out; pairs the caller ``named`` are kept as asked,
    the sentence saying what their J means."""
    kept, mixed = split_mixed(pairs, text_id_runs)
    if not mixed:
        return pairs, [], None
    if named:
        return pairs, [named_pairs_sentence(mixed, text_id_runs)], None
    if not kept:
        return [], [], nothing_left_sentence(mixed, text_id_runs)
    return kept, [left_out_sentence(mixed, text_id_runs)], None


def _names(runs: list[str]) -> str:
    return ", ".join(repr(r) for r in runs[:5]) + (" …" if len(runs) > 5 else "")


def _kinds(mixed: list[tuple[str, str]], text_id_runs: Collection[str]) -> tuple[list[str], list[str]]:
    """The runs of ``mixed`` pairs without document ids, and those with, each in id order."""
    runs = {r for p in mixed for r in p}
    return sorted(r for r in runs if r in text_id_runs), sorted(r for r in runs if r not in text_id_runs)


def _beside(mixed: list[tuple[str, str]], text_id_runs: Collection[str]) -> tuple[str, str, bool]:
    """'run(s) X, which logged no document ids (… hashes, text:…)', 'run(s) Y, which did', and
    whether the first names one run."""
    hashed, with_ids = _kinds(mixed, text_id_runs)
    one = len(hashed) == 1
    its = "its" if one else "their"
    return (
        f"run{'' if one else 's'} {_names(hashed)}, which logged no document ids ({its} "
        f"document ids are {its} passages' text hashes, text:…)",
        f"run{'' if len(with_ids) == 1 else 's'} {_names(with_ids)}, which did",
        one,
    )


def left_out_sentence(mixed: list[tuple[str, str]], text_id_runs: Collection[str]) -> str:
    """The sentence naming the mixed pairs left out of a default comparison, and how to compare them."""
    without, with_ids, one = _beside(mixed, text_id_runs)
    its, it = ("its", "it") if one else ("their", "them")
    return (
        f"Left out {counted(len(mixed), 'pair')} between {without}, and {with_ids}: between the two kinds every "
        "document differs by id, and so every span, so J would be 0 at both levels from how they were logged, not "
        f"from what they retrieved; to compare {it}, load {its} logs again with {its} document ids ({_LOAD_WITH_IDS})"
        + _RELOAD.format(its=its, s="" if one else "s", it=it)
        + "."
    )


def nothing_left_sentence(mixed: list[tuple[str, str]], text_id_runs: Collection[str]) -> str:
    """Why a default comparison whose every pair is mixed compares nothing (one sentence)."""
    without, with_ids, one = _beside(mixed, text_id_runs)
    its = "its" if one else "their"
    return (
        f"no pair of the compared runs can be compared: each sets {without}, beside {with_ids}, so J would be 0 at "
        f"both levels from how they were logged, not from what they retrieved; load {its} logs again with {its} "
        f"document ids ({_LOAD_WITH_IDS})"
        + _RELOAD.format(its=its, s="" if one else "s", it="it" if one else "them")
        + "; or compare runs that logged their ids the same way"
    )


def named_pairs_sentence(mixed: list[tuple[str, str]], text_id_runs: Collection[str]) -> str:
    """The sentence beside mixed pairs the caller named (compared as asked): what their J means."""
    hashed, _ = _kinds(mixed, text_id_runs)
    one = len(hashed) == 1
    its, they = ("its", "it") if one else ("their", "they")
    return (
        f"run{'' if one else 's'} {_names(hashed)} logged no document ids: {its} document ids are {its} passages' "
        f"text hashes (text:…), so {they} share{'s' if one else ''} no document and no span with the runs that "
        f"logged ids (J 0 between them at both levels, from how {they} {'was' if one else 'were'} logged, not what "
        f"{they} retrieved). To compare {'it' if one else 'them'}, load {'its' if one else 'those'} logs again with "
        f"{its} document ids: {_LOAD_WITH_IDS.replace(': --', ' (--', 1)})"
        + _RELOAD.format(its=its, s="" if one else "s", it="it" if one else "them")
        + "."
    )

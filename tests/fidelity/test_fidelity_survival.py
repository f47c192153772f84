"""Stage survival read as seed 002 defines it, on one- and two-query logs worked by hand: the
funnel's share when queries skip different stages, generation survival that needs the citation to
resolve to the ground-truth origin, years in brackets, and identity options on provenance alone."""

from __future__ import annotations

import pytest

from ragaudit_core.fidelity.citations import extract_citations
from ragaudit_core.fidelity.score import fidelity_runs
from ragaudit_core.logs.identity import CanonOptions
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.options import IngestError
from tests.helpers import node, write_jsonl

SCHEMA = "ragaudit.provenance/1"


def _record(run: str, qid: str, *, rerank: str | None, text: str, gt: list, doc: str = "A") -> dict:
    """A document of 3 pages, its chunk (page 1), retrieval, an optional reranker ('keeps' its
    link or 'loses' it) and the context element."""
    nodes = [
        node("d", 0, "document", doc=doc, page=1, pages=3),
        node("c", 1, "chunk", ["d"], doc=doc, page=1),
        node("r", 2, "rank_result", ["c"]),
    ]
    last = "r"
    if rerank is not None:
        nodes.append(node("k", 3, "rank_result", ["r"] if rerank == "keeps" else []))
        last = "k"
    nodes.append(node("x", 4, "context_element", [last]))
    return {
        "schema": SCHEMA,
        "run_id": run,
        "query_id": qid,
        "nodes": nodes,
        "generated_text": text,
        "ground_truth": gt,
    }


def test_the_funnel_keeps_a_query_through_a_stage_its_pipeline_skips(con, tmp_path):
    """q1's reranker loses the source; q2 has no reranker and keeps it to the answer. Conditional
    rates: reranking 0/1, compression 1/1, generation 1/1 — their product 0 — but q2, half the
    queries, still holds its source: the share after every later stage is 1/2."""
    recs = [
        _record("R", "q1", rerank="loses", text="Answer [Source: A, p. 1].", gt=["A"]),
        _record("R", "q2", rerank=None, text="Answer [Source: A, p. 1].", gt=["A"]),
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", recs)])
    s = fidelity_runs(con, ["R"])["R"].summary
    assert s["stage_survival"]["reranking"] == 0.0 and s["stage_survival"]["generation"] == 1.0
    assert s["stage_share"]["retrieval"] == 1.0
    assert s["stage_share"]["reranking"] == s["stage_share"]["compression"] == s["stage_share"]["generation"] == 0.5
    assert s["stage_share"]["generation"] == pytest.approx(s["cfs_product_mean"])


def test_a_citation_survives_generation_when_it_resolves_to_the_retrieved_ground_truth_document(con, tmp_path):
    """The ground truth is A p. 2; the retrieved chunk is A p. 1. Citing A p. 99 of a 3-page document
    (scored 0) does not resolve; citing p. 2, never retrieved (0.3), does not either; citing the
    retrieved chunk, p. 1 or as [1] (1.0), does: the page missed is retrieval's loss, not the citation's."""
    gt = [{"doc_id": "A", "page": 2}]
    recs = [
        _record("R", "made-up", rerank=None, text="X [Source: A, p. 99].", gt=gt),
        _record("R", "unretrieved", rerank=None, text="X [Source: A, p. 2].", gt=gt),
        _record("R", "retrieved", rerank=None, text="X [Source: A, p. 1].", gt=gt),
        _record("R", "index", rerank=None, text="X [1].", gt=gt),
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", recs)])
    q = fidelity_runs(con, ["R"])["R"].queries.set_index("query_id")
    assert q.loc["made-up", "survived_generation"] == 0 and q.loc["made-up", "cfs_product"] == 0
    assert q.loc["unretrieved", "survived_generation"] == 0
    assert q.loc["retrieved", "survived_generation"] == 1 and q.loc["index", "survived_generation"] == 1


def test_years_and_index_zero_in_brackets_are_not_citations():
    found, _ = extract_citations("In [2023] the trial [1] found it; arr[0] is code; see [2][3].")
    assert [c.string for c in found] == ["[1]", "[2]", "[3]"]
    assert [c.string for c in extract_citations("sugar[4].")[0]] == ["[4]"]  # glued to a word, as models write


def test_identity_options_hold_for_a_database_holding_only_provenance(con, tmp_path):
    """A case-sensitive load of provenance, then a default one: the second would canonicalise the
    cited ids differently and turn R1's CFS from 1.0 to 0.0, silently."""
    first = write_jsonl(
        tmp_path / "a.jsonl",
        [_record("R1", "q1", rerank=None, text="X [Source: DocA, p. 1].", gt=["DocA"], doc="DocA")],
    )
    ingest_paths(con, [first], IngestOptions(canon=CanonOptions(case_sensitive=True)))
    second = write_jsonl(
        tmp_path / "b.jsonl",
        [_record("R2", "q1", rerank=None, text="X [Source: DocB, p. 1].", gt=["DocB"], doc="DocB")],
    )
    with pytest.raises(IngestError, match="other identity options"):
        ingest_paths(con, [second])

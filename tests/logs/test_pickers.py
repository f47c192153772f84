"""What the pages' pickers offer: a run's own queries, and the pair a comparison opens on."""

from __future__ import annotations

from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl


def _rec(run: str, q: str, answer: str | None = None) -> dict:
    r = {"run_id": run, "query_id": q, "query": f"question {q}", "evidence": ["d1"]}
    if answer is not None:
        r["answer"] = answer
    return r


def _con(tmp_path, records):
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "l.jsonl", records)])
    return con


def test_a_runs_picker_offers_only_that_runs_queries(tmp_path):
    con = _con(tmp_path, [_rec("a", "1"), _rec("a", "2"), _rec("b", "2"), _rec("b", "3")])
    assert catalog.list_queries(con, run="a")["query_id"].tolist() == ["1", "2"]
    assert catalog.list_queries(con, run="b")["query_id"].tolist() == ["2", "3"]
    assert catalog.list_queries(con, "3", run="a").empty
    assert catalog.list_queries(con)["query_id"].tolist() == ["1", "2", "3"]


def test_the_default_pair_shares_the_most_queries_and_prefers_answers(tmp_path):
    # a, b share 4 queries; c, d share 3 and logged answers; e shares 1 with a (and has answers)
    recs = [_rec("a", q) for q in "1234"] + [_rec("b", q) for q in "1234"]
    recs += [_rec("c", q, "yes") for q in "567"] + [_rec("d", q, "no") for q in "567"] + [_rec("e", "1", "x")]
    con = _con(tmp_path, recs)
    # (c, d): 3 shared ≥ half of 4, richness 2 beats (a, b)'s 0; (a, e) shares 1 < 2: never the default
    assert catalog.default_pair(con, ["a", "b", "c", "d", "e"]) == ("c", "d")
    assert catalog.default_pair(con, ["a", "b", "e"]) == ("a", "b")  # (a, e) richer, but shares too few
    assert catalog.default_pair(con, ["b", "a"]) == ("a", "b")
    assert catalog.default_pair(con, ["a", "c"]) is None  # nothing shared: no pair to open on
    assert catalog.default_pair(con, ["a"]) is None


def test_the_default_pair_is_never_one_whose_ids_cannot_meet(tmp_path):
    """'ids' and 'ragas' logged answers, 'ragas2' none: (ids, ragas) is the richest pair, but 'ragas'
    logged no document ids (its ids are passage hashes), so J is 0 there by how they were logged.
    The pages open on (ragas, ragas2), which can be compared; with no such pair, on none."""
    qs = ["What causes tides?", "Why is the sky blue?"]

    def rows(ids: bool, answer: bool) -> list[dict]:
        return [
            {"user_input": q, "retrieved_contexts": [q + " passage"]}
            | ({"retrieved_context_ids": ["d"]} if ids else {})
            | ({"response": "yes"} if answer else {})
            for q in qs
        ]

    write_jsonl(tmp_path / "ids.jsonl", rows(ids=True, answer=True))
    write_jsonl(tmp_path / "ragas.jsonl", rows(ids=False, answer=True))
    write_jsonl(tmp_path / "ragas2.jsonl", rows(ids=False, answer=False))
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in ("ids", "ragas", "ragas2")])
    assert catalog.default_pair(con, ["ids", "ragas", "ragas2"]) == ("ragas", "ragas2")
    assert catalog.default_pair(con, ["ids", "ragas"]) is None


def test_the_sample_opens_on_its_answered_provenance_pair(sample_con):
    runs = catalog.evidence_run_ids(sample_con)
    assert catalog.default_pair(sample_con, runs) == ("k10-c256-o32", "k10-c128-o32")


def test_the_default_pair_of_thousands_of_runs_is_chosen_in_the_database(tmp_path):
    """A log naming a run per record (10,000 runs asking one question) made 50M sharing pairs, every
    one fetched into Python: the ingest's precompute grew past 10 GB. The pair is chosen in SQL,
    with natural run order as the last tie-break, as before."""
    import tracemalloc

    recs = [{"run_id": f"run{i}", "query_id": "q", "evidence": ["d"]} for i in range(2000)]
    recs += [_rec("run1500", "q2"), _rec("run20", "q2")]  # the pair sharing the most queries
    con = _con(tmp_path, recs)
    runs = [f"run{i}" for i in range(2000)]
    tracemalloc.start()
    try:
        assert catalog.default_pair(con, runs) == ("run20", "run1500")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, peak  # 2M pairs fetched were hundreds of MB
    assert catalog.default_pair(con, [f"run{i}" for i in range(3, 12)]) == ("run3", "run4")  # natural order

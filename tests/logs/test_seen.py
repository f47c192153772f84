"""The ingest's "first record of a (run, query) wins" state (:mod:`ragaudit_core.logs.seen`)."""

from __future__ import annotations

import duckdb

from ragaudit_core.logs.seen import SeenPairs, pair_key


def test_a_pair_key_is_unambiguous():
    # joined without the length, ("a:b", "c") and ("a", ":bc")-like pairs could meet
    assert pair_key("ab", "c") != pair_key("a", "bc")
    assert pair_key("1:x", "y") != pair_key("1", ":xy")
    assert pair_key("", "q") == "0:q"


def test_places_are_kept_per_file_and_given_back():
    seen = SeenPairs()
    seen.add("r", "q1", "a.jsonl", 3)
    seen.add("r", "q2", "b.jsonl", 7_000_000_000)  # past 32 bits: the line is not cut
    seen.add("s", "q1", "a.jsonl", 4)
    assert seen.first_place("r", "q2") == ("b.jsonl", 7_000_000_000)
    assert seen.first_place("s", "q1") == ("a.jsonl", 4) and seen.taken("r", "q1")
    seen.forget_file("a.jsonl")
    assert not seen.taken("r", "q1") and not seen.taken("s", "q1") and seen.taken("r", "q2")
    assert len(seen) == 1


def test_pairs_stored_earlier_have_no_place_and_non_ascii_ids_key_alike():
    con = duckdb.connect()
    con.execute("CREATE TABLE records (run_id VARCHAR, query_id VARCHAR)")
    con.execute("INSERT INTO records VALUES ('运行', 'q1'), ('r', '问题')")
    seen = SeenPairs.from_table(con, "records")
    assert seen.taken("运行", "q1") and seen.taken("r", "问题") and not seen.taken("运", "行q1")
    assert seen.first_place("运行", "q1") is None  # "an earlier ingest"

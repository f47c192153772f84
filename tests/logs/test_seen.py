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


def test_two_sessions_loading_the_same_pairs_at_once_store_each_pair_once(tmp_path):
    """Two threads ingest, each on its own cursor of one shared connection (two dashboard sessions),
    two files holding the same (run, query) pairs. The tables have no primary key: the process
    runs one ingest at a time, so the second finds every pair taken and rejects its records."""
    import json
    import threading

    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths

    files = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.jsonl"
        lines = [json.dumps({"run_id": "r", "query_id": f"q{i}", "evidence": [f"{name}{i}"]}) for i in range(20_000)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    con = store.connect(tmp_path / "shared.duckdb")
    reports: list = []

    def load(path):
        cur = con.cursor()
        try:
            reports.append(ingest_paths(cur, [path]))
        finally:
            cur.close()

    threads = [threading.Thread(target=load, args=(f,)) for f in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.n_records for r in reports) == [0, 20_000]
    assert con.execute("SELECT count(*), count(DISTINCT query_id) FROM records").fetchall() == [(20_000, 20_000)]
    assert con.execute("SELECT count(*) FROM evidence").fetchall() == [(20_000,)]


def test_ids_of_several_code_points_key_alike_in_sql_and_python():
    """DuckDB's ``length`` and Python's ``len`` both count code points: a combining accent, a flag
    (two regional indicators), a ZWJ family emoji."""
    con = duckdb.connect()
    con.execute("CREATE TABLE records (run_id VARCHAR, query_id VARCHAR)")
    runs = ["e\u0301", "🇫🇷", "👨\u200d👩\u200d👧", "run"]
    con.executemany("INSERT INTO records VALUES (?, ?)", [(r, f"q-{r}") for r in runs])
    seen = SeenPairs.from_table(con, "records")
    assert all(seen.taken(r, f"q-{r}") for r in runs)
    assert len(seen) == 4


def test_an_ingest_started_inside_another_into_the_same_database_is_refused(tmp_path):
    import json

    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths

    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"run_id": "r", "query_id": "q", "evidence": ["d"]}) + "\n", encoding="utf-8")
    con = store.connect(tmp_path / "db.duckdb")

    def nested(_path, _n, _unit):
        ingest_paths(con.cursor(), [path])

    outer = ingest_paths(con.cursor(), [path], progress=nested)  # the file's own error: the file gives back
    assert outer.n_records == 0
    assert any("started from inside another ingest into it" in r.message for r in outer.rejected)
    assert ingest_paths(con.cursor(), [path]).n_records == 1  # the lock was given back

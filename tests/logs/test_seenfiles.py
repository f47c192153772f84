"""Loads into a database that already holds logs. A log and its gzip-compressed copy are one content:
the second is skipped with a warning, not
loaded again (its Ragas questions doubled as samples ``#2`` before)."""

from __future__ import annotations

import gzip
import json

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.logs.seenfiles import SeenFiles
from ragaudit_core.wording import NOTE

ROWS = [{"user_input": f"question {i}?", "retrieved_contexts": [f"passage {i}", "a shared passage"]} for i in range(3)]


def _files(tmp_path, other: bool = False):
    body = "".join(json.dumps(r) + "\n" for r in ROWS).encode()
    plain, packed = tmp_path / "ragas.jsonl", tmp_path / "ragas.jsonl.gz"
    plain.write_bytes(body)
    packed.write_bytes(gzip.compress(body.replace(b"question 2", b"question 9") if other else body))
    return plain, packed


def _records(con) -> list:
    return con.execute("SELECT run_id, query_id FROM records ORDER BY ALL").fetchall()


@pytest.mark.parametrize("order", ["plain first", "compressed first"])
def test_a_log_and_its_gzipped_copy_in_one_call_load_once(tmp_path, order):
    plain, packed = _files(tmp_path)
    first, second = (plain, packed) if order == "plain first" else (packed, plain)
    con = store.connect(":memory:")
    rep = ingest_paths(con, [first, second])
    assert len(_records(con)) == 3 and not any("#2" in q for _, q in _records(con))
    how = "uncompressed" if second == packed else "compressed"
    assert [w.message for w in rep.warnings if w.code == "already-loaded"] == [
        f"same content as {first}, which holds it {how}, already loaded; skipped"
    ]


def test_a_gzipped_copy_of_a_log_loaded_by_an_earlier_call_is_skipped(tmp_path):
    plain, packed = _files(tmp_path)
    con = store.connect(tmp_path / "db.duckdb")
    ingest_paths(con, [plain])
    rep = ingest_paths(con, [packed])
    assert len(_records(con)) == 3
    assert [f.status for f in rep.files] == ["already-loaded"]
    # a file loaded before adds nothing, as a second load of it asks: a note, not a warning
    assert [w.kind for w in rep.warnings if w.code == "already-loaded"] == [NOTE]


def test_a_gzipped_file_of_the_same_name_with_other_content_loads(tmp_path):
    plain, packed = _files(tmp_path, other=True)
    con = store.connect(":memory:")
    rep = ingest_paths(con, [plain, packed])
    assert not [w for w in rep.warnings if w.code == "already-loaded"]
    assert len(_records(con)) == 6  # (its repeated questions are samples: what differs is loaded)


def test_seen_files_forget_a_file_given_back():
    seen = SeenFiles([("a" * 64, "/logs/x.json")])
    assert seen.pop("a" * 64) == "/logs/x.json" and seen.pop("a" * 64) is None
    assert seen._by_name == {}


def test_a_load_whose_records_join_a_run_of_an_earlier_load_says_so(tmp_path):
    """A browser walk: phoenix_spans.parquet.gz uploaded after phoenix_spans.csv joined run
    'phoenix_spans' with no word but 'kept as sample 2' warnings."""
    from ragaudit_core import workspace

    plain, packed = _files(tmp_path, other=True)
    con = store.connect(tmp_path / "db.duckdb")
    first = workspace.load_paths(con, [plain], precompute_overview=False)
    assert not [w for w in first.warnings if w.code == "runs"]
    again = workspace.load_paths(con, [packed], precompute_overview=False)
    assert [w.message for w in again.warnings if w.code == "runs"] == [
        "run 'ragas' already held records of an earlier load: this load's records were added to it (another "
        "tool's log is a run named after its file without extensions: rename a file to keep its records apart)"
    ]


def test_only_the_latest_coverage_warning_stays_stored(tmp_path):
    """Each load words the whole database's query coverage; an earlier load's sentence describes a
    state that is gone (a browser walk found three, two of them stale)."""
    from tests.helpers import write_jsonl

    con = store.connect(tmp_path / "db.duckdb")
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": ["d"]} for r in ("a", "b") for i in range(3 if r == "a" else 2)
    ]
    ingest_paths(con, [write_jsonl(tmp_path / "ab.jsonl", recs)])
    ingest_paths(con, [write_jsonl(tmp_path / "c.jsonl", [{"run_id": "c", "query_id": "q0", "evidence": ["d"]}])])
    stored = con.execute("SELECT message FROM ingest_warnings WHERE code = 'coverage'").fetchall()
    assert len(stored) == 1 and "'c'" in stored[0][0]

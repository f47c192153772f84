"""Odd but legal input loses nothing good (issue #14, part 3)."""

from __future__ import annotations

import json
import subprocess
import sys

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import pipeline, write_jsonl


def _load(path, **opts):
    con = store.connect(":memory:")
    return con, ingest_paths(con, [path], IngestOptions(**opts))


def test_integers_beyond_bigint_in_config_and_metadata_keep_the_record(tmp_path):
    huge = 10**30
    rec = {
        "run_id": "r",
        "query_id": "q",
        "config": {"top_k": huge, "chunk_size": 2**70, "nested": {"n": -huge}},
        "evidence": [{"doc_id": "d", "text": "t", "metadata": {"big": 2**80, "list": [huge]}}],
    }
    con, rep = _load(write_jsonl(tmp_path / "big.jsonl", [rec]))
    assert rep.n_records == 1 and rep.n_rejected == 0
    top_k, chunk, config = con.execute("SELECT top_k, chunk_size, config FROM runs").fetchone()
    assert top_k is None and chunk is None  # out of the INTEGER column's range: not a setting
    assert json.loads(config)["nested"]["n"] == -huge  # the config is kept as logged
    assert json.loads(con.execute("SELECT metadata FROM evidence").fetchone()[0])["big"] == 2**80


def test_very_large_integer_ids_are_kept_exactly(tmp_path):
    qid, doc = 123456789012345678901234567890, 98765432109876543210987654321
    con, rep = _load(write_jsonl(tmp_path / "ids.jsonl", [{"run_id": "r", "query_id": qid, "evidence": [doc]}]))
    assert rep.n_records == 1
    assert con.execute("SELECT query_id, doc_id FROM evidence").fetchone() == (str(qid), str(doc))


def test_a_file_mixing_evidence_and_provenance_lines_loads_both(tmp_path):
    ev = {"run_id": "base", "query_id": "q9", "evidence": ["D1"]}
    for name, lines in (("ev-first.jsonl", [ev, pipeline()]), ("prov-first.jsonl", [pipeline(qid="q2"), ev])):
        con, rep = _load(write_jsonl(tmp_path / name, lines))
        assert rep.n_records == 1 and rep.n_provenance == 1 and rep.n_rejected == 0, name
        assert con.execute("SELECT kind FROM files").fetchone()[0] == "mixed"


def test_a_provenance_file_whose_first_line_is_broken(tmp_path):
    con, rep = _load(write_jsonl(tmp_path / "p.jsonl", ["{broken", pipeline(qid="a"), pipeline(qid="b")]))
    assert rep.n_provenance == 2 and rep.n_rejected == 1 and rep.rejected[0].line_no == 1
    assert con.execute("SELECT kind FROM files").fetchone()[0] == "provenance"


def test_cr_only_line_ends(tmp_path):
    recs = [{"run_id": "r", "query_id": f"q{i}", "evidence": ["d"]} for i in range(3)]
    path = tmp_path / "mac.jsonl"
    path.write_bytes(b"\r".join(json.dumps(r).encode() for r in recs) + b"\r")
    con, rep = _load(path)
    assert rep.n_records == 3 and rep.n_rejected == 0
    assert [r[0] for r in con.execute("SELECT line_no FROM records ORDER BY line_no").fetchall()] == [1, 2, 3]


def test_an_option_that_rejects_every_line_does_not_mark_the_file_loaded(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d"]}])
    con = store.connect(":memory:")
    first = ingest_paths(con, [path], IngestOptions(max_line_bytes=5))
    assert first.n_records == 0 and first.n_rejected == 1
    again = ingest_paths(con, [path])  # the right option: the file loads now
    assert again.n_records == 1 and again.files[0].status == "loaded"
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 0  # the failed attempt is replaced


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "ragaudit_core.cli", *map(str, args)], capture_output=True, text=True)


def test_max_line_bytes_that_make_no_sense_are_a_usage_error(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d"]}])
    for bad in ("0", "-5"):
        out = _cli("ingest", path, "--db", tmp_path / "x.duckdb", "--max-line-bytes", bad)
        assert out.returncode == 2 and "--max-line-bytes" in out.stderr, bad
    assert not (tmp_path / "x.duckdb").exists()


def test_every_line_rejected_exits_2(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", ["{nope", "[1]"])
    out = _cli("ingest", path, "--db", tmp_path / "x.duckdb")
    assert out.returncode == 2 and "no record of bad.jsonl could be loaded" in out.stderr


def test_an_unknown_forced_format_is_refused_before_anything_is_written(tmp_path):
    import pytest

    from ragaudit_core.logs.ingest import IngestError

    path = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d"]}])
    con = store.connect(":memory:")
    with pytest.raises(IngestError, match="unknown log format 'bogus'"):
        ingest_paths(con, [path], IngestOptions(format="bogus"))
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 0


def test_a_csv_is_streamed_and_one_not_in_utf8_is_named_with_its_byte_offset(tmp_path):
    """CSV files are parsed from the file (plain or gzip); a file that is not UTF-8 is unreadable
    as a whole, with the byte offset of the first bad byte, and loses nothing of the others."""
    import gzip

    header = "user_input,retrieved_contexts,response\n"
    rows = "".join(f'"question {i}","[""passage {i} one"", ""passage {i} two""]","answer {i}"\n' for i in range(3000))
    good = tmp_path / "ragas.csv.gz"
    good.write_bytes(gzip.compress((header + rows).encode()))
    bad = tmp_path / "latin1.csv"
    bad.write_bytes((header + '"caf').encode() + b"\xe9" + b'","[""x""]","y"\n')  # 0xe9 at 39 + 4
    con = store.connect(":memory:")
    report = ingest_paths(con, [good, bad])
    assert report.n_records == 3000 and report.n_entries == 6000
    [issue] = report.rejected
    # the byte that is not UTF-8 costs its row only, named with its offset in the row
    assert issue.path == str(bad) and issue.line_no == 2
    assert "row is not valid UTF-8 (byte 0xe9 at byte offset 4)" in issue.message

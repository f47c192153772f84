"""Issue #22 item 5: bounded containers. Past a limit a row is rejected with its reason, or a bomb
file is refused in one sentence — never a traceback, MemoryError or RecursionError — and one bad
file never rolls back the other files of the call. CSV: delimiter sniffed, a byte that is not
UTF-8 costs only its row."""

from __future__ import annotations

import csv
import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl

HEADER = ["user_input", "retrieved_contexts", "response"]


def _good_rows(n, tag="q"):
    return [[f"{tag} question {i}?", json.dumps([f"passage {i}"]), f"answer {i}"] for i in range(n)]


def _csv(path, rows, delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=delimiter)
        w.writerow(HEADER)
        w.writerows(rows)
    return path


def _ingest(paths, **opts):
    con = store.connect(":memory:")
    return con, ingest_paths(con, paths, IngestOptions(**opts))


def _native(n, run="other"):
    return [{"run_id": run, "query_id": str(i), "evidence": [f"d{i}"]} for i in range(n)]


def test_a_10_mb_cell_costs_its_row_and_nothing_of_the_other_file(tmp_path):
    rows = _good_rows(4)
    rows.insert(2, ["big?", json.dumps(["x" * (10 << 20)]), "a"])
    big = _csv(tmp_path / "big.csv", rows)
    other = write_jsonl(tmp_path / "other.jsonl", _native(3))
    _con, rep = _ingest([big, other])
    assert rep.n_records == 7 and [f.status for f in rep.files] == ["loaded", "loaded"]
    [issue] = rep.rejected
    assert issue.line_no == 4 and "CSV row is longer than the 8,388,608-byte limit" in issue.message


def test_a_deep_list_literal_in_a_cell_is_a_reason_not_a_recursion_error(tmp_path):
    rows = _good_rows(2)
    rows.append(["deep?", "[" * 5000 + "]" * 5000, "a"])
    rows.append(["long?", "['" + "y" * 1_100_000 + "']", "a"])  # a Python literal too long to parse
    _con, rep = _ingest([_csv(tmp_path / "deep.csv", rows)])
    assert rep.n_records == 2 and len(rep.rejected) == 2
    assert "nested more than 32 levels deep" in rep.rejected[0].message
    assert "too long to read as a Python literal" in rep.rejected[1].message


def test_the_csv_delimiter_is_sniffed_and_a_latin1_byte_loses_its_row(tmp_path):
    _con, rep = _ingest([_csv(tmp_path / "semi.csv", _good_rows(3), delimiter=";")])
    assert rep.n_records == 3 and rep.n_rejected == 0
    path = _csv(tmp_path / "mixed.csv", _good_rows(3))
    data = path.read_bytes().replace(b"question 1", b"caf\xe9 1")
    path.write_bytes(data)
    _con, rep = _ingest([path])
    assert rep.n_records == 2 and rep.rejected[0].line_no == 3
    assert "row is not valid UTF-8 (byte 0xe9" in rep.rejected[0].message
    bad = tmp_path / "bad-fields.csv"
    bad.write_text("user_input;retrieved_contexts;response\nq;[];a;extra\n", encoding="utf-8")
    _con, rep = _ingest([bad])
    assert rep.rejected[0].message == "row has 4 fields, the header 3 (delimiter ';')"


def test_json_nested_100k_levels_is_rejected_unread(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    doc = tmp_path / "deep.json"
    doc.write_text(
        f'[{{"run_id": "r", "query_id": "1", "evidence": ["d"]}},\n{deep},\n{{"x": {deep}}}]', encoding="utf-8"
    )
    lines = write_jsonl(tmp_path / "deep.jsonl", [_native(1)[0], deep, '{"run_id": "r", "x": ' + deep + "}"])
    _con, rep = _ingest([doc, lines])
    assert rep.n_records == 2 and rep.n_rejected == 4
    assert [i.line_no for i in rep.rejected] == [2, 3, 2, 3]
    assert "nested more than 64 levels deep; raise --max-depth" in rep.rejected[0].message
    assert rep.rejected[2].message.startswith("invalid JSON")  # JSON Lines: the decoder's own depth limit
    _con, rep = _ingest([doc], max_depth=200_000, max_line_bytes=1 << 20)
    assert rep.n_rejected == 2 and "Traceback" not in str(rep.rejected)  # deep values never recurse


def test_a_value_longer_than_the_limit_in_a_document_and_a_parquet_cell(tmp_path):
    recs = _native(3, run="r")
    recs[1]["query"] = "x" * 5000
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(recs, indent=1), encoding="utf-8")
    pq.write_table(
        pa.Table.from_pylist(
            [{**r, "query": r.get("query", "")} for r in _native(3, run="p")]
            + [{"run_id": "p", "query_id": "9", "evidence": ["d"], "query": "y" * 5000}]
        ),
        tmp_path / "t.parquet",
    )
    _con, rep = _ingest([doc, tmp_path / "t.parquet"], max_line_bytes=1000)
    assert rep.n_records == 5 and rep.n_rejected == 2
    assert "JSON value is longer than the 1,000-byte limit" in rep.rejected[0].message
    assert (
        rep.rejected[1].line_no == 4 and "cell 'query' is longer than the 1,000-byte limit" in rep.rejected[1].message
    )


def test_a_decompression_bomb_is_refused_in_one_sentence_and_the_other_file_stays(tmp_path):
    bomb = tmp_path / "blank.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(",".join(HEADER).encode() + b"\n")
        for _ in range(80):
            f.write(b"\n" * (1 << 20))  # 80 MiB of blank lines, ~80 KiB compressed
    other = write_jsonl(tmp_path / "other.jsonl", _native(2))
    con, rep = _ingest([bomb, other])
    [issue] = rep.rejected
    assert issue.path == str(bomb) and issue.line_no is None
    assert "expands more than 100×" in issue.message and "raise --max-expansion" in issue.message
    assert rep.n_records == 2 and con.execute("SELECT count(*) FROM records").fetchone()[0] == 2


def test_a_file_refused_past_a_limit_gives_back_what_it_had_loaded(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", _native(2, run="a"))
    big = write_jsonl(tmp_path / "b.jsonl", _native(50, run="b"))
    last = write_jsonl(tmp_path / "c.jsonl", _native(2, run="c"))
    limit = first.stat().st_size + 100  # b.jsonl passes it after a few of its records were loaded
    con, rep = _ingest([first, big, last], max_file_bytes=limit)
    assert [f.status for f in rep.files] == ["loaded", "unreadable", "loaded"]
    assert rep.rejected[0].message.startswith(f"the file holds more than {limit:,} bytes (decompressed)")
    assert con.execute("SELECT run_id, count(*) FROM records GROUP BY run_id ORDER BY run_id").fetchall() == [
        ("a", 2),
        ("c", 2),
    ]
    assert con.execute("SELECT count(*) FROM evidence WHERE run_id = 'b'").fetchone()[0] == 0
    assert rep.n_records == 4 and rep.runs == ["a", "c"]
    assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 1
    # refused, not marked loaded: the same file loads with a larger limit
    _, rep = _ingest([big])
    assert rep.n_records == 50


def test_blank_lines_are_read_in_runs_with_their_line_numbers_and_a_blank_bomb_is_refused(tmp_path):
    runs = tmp_path / "blanks.jsonl"
    runs.write_bytes(b"\n\n\r\n" + json.dumps(_native(1)[0]).encode() + b"\n" + b"\n" * 100_000 + b"{bad\n")
    bomb = tmp_path / "blank.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(json.dumps(_native(2)[1]).encode() + b"\n")
        for _ in range(80):
            f.write(b"\n" * (1 << 20))
    con, rep = _ingest([runs, bomb])
    assert rep.n_records == 1 and [i.line_no for i in rep.rejected] == [100_005, None]
    assert "expands more than 100×" in rep.rejected[1].message  # what the bomb had loaded is given back
    assert con.execute("SELECT query_id FROM records").fetchall() == [("0",)]


def test_parquet_cells_past_the_limit_are_rejected_without_being_decoded(tmp_path):
    # 50 rows sharing one 20 MB passage (dictionary-encoded: a ~1 MB file that decodes to 1 GB)
    cell = pa.DictionaryArray.from_arrays(pa.array([0] * 50, pa.int32()), pa.array(["z" * (20 << 20)]))
    questions = pa.array([f"q{i}?" for i in range(50)])
    pq.write_table(pa.table({"user_input": questions, "retrieved_contexts": cell}), tmp_path / "bomb.parquet")
    # 40 rows of 4 MB distinct passages, plain-encoded in one 160 MB row group
    plain = pa.array([chr(97 + i % 26) * (4 << 20) for i in range(40)])
    pq.write_table(
        pa.table({"user_input": questions[:40], "retrieved_contexts": plain}),
        tmp_path / "plain.parquet",
        use_dictionary=False,
        row_group_size=40,
    )
    del plain
    other = write_jsonl(tmp_path / "other.jsonl", _native(1))
    _con, rep = _ingest([tmp_path / "bomb.parquet", tmp_path / "plain.parquet", other], max_line_bytes=1 << 20)
    assert rep.n_records == 1 and rep.n_rejected == 90
    assert rep.rejected[0].message.startswith("cell 'retrieved_contexts' is longer than the 1,048,576-byte limit")
    assert "row group 0 holds" in rep.rejected[50].message and "its rows are not read" in rep.rejected[50].message


def test_a_truncated_gzip_document_or_csv_keeps_the_records_before_the_damage(tmp_path):
    rows = [{"run_id": "r", "query_id": str(i), "evidence": [f"d{i}" * 50]} for i in range(3000)]
    whole = gzip.compress(json.dumps(rows, indent=1).encode())
    (tmp_path / "doc.json.gz").write_bytes(whole[: len(whole) // 2])
    csv_text = "\n".join(["user_input,retrieved_contexts"] + [f'q{i}?,"[""p{i}""]"' for i in range(20000)])
    whole = gzip.compress(csv_text.encode())
    (tmp_path / "rows.csv.gz").write_bytes(whole[: len(whole) // 2])
    _con, rep = _ingest([tmp_path / "doc.json.gz", tmp_path / "rows.csv.gz"])
    assert [f.status for f in rep.files] == ["loaded", "loaded"]
    doc, rows_csv = rep.files
    assert 0 < doc.n_loaded < 3000 and 0 < rows_csv.n_loaded < 20000
    assert all("gzip stream is corrupt or truncated" in i.message for i in rep.rejected[-2:])

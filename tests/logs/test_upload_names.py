"""Upload names in any script keep their extension; long names are shortened, never refused."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragaudit_core import workspace
from ragaudit_core.logs import store
from ragaudit_core.logs.uploads import MAX_NAME_BYTES, upload_name

ROWS = [
    {"user_input": f"question {i}?", "retrieved_contexts": [f"passage {i} a", f"passage {i} b"], "response": "yes"}
    for i in range(3)
]


def _csv(sep: str = ",") -> bytes:
    lines = [sep.join(["user_input", "retrieved_contexts", "response"])]
    lines += [sep.join([r["user_input"], f'"{r["retrieved_contexts"]!r}"', r["response"]]) for r in ROWS]
    return ("\n".join(lines) + "\n").encode()


def _parquet() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(ROWS), buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("报告.csv", "报告.csv"),
        ("отчёт.parquet", "отчёт.parquet"),
        ("C:\\Users\\a\\run.JSONL.GZ", "run.jsonl.gz"),
        ("../../etc/passwd", "passwd"),
        ("evil\u202egpj.csv", "evil_gpj.csv"),  # a right-to-left override cannot disguise the extension
        ("", "upload"),
        ("रिपोर्ट.csv", "रिपोर्ट.csv"),  # vowel signs are combining marks: kept
        ("re\u0301sume\u0301.csv", "r\u00e9sum\u00e9.csv"),  # a decomposed name (macOS) is composed
        ("run.csv ", "run.csv"),  # white space around the name does not hide its extension
    ],
)
def test_upload_name_keeps_letters_of_any_script_and_the_extension(name, kept):
    assert upload_name(name) == kept


def test_a_long_name_is_shortened_with_a_hash_and_keeps_its_extension():
    a, b = upload_name("报告" * 200 + "-a.csv"), upload_name("报告" * 200 + "-b.csv")
    assert a.endswith(".csv") and b.endswith(".csv") and a != b
    assert len(a.encode()) <= MAX_NAME_BYTES


@pytest.mark.parametrize(("name", "body"), [("报告.csv", _csv), ("报告.parquet", _parquet), ("x" * 300 + ".csv", _csv)])
def test_non_ascii_and_long_upload_names_load_every_row(tmp_path, name, body):
    con = store.connect(tmp_path / "db.duckdb")
    report = workspace.load_uploads(con, [(name, body())], tmp_path / "uploads")
    assert report.n_rejected == 0
    assert con.execute("SELECT count(*) FROM records").fetchone() == (3,)
    assert con.execute("SELECT count(*) FROM evidence").fetchone() == (6,)
    con.close()


@pytest.mark.parametrize("name", ["results.txt", "results", "results.json", "results.jsonl"])
def test_a_csv_table_named_otherwise_is_read_as_csv_with_a_warning(tmp_path, name):
    """Item 6: the content decides when the extension is missing or wrong (each line was
    rejected as invalid JSON before)."""
    con = store.connect(":memory:")
    f = tmp_path / name
    f.write_bytes(_csv("\t") if name == "results.txt" else _csv())
    report = workspace.load_paths(con, [f])
    assert report.n_rejected == 0
    assert con.execute("SELECT count(*) FROM evidence").fetchone() == (6,)
    sep = "tab" if name == "results.txt" else "comma"
    assert [w.message for w in report.warnings if "CSV table" in w.message] == [
        f"holds a CSV table ({sep}-separated, with a header row) though not named .csv: read as CSV"
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"Dear auditor, here are the logs, as promised.\nThey follow, one per line, below.\n",  # prose
        b"q1 Q0 doc1 1 0.9 bm25\nq1 Q0 doc2 2 0.8 bm25\n",  # a TREC run
        b'run_id,query_id\n{"run_id": "r", "query_id": "q", "evidence": []}\n',  # JSON Lines, a broken first line
    ],
)
def test_text_that_is_not_a_table_is_not_read_as_csv(tmp_path, body):
    con = store.connect(":memory:")
    f = tmp_path / "log.txt"
    f.write_bytes(body)
    report = workspace.load_paths(con, [f])
    assert not [w for w in report.warnings if "CSV table" in w.message]


@pytest.mark.parametrize("name", ["spans.parquet.gz", "spans.gz"])
def test_a_gzipped_parquet_file_loads_its_rows_and_leaves_no_temporary_file(tmp_path, monkeypatch, name):
    import gzip
    import tempfile

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    con = store.connect(":memory:")
    f = tmp_path / name
    f.write_bytes(gzip.compress(_parquet()))
    report = workspace.load_paths(con, [f])
    assert report.n_rejected == 0 and not report.failed_files
    assert con.execute("SELECT count(*) FROM evidence").fetchone() == (6,)
    assert list((tmp_path / "tmp").iterdir()) == []  # the expanded copy is removed


def test_a_gzipped_parquet_file_past_the_limit_is_refused_in_one_sentence(tmp_path):
    import gzip

    from ragaudit_core.logs.options import IngestOptions

    con = store.connect(":memory:")
    f = tmp_path / "spans.parquet.gz"
    f.write_bytes(gzip.compress(_parquet()))
    report = workspace.load_paths(con, [f], IngestOptions(max_file_bytes=500))
    assert con.execute("SELECT count(*) FROM evidence").fetchone() == (0,)
    assert len(report.rejected) == 1 and str(report.rejected[0]).startswith(f"{f}: ")
    assert "more than 500 bytes (decompressed)" in str(report.rejected[0])


def test_an_upload_given_again_is_named_as_uploaded_and_not_kept_as_a_warning(tmp_path):
    """The same bytes uploaded again under another name: the warning names the first upload as it was
    uploaded ('same content as ragas.csv'), not the folder it is kept in, and the skip is said to this
    call only — the stored warnings (what the home page lists for the database) gain no row."""
    con = store.connect(tmp_path / "w.duckdb")
    dest = tmp_path / "w.duckdb.uploads"
    workspace.load_uploads(con, [("ragas.csv", _csv())], dest)
    stored = con.execute("SELECT count(*) FROM ingest_warnings").fetchone()[0]
    again = workspace.load_uploads(con, [("ragas copy.csv", _csv())], dest)
    [w] = [w for w in again.warnings if w.code == "already-loaded"]
    assert w.path == "ragas copy.csv"
    assert w.message.startswith("same content as ragas.csv (SHA-256 "), w.message
    assert str(dest) not in w.message
    assert con.execute("SELECT count(*) FROM ingest_warnings").fetchone()[0] == stored

"""Upload names in any script keep their extension; long names are shortened, never refused."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragaudit_core import workspace
from ragaudit_core.logs import store
from ragaudit_core.logs.catalog import MAX_NAME_BYTES, upload_name

ROWS = [
    {"user_input": f"question {i}?", "retrieved_contexts": [f"passage {i} a", f"passage {i} b"], "response": "yes"}
    for i in range(3)
]


def _csv() -> bytes:
    lines = ["user_input,retrieved_contexts,response"]
    lines += [f'{r["user_input"]},"{r["retrieved_contexts"]!r}",{r["response"]}' for r in ROWS]
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

"""A full disk: exit 2 with one sentence, the database as it was (a real 2 MiB tmpfs)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from ragaudit_core.logs import store
from tests.helpers import write_jsonl


@pytest.fixture
def tiny_disk(tmp_path):
    mnt = Path("/tmp") / f"ragaudit-tiny-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if out.returncode != 0:
        mnt.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here ({out.stderr.strip()}); needs root")
    yield mnt
    subprocess.run(["umount", str(mnt)], check=False)
    mnt.rmdir()


def test_a_full_disk_exits_2_with_one_sentence_and_the_database_intact(tiny_disk, tmp_path):
    db = tiny_disk / "audit.duckdb"
    small = write_jsonl(tmp_path / "small.jsonl", [{"run_id": "r", "query_id": "q1", "evidence": ["d1"]}])
    text = "x" * 4000
    big = write_jsonl(
        tmp_path / "big.jsonl",
        [
            {"run_id": "r", "query_id": f"b{i}", "evidence": [{"doc_id": f"d{i}", "text": f"{i} {text}"}]}
            for i in range(2000)
        ],
    )
    run = [sys.executable, "-m", "ragaudit_core.cli", "ingest", "--db", str(db), "--no-precompute"]
    assert subprocess.run([*run, str(small)], capture_output=True).returncode == 0
    out = subprocess.run([*run, str(big)], capture_output=True, text=True)
    assert out.returncode == 2, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: no space left on the disk holding {db}")
    assert "Traceback" not in out.stderr
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT run_id, query_id FROM records").fetchall() == [("r", "q1")]
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1
    con.close()

"""The commands that only read a database (stability, quality, fidelity, probe, gate, report) never
create one at a mistyped path and open an existing one read-only: a database shipped as a read-only
CI artifact, or read by another program at the same time, is gateable. Run in-process (typer's
runner), the database held read-only by a second process where it matters."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ragaudit_core.cli import app
from ragaudit_core.cli import common as cli_common
from ragaudit_core.logs import store
from ragaudit_core.workspace import load_paths
from tests.helpers import ev, pipeline, unprivileged, write_jsonl

READERS = ["stability", "quality", "fidelity", "probe", "gate", "report"]


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _audit_db(tmp_path: Path) -> Path:
    """Two answered evidence runs with relevance labels, and two provenance runs."""
    logs = tmp_path / "logs"
    recs = [
        {"run_id": run, "query_id": q, "answer": f"{run} says {q}", "evidence": [ev(d, d + "s") for d in docs]}
        for run, docs in (("A", ["d1", "d2"]), ("B", ["d1", "d3"]))
        for q in ("q1", "q2", "q3")
    ]
    write_jsonl(logs / "ev.jsonl", recs)
    write_jsonl(logs / "prov.jsonl", [pipeline("base", "q1"), pipeline("cand", "q1", text="[Source: D9, p. 1]")])
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
    db = tmp_path / "audit.duckdb"
    con = store.connect(db)
    load_paths(con, [logs], qrels=[qrels])
    con.close()
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Holder:
    """A second process holding ``db`` open read-only (as another reader of a shared artifact does):
    a command that opened the file for writing would be refused its lock."""

    def __init__(self, db: Path) -> None:
        code = (
            "import duckdb, sys\nc = duckdb.connect(sys.argv[1], read_only=True)\n"
            "print('ready', flush=True)\nsys.stdin.read()\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class _FakeEncoder:
    def encode(self, texts, **_kw):
        return np.ones((len(texts), 4)) / 2.0


@pytest.mark.parametrize("command", READERS)
def test_a_reading_command_never_creates_a_missing_database(tmp_path, command):
    db = tmp_path / "nope.duckdb"
    extra = ["--baseline", "A", "--candidate", "B"] if command == "gate" else []
    r = _invoke(command, "--db", db, *extra)
    assert r.exit_code == 2
    assert r.stderr == f"error: {db}: no such database file (ingest logs first: ragaudit ingest PATH... --db {db})\n"
    assert list(tmp_path.iterdir()) == []  # neither the file nor a .wal


def test_reading_commands_open_the_database_read_only(tmp_path, monkeypatch):
    """Each reading command says the same with the file held read-only by another process as with the
    file free; nothing in the file changes and nothing is written beside it."""
    monkeypatch.setenv("RAGAUDIT_DB_WAIT", "0")  # a command that wanted the write lock would be refused at once
    db = _audit_db(tmp_path)
    runs = [
        ["stability", "--db", db, "--resamples", "0"],
        ["quality", "--db", db, "--resamples", "0"],
        ["fidelity", "--db", db],
        ["gate", "--db", db, "--baseline", "A", "--candidate", "B"],
    ]
    before, beside = _digest(db), sorted(p.name for p in tmp_path.iterdir())
    holder = _Holder(db)  # before any command of this process opens the file
    try:
        held = [_invoke(*a) for a in runs]
    finally:
        holder.release()
    assert [r.exit_code for r in held] == [0, 0, 0, 3], [r.stderr for r in held]  # the gate: too few queries
    assert all("error" not in r.stderr for r in held)
    assert _digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == beside
    free = [_invoke(*a) for a in runs]
    assert [(r.exit_code, r.stdout) for r in free] == [(r.exit_code, r.stdout) for r in held]


def test_the_probe_keeps_similarities_when_it_may_write_and_computes_them_when_it_may_not(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGAUDIT_DB_WAIT", "0")
    monkeypatch.setattr(cli_common.LazyModels, "embedder", lambda self: _FakeEncoder())
    db = _audit_db(tmp_path)

    def stored() -> int:
        con = store.connect(db, read_only=True)
        try:
            return con.execute("SELECT count(*) FROM derived_answer_similarity").fetchall()[0][0]
        finally:
            con.close()

    holder = _Holder(db)
    try:
        held = _invoke("probe", "--db", db, "--json", "-")
    finally:
        holder.release()
    assert held.exit_code == 0, held.stderr
    assert '"n_queries": 3' in held.stdout and '"mean_sim": 1.0' in held.stdout
    assert stored() == 0  # read-only while another process read it: computed, not kept
    free = _invoke("probe", "--db", db, "--json", "-")
    assert free.exit_code == 0 and free.stdout == held.stdout
    assert stored() == 3  # the file free and writable: kept for the next probe and the report


def _cli(prefix: list[str], *args: object) -> subprocess.CompletedProcess:
    cmd = [*prefix, sys.executable, "-m", "ragaudit_core.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_a_read_only_database_file_is_gateable(tmp_path):
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("file permissions cannot be made to apply here")
    db = _audit_db(tmp_path)
    db.chmod(0o444)
    before = _digest(db)
    gate = _cli(prefix, "gate", "--db", db, "--baseline", "A", "--candidate", "B")
    assert gate.returncode == 3 and "INCONCLUSIVE" in gate.stdout, gate.stderr
    stab = _cli(prefix, "stability", "--db", db, "--resamples", "0")
    assert stab.returncode == 0 and "queries evaluated: 3" in stab.stdout, stab.stderr
    ingest = _cli(prefix, "ingest", "--db", db, tmp_path / "logs")
    assert ingest.returncode == 2
    assert ingest.stderr.startswith(f"error: cannot open database {db} for writing: permission denied")
    labels = _cli(prefix, "quality", "--db", db, "--qrels", tmp_path / "qrels.tsv")
    assert labels.returncode == 2
    assert labels.stderr == (
        f"error: cannot load the --qrels labels into {db}: permission denied (this user may not write it); load "
        "them into a copy this user may write, or give the logs as PATHs without --db\n"
    )
    assert _digest(db) == before
    db.chmod(0o000)  # typer names a --db it may not read; the store says it in one sentence too (the dashboard)
    unreadable = _cli(prefix, "gate", "--db", db, "--baseline", "A", "--candidate", "B")
    assert unreadable.returncode == 2 and "is not readable" in unreadable.stderr
    code = (
        "import sys\nfrom ragaudit_core.logs import store\ntry:\n    store.connect(sys.argv[1])\n"
        "except store.StoreError as e:\n    print(e)\n"
    )
    opened = subprocess.run([*prefix, sys.executable, "-c", code, str(db)], capture_output=True, text=True, timeout=120)
    assert opened.stdout == f"cannot read database {db}: Permission denied\n", opened.stderr


def test_a_writable_database_in_a_folder_this_user_may_not_write(tmp_path):
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("file permissions cannot be made to apply here")
    db = _audit_db(tmp_path)
    before = _digest(db)
    tmp_path.chmod(0o555)  # the file stays writable; DuckDB's write-ahead log could not be made beside it
    try:
        ingest = _cli(prefix, "ingest", "--db", db, tmp_path / "logs")
        stab = _cli(prefix, "stability", "--db", db, "--resamples", "0")
    finally:
        tmp_path.chmod(0o755)
    assert ingest.returncode == 2, ingest.stderr  # it was a traceback at the commit
    assert ingest.stderr == (
        f"error: cannot open database {db} for writing: its folder {tmp_path} may not be written by this user "
        "(DuckDB keeps its write-ahead log beside the file); the commands that only read it (stability, quality, "
        "fidelity, gate, report) open it read-only, ingest needs a copy in a folder this user may write\n"
    )
    assert stab.returncode == 0 and "queries evaluated: 3" in stab.stdout, stab.stderr
    assert _digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == ["audit.duckdb", "logs", "qrels.tsv"]


def test_ranking_quality_without_resamples_prints_no_empty_interval(tmp_path):
    db = _audit_db(tmp_path)
    bare = _invoke("stability", "--db", db, "--resamples", "0")
    assert bare.exit_code == 0, bare.output
    assert "mean over labelled queries; no intervals without resamples):" in bare.output
    assert "nan" not in bare.output  # it printed "nDCG@10 0.613 [nan, nan]"
    # A retrieves d1, d2: q1's d1 first (1), q2's d2 second (1/log2 3 = 0.631), q3's d3 not at all (0)
    assert "  A: nDCG@10 0.544  recall@10 0.667  (3 labelled, 0 without labels left out)" in bare.output
    bounded = _invoke("stability", "--db", db, "--resamples", "200")
    assert "mean over labelled queries [95 % interval]):" in bounded.output
    assert "  A: nDCG@10 0.544 [" in bounded.output
    quality = _invoke("quality", "--db", db, "--resamples", "0")
    assert quality.exit_code == 0, quality.output
    assert "nan" not in quality.output and "[interval]" not in quality.output
    assert "mean over labelled queries (no resamples: no intervals)" in quality.output
    # reciprocal ranks 1, 1/2, 0 and average precisions 1, 1/2, 0: both 0.5
    assert "mrr 0.500  map 0.500" in quality.output
    # B swaps which of q2, q3 it finds second: per-query changes 0, -0.631, +0.631, mean 0, t 0, p 1
    assert "A → B: +0.000  p 1 (Holm 1), n 3" in quality.output


@pytest.mark.parametrize("command", ["stability", "quality", "gate"])
def test_a_run_given_as_a_path_is_named_as_one(tmp_path, command):
    """``--runs A B`` (space-separated) leaves ``B`` as a PATH to load: 'B: no such file or folder'
    did not say that B is a stored run and --runs takes them comma-separated. The database is left
    as it was."""
    db = _audit_db(tmp_path)
    before = _digest(db)
    extra = ["--baseline", "A", "--candidate", "B"] if command == "gate" else ["--runs", "A"]
    r = _invoke(command, "--db", db, *extra, "B")
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.split())
    assert f"B: no such file or folder, but {db} holds a run of that name" in said, said
    assert "(--runs a,b)" in said
    assert _digest(db) == before
    # a PATH that is neither a file nor a stored run keeps the plain refusal
    r = _invoke(command, "--db", db, *extra, tmp_path / "nothing.jsonl")
    assert r.exit_code == 2 and "holds a run" not in r.output

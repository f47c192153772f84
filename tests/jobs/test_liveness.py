"""Issue #24, item 1: a worker's liveness is its heartbeat, not its PID. A worker killed with
kill -9 mid-job and left a zombie (its parent never reaps it) is seen as dead by the next opener,
which queues its job again and starts a worker that finishes it; a PID file naming an unrelated
live process (a reused PID) does not stop a worker from starting. Judge jobs against a local
endpoint: no model is loaded."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.jobs import heartbeat, queue
from ragaudit_core.jobs.worker import _pid_file, ensure_worker
from ragaudit_core.logs import store
from tests.fidelity.test_endpoint import _queue_judge, _Slow
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import ROOT


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_for(db: str, jid: str, states: tuple[str, ...], within_s: float) -> queue.Job:
    deadline = time.monotonic() + within_s
    while True:
        with store.connect(db, wait_s=10) as con:
            (j,) = queue.jobs(con, job_ids=[jid])
        if j.status in states or time.monotonic() > deadline:
            return j
        time.sleep(0.2)


def _stop_workers(db: str) -> None:
    for b in heartbeat.live_workers(db):
        os.kill(int(b["pid"]), signal.SIGTERM)


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv(endpoint.ENV_KEY, raising=False)
    return monkeypatch


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="zombies are read from /proc")
def test_a_worker_killed_mid_job_and_left_a_zombie_is_replaced_and_the_job_finishes(tmp_path, env):
    slow = _Slow(hold_s=40.0)
    env.setenv(endpoint.ENV_ENDPOINTS, slow.url)
    db, jid = _queue_judge(tmp_path, slow.url)
    first = subprocess.Popen(
        [sys.executable, "-m", "ragaudit_core.jobs.worker", "--db", db, "--idle", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert slow.got.wait(60), "the first worker never called the endpoint"
        assert _wait_for(db, jid, ("running",), 10).status == "running"
        assert [b["pid"] for b in heartbeat.live_workers(db)] == [first.pid]
        os.kill(first.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while _state(first.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _state(first.pid) == "Z"  # a zombie: its PID still answers kill(pid, 0)
        os.kill(first.pid, 0)
        slow.release.set()  # from now on the endpoint answers at once
        pid = ensure_worker(db, idle_s=2)  # any opener: sees the zombie's job, queues it, starts a worker
        assert pid != first.pid
        assert _state(first.pid) == "Z"  # not reaped by the opener: not its child
        j = _wait_for(db, jid, ("done", "failed"), 60)
        assert j.status == "done", j.error
    finally:
        slow.close()
        _stop_workers(db)
        first.kill()
        first.wait()


def test_a_pid_file_naming_an_unrelated_live_process_does_not_pass_for_a_worker(tmp_path, env):
    """The PID file and a fresh-looking heartbeat both name a live sleeping process with another
    start time (a reused PID): a worker starts all the same, and a second call finds it."""
    server = _Server(lambda body: json.dumps(GOOD))
    env.setenv(endpoint.ENV_ENDPOINTS, server.url)
    db, jid = _queue_judge(tmp_path, server.url)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        now = time.time()
        _pid_file(db).write_text(json.dumps({"pid": sleeper.pid, "token": "t0", "time": now, "proc_start": "1"}))
        heartbeat.folder(db).mkdir()
        fake = {"time": now, "host": heartbeat.HOST, "pid": sleeper.pid, "token": "t0", "proc_start": "1"}
        (heartbeat.folder(db) / "t0.json").write_text(json.dumps(fake))
        assert heartbeat.live_workers(db) == []
        pid = ensure_worker(db, idle_s=2)
        assert pid != sleeper.pid
        assert ensure_worker(db, idle_s=2) == pid  # starting (or live): not started twice
        j = _wait_for(db, jid, ("done", "failed"), 60)
        assert j.status == "done", j.error
        # a bare PID (the file before heartbeats) is not trusted either
        _pid_file(db).write_text(str(sleeper.pid))
        assert sleeper.poll() is None
    finally:
        server.close()
        _stop_workers(db)
        sleeper.kill()
        sleeper.wait()


def test_a_running_job_of_a_worker_without_a_live_heartbeat_is_queued_again(tmp_path, monkeypatch):
    """By hand: a job claimed under a token whose heartbeat is 16 s old (stale after 15 s) goes
    back to the queue; one claimed under a fresh heartbeat of this process stays running; one
    whose cancel was asked for is cancelled instead."""
    monkeypatch.delenv(endpoint.ENV_ENDPOINTS, raising=False)
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    beat = heartbeat.Heartbeat(db, "fresh").start()
    try:
        with store.connect(db) as con:
            assert queue.claim(con, "fresh")[0] == jid
            assert queue.requeue_stale(con) == 0
            stale = {"time": time.time() - 16, "host": heartbeat.HOST, "pid": os.getpid(), "token": "old"}
            stale["proc_start"] = heartbeat.proc_start(os.getpid())
            (heartbeat.folder(db) / "old.json").write_text(json.dumps(stale))
            with sqlite3.connect(queue.queue_file(db)) as q:
                q.execute("UPDATE jobs SET worker_token = 'old'")
            assert queue.requeue_stale(con) == 1
            assert queue.jobs(con)[0].status == "queued"
            assert not (heartbeat.folder(db) / "old.json").exists()  # a dead worker's heartbeat is removed
            queue.claim(con, "old")
            queue.cancel(con, [jid])
            assert queue.requeue_stale(con) == 1
            assert queue.jobs(con)[0].status == "cancelled"
            assert queue.retry(con) == [jid] and queue.jobs(con)[0].status == "queued"
    finally:
        beat.stop()
    assert not beat.path.exists()


def test_the_queue_never_waits_on_the_database_and_a_worker_opens_it_once_per_job(tmp_path, monkeypatch):
    """Item 4: while another process holds the DuckDB file, the queue is read, cancelled and
    written at once (it is a SQLite file beside it); a worker running an endpoint judge job over
    two citations (progress after each) opens the DuckDB file exactly once: to store the verdicts."""
    from ragaudit_core.jobs import worker as worker_mod
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import pipeline, write_jsonl

    server = _Server(lambda body: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    db = tmp_path / "two.duckdb"
    with store.connect(db) as con:
        rec = pipeline("base", "q1", text="[Source: D1, p. 2] and [Source: D9, p. 1]")
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [rec])])
        from ragaudit_core.jobs import plan_judge

        spec, inputs = plan_judge(con, "base", "q1", model="m", endpoint=server.url, seeds=(0,))
        assert len(inputs.citations) == 2
        jid = queue.enqueue(con, spec, inputs)
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import duckdb, time; c = duckdb.connect({str(db)!r}); print('held', flush=True); "
         "time.sleep(4)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        assert [j.status for j in queue.jobs(str(db))] == ["queued"]
        queue.progress(str(db), jid, "x", 0.0)
        assert queue.requeue_stale(str(db)) == 0 and queue.estimate_seconds(str(db), spec) is None
        assert time.monotonic() - t0 < 1.0
    finally:
        holder.wait()
    opened = []
    real = worker_mod.logstore.connect
    monkeypatch.setattr(worker_mod.logstore, "connect", lambda *a, **k: opened.append(a[0]) or real(*a, **k))
    try:
        assert worker_mod.work(str(db), idle_s=0, max_jobs=1) == 1
    finally:
        server.close()
    assert opened == [str(db)] and len(server.requests) == 2
    (j,) = queue.jobs(str(db))
    assert j.status == "done" and j.fraction == 1.0


def test_a_job_whose_run_was_cleared_while_queued_stores_nothing(tmp_path, monkeypatch):
    """The queue lives beside the database, so clearing the data leaves the job queued; the
    worker runs it, finds its run gone when it comes to store, and cancels it with a sentence."""
    server = _Server(lambda body: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    db, _jid = _queue_judge(tmp_path, server.url)
    with store.connect(db) as con:
        store.clear_data(con)
    try:
        from ragaudit_core.jobs.worker import work

        assert work(db, idle_s=0, max_jobs=1) == 1
    finally:
        server.close()
    (j,) = queue.jobs(db)
    assert j.status == "cancelled"
    assert j.error == "run 'base', query 'q1' was removed from the database while the job ran; nothing was stored"
    with store.connect(db) as con:  # never created: nothing was stored
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "judge_verdicts" not in tables

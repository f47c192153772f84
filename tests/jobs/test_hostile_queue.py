"""A queue file (or a database's old ``jobs`` table) written by someone else is data, not orders:
a job id that is not the hash of its spec never becomes a path (the partial's file), a row whose
spec does not parse is failed with a sentence instead of crashing every worker and listing, a
heartbeat dated in the future does not keep a dead worker live, and a job whose worker dies
again and again (kill -9, out of memory) ends failed instead of being queued again forever. Judge
jobs against an endpoint that refuses: no model is loaded."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.jobs import heartbeat, partial, queue
from ragaudit_core.jobs.worker import work
from tests.fidelity.test_endpoint import _queue_judge

DOWN = "http://127.0.0.1:9/v1"  # nothing listens: the job fails fast, with no model


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, DOWN)
    monkeypatch.setenv(endpoint.ENV_TIMEOUT, "1")
    monkeypatch.delenv(endpoint.ENV_KEY, raising=False)


def _sql(db: str, sql: str, args: list | None = None) -> list:
    with sqlite3.connect(queue.queue_file(db)) as q:
        return q.execute(sql, args or []).fetchall()


def test_a_job_id_that_is_a_path_never_reaches_the_file_system(tmp_path):
    db, _jid = _queue_judge(tmp_path, DOWN)
    victim = tmp_path / "outside" / "victim.json"
    victim.parent.mkdir()
    victim.write_text("precious")
    _sql(db, "UPDATE jobs SET job_id = ?", [str(victim.with_suffix(""))])
    assert partial.partial_file(db, str(victim.with_suffix(""))) is None
    assert partial.partial_file(db, "../x") is None
    work(db, idle_s=0, max_jobs=1)
    assert victim.read_text() == "precious"
    ((status, error),) = _sql(db, "SELECT status, error FROM jobs")
    assert status == "failed"
    assert "does not match its description" in error


def test_a_row_whose_spec_does_not_parse_is_failed_and_the_next_job_still_runs(tmp_path):
    db, jid = _queue_judge(tmp_path, DOWN)
    _sql(
        db,
        "INSERT INTO jobs (job_id, kind, run_id, query_id, spec, inputs, status, queued_at) "
        "VALUES ('bad', 'judge', 'base', 'q1', '{\"nope\": 1}', '{}', 'queued', 0)",
    )
    assert work(db, idle_s=0, max_jobs=2) == 1  # the bad row is refused, the good one runs (and fails: no server)
    rows = dict(_sql(db, "SELECT job_id, status FROM jobs"))
    assert rows == {"bad": "failed", jid: "failed"}
    (err,) = _sql(db, "SELECT error FROM jobs WHERE job_id = 'bad'")[0]
    assert "cannot be read" in err
    assert [j.job_id for j in queue.jobs(db)] == [jid]  # listing does not crash on it


def test_a_heartbeat_dated_in_the_future_is_not_live(tmp_path):
    db, _jid = _queue_judge(tmp_path, DOWN)
    heartbeat.folder(db).mkdir()
    for name, host in (("ghost", "elsewhere"), ("local", heartbeat.HOST)):
        beat = {"time": time.time() + 10 * 365 * 86400, "host": host, "pid": os.getpid(), "token": name}
        (heartbeat.folder(db) / f"{name}.json").write_text(json.dumps(beat))
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    junk = {"time": "soon", "host": heartbeat.HOST, "pid": "x", "token": str(victim.with_suffix(""))}
    (heartbeat.folder(db) / "junk.json").write_text(json.dumps(junk))
    assert heartbeat.live_workers(db) == []
    assert victim.read_text() == "precious"  # the dead heartbeat removed is the file read, not one it names
    assert not (heartbeat.folder(db) / "junk.json").exists()
    _sql(db, "UPDATE jobs SET status = 'running', worker_token = 'ghost', started_at = ?", [time.time() + 86400])
    (job,) = queue.jobs(db)
    assert job.elapsed_s == 0  # not minus a day
    assert queue.requeue_stale(db) == 1


def test_a_job_whose_worker_keeps_dying_ends_failed_with_a_sentence(tmp_path):
    db, jid = _queue_judge(tmp_path, DOWN)
    for death in range(1, queue.MAX_WORKER_DEATHS + 1):
        assert queue.claim(db, "dead-token")[0] == jid  # claimed by a worker that then dies (no heartbeat)
        assert queue.requeue_stale(db) == (0 if death == queue.MAX_WORKER_DEATHS else 1)  # queued again, then not
    (job,) = queue.jobs(db)
    assert job.status == "failed"
    assert f"stopped {queue.MAX_WORKER_DEATHS} times" in job.error
    assert f".{Path(db).name}.worker.log beside the database" in job.error  # the log's own name, not a placeholder
    assert queue.retry(db, [jid]) == [jid]  # retryable, with a fresh count
    assert queue.claim(db, "dead-token")[0] == jid
    assert queue.requeue_stale(db) == 1
    assert queue.jobs(db)[0].status == "queued"

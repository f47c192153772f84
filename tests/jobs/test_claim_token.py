"""A job's progress is written only by the worker holding its current claim: a worker taken for dead
(its job queued again, then claimed by another) cannot overwrite the progress of the new claim, nor
close the job, and stops at its next progress update, storing nothing. Real files: the DuckDB
database, the queue beside it, heartbeats; judge jobs against a local endpoint (no model)."""

from __future__ import annotations

import json

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judging import has_verdicts
from ragaudit_core.jobs import heartbeat, partial, queue
from ragaudit_core.jobs.run import result_keys
from ragaudit_core.jobs.worker import run_one
from ragaudit_core.logs import store
from tests.fidelity.test_endpoint import _queue_judge
from tests.fidelity.test_judge import GOOD, _Server

STALE = "0123456789abcdef"  # a start token with no heartbeat: its worker is dead to every opener


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv(endpoint.ENV_KEY, raising=False)
    monkeypatch.delenv(endpoint.ENV_TIMEOUT, raising=False)


def _row(db: str, jid: str) -> tuple:
    (j,) = queue.jobs(db, job_ids=[jid])
    return j.status, j.label, j.fraction


def _stale_claim_then_new_claim(db: str) -> tuple[tuple, heartbeat.Heartbeat]:
    """The job claimed under STALE, queued again (no heartbeat), claimed by a live worker: (its
    claim, that worker's heartbeat)."""
    assert queue.claim(db, STALE) is not None
    assert queue.progress(db, _only(db), "the first claim, at work", 0.3, token=STALE)
    assert queue.requeue_stale(db) == 1
    beat = heartbeat.Heartbeat(db).start()
    got = queue.claim(db, beat.token)
    assert got is not None
    return got, beat


def _only(db: str) -> str:
    (j,) = queue.jobs(db)
    return j.job_id


def test_a_stale_claim_cannot_write_progress_or_close_the_job(tmp_path):
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, STALE) is not None
    assert queue.progress(db, jid, "judge: citation 1 of 2", 0.5, token=STALE)
    assert _row(db, jid) == ("running", "judge: citation 1 of 2", 0.5)
    assert queue.requeue_stale(db) == 1
    queued = _row(db, jid)
    assert queued[0] == "queued"
    # queued again, not yet claimed: the old claim's progress and its end change nothing
    assert not queue.progress(db, jid, "the stale worker", 0.9, token=STALE)
    queue.finish(db, jid, "done", token=STALE)
    assert _row(db, jid) == queued
    beat = heartbeat.Heartbeat(db).start()
    try:
        assert queue.claim(db, beat.token) is not None
        assert queue.progress(db, jid, "judge: citation 1 of 2", 0.5, token=beat.token)
        assert not queue.progress(db, jid, "the stale worker", 0.9, token=STALE)
        queue.finish(db, jid, "failed", "from the stale worker", token=STALE)
        assert _row(db, jid) == ("running", "judge: citation 1 of 2", 0.5)
        queue.finish(db, jid, "done", token=beat.token)
        assert _row(db, jid)[0] == "done"
    finally:
        beat.stop()


def test_a_worker_whose_claim_was_taken_over_stops_and_stores_nothing(tmp_path, monkeypatch):
    """The stale worker runs the job it once claimed: at its first progress update it learns the job
    is another's, stops and stores no verdict; the new claim's progress, and its first estimate
    beside the database, are left as they were."""
    server = _Server(lambda _b: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    try:
        db, jid = _queue_judge(tmp_path, server.url)
        (jid, spec, inputs), beat = _stale_claim_then_new_claim(db)
        try:
            assert queue.progress(db, jid, "the new claim, at work", 0.4, token=beat.token)
            partial.write(db, jid, [{"the new claim's": "first estimate"}])
            assert run_one(db, jid, spec, inputs, token=STALE) == "superseded"
            assert _row(db, jid) == ("running", "the new claim, at work", 0.4)
            assert partial.read(db, jid) == [{"the new claim's": "first estimate"}]
        finally:
            beat.stop()
    finally:
        server.close()
    with store.connect(db, read_only=True) as con:
        assert not has_verdicts(con, result_keys(spec)["verdicts"])

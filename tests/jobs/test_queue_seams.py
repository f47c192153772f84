"""Where a job meets the rest of the world: a cancel asked for before a worker gave the job back, a
live worker's claim read as dead between a read and a write, a result ready while its run was removed
and loaded again, a database held by another program when the result is ready, a queue file that is
not SQLite, a queue this user may only read. Real files: the DuckDB database, the SQLite queue beside
it, heartbeats; judge jobs against a local endpoint (no model)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from ragaudit_core import workspace
from ragaudit_core.fidelity import endpoint
from ragaudit_core.jobs import heartbeat, queue, worker
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.fidelity.test_endpoint import _queue_judge
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import pipeline, write_jsonl

DEAD = "0123456789abcdef"
_STORE_DB = worker._db  # a start token with no heartbeat: its worker is dead to every opener


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv(endpoint.ENV_KEY, raising=False)
    monkeypatch.delenv(endpoint.ENV_TIMEOUT, raising=False)


def _status(db: str) -> list[tuple[str, str]]:
    return [(j.status, j.label) for j in queue.jobs(db)]


def _deaths(db: str) -> list[int]:
    con = sqlite3.connect(queue.queue_file(db))
    try:
        return [d for (d,) in con.execute("SELECT coalesce(deaths, 0) FROM jobs").fetchall()]
    finally:
        con.close()


def test_a_job_given_back_after_its_cancel_was_asked_for_ends_cancelled(tmp_path):
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, DEAD) is not None
    queue.cancel(db, [jid])  # running: asked to cancel at its next progress update
    queue.release(db, jid, DEAD)  # its worker stopped with Ctrl-C first
    assert _status(db) == [("cancelled", "cancelled")]  # not "queued" forever, unclaimable
    assert queue.retry(db, [jid]) == [jid] and queue.claim(db) is not None  # and it can be asked for again


def test_a_claim_taken_again_between_the_read_and_the_write_is_not_requeued(tmp_path, monkeypatch):
    """requeue_stale reads the running jobs, then which workers live, then writes: another opener
    requeues the dead claim and a live worker claims the job in between. The second claim stands."""
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, DEAD) is not None
    beat = heartbeat.Heartbeat(db).start()
    live_workers = heartbeat.live_workers

    def meanwhile(path):
        monkeypatch.setattr(heartbeat, "live_workers", live_workers)
        assert queue.requeue_stale(db) == 1 and queue.claim(db, beat.token) is not None
        return [b for b in live_workers(path) if b.get("token") != beat.token]  # read before the new worker beat

    monkeypatch.setattr(heartbeat, "live_workers", meanwhile)
    try:
        assert queue.requeue_stale(db) == 0
        assert [s[0] for s in _status(db)] == ["running"] and _deaths(db) == [1]  # one death: the first claim's
        assert queue.progress(db, jid, "at work", 0.5, token=beat.token)  # the live claim still writes
    finally:
        beat.stop()


def _run_with(db: str, monkeypatch, before_store) -> str:
    """Run the queued judge job against a local endpoint; ``before_store(path)`` runs as the worker
    asks for the database to store the result (what happens while it waits for the file)."""
    srv = _Server(lambda body: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, srv.url)
    with store.connect(db) as con:  # the queued job names the server's URL
        from ragaudit_core.jobs import plan_judge

        spec, inputs = plan_judge(con, "base", "q1", model="m", endpoint=srv.url, seeds=(0,))
        queue.forget_runs(con)
        queue.enqueue(con, spec, inputs)
    real = _STORE_DB  # the worker's own, not a wrapper an earlier call of this helper left

    def waited(path, wait_s=None):
        before_store(path)
        return real(path, wait_s)

    monkeypatch.setattr(worker, "_db", waited)
    beat = heartbeat.Heartbeat(db).start()
    try:
        got = queue.claim(db, beat.token)
        assert got is not None
        return worker.run_one(db, *got, token=beat.token)
    finally:
        beat.stop()
        srv.close()


def test_a_result_whose_run_was_removed_and_loaded_again_meanwhile_is_not_stored(tmp_path, monkeypatch):
    db, _ = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")

    def reload(path):
        with store.connect(path) as con:
            workspace.remove_runs(con, ["base"])
            edited = [pipeline("base", "q1", text="[Source: D9, p. 7]")]
            ingest_paths(con, [write_jsonl(tmp_path / "p2.jsonl", edited)])

    assert _run_with(db, monkeypatch, reload) == "cancelled"
    with store.connect(db) as con:
        made = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'judge_verdicts'").fetchall()
        assert made == [(0,)] or con.execute("SELECT count(*) FROM judge_verdicts").fetchall() == [(0,)]
    (j,) = queue.jobs(db)
    assert j.error is not None and j.error.endswith("nothing was stored")


def test_a_database_held_past_the_wait_gives_the_job_back_and_the_worker_goes_on(tmp_path, monkeypatch):
    """Another process holds the database (DuckDB's write lock) while the result waits to be stored:
    past the wait (shortened to 1 s here) the job goes back to the queue — or ends cancelled when a
    cancel was asked meanwhile — and the worker returns instead of dying with the result lost."""
    import subprocess
    import sys

    db, _ = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    monkeypatch.setattr(worker, "STORE_WAIT_S", 1.0)
    holders: list[subprocess.Popen] = []

    def held(path):  # a real writer holding the file
        hold = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        p = subprocess.Popen([sys.executable, "-c", hold, path], **pipes)
        holders.append(p)
        assert p.stdout is not None and p.stdout.readline().strip() == "held", p.stderr.read() if p.stderr else ""

    def release_holders():
        for p in holders:
            p.kill()
            p.wait()
        holders.clear()

    try:
        assert _run_with(db, monkeypatch, held) == "released"
        release_holders()
        assert _status(db) == [("queued", "queued again (the database was busy when its result was ready)")]

        def held_and_cancelled(path):  # cancelled while the worker waited: given back, it ends cancelled
            queue.cancel(path, [j.job_id for j in queue.jobs(path)])
            held(path)

        assert _run_with(db, monkeypatch, held_and_cancelled) == "cancelled"
        release_holders()
        assert _status(db) == [("cancelled", "cancelled")]
    finally:
        release_holders()


def test_a_queue_file_that_is_not_sqlite_is_one_sentence_and_removal_still_works(tmp_path):
    db, _ = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    qf = queue.queue_file(db)
    for suffix in ("-wal", "-shm"):
        qf.with_name(qf.name + suffix).unlink(missing_ok=True)
    qf.write_bytes(b"this is not a database, " * 200)
    with pytest.raises(queue.QueueDamaged) as e:
        queue.jobs(db)
    assert str(e.value).startswith(f"the job queue beside the database, {qf}, cannot be read (file is not a database)")
    assert "move it out of the folder and run the command again" in str(e.value)
    with store.connect(db) as con:
        workspace.remove_runs(con, ["base"])  # committed, and not undone by the queue
        assert con.execute("SELECT count(*) FROM prov_records").fetchall() == [(0,)]
    qf.unlink()
    assert queue.jobs(db) == []  # moved aside: an empty queue


def test_a_queue_this_user_may_only_read_lists_its_jobs_and_requeues_nothing(tmp_path, monkeypatch):
    db, _ = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, DEAD) is not None  # a copied file: its worker is not on this machine
    monkeypatch.setattr(queue, "_may_write", lambda qf: False)  # (as root, os.access grants everything)
    assert queue.requeue_stale(db) == 0
    assert [s[0] for s in _status(db)] == ["running"]


def test_a_job_failed_after_its_workers_died_loses_its_first_estimate(tmp_path):
    """The first estimate beside the database (.partial/) of a job failed for its workers' deaths was
    never removed: the attributions page kept offering an estimate of a job that had ended."""
    from ragaudit_core.jobs import partial

    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    for _ in range(queue.MAX_WORKER_DEATHS):
        assert queue.claim(db, DEAD) is not None
        partial.write(db, jid, [{"estimate": 1}])
        assert partial.read(db, jid) is not None
        queue.requeue_stale(db)
    assert _status(db)[0][0] == "failed" and _deaths(db) == [queue.MAX_WORKER_DEATHS]
    assert partial.read(db, jid) is None


def _planned(db: str):
    from ragaudit_core.jobs import plan_judge

    with store.connect(db) as con:
        return plan_judge(con, "base", "q1", model="m", endpoint="http://127.0.0.1:9/v1", seeds=(0,))


def _inputs_of(db: str, jid: str) -> dict:
    con = sqlite3.connect(queue.queue_file(db))
    try:
        return json.loads(con.execute("SELECT inputs FROM jobs WHERE job_id = ?", [jid]).fetchone()[0])
    finally:
        con.close()


@pytest.mark.parametrize("stops_by", ["finish", "done", "failed", "release", "death"])
def test_a_job_asked_for_again_while_it_stops_is_queued_again_with_the_new_inputs(tmp_path, stops_by):
    """Cancelled while running, then asked for again before its worker noticed: the attempt still
    stops (it computes from the first request's inputs, perhaps another load's), and the job is
    queued again with the second request's inputs — not left cancelled, the second request lost.
    Whichever way the attempt ends: its worker closes it as cancelled, gives it back (Ctrl-C), or
    dies (requeued by whoever looks)."""
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, DEAD) is not None
    queue.cancel(db, [jid])
    spec, inputs = _planned(db)
    again = inputs.model_copy(update={"query": "the same question, asked again"})
    assert queue.enqueue(db, spec, again) == jid
    assert queue.cancel_requested(db, jid)  # the running attempt still stops
    assert [s for s, _ in _status(db)] == ["running"]
    if stops_by in ("finish", "done", "failed"):  # its worker saw the cancel, or ended just before it did
        queue.finish(db, jid, {"finish": "cancelled"}.get(stops_by, stops_by), token=DEAD)
        assert _status(db) == [("queued", "queued again (asked for again while it was stopping)")]
    elif stops_by == "release":
        assert queue.release(db, jid, DEAD) == "queued"
    else:
        assert queue.requeue_stale(db) == 1
    assert [s for s, _ in _status(db)] == ["queued"] and not queue.cancel_requested(db, jid)
    got = queue.claim(db)
    assert got is not None and got[2].query == "the same question, asked again"


def test_a_job_cancelled_again_after_it_was_asked_for_again_ends_cancelled(tmp_path):
    db, jid = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")
    assert queue.claim(db, DEAD) is not None
    queue.cancel(db, [jid])
    queue.enqueue(db, *_planned(db))
    queue.cancel(db, [jid])  # changed their mind once more
    queue.finish(db, jid, "cancelled", token=DEAD)
    assert _status(db) == [("cancelled", "cancelled")]


def test_a_worker_whose_job_is_cancelled_and_asked_for_again_stores_nothing_then_runs_it_again(tmp_path, monkeypatch):
    """End to end with a real worker: cancel and ask again while the result waits for the database.
    The attempt stores nothing (its inputs were the first request's); the job is queued again and
    the next claim runs it to done."""
    from ragaudit_core.jobspec import JobInputs

    db, _ = _queue_judge(tmp_path, "http://127.0.0.1:9/v1")

    def meanwhile(path):
        (j,) = [j for j in queue.jobs(path) if j.status == "running"]
        queue.cancel(path, [j.job_id])
        queue.enqueue(path, j.spec, JobInputs(**_inputs_of(path, j.job_id)))

    assert _run_with(db, monkeypatch, meanwhile) == "cancelled"
    assert [s for s, _ in _status(db)] == ["queued"]
    assert _run_with(db, monkeypatch, lambda path: None) == "done"
    assert [s for s, _ in _status(db)] == ["done"]

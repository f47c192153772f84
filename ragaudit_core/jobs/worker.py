"""The background worker: runs queued jobs outside any Streamlit script run.

``python -m ragaudit_core.jobs.worker --db FILE`` claims queued jobs one at a time, runs each
(:func:`jobs.run.execute`), writes its progress every half second to the queue (a SQLite file
beside the database, :mod:`.queue`) and its result at the end, and exits after ``--idle``
seconds without work. It opens the DuckDB file only to store a result, in one short write
(``store.connect`` with waiting), so the dashboard and the CLI keep working on the same file. It
keeps a heartbeat beside the database (:mod:`.heartbeat`) and marks the jobs it claims with its
start token, so a worker that died (``kill -9``, a zombie nobody reaps, a PID since reused) is
seen as dead and its job queued again. :func:`ensure_worker` starts one for a database unless
one is live by its heartbeat (or was started less than :data:`STARTUP_GRACE_S` seconds ago and
has not beaten yet). Ctrl-C on a worker gives its running job back to the queue.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from ragaudit_core.jobs import heartbeat, partial, queue
from ragaudit_core.jobs.run import execute, store
from ragaudit_core.jobspec import JobCancelled, JobInputs, JobSpec
from ragaudit_core.logs import store as logstore
from ragaudit_core.wording import counted, one_line

__all__ = ["STARTUP_GRACE_S", "ensure_worker", "log_file", "revive", "run_one", "work"]

log = logging.getLogger("ragaudit.worker")

PROGRESS_EVERY_S = 0.5
STORE_WAIT_S = 600.0
"""How long a worker waits for a database another program holds to store a result (then the job
goes back to the queue)."""
STARTUP_GRACE_S = 30.0


@contextlib.contextmanager
def _db(db_path: str, wait_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    con = logstore.connect(db_path, wait_s=STORE_WAIT_S if wait_s is None else wait_s)
    try:
        yield con
    finally:
        con.close()


def run_one(
    db_path: str,
    job_id: str,
    spec: JobSpec,
    inputs: JobInputs,
    *,
    embedder: Any = None,
    generator: Any = None,
    token: str | None = None,
) -> str:
    """Run one claimed job to its end state (``done``, ``failed`` or ``cancelled``); Ctrl-C
    gives it back to the queue and stops. A job whose claim (``token``) was taken from this worker —
    it was taken for dead, the job queued again — is left at its next progress update, nothing
    stored or closed (``superseded``). While it runs, its first estimate (an anytime
    attribution's) is kept beside the database (:mod:`.partial`) for the pages; it is removed when
    the job ends."""
    status = None
    try:
        status = _run_one(db_path, job_id, spec, inputs, embedder=embedder, generator=generator, token=token)
        return status
    finally:
        if status != "superseded":  # else the first estimate is the new claim's
            partial.clear(db_path, job_id)


class _Superseded(JobCancelled):
    """The job is no longer this worker's claim: it was taken for dead and the job queued again."""


def _run_one(
    db_path: str,
    job_id: str,
    spec: JobSpec,
    inputs: JobInputs,
    *,
    embedder: Any = None,
    generator: Any = None,
    token: str | None = None,
) -> str:
    last = [0.0]

    def report(label: str, fraction: float) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S and fraction < 1.0:
            return
        last[0] = now
        try:  # the queue, not the database: nobody waits on the DuckDB file for a progress update
            mine = queue.progress(db_path, job_id, label, fraction, token=token)
            cancelled = queue.cancel_requested(db_path, job_id)
        except sqlite3.OperationalError:
            return  # the queue is busy past its wait: skip this update, the job goes on
        if not mine:
            raise _Superseded(job_id)
        if cancelled:
            raise JobCancelled(job_id)

    def first_estimate(payloads: list[dict]) -> None:  # beside the database, never in it (.partial)
        partial.write(db_path, job_id, payloads)

    try:
        payloads = execute(
            spec, inputs, embedder=embedder, generator=generator, progress=report, on_partial=first_estimate
        )
    except _Superseded:
        log.warning("job %s is no longer this worker's (queued again as its worker seemed dead): stopped", job_id)
        return "superseded"
    except JobCancelled:
        queue.finish(db_path, job_id, "cancelled", token=token)
        return "cancelled"
    except KeyboardInterrupt:
        queue.release(db_path, job_id, token)
        raise
    except Exception as e:  # any failure is the job's: logged with its traceback, reported with the job
        log.exception("job %s failed (%s, run %r, query %r)", job_id, spec.kind, spec.run_id, spec.query_id)
        error = f"{type(e).__name__}: {one_line(e)} (traceback in {log_file(db_path)})"
        queue.finish(db_path, job_id, "failed", error, token=token)
        return "failed"
    return _keep(db_path, job_id, spec, payloads, token)


_BUSY = "queued again (the database was busy when its result was ready)"


def _keep(db_path: str, job_id: str, spec: JobSpec, payloads: list[dict], token: str | None) -> str:
    """Store a finished job's result — the only time a worker opens the database, one short write —
    unless, once the file is held, the job turns out cancelled (its run removed, perhaps loaded again
    with other logs, while the worker waited for the file) or no longer this worker's claim: a result
    never outlives the logs it came from. A database held by another program past the wait gives the
    job back to the queue (it runs again later), the worker goes on."""
    try:
        with _db(db_path) as con:
            why = _stale(db_path, job_id, con, spec, token)
            if why is None:
                store(con, spec, payloads)
    except logstore.StoreBusy as e:
        now = queue.release(
            db_path, job_id, token, label="queued again (the database was busy when its result was ready)"
        )
        log.warning("job %s: its result was not stored (%s); %s", job_id, one_line(e), now or "no longer this claim")
        return "cancelled" if now == "cancelled" else "released"
    if why == "superseded":
        return why
    if why is not None:
        queue.finish(db_path, job_id, "cancelled", f"{why}; nothing was stored", token=token)
        return "cancelled"
    queue.finish(db_path, job_id, "done", token=token)  # killed between the two: requeued, the result replaced
    return "done"


def _stale(db_path: str, job_id: str, con: duckdb.DuckDBPyConnection, spec: JobSpec, token: str | None) -> str | None:
    """Why the result of a job must not be stored, read while the database is held (so no removal
    or load can come between the check and the write): "superseded", a sentence, or None."""
    try:
        if token is not None and not queue.progress(db_path, job_id, "storing its result", 1.0, token=token):
            return "superseded"
        if queue.cancel_requested(db_path, job_id):
            return "it was cancelled (or its run removed) while its result waited for the database"
    except (sqlite3.OperationalError, queue.QueueDamaged):
        pass  # the queue busy past its wait, or unreadable: the database's own check below still holds
    if not _still_logged(con, spec):
        return f"run {spec.run_id!r}, query {spec.query_id!r} was removed from the database while the job ran"
    return None


def _still_logged(con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
    """Whether the job's (run, query) is still in the database (evidence or provenance records):
    the queue lives beside the database, so clearing or removing a run does not reach it."""
    for table in ("records", "prov_records"):
        try:
            rows = con.execute(
                f"SELECT count(*) FROM {table} WHERE run_id = ? AND query_id = ?",  # two fixed table names
                [spec.run_id, spec.query_id],
            ).fetchall()
        except duckdb.CatalogException:
            continue
        if rows[0][0]:
            return True
    return False


def work(
    db_path: str,
    *,
    idle_s: float = 120.0,
    poll_s: float = 1.0,
    max_jobs: int | None = None,
    embedder: Any = None,
    generator: Any = None,
    token: str | None = None,
) -> int:
    """Run queued jobs until none has come for ``idle_s`` seconds (or ``max_jobs`` ran), with a
    heartbeat under ``token`` (a fresh one by default) the whole time; returns how many ran."""
    ran, idle_since = 0, time.monotonic()
    poll_s = max(poll_s, 0.1)
    beat = heartbeat.Heartbeat(db_path, token).start()
    try:
        while max_jobs is None or ran < max_jobs:
            try:
                queue.requeue_stale(db_path)
                got = queue.claim(db_path, beat.token)
            except sqlite3.OperationalError:
                got = None  # the queue is busy past its wait: try again shortly
            if got is None:
                if time.monotonic() - idle_since > idle_s:
                    break
                time.sleep(poll_s)
                continue
            t0 = time.monotonic()
            status = run_one(db_path, *got, embedder=embedder, generator=generator, token=beat.token)
            log.info(
                "job %s (%s, run %r, query %r): %s in %.1f s",
                got[0],
                got[1].kind,
                got[1].run_id,
                got[1].query_id,
                status,
                time.monotonic() - t0,
            )
            ran += 1
            idle_since = time.monotonic()
    finally:
        beat.stop()
    return ran


def log_file(db_path: str) -> Path:
    """Where a background worker of ``db_path`` writes its log (failures with their tracebacks)."""
    return _pid_file(db_path).with_suffix(".log")


def _pid_file(db_path: str) -> Path:
    p = Path(db_path)
    return p.with_name(f".{p.name}.worker.pid")


_children: dict[str, tuple[subprocess.Popen, float]] = {}


def _reap() -> None:
    """Collect the exit status of every worker this process started that has ended (no zombies
    left behind by this process)."""
    for key, (proc, _t) in list(_children.items()):
        if proc.poll() is not None:  # poll() is waitpid(pid, WNOHANG)
            del _children[key]


def _starting(db_path: str) -> int | None:
    """The PID of a worker started less than STARTUP_GRACE_S ago (by this process, or by another
    per the PID file: same PID *and* the same process start time, so a reused PID never passes)
    that may not have written its first heartbeat yet; None if there is none."""
    child = _children.get(str(db_path))
    if child is not None and time.time() - child[1] < STARTUP_GRACE_S:
        return child[0].pid
    try:
        rec = json.loads(_pid_file(db_path).read_text())
        pid, start, t = int(rec["pid"]), rec.get("proc_start"), float(rec["time"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or a file from before heartbeats (a bare PID): not trusted
    if time.time() - t < STARTUP_GRACE_S and heartbeat.proc_alive(pid, start):
        return pid
    return None


def ensure_worker(db_path: str, *, idle_s: float = 120.0) -> int:
    """Make sure a worker serves ``db_path``: reap this process's ended workers, queue again the
    jobs of workers that are not live, and start a worker unless one is live by its heartbeat
    (or starting). Returns the serving worker's PID."""
    _reap()
    queue.requeue_stale(str(db_path))
    live = heartbeat.live_workers(db_path)
    if live:
        return int(live[0]["pid"])
    starting = _starting(db_path)
    if starting is not None:
        return starting
    token = heartbeat.new_token()
    cmd = [sys.executable, "-m", "ragaudit_core.jobs.worker", "--db", str(db_path), "--idle", str(idle_s)]
    with open(log_file(db_path), "ab") as out:
        proc = subprocess.Popen(
            [*cmd, "--token", token],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ},
        )
    _children[str(db_path)] = (proc, time.time())
    rec = {"pid": proc.pid, "token": token, "time": time.time(), "proc_start": heartbeat.proc_start(proc.pid)}
    _pid_file(db_path).write_text(json.dumps(rec))
    return proc.pid


def revive(db_path: str, *, idle_s: float = 120.0) -> int:
    """For a page watching jobs: when no worker is live by its heartbeat, queue again the jobs of
    dead workers and, if there were any, start a worker. Returns how many jobs were queued again
    (0 when a worker is live, or none had died). Never opens the DuckDB file."""
    if heartbeat.live_workers(db_path):
        return 0
    n = queue.requeue_stale(str(db_path))
    if n:
        ensure_worker(db_path, idle_s=idle_s)
    return n


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m ragaudit_core.jobs.worker", description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--idle", type=float, default=120.0, help="exit after this many seconds without a job")
    ap.add_argument("--token", default=None, help="the start token for its heartbeat (default: a fresh one)")
    args = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log.info("worker %d started for %s", os.getpid(), args.db)
    ran = work(args.db, idle_s=args.idle, token=args.token)
    log.info("worker %d exits after %s, idle for %.0f s", os.getpid(), counted(ran, "job"), args.idle)


if __name__ == "__main__":
    main()

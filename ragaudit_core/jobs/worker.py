"""The background worker: runs queued jobs outside any Streamlit script run.

``python -m ragaudit_core.jobs.worker --db FILE`` claims queued jobs one at a time, runs
each (:func:`jobs.run.execute`), writes its progress every half second and its result at
the end, and exits after ``--idle`` seconds without work. It opens the database only for
each of those statements (``store.connect`` with waiting), so the dashboard and the CLI
keep working on the same file. :func:`ensure_worker` starts one for a database unless one
is alive (its PID is kept beside the database file).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from ragaudit_core.jobs import queue
from ragaudit_core.jobs.run import execute, store
from ragaudit_core.jobspec import JobCancelled, JobInputs, JobSpec
from ragaudit_core.logs import store as logstore

__all__ = ["ensure_worker", "log_file", "run_one", "work"]

log = logging.getLogger("ragaudit.worker")

PROGRESS_EVERY_S = 0.5


@contextlib.contextmanager
def _db(db_path: str, wait_s: float = 600) -> Iterator[duckdb.DuckDBPyConnection]:
    con = logstore.connect(db_path, wait_s=wait_s)
    try:
        yield con
    finally:
        con.close()


def run_one(
    db_path: str, job_id: str, spec: JobSpec, inputs: JobInputs, *, embedder: Any = None, generator: Any = None
) -> str:
    """Run one claimed job to its end state (``done``, ``failed`` or ``cancelled``)."""
    last = [0.0]

    def report(label: str, fraction: float) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S and fraction < 1.0:
            return
        last[0] = now
        try:
            with _db(db_path, wait_s=2) as con:
                queue.progress(con, job_id, label, fraction)
                cancelled = queue.cancel_requested(con, job_id)
        except logstore.StoreBusy:
            return  # the file is busy: skip this update, the job goes on
        if cancelled:
            raise JobCancelled(job_id)

    try:
        payloads = execute(spec, inputs, embedder=embedder, generator=generator, progress=report)
    except JobCancelled:
        with _db(db_path) as con:
            queue.finish(con, job_id, "cancelled")
        return "cancelled"
    except Exception as e:  # any failure is the job's: logged with its traceback, reported with the job
        log.exception("job %s failed (%s, run %r, query %r)", job_id, spec.kind, spec.run_id, spec.query_id)
        with _db(db_path) as con:
            queue.finish(con, job_id, "failed", f"{type(e).__name__}: {e} (traceback in {log_file(db_path)})")
        return "failed"
    with _db(db_path) as con:  # a worker killed between the two is requeued; the result is replaced
        store(con, spec, payloads)
        queue.finish(con, job_id, "done")
    return "done"


def work(
    db_path: str,
    *,
    idle_s: float = 120.0,
    poll_s: float = 1.0,
    max_jobs: int | None = None,
    embedder: Any = None,
    generator: Any = None,
) -> int:
    """Run queued jobs until none has come for ``idle_s`` seconds (or ``max_jobs`` ran);
    returns how many ran."""
    ran, idle_since = 0, time.monotonic()
    poll_s = max(poll_s, 0.1)
    while max_jobs is None or ran < max_jobs:
        try:
            with _db(db_path, wait_s=10) as con:
                queue.requeue_stale(con)
                got = queue.claim(con)
        except logstore.StoreBusy:
            got = None  # held by someone else: try again shortly
        if got is None:
            if time.monotonic() - idle_since > idle_s:
                break
            time.sleep(poll_s)
            continue
        run_one(db_path, *got, embedder=embedder, generator=generator)
        ran += 1
        idle_since = time.monotonic()
    return ran


def log_file(db_path: str) -> Path:
    """Where a background worker of ``db_path`` writes its log (failures with their tracebacks)."""
    return _pid_file(db_path).with_suffix(".log")


def _pid_file(db_path: str) -> Path:
    p = Path(db_path)
    return p.with_name(f".{p.name}.worker.pid")


_children: dict[str, subprocess.Popen] = {}


def ensure_worker(db_path: str, *, idle_s: float = 120.0) -> int:
    """Start a background worker for ``db_path`` unless one is alive (started by this process,
    or by another whose PID file is beside the database); returns its PID."""
    pid_file = _pid_file(db_path)
    child = _children.get(str(db_path))
    if child is not None:
        if child.poll() is None:  # ours and running (poll() also reaps it once it exits)
            return child.pid
    else:
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            pid = 0
        if pid and queue._alive(pid):
            return pid
    with open(log_file(db_path), "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragaudit_core.jobs.worker", "--db", str(db_path), "--idle", str(idle_s)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ},
        )
    _children[str(db_path)] = proc
    pid_file.write_text(str(proc.pid))
    return proc.pid


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m ragaudit_core.jobs.worker", description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--idle", type=float, default=120.0, help="exit after this many seconds without a job")
    args = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log.info("worker %d started for %s", os.getpid(), args.db)
    ran = work(args.db, idle_s=args.idle)
    log.info("worker %d exits after %d job(s), idle for %.0f s", os.getpid(), ran, args.idle)


if __name__ == "__main__":
    main()

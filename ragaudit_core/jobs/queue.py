"""The job queue: a table in the audit database, so the dashboard, the CLI and a background
worker see the same jobs, and a page reload finds them again.

States: ``queued`` → ``running`` → ``done`` | ``failed`` | ``cancelled``. A cancel request on
a running job sets ``cancel``; the worker's progress callback sees it and stops the job. A
running job carries its worker's start token (``worker_token``); when that worker is no longer
live by its heartbeat (:mod:`.heartbeat`: older than ``STALE_AFTER_S`` = 15 s, or its process gone
or a zombie on this host) the job is queued again by whoever looks (:func:`requeue_stale`: the
pages, ``ragaudit jobs``, :func:`ragaudit_core.jobs.worker.ensure_worker`, every worker).
A failed or cancelled job is queued again by :func:`retry`.
Each call opens nothing: it takes a connection and holds it only for its statement, so a
worker never keeps the file between progress updates.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import duckdb

from ragaudit_core.jobspec import JobInputs, JobSpec

__all__ = [
    "Job",
    "cancel",
    "cancel_requested",
    "claim",
    "enqueue",
    "ensure_schema",
    "estimate_seconds",
    "finish",
    "jobs",
    "progress",
    "release",
    "requeue_stale",
    "retry",
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id      VARCHAR PRIMARY KEY,
    kind        VARCHAR NOT NULL,
    run_id      VARCHAR NOT NULL,
    query_id    VARCHAR NOT NULL,
    spec        VARCHAR NOT NULL,
    inputs      VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,
    label       VARCHAR,
    fraction    DOUBLE DEFAULT 0,
    cancel      BOOLEAN DEFAULT false,
    error       VARCHAR,
    worker_pid  INTEGER,
    worker_token VARCHAR,
    queued_at   TIMESTAMP DEFAULT now(),
    started_at  TIMESTAMP,
    updated_at  TIMESTAMP,
    finished_at TIMESTAMP,
    seconds     DOUBLE
)
"""


@dataclass(frozen=True)
class Job:
    job_id: str
    spec: JobSpec
    status: str
    label: str | None
    fraction: float
    error: str | None
    elapsed_s: float | None  # since it started (running) or its wall time (done)

    @property
    def eta_s(self) -> float | None:
        """Seconds left, measured: elapsed / fraction done − elapsed (None before 5 % is done)."""
        if self.status != "running" or not self.elapsed_s or self.fraction < 0.05:
            return None
        return max(0.0, self.elapsed_s / self.fraction - self.elapsed_s)


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(_SCHEMA)
    con.execute("ALTER TABLE jobs ADD COLUMN IF NOT EXISTS worker_token VARCHAR")  # databases from before #24


def enqueue(con: duckdb.DuckDBPyConnection, spec: JobSpec, inputs: JobInputs) -> str:
    """Queue a job (a job already queued or running is left as it is; a finished, failed or
    cancelled one is queued again). Returns its id."""
    ensure_schema(con)
    jid = spec.job_id()
    row = con.execute("SELECT status FROM jobs WHERE job_id = ?", [jid]).fetchone()
    if row and row[0] in ("queued", "running"):
        return jid
    con.execute("DELETE FROM jobs WHERE job_id = ?", [jid])
    con.execute(
        "INSERT INTO jobs (job_id, kind, run_id, query_id, spec, inputs, status, label, queued_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 'queued', 'queued', now())",
        [jid, spec.kind, spec.run_id, spec.query_id, spec.model_dump_json(), inputs.model_dump_json()],
    )
    return jid


def claim(con: duckdb.DuckDBPyConnection, token: str | None = None) -> tuple[str, JobSpec, JobInputs] | None:
    """Take the oldest queued job for this process (status running, marked with the worker's
    heartbeat ``token``), or None."""
    ensure_schema(con)
    con.execute("BEGIN TRANSACTION")
    try:
        row = con.execute(
            "SELECT job_id, spec, inputs FROM jobs WHERE status = 'queued' AND NOT cancel "
            "ORDER BY queued_at, job_id LIMIT 1"
        ).fetchone()
        if row:
            con.execute(
                "UPDATE jobs SET status = 'running', label = 'starting', started_at = now(), "
                "updated_at = now(), worker_pid = ?, worker_token = ?, error = NULL WHERE job_id = ?",
                [os.getpid(), token, row[0]],
            )
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    if not row:
        return None
    return row[0], JobSpec.model_validate_json(row[1]), JobInputs.model_validate_json(row[2])


def progress(con: duckdb.DuckDBPyConnection, job_id: str, label: str, fraction: float) -> None:
    con.execute(
        "UPDATE jobs SET label = ?, fraction = ?, updated_at = now() WHERE job_id = ?", [label, float(fraction), job_id]
    )


def cancel_requested(con: duckdb.DuckDBPyConnection, job_id: str) -> bool:
    row = con.execute("SELECT cancel FROM jobs WHERE job_id = ?", [job_id]).fetchone()
    return bool(row and row[0])


def finish(
    con: duckdb.DuckDBPyConnection, job_id: str, status: str, error: str | None = None, token: str | None = None
) -> None:
    """Close a job: ``done``, ``failed`` (with the error) or ``cancelled``. With ``token``, only
    while the job is still this worker's (a worker thought dead whose job was queued again and
    taken by another leaves it to that one)."""
    mine = " AND worker_token = ?" if token else ""
    con.execute(
        "UPDATE jobs SET status = ?, error = ?, fraction = CASE WHEN ? = 'done' THEN 1 ELSE fraction END, "
        "label = ?, finished_at = now(), updated_at = now(), "
        "seconds = date_diff('millisecond', started_at, now()) / 1000.0 WHERE job_id = ?" + mine,
        [status, error, status, status, job_id, *([token] if token else [])],
    )


def cancel(con: duckdb.DuckDBPyConnection, job_ids: list[str]) -> None:
    """Cancel jobs: a queued one at once, a running one at its next progress update."""
    ensure_schema(con)
    con.execute(
        "UPDATE jobs SET status = 'cancelled', label = 'cancelled', finished_at = now() "
        "WHERE list_contains(?, job_id) AND status = 'queued'",
        [job_ids],
    )
    con.execute("UPDATE jobs SET cancel = true WHERE list_contains(?, job_id) AND status = 'running'", [job_ids])


def release(con: duckdb.DuckDBPyConnection, job_id: str, token: str | None = None) -> None:
    """Give a running job back to the queue (a worker stopped with Ctrl-C mid-job)."""
    mine = " AND worker_token = ?" if token else ""
    con.execute(
        "UPDATE jobs SET status = 'queued', label = 'queued again (its worker was stopped)', fraction = 0 "
        "WHERE job_id = ? AND status = 'running'" + mine,
        [job_id, *([token] if token else [])],
    )


def retry(con: duckdb.DuckDBPyConnection, job_ids: list[str] | None = None) -> list[str]:
    """Queue failed or cancelled jobs again (``None``: all of them); returns their ids."""
    ensure_schema(con)
    cond = "status IN ('failed', 'cancelled')" + ("" if job_ids is None else " AND list_contains(?, job_id)")
    args: list[object] = [] if job_ids is None else [list(job_ids)]
    ids = [j for (j,) in con.execute(f"SELECT job_id FROM jobs WHERE {cond} ORDER BY job_id", args).fetchall()]
    if ids:
        con.execute(
            "UPDATE jobs SET status = 'queued', label = 'queued again', fraction = 0, cancel = false, "
            "error = NULL, finished_at = NULL, queued_at = now() WHERE list_contains(?, job_id)",
            [ids],
        )
    return ids


def _db_path(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return row[0] if row and row[0] else None


def requeue_stale(con: duckdb.DuckDBPyConnection, db_path: str | None = None) -> int:
    """Jobs marked running by a worker that is not live (by its heartbeat; a job from before
    heartbeats, by its PID on this machine) go back to the queue — a worker killed mid-job, a
    zombie, a PID reused by another program; returns how many."""
    from ragaudit_core.jobs import heartbeat

    ensure_schema(con)
    rows = con.execute("SELECT job_id, worker_pid, worker_token FROM jobs WHERE status = 'running'").fetchall()
    if not rows:
        return 0
    path = db_path or _db_path(con)
    live = {b.get("token") for b in heartbeat.live_workers(path)} if path else set()
    dead = [j for j, pid, tok in rows if (tok not in live if tok else not heartbeat.proc_alive(pid))]
    if dead:  # one whose cancel was asked for is cancelled, not queued again
        con.execute(
            "UPDATE jobs SET status = 'cancelled', label = 'cancelled', finished_at = now() "
            "WHERE list_contains(?, job_id) AND status = 'running' AND cancel",
            [dead],
        )
        con.execute(
            "UPDATE jobs SET status = 'queued', label = 'queued again (its worker stopped)', fraction = 0 "
            "WHERE list_contains(?, job_id) AND status = 'running'",
            [dead],
        )
    return len(dead)


def jobs(
    con: duckdb.DuckDBPyConnection,
    *,
    run_id: str | None = None,
    query_id: str | None = None,
    job_ids: list[str] | None = None,
) -> list[Job]:
    """Jobs, newest first, optionally of one run / query / the given ids."""
    ensure_schema(con)
    where: list[str] = ["true"]
    args: list[object] = []
    for col, v in (("run_id", run_id), ("query_id", query_id)):
        if v is not None:
            where.append(f"{col} = ?")
            args.append(v)
    if job_ids is not None:
        where.append("list_contains(?, job_id)")
        args.append(list(job_ids))
    rows = con.execute(
        f"""SELECT job_id, spec, status, label, fraction, error,
                   CASE WHEN status = 'running' THEN date_diff('millisecond', started_at, now()) / 1000.0
                        ELSE seconds END
            FROM jobs WHERE {" AND ".join(where)} ORDER BY queued_at DESC, job_id""",
        args,
    ).fetchall()
    return [Job(j, JobSpec.model_validate_json(s), st, lab, fr or 0.0, err, el) for j, s, st, lab, fr, err, el in rows]


def estimate_seconds(con: duckdb.DuckDBPyConnection, spec: JobSpec) -> tuple[float, int] | None:
    """The median wall time of finished jobs with the same method, parameters, models and
    device on this database (measured here, not guessed), and how many there were; None
    before the first."""
    ensure_schema(con)
    same = {
        "method": spec.method,
        "params": spec.params,
        "retriever": spec.retriever,
        "generator": spec.generator,
        "device": spec.device,
        "conditions": list(spec.conditions),
    }
    rows = con.execute(
        "SELECT spec, seconds FROM jobs WHERE status = 'done' AND kind = ? AND seconds IS NOT NULL", [spec.kind]
    ).fetchall()
    secs = []
    for s, sec in rows:
        d = json.loads(s)
        if all(d.get(k) == v for k, v in same.items()):
            secs.append(sec)
    secs.sort()
    if not secs:
        return None
    mid = len(secs) // 2
    return (secs[mid] if len(secs) % 2 else (secs[mid - 1] + secs[mid]) / 2), len(secs)

"""The job queue: a SQLite file in WAL mode beside the audit database, so the dashboard, the CLI
and background workers see the same jobs, a page reload finds them again, and no one waits on
anyone (issue #24, item 4).

**Where**: ``.<db name>.queue.sqlite`` next to the DuckDB file (:func:`queue_file`). Every
function takes the DuckDB file's path — or an open DuckDB connection, whose file is looked up
(an in-memory database gets an in-memory queue for the life of the process). SQLite in WAL mode
lets one writer and any number of readers work at once; writers wait for each other at most
``BUSY_S`` seconds, and each statement is a few microseconds, so progress updates twice a
second never lock the dashboard out. The worker opens the DuckDB file only to store a result;
pages read progress without touching it. A database from before #24 kept its jobs in a DuckDB
table ``jobs``: they are copied over the first time the queue is opened through a connection.

States: ``queued`` → ``running`` → ``done`` | ``failed`` | ``cancelled``. A cancel request on
a running job sets ``cancel``; the worker's progress callback sees it and stops the job. Asked for
again before its worker stopped, it stops all the same (its inputs may be another load's) and is
queued again with the new inputs instead of cancelled (``cancel`` = :data:`AGAIN`). A
running job carries its worker's start token (``worker_token``); when that worker is no longer
live by its heartbeat (:mod:`.heartbeat`: older than ``STALE_AFTER_S`` = 15 s, or its process gone
or a zombie on this host) the job is queued again by whoever looks (:func:`requeue_stale`: the
pages, ``ragaudit jobs``, :func:`ragaudit_core.jobs.worker.ensure_worker`, every worker).
A failed or cancelled job is queued again by :func:`retry`. A worker writes a job's progress
(:func:`progress`), closes it (:func:`finish`) or gives it back (:func:`release`) with its token:
only while the job runs under that claim, so a worker taken for dead cannot overwrite the progress
or the end of the job's next claim. Times are Unix seconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import duckdb

from ragaudit_core.errors import RagAuditError
from ragaudit_core.jobs import partial
from ragaudit_core.jobspec import JobInputs, JobSpec
from ragaudit_core.wording import one_line

__all__ = [
    "AGAIN",
    "BUSY_S",
    "ETA_AFTER_S",
    "MAX_WORKER_DEATHS",
    "Job",
    "QueueDamaged",
    "cancel",
    "cancel_requested",
    "claim",
    "enqueue",
    "ensure_schema",
    "estimate_seconds",
    "finish",
    "forget_runs",
    "jobs",
    "progress",
    "queue_file",
    "release",
    "requeue_stale",
    "retry",
]

Where = Union[duckdb.DuckDBPyConnection, str, os.PathLike]  # noqa: UP007 — a runtime alias
BUSY_S = 30.0
MAX_WORKER_DEATHS = 3
"""Times a job's worker may die under it (kill -9, out of memory, a crash) before the job is failed
instead of queued again: a job that kills its worker is not run forever."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id      TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    run_id      TEXT NOT NULL,
    query_id    TEXT NOT NULL,
    spec        TEXT NOT NULL,
    inputs      TEXT NOT NULL,
    status      TEXT NOT NULL,
    label       TEXT,
    fraction    REAL DEFAULT 0,
    cancel      INTEGER DEFAULT 0,
    error       TEXT,
    worker_pid  INTEGER,
    worker_token TEXT,
    queued_at   REAL,
    started_at  REAL,
    updated_at  REAL,
    finished_at REAL,
    seconds     REAL,
    deaths      INTEGER DEFAULT 0
)
"""
_COLUMNS = (
    "job_id, kind, run_id, query_id, spec, inputs, status, label, fraction, cancel, error, worker_pid, "
    "queued_at, started_at, updated_at, finished_at, seconds"
)
_IDS = "job_id IN (SELECT value FROM json_each(?))"

AGAIN = 2
"""``cancel`` of a running job asked to stop and then asked for again: the attempt stops as a cancelled
one does (nothing stored), then the job is queued again with the inputs of the last request."""
_AGAIN_LABEL = "queued again (asked for again while it was stopping)"

_MEMORY: dict[int, sqlite3.Connection] = {}


ETA_AFTER_S = 3.0
"""Seconds a job runs before its page shows a time left."""


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
        """Seconds left, measured: elapsed / fraction done − elapsed (None before 5 % is done or
        :data:`ETA_AFTER_S` seconds have passed: a job's first seconds are too few to measure by,
        and a time left read off them jumps)."""
        if self.status != "running" or not self.elapsed_s or self.fraction < 0.05 or self.elapsed_s < ETA_AFTER_S:
            return None
        return max(0.0, self.elapsed_s / self.fraction - self.elapsed_s)


def queue_file(db_path: str | os.PathLike) -> Path:
    """The queue's SQLite file for the DuckDB file ``db_path``."""
    p = Path(db_path)
    return p.with_name(f".{p.name}.queue.sqlite")


def _db_path(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return row[0] if row and row[0] else None


def _duck_path(where: Where) -> str | None:
    return _db_path(where) if isinstance(where, duckdb.DuckDBPyConnection) else os.fspath(where)


def _migrate(duck: duckdb.DuckDBPyConnection, q: sqlite3.Connection) -> None:
    """Copy the jobs of a database from before #24 (a DuckDB table ``jobs``) into the queue."""
    if duck.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'jobs'").fetchall() == [(0,)]:
        return
    rows = duck.execute(
        "SELECT job_id, kind, run_id, query_id, spec, inputs, status, label, fraction, cancel::INT, error, "
        "worker_pid, epoch(queued_at), epoch(started_at), epoch(updated_at), epoch(finished_at), seconds FROM jobs"
    ).fetchall()
    q.executemany(f"INSERT OR IGNORE INTO jobs ({_COLUMNS}) VALUES ({', '.join('?' * 17)})", rows)


@contextlib.contextmanager
def _open(where: Where, *, create: bool = True) -> Iterator[sqlite3.Connection | None]:
    """A connection to the queue (autocommit; ``BEGIN IMMEDIATE`` where a read decides a write).
    With ``create=False`` a queue that does not exist yet gives None (nothing is written beside a
    database only read)."""
    duck = where if isinstance(where, duckdb.DuckDBPyConnection) else None
    path = _duck_path(where)
    if path is None or path == ":memory:":
        key = id(duck)
        if key not in _MEMORY:
            _MEMORY[key] = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            _MEMORY[key].execute(_SCHEMA)
        yield _MEMORY[key]
        return
    qf = queue_file(path)
    fresh = not qf.exists()
    if fresh and not create:
        yield None
        return
    with _damage_said(qf):
        if not create and not _may_write(qf):
            ro = _read_only(qf)  # a queue shared read-only with its database: read, never written
            try:
                yield ro
            finally:
                ro.close()
            return
        con = sqlite3.connect(qf, timeout=BUSY_S, isolation_level=None)
        try:
            if fresh:
                con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute(_SCHEMA)
            if not fresh and "deaths" not in {c[1] for c in con.execute("PRAGMA table_info(jobs)")}:
                con.execute("ALTER TABLE jobs ADD COLUMN deaths INTEGER DEFAULT 0")  # a queue from before the count
            if fresh and duck is not None:
                _migrate(duck, con)
            yield con
        finally:
            con.close()


def _may_write(qf: Path) -> bool:
    """Whether this user may write the queue file and its folder (SQLite writes its journal there)."""
    return os.access(qf, os.W_OK) and os.access(qf.parent, os.W_OK | os.X_OK)


class QueueDamaged(RagAuditError, RuntimeError):
    """The job queue beside a database is not a SQLite file, or a damaged one."""


@contextlib.contextmanager
def _damage_said(qf: Path) -> Iterator[None]:
    """A queue file SQLite cannot read (overwritten, truncated, not SQLite at all) said in one
    sentence with what to do — never a traceback. A busy or locked queue is not damage
    (``OperationalError`` passes through: callers wait or skip an update)."""
    try:
        yield
    except sqlite3.OperationalError:
        raise
    except sqlite3.DatabaseError as e:
        raise QueueDamaged(
            f"the job queue beside the database, {qf}, cannot be read ({one_line(e)}): move it out of the folder "
            "and run the command again — RagAudit starts an empty queue (the jobs it listed are lost; the results "
            "they stored are in the database)"
        ) from None


def _read_only(qf: Path) -> sqlite3.Connection:
    """The queue opened for reading by a user who may not write it or its folder (a database browsed
    read-only): SQLite's read-only mode where the write-ahead log's files are there to share, else the
    file as it stands (``immutable``: its last checkpoint, which is every job when no writer has it open
    — a writer's log cannot be made in a folder this user may not write, but its owner's can)."""
    uri = qf.absolute().as_uri()
    con = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_S, isolation_level=None)
    try:
        con.execute("SELECT count(*) FROM sqlite_master").fetchall()
        return con
    except sqlite3.OperationalError:  # no -shm beside it and none can be made
        con.close()
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


@contextlib.contextmanager
def _write(where: Where) -> Iterator[sqlite3.Connection]:
    """A transaction that holds the write lock from its first read (a claim cannot be taken twice)."""
    with _open(where) as con:
        assert con is not None
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")


def ensure_schema(where: Where) -> None:
    """Create the queue beside the database (and copy the jobs of an older database)."""
    with _open(where):
        pass


def enqueue(where: Where, spec: JobSpec, inputs: JobInputs) -> str:
    """Queue a job (a job already queued or running is left as it is; a finished, failed or
    cancelled one is queued again; a running one asked to cancel is queued again once it stops:
    :data:`AGAIN`). Returns its id."""
    jid = spec.job_id()
    with _write(where) as con:
        row = con.execute("SELECT status, cancel FROM jobs WHERE job_id = ?", [jid]).fetchone()
        if row and row[0] == "running" and row[1]:  # stopping: it runs again once stopped, with these inputs
            con.execute(
                "UPDATE jobs SET cancel = ?, spec = ?, inputs = ? WHERE job_id = ? AND status = 'running'",
                [AGAIN, spec.model_dump_json(), inputs.model_dump_json(), jid],
            )
            return jid
        if row and row[0] in ("queued", "running"):
            return jid
        con.execute("DELETE FROM jobs WHERE job_id = ?", [jid])
        con.execute(
            "INSERT INTO jobs (job_id, kind, run_id, query_id, spec, inputs, status, label, queued_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'queued', 'queued', ?)",
            [jid, spec.kind, spec.run_id, spec.query_id, spec.model_dump_json(), inputs.model_dump_json(), time.time()],
        )
    return jid


def claim(where: Where, token: str | None = None) -> tuple[str, JobSpec, JobInputs] | None:
    """Take the oldest queued job for this process (status running, marked with the worker's
    heartbeat ``token``), or None. A row that cannot be read as a job, or whose id is not its
    description's (:meth:`JobSpec.job_id`: a queue file written by someone else), is failed with a
    sentence and the next one taken: it never crashes a worker nor names a file."""
    with _write(where) as con:
        while True:
            row = con.execute(
                "SELECT job_id, spec, inputs FROM jobs WHERE status = 'queued' AND NOT cancel "
                "ORDER BY queued_at, job_id LIMIT 1"
            ).fetchone()
            if not row:
                return None
            now = time.time()
            got, why = _parse(*row)
            if got is None:
                con.execute(
                    "UPDATE jobs SET status = 'failed', label = 'failed', error = ?, finished_at = ?, updated_at = ? "
                    "WHERE job_id = ?",
                    [why, now, now, row[0]],
                )
                continue
            con.execute(
                "UPDATE jobs SET status = 'running', label = 'starting', started_at = ?, updated_at = ?, "
                "fraction = 0, worker_pid = ?, worker_token = ?, error = NULL WHERE job_id = ?",
                [now, now, os.getpid(), token, row[0]],
            )
            return got


def _parse(job_id: str, spec: str, inputs: str) -> tuple[tuple[str, JobSpec, JobInputs] | None, str]:
    """(job id, spec, inputs) of a queued row, or None and the sentence saying why it is refused."""
    try:
        s, i = JobSpec.model_validate_json(spec), JobInputs.model_validate_json(inputs)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        first = str(e).splitlines()[0][:200]
        return None, f"this job's description cannot be read ({first}); queue it again from the dashboard or CLI"
    if s.job_id() != job_id:
        return None, (
            f"this job's id does not match its description (expected {s.job_id()}): the queue file was "
            "changed outside RagAudit; queue the job again from the dashboard or CLI"
        )
    return (job_id, s, i), ""


def progress(where: Where, job_id: str, label: str, fraction: float, token: str | None = None) -> bool:
    """Write a running job's progress; whether it was written. With ``token`` (the claim's start
    token, as :func:`finish` and :func:`release` take it), only while the job runs under that claim:
    a worker taken for dead, whose job was queued again (and perhaps claimed by another), writes
    nothing, and learns from the False that the job is no longer its own."""
    mine = " AND status = 'running' AND worker_token = ?" if token else ""
    with _open(where) as con:
        assert con is not None
        cur = con.execute(
            "UPDATE jobs SET label = ?, fraction = ?, updated_at = ? WHERE job_id = ?" + mine,
            [label, float(fraction), time.time(), job_id, *([token] if token else [])],
        )
        return bool(cur.rowcount)


def cancel_requested(where: Where, job_id: str) -> bool:
    with _open(where, create=False) as con:
        row = con.execute("SELECT cancel FROM jobs WHERE job_id = ?", [job_id]).fetchone() if con else None
    return bool(row and row[0])


def finish(where: Where, job_id: str, status: str, error: str | None = None, token: str | None = None) -> None:
    """Close a job: ``done``, ``failed`` (with the error) or ``cancelled``. With ``token``, only
    while the job still runs under this worker's claim (a worker thought dead whose job was queued
    again — and perhaps taken by another — leaves it to the queue or to that one). A job asked for
    again while it was stopping (:data:`AGAIN`) is queued again instead, whatever this attempt's end:
    a result it stored came from the first request's inputs, and the new attempt's replaces it."""
    now = time.time()
    mine = " AND status = 'running' AND worker_token = ?" if token else ""
    with _write(where) as con:  # one transaction: a request for the job again cannot fall between the two
        if _queued_again(con, job_id, mine, token):  # asked for again while it ended: run with the new inputs
            return
        con.execute(
            "UPDATE jobs SET status = ?, error = ?, fraction = CASE WHEN ? = 'done' THEN 1 ELSE fraction END, "
            "label = ?, finished_at = ?, updated_at = ?, seconds = ? - started_at WHERE job_id = ?" + mine,
            [status, error, status, status, now, now, now, job_id, *([token] if token else [])],
        )


def _queued_again(con: sqlite3.Connection, job_id: str, mine: str, token: str | None) -> bool:
    """Queue a stopped attempt again when the job was asked for again while it stopped
    (:data:`AGAIN`); whether it was."""
    return bool(
        con.execute(
            "UPDATE jobs SET status = 'queued', label = ?, fraction = 0, cancel = 0, error = NULL, "
            f"finished_at = NULL, queued_at = ? WHERE job_id = ? AND cancel = {AGAIN}" + mine,
            [_AGAIN_LABEL, time.time(), job_id, *([token] if token else [])],
        ).rowcount
    )


def cancel(where: Where, job_ids: list[str]) -> None:
    """Cancel jobs: a queued one at once, a running one at its next progress update."""
    ids = json.dumps(list(job_ids))
    with _write(where) as con:
        con.execute(
            "UPDATE jobs SET status = 'cancelled', label = 'cancelled', finished_at = ? "
            f"WHERE {_IDS} AND status = 'queued'",
            [time.time(), ids],
        )
        con.execute(f"UPDATE jobs SET cancel = 1 WHERE {_IDS} AND status = 'running'", [ids])


def forget_runs(where: Where, runs: list[str] | None = None) -> int:
    """Forget the jobs of ``runs`` (``None``: every job) when their logs are removed or cleared:
    finished, failed, cancelled and queued jobs are deleted, a running one is asked to cancel (and
    its worker stores nothing for a run that is gone). Returns how many were deleted."""
    cond = "1 = 1" if runs is None else "run_id IN (SELECT value FROM json_each(?))"
    args = [] if runs is None else [json.dumps(list(runs))]
    with _write(where) as con:
        con.execute(f"UPDATE jobs SET cancel = 1 WHERE {cond} AND status = 'running'", args)
        cur = con.execute(f"DELETE FROM jobs WHERE {cond} AND status != 'running'", args)
        return int(cur.rowcount or 0)


def release(
    where: Where, job_id: str, token: str | None = None, label: str = "queued again (its worker was stopped)"
) -> str | None:
    """Give a running job back to the queue (a worker stopped with Ctrl-C mid-job); one whose cancel
    was asked for is cancelled instead (queued, it would never be claimed nor queued again), unless it
    was asked for again since (:data:`AGAIN`: queued, its cancel cleared). Returns
    its status now ("queued" or "cancelled"), None when it was not this claim's to give back."""
    mine = " AND worker_token = ?" if token else ""
    now = time.time()
    with _write(where) as con:  # (no RETURNING: SQLite before 3.35 has none)
        done = con.execute(
            "UPDATE jobs SET status = CASE WHEN cancel = 1 THEN 'cancelled' ELSE 'queued' END, "
            "label = CASE WHEN cancel = 1 THEN 'cancelled' ELSE ? END, fraction = 0, "
            "finished_at = CASE WHEN cancel = 1 THEN ? ELSE finished_at END, "
            "cancel = CASE WHEN cancel = 1 THEN 1 ELSE 0 END "
            "WHERE job_id = ? AND status = 'running'" + mine,
            [label, now, job_id, *([token] if token else [])],
        ).rowcount
        row = con.execute("SELECT status FROM jobs WHERE job_id = ?", [job_id]).fetchone() if done else None
    return row[0] if row else None


def retry(where: Where, job_ids: list[str] | None = None) -> list[str]:
    """Queue failed or cancelled jobs again (``None``: all of them); returns their ids."""
    cond = "status IN ('failed', 'cancelled')" + ("" if job_ids is None else f" AND {_IDS}")
    args = [] if job_ids is None else [json.dumps(list(job_ids))]
    with _write(where) as con:
        ids = [j for (j,) in con.execute(f"SELECT job_id FROM jobs WHERE {cond} ORDER BY job_id", args).fetchall()]
        con.execute(
            "UPDATE jobs SET status = 'queued', label = 'queued again', fraction = 0, cancel = 0, deaths = 0, "
            f"error = NULL, finished_at = NULL, queued_at = ? WHERE {_IDS}",
            [time.time(), json.dumps(ids)],
        )
    return ids


def requeue_stale(where: Where, db_path: str | None = None) -> int:
    """Jobs marked running by a worker that is not live (by its heartbeat; a job from before
    heartbeats, by its PID on this machine) go back to the queue — a worker killed mid-job, a
    zombie, a PID reused by another program; one whose cancel was asked for is cancelled.
    Returns how many. A job whose worker died under it :data:`MAX_WORKER_DEATHS` times is failed
    with a sentence instead (:func:`retry` queues it again, with a fresh count)."""
    from ragaudit_core.jobs import heartbeat

    with _open(where, create=False) as con:
        if con is None:
            return 0
        if (qpath := _duck_path(where)) not in (None, ":memory:") and not _may_write(queue_file(str(qpath))):
            return 0  # a queue this user may only read (a database browsed read-only): listed as it is
        rows = con.execute("SELECT job_id, worker_pid, worker_token FROM jobs WHERE status = 'running'").fetchall()
    if not rows:
        return 0
    path = db_path or _duck_path(where)
    live = {b.get("token") for b in heartbeat.live_workers(path)} if path and path != ":memory:" else set()
    dead = json.dumps(
        [[j, tok or ""] for j, pid, tok in rows if (tok not in live if tok else not heartbeat.proc_alive(pid))]
    )
    now = time.time()
    with _write(where) as con:
        n = con.execute(
            f"UPDATE jobs SET status = 'cancelled', label = 'cancelled', finished_at = ? WHERE {_DEAD} AND cancel = 1",
            [now, dead],
        ).rowcount
        con.execute(
            "UPDATE jobs SET status = 'failed', label = 'failed', error = ?, finished_at = ?, updated_at = ?, "
            f"deaths = coalesce(deaths, 0) + 1 WHERE {_DEAD} AND coalesce(deaths, 0) + 1 >= ?",
            [_died_error(path), now, now, dead, MAX_WORKER_DEATHS],
        )
        n += con.execute(
            "UPDATE jobs SET status = 'queued', label = 'queued again (its worker stopped)', fraction = 0, "
            f"cancel = 0, deaths = coalesce(deaths, 0) + 1 WHERE {_DEAD}",  # (cancel AGAIN: asked for again)
            [dead],
        ).rowcount
        ended = con.execute(
            "SELECT job_id FROM jobs WHERE status IN ('failed', 'cancelled') AND job_id IN "
            "(SELECT json_extract(value, '$[0]') FROM json_each(?))",
            [dead],
        ).fetchall()
    if path and path != ":memory:":  # their first estimates went with their dead workers' runs
        for (job_id,) in ended:
            partial.clear(path, job_id)
    return n


_DEAD = (  # json_extract, not ->>: the operator needs SQLite 3.38 (Ubuntu 22.04's Python links 3.37)
    "status = 'running' AND (job_id, coalesce(worker_token, '')) IN "
    "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
)
"""The running jobs of a JSON list of ``[job_id, worker_token]`` read as dead: still under the claim
that was judged dead (one claimed again since, by a live worker, between the read and this write, is
that worker's)."""


def _died_error(db_path: str | None) -> str:
    # (the log a background worker writes: ragaudit_core.jobs.worker.log_file, which imports this module)
    log = f".{Path(db_path).name}.worker.log beside the database" if db_path else "beside the database"
    return (
        f"its worker stopped {MAX_WORKER_DEATHS} times while running it (killed, out of memory or crashed), "
        f"so it is not queued again by itself (the worker's log, {log}, may say why); retry it once the "
        "cause is fixed"
    )


def jobs(
    where: Where,
    *,
    run_id: str | None = None,
    query_id: str | None = None,
    job_ids: list[str] | None = None,
) -> list[Job]:
    """Jobs, newest first, optionally of one run / query / the given ids (reading only: no queue
    yet, no jobs)."""
    where_sql: list[str] = ["1"]
    args: list[object] = []
    for col, v in (("run_id", run_id), ("query_id", query_id)):
        if v is not None:
            where_sql.append(f"{col} = ?")
            args.append(v)
    if job_ids is not None:
        where_sql.append(_IDS)
        args.append(json.dumps(list(job_ids)))
    with _open(where, create=False) as con:
        if con is None:
            return []
        rows = con.execute(
            f"SELECT job_id, spec, status, label, fraction, error, started_at, seconds FROM jobs "
            f"WHERE {' AND '.join(where_sql)} ORDER BY queued_at DESC, job_id",
            args,
        ).fetchall()
    now = time.time()
    return [
        Job(j, spec, st, lab, fr or 0.0, err, max(0.0, now - t0) if st == "running" and t0 else sec)
        for j, s, st, lab, fr, err, t0, sec in rows
        if (spec := _spec(s)) is not None  # a row that is not a job (written outside RagAudit): claim fails it
    ]


def _spec(text: str) -> JobSpec | None:
    try:
        return JobSpec.model_validate_json(text)
    except ValueError:
        return None


def estimate_seconds(where: Where, spec: JobSpec) -> tuple[float, int] | None:
    """The median wall time of finished jobs with the same method, parameters, models and
    device on this database (measured here, not guessed), and how many there were; None
    before the first."""
    same = {
        "method": spec.method,
        "params": spec.params,
        "retriever": spec.retriever,
        "generator": spec.generator,
        "device": spec.device,
        "conditions": list(spec.conditions),
    }
    with _open(where, create=False) as con:
        rows = (
            con.execute(
                "SELECT spec, seconds FROM jobs WHERE status = 'done' AND kind = ? AND seconds IS NOT NULL", [spec.kind]
            ).fetchall()
            if con
            else []
        )
    secs = sorted(sec for s, sec in rows if all(json.loads(s).get(k) == v for k, v in same.items()))
    if not secs:
        return None
    mid = len(secs) // 2
    return (secs[mid] if len(secs) % 2 else (secs[mid - 1] + secs[mid]) / 2), len(secs)

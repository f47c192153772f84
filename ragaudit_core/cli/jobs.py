"""The job queue from the command line (issue #24, item 2), for operators and CI:
``ragaudit attribute … --queue`` / ``ragaudit judge … --queue`` enqueue instead of running
(:func:`enqueue_and_report`); ``ragaudit worker --db FILE`` runs queued jobs in the foreground
(Ctrl-C gives its running job back to the queue); ``ragaudit jobs --db FILE [--json]`` lists the
jobs with state, progress and error, and ``ragaudit jobs cancel|retry ID… | --all`` acts on them.

Listing is an opener like the dashboard's pages: it queues again the jobs of workers that are
not live (by heartbeat) and, when jobs wait and no worker is live, starts a background worker
(``--no-start`` leaves that to the operator).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from ragaudit_core.cli.common import EndpointTimeout, KeyFile, fail, open_existing_db
from ragaudit_core.cli.terminal import ShownFormatter, say
from ragaudit_core.wording import counted, shell_word

__all__ = ["endpoint_options", "enqueue_and_report", "jobs", "worker"]

ACTIONS = ("list", "cancel", "retry")


def endpoint_options(endpoint: str | None, key_file: Path | None, timeout: float | None) -> None:
    """Apply the endpoint options for this process (and the processes it starts): the endpoint
    is checked and allowed, the key read from its file, the request time limit set."""
    import os

    from ragaudit_core.fidelity import endpoint as policy

    if timeout is not None:
        if not 0 < timeout <= policy.MAX_TIMEOUT_S:
            fail(f"--timeout must be above 0 seconds and at most {policy.MAX_TIMEOUT_S:,.0f} (a day)")
        os.environ[policy.ENV_TIMEOUT] = str(timeout)
    if key_file is not None:
        policy.use_key_file(key_file)
    if endpoint:
        policy.allow(endpoint)


def enqueue_and_report(
    con: Any, db: Path, planned: Iterable[tuple[Any, Any]], unplanned: list[tuple[str, str]], endpoint: str | None
) -> NoReturn:
    """Queue each planned (spec, inputs) on ``db``, print the job ids and how to run them; exit
    1 when some query could not be planned (listed with its reason), else 0."""
    from ragaudit_core.jobs import queue

    ids = [(spec.query_id, queue.enqueue(con, spec, inputs)) for spec, inputs in planned]
    con.close()
    for q, jid in ids:
        say(f"queued: query {q}: job {jid}")
    allow = f" --endpoint {shell_word(endpoint)}" if endpoint else ""
    them = "it" if len(ids) == 1 else "them"
    run = f"ragaudit worker --db {shell_word(db)}{allow}"
    say(f"{counted(len(ids), 'job')} queued on {db}; run {them} with: {run}", err=True)
    if endpoint:
        say(
            "a worker calls the endpoint only if its operator allows it (--endpoint on the worker, or "
            "RAGAUDIT_JUDGE_ENDPOINTS); the API key comes from the worker's RAGAUDIT_JUDGE_API_KEY or --key-file",
            err=True,
        )
    for q, err in unplanned:
        say(f"failed: query {q}: {err}", err=True)
    raise typer.Exit(1 if unplanned else 0)


def worker(
    db: Annotated[Path, typer.Option("--db", help="The database whose queued jobs this worker runs.")],
    idle: Annotated[
        float | None,
        typer.Option("--idle", help="Exit after this many seconds without a queued job (default: run until Ctrl-C)."),
    ] = None,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--endpoint", help="A judge endpoint this worker may call (repeatable; see RAGAUDIT_JUDGE_ENDPOINTS)."
        ),
    ] = None,
    key_file: KeyFile = None,
    timeout: EndpointTimeout = None,
) -> None:
    """Run queued jobs in the foreground, one at a time, with a heartbeat; Ctrl-C gives the
    running job back to the queue."""
    import logging
    import sys

    from ragaudit_core.jobs.worker import work

    if idle is not None and idle < 0:
        fail("--idle must be 0 or more seconds")
    for url in endpoint or []:
        endpoint_options(url, None, None)
    endpoint_options(None, key_file, timeout)
    open_existing_db(db, "logs").close()
    handler = logging.StreamHandler(sys.stderr)  # the worker's log lines name runs and queries: shown inert
    handler.setFormatter(ShownFormatter("%(asctime)s %(levelname)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler])
    say(f"worker for {db}: waiting for jobs" + (f" (exits after {idle:g} s idle)" if idle is not None else ""))
    try:
        ran = work(str(db), idle_s=math.inf if idle is None else idle)
    except KeyboardInterrupt:
        say("stopped: its running job, if any, is queued again", err=True)
        raise typer.Exit(130) from None
    say(f"worker for {db}: {counted(ran, 'job')} run, none left")


def _resolve(known: list[str], given: list[str], db: Path) -> list[str]:
    """Job ids from full ids or unique prefixes (at least 4 characters)."""
    out = []
    for g in given:
        hits = [j for j in known if j == g] or ([j for j in known if j.startswith(g)] if len(g) >= 4 else [])
        if len(hits) != 1:
            short = not hits and len(g) < 4 and any(j.startswith(g) for j in known)
            what = (
                "is too short a prefix (give at least 4 characters of the id)"
                if short
                else (f"names {'no job' if not hits else 'several jobs'}")
            )
            fail(f"{g!r} {what}; see the ids with `ragaudit jobs --db {shell_word(db)}`")
        out.append(hits[0])
    return out


def _row(j: Any) -> dict[str, Any]:
    return {
        "job_id": j.job_id,
        "kind": j.spec.kind,
        "run_id": j.spec.run_id,
        "query_id": j.spec.query_id,
        "status": j.status,
        "fraction": round(j.fraction, 4),
        "label": j.label,
        "elapsed_s": None if j.elapsed_s is None else round(j.elapsed_s, 2),
        "error": j.error,
    }


def jobs(
    db: Annotated[Path, typer.Option("--db", help="The database whose jobs are listed or changed.")],
    action: Annotated[str, typer.Argument(help="list (default), cancel or retry.")] = "list",
    ids: Annotated[list[str] | None, typer.Argument(help="Job ids (or unique prefixes) to cancel or retry.")] = None,
    all_jobs: Annotated[
        bool, typer.Option("--all", help="Cancel every queued or running job / retry every failed or cancelled one.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the jobs as JSON.")] = False,
    start: Annotated[
        bool, typer.Option("--start/--no-start", help="Start a background worker when jobs wait and none is live.")
    ] = True,
) -> None:
    """List the queue's jobs (state, progress, error), or cancel or retry some."""
    from ragaudit_core.jobs import heartbeat, queue
    from ragaudit_core.jobs.worker import ensure_worker

    if action not in ACTIONS:
        fail(f"the action is one of {', '.join(ACTIONS)}, not {action!r}")
    if action != "list" and not ids and not all_jobs:
        fail(f"name the jobs to {action} (their ids, see `ragaudit jobs --db {shell_word(db)}`) or pass --all")
    if not db.exists():
        fail(f"{db}: no such database; the queue lives beside the database its jobs were planned from")
    where = str(db)  # the queue beside it: the DuckDB file itself is not opened
    queue.requeue_stale(where)
    everything = queue.jobs(where)
    chosen = None if all_jobs else _resolve([j.job_id for j in everything], ids or [], db)
    if action == "cancel":
        open_ids = [j.job_id for j in everything if j.status in ("queued", "running")]
        targets = open_ids if chosen is None else chosen
        queue.cancel(where, targets)
        say(f"cancel asked for {counted(len(targets), 'job')}: queued ones at once, running ones at their next step")
    elif action == "retry":
        say(f"{counted(len(queue.retry(where, chosen)), 'job')} queued again")
    listed = queue.jobs(where)
    waiting = any(j.status in ("queued", "running") for j in listed)
    live = heartbeat.live_workers(db)
    pids = ", ".join(str(b["pid"]) for b in live)
    note = f"{counted(len(live), 'live worker')} (PID {pids})" if live else "no live worker"
    if waiting and not live and start:
        note = f"no live worker: started one in the background (PID {ensure_worker(str(db))})"
    if json_out:
        say(json.dumps({"jobs": [_row(j) for j in listed], "workers": live}, indent=2), lines=True)
    else:
        for j in listed:
            t = "" if j.elapsed_s is None else f" {j.elapsed_s:.1f} s"
            say(
                f"{j.job_id}  {j.spec.kind:<11} {j.spec.run_id}/{j.spec.query_id}  {j.status:<9} "
                f"{j.fraction:4.0%}{t}  {j.label or ''}"
            )
            if j.error:
                say(f"    error: {j.error}")
    say(f"{counted(len(listed), 'job')} on {db}; {note}", err=True)

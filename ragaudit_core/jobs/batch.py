"""Batches of jobs: in the process, or mapped over a Ray cluster.

``run_batch`` skips jobs whose results are stored (so a batch resumes where a previous one
stopped), runs the rest, stores each result as it lands, and reports a failed job with its
query and error without losing the others. With ``ray`` (``"local"`` starts a local cluster
of ``workers`` CPUs; anything else is an address to join) each job is a Ray task that runs
the same :func:`jobs.run.execute` in a Ray worker process; the results come back to this
process, the only one that writes the database. Tasks ask for a GPU when the cluster has
GPUs and the jobs' device is not ``cpu``.
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import duckdb

from ragaudit_core.jobs.run import execute, is_stored, store
from ragaudit_core.jobspec import JobInputs, JobSpec

__all__ = ["BatchReport", "run_batch"]


@dataclass
class BatchReport:
    done: list[str] = field(default_factory=list)  # query ids computed now
    skipped: list[str] = field(default_factory=list)  # already stored
    failed: list[tuple[str, str]] = field(default_factory=list)  # (query id, error)
    seconds: float = 0.0
    runner: str = "process"


def run_batch(
    con: duckdb.DuckDBPyConnection,
    jobs: Iterable[tuple[JobSpec, JobInputs]],
    *,
    ray: str | None = None,
    workers: int | None = None,
    on_result: Callable[[JobSpec, str], None] | None = None,
) -> BatchReport:
    """Run ``jobs`` (spec, inputs) and store their results; ``on_result(spec, status)`` after
    each (``done``, ``skipped`` or ``failed``) — e.g. a progress bar. ``jobs`` is consumed
    lazily (a generator that plans one query at a time keeps memory flat); on Ray at most
    twice the cluster's CPUs are in flight."""
    t0 = time.perf_counter()
    rep = BatchReport(runner="process" if ray is None else f"ray ({ray})")
    say = on_result or (lambda _s, _st: None)

    def todo():
        for spec, inputs in jobs:
            if is_stored(con, spec):
                rep.skipped.append(spec.query_id)
                say(spec, "skipped")
            else:
                yield spec, inputs

    if ray is None:
        for spec, inputs in todo():
            _land(con, spec, functools.partial(execute, spec, inputs), rep, say)
    else:
        rest = todo()
        first = next(rest, None)  # nothing left to compute: no cluster to start
        if first is not None:
            _run_on_ray(con, itertools.chain([first], rest), ray, workers, rep, say)
    rep.seconds = time.perf_counter() - t0
    return rep


def _land(
    con: duckdb.DuckDBPyConnection,
    spec: JobSpec,
    result: Callable[[], list[dict]],
    rep: BatchReport,
    say: Callable[[JobSpec, str], None],
) -> None:
    """Take one job's result (computing it, or fetching a Ray task's) and store it; a failure —
    the job's own error, or a Ray task's, unwrapped to its cause — is reported with the query."""
    try:
        payloads = result()
    except Exception as e:  # noqa: BLE001 — reported with its query; the batch goes on
        cause = getattr(e, "cause", None) or e
        rep.failed.append((spec.query_id, f"{type(cause).__name__}: {cause}"))
        say(spec, "failed")
        return
    store(con, spec, payloads)
    rep.done.append(spec.query_id)
    say(spec, "done")


def _ray_task(spec_json: str, inputs_json: str) -> list[dict]:
    """One job in a Ray worker process (models loaded once per worker, :func:`ragaudit_core.models.cached_model`)."""
    return execute(JobSpec.model_validate_json(spec_json), JobInputs.model_validate_json(inputs_json))


def _run_on_ray(
    con: duckdb.DuckDBPyConnection,
    todo: Iterable[tuple[JobSpec, JobInputs]],
    address: str,
    workers: int | None,
    rep: BatchReport,
    say: Callable[[JobSpec, str], None],
) -> None:
    try:
        import ray
    except ImportError:
        raise RuntimeError("Ray is not installed: pip install 'ragaudit[ray]'") from None
    started = not ray.is_initialized()
    if started:
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        gpus = ray.cluster_resources().get("GPU", 0)
        tasks = {g: ray.remote(num_cpus=1, num_gpus=g, max_retries=0)(_ray_task) for g in (0, 1)}
        window = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        pending: dict = {}

        def collect(block_until: int) -> None:
            while len(pending) > block_until:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    _land(con, pending.pop(ref), functools.partial(ray.get, ref), rep, say)

        for spec, inputs in todo:
            want_gpu = gpus > 0 and spec.device != "cpu"
            run_spec = spec.model_copy(update={"device": "cuda" if want_gpu else spec.device})
            pending[tasks[int(want_gpu)].remote(run_spec.model_dump_json(), inputs.model_dump_json())] = spec
            collect(window - 1)
        collect(0)
    finally:
        if started:
            ray.shutdown()

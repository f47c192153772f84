"""Plan, execute and store one job: the one code path every runner calls.

Each call looks up the job's kind in the registry (:mod:`.kinds`) and asks it: ``plan`` reads what
a job needs from the database and returns its description and inputs; ``execute`` is the pure
computation (no database); ``store`` writes its result under the keys the dashboard and the CLI
look up. A runner — in process, the dashboard's background worker, a Ray task — only decides where
``execute`` runs.
"""

from __future__ import annotations

from typing import Any

import duckdb

from ragaudit_core.jobs import kinds
from ragaudit_core.jobspec import JobInputs, JobSpec, Partial, Progress

__all__ = ["execute", "is_stored", "plan", "plan_judge", "result_keys", "store"]


def plan(
    con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, *, kind: str = "attribution", **options: Any
) -> tuple[JobSpec, JobInputs]:
    """The ``kind`` job (default attribution) for one logged query, with ``options`` over the
    kind's defaults."""
    return kinds.get(kind).plan(con, run_id, query_id, **options)


def plan_judge(con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, **options: Any) -> tuple[JobSpec, JobInputs]:
    """The citation judge's job for one provenance record (``plan(..., kind="judge")``)."""
    return plan(con, run_id, query_id, kind="judge", **options)


def execute(
    spec: JobSpec,
    inputs: JobInputs,
    *,
    embedder: Any = None,
    generator: Any = None,
    progress: Progress | None = None,
    on_partial: Partial | None = None,
) -> list[dict]:
    """Compute the job's result (JSON-ready dicts). Models default to the spec's, loaded once
    per process (:func:`ragaudit_core.models.cached_model`). ``on_partial`` receives a first
    estimate while the job refines it (attribution), the same shape as the result."""
    kind = kinds.get(spec.kind)
    return kind.execute(spec, inputs, embedder=embedder, generator=generator, progress=progress, on_partial=on_partial)


def store(con: duckdb.DuckDBPyConnection, spec: JobSpec, result: list[dict]) -> None:
    """Write the job's result under its keys (a repeated job replaces its rows)."""
    kinds.get(spec.kind).store(con, spec, result)


def is_stored(con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
    """Whether the job's whole result is stored (a batch skips it)."""
    return kinds.get(spec.kind).is_stored(con, spec)


def result_keys(spec: JobSpec) -> dict[str, str]:
    """The keys the job's result is stored under (attribution: condition → key)."""
    return kinds.get(spec.kind).result_keys(spec)

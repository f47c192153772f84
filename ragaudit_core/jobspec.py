"""What a job is: its description, its inputs, and the protocol every job kind implements.

A job is a pure function of its description (:class:`JobSpec`) and its inputs (:class:`JobInputs`):
the same description gives the same stored result in the process, in the dashboard's background
worker or on a Ray cluster. ``device`` says where the models run and is not part of the result's
key (results agree across devices up to floating-point rounding).

A **job kind** (attribution, the citation judge, …) is one object implementing :class:`JobKind` —
plan from the database, execute (pure), store, is-stored, result keys — provided by the package
that owns the question (:mod:`ragaudit_core.attribution.job`, :mod:`ragaudit_core.fidelity.judge_job`)
and registered with :mod:`ragaudit_core.jobs.kinds`. This module sits below both: the kinds import
it, the runners import it, and neither imports the other.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any, Protocol

import duckdb
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JobCancelled", "JobInputs", "JobKind", "JobSpec", "Partial", "Progress"]

Progress = Callable[[str, float], None]
"""``progress(label, fraction)``: what a job is doing and how far it is (0–1); it may raise
:class:`JobCancelled` to stop the job."""


Partial = Callable[[list[dict]], None]
"""``on_partial(payloads)``: a first estimate of the job's result (JSON-ready, the shape
``execute`` returns), handed over while the job refines it; kinds without one never call it."""


class JobCancelled(RuntimeError):
    """Raised inside a job's progress callback when the job was cancelled."""


class JobSpec(BaseModel):
    """What one job computes: ``kind`` for ``(run_id, query_id)`` with the named models, the
    resolved method and its parameters, on ``device``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = "attribution"
    run_id: str
    query_id: str
    retriever: str
    generator: str
    method: str
    params: dict = Field(default_factory=dict)
    conditions: tuple[str, ...] = ("original",)
    device: str = "auto"

    def job_id(self) -> str:
        """A stable id for the queue: the spec without the device (the same work queued twice
        from two devices is one job)."""
        d = self.model_dump(exclude={"device"})
        return hashlib.sha256(json.dumps(d, sort_keys=True, default=list).encode()).hexdigest()[:16]


class JobInputs(BaseModel):
    """The data a job reads, resolved from the database by whoever plans it, so a worker on
    another machine needs no database: the query text and its documents in retriever order
    (attribution), or its citations and context (judge)."""

    model_config = ConfigDict(frozen=True)

    query: str
    documents: list[tuple[str, str]] = []  # attribution: (doc_id, text) in retriever order
    citations: list[dict] = []  # judge: [{citation, score}] (Pattern 3's extraction)
    context: list[dict] = []  # judge: the context chunks with provenance


class JobKind(Protocol):
    """One kind of model work. ``execute`` is pure (no database); the others read or write it.

    ``defaults`` are the options ``plan`` accepts, with their default values (the CLI's and the
    pages' choices come from them)."""

    name: str
    defaults: dict[str, Any]

    def plan(
        self, con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, **options: Any
    ) -> tuple[JobSpec, JobInputs]: ...

    def execute(
        self,
        spec: JobSpec,
        inputs: JobInputs,
        *,
        embedder: Any = None,
        generator: Any = None,
        progress: Progress | None = None,
        on_partial: Partial | None = None,
    ) -> list[dict]: ...

    def store(self, con: duckdb.DuckDBPyConnection, spec: JobSpec, result: list[dict]) -> None: ...

    def is_stored(self, con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool: ...

    def result_keys(self, spec: JobSpec) -> dict[str, str]: ...

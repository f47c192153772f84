"""Attribution as a job kind (seed 001, RAG-E): plan one logged query from the database, compute
its attribution (pure, :func:`.compute.compute_attribution`), store and find it by its key.

Registered with :mod:`ragaudit_core.jobs.kinds` as ``attribution``; this module imports only the
job contract (:mod:`ragaudit_core.jobspec`), never the runners.
"""

from __future__ import annotations

from typing import Any, ClassVar

import duckdb

from ragaudit_core.attribution.compute import compute_attribution, job_params, resolve_method
from ragaudit_core.attribution.result import AttributionResult
from ragaudit_core.attribution.storage import (
    query_documents,
    result_key,
    store_payloads,
    stored_payloads,
    stored_results,
)
from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS
from ragaudit_core.jobspec import JobInputs, JobSpec, Partial, Progress

__all__ = ["ATTRIBUTION_JOB", "AttributionJob", "explain_query"]


class AttributionJob:
    """IG on the retriever, Shapley on the generator, WARG — for one logged query."""

    name = "attribution"
    defaults: ClassVar[dict[str, Any]] = dict(ATTRIBUTION_DEFAULTS)

    def plan(
        self,
        con: duckdb.DuckDBPyConnection,
        run_id: str,
        query_id: str,
        *,
        retriever: str | None = None,
        generator: str | None = None,
        device: str = "auto",
        shuffle: bool = False,
        **options: Any,
    ) -> tuple[JobSpec, JobInputs]:
        """The job for one logged query: ``options`` over :attr:`defaults` (None keeps the
        default); raises ``AttributionError`` when the query or its texts are missing."""
        from ragaudit_core import models

        unknown = set(options) - set(self.defaults)
        if unknown:
            raise ValueError(
                f"unknown attribution {'option' if len(unknown) == 1 else 'options'}: {', '.join(sorted(unknown))}"
            )
        o = {**self.defaults, **{k: v for k, v in options.items() if v is not None}}
        query, docs = query_documents(con, run_id, query_id, int(o["max_docs"]))
        method = resolve_method(str(o["method"]), len(docs))
        params = job_params(
            method,
            max_docs=int(o["max_docs"]),
            max_new_tokens=int(o["max_new_tokens"]),
            ig_steps=int(o["ig_steps"]),
            ig_baseline=str(o["ig_baseline"]),
            seed=int(o["seed"]),
            n_samples=int(o["n_samples"]),
            n_fits=int(o["n_fits"]),
            ig_method=str(o["ig_method"]),
        )
        spec = JobSpec(
            kind=self.name,
            run_id=run_id,
            query_id=query_id,
            retriever=retriever or models.DEFAULT_EMBEDDER,
            generator=generator or models.DEFAULT_GENERATOR_NAME,
            method=method,
            params=params,
            conditions=("original", "shuffled") if shuffle else ("original",),
            device=device,
        )
        return spec, JobInputs(query=query, documents=docs)

    def execute(
        self,
        spec: JobSpec,
        inputs: JobInputs,
        *,
        embedder: Any = None,
        generator: Any = None,
        progress: Progress | None = None,
        on_partial: Partial | None = None,
    ) -> list[dict]:
        """One result (:class:`~.result.AttributionResult` as JSON) per condition. Models default to
        the spec's, loaded once per process (:func:`ragaudit_core.models.cached_model`). With
        ``on_partial`` the job is anytime: the first estimate (``estimate_stage="first"``) is
        handed to it as JSON before the exact result is computed."""
        from ragaudit_core.models import cached_model

        dev = spec.device
        results = compute_attribution(
            spec.run_id,
            spec.query_id,
            inputs.query,
            inputs.documents,
            embedder=embedder or (lambda: cached_model("embedder", spec.retriever, dev)),
            generator=generator or (lambda: cached_model("generator", spec.generator, dev)),
            method=spec.method,
            params=spec.params,
            conditions=spec.conditions,
            progress=progress,
            on_partial=None if on_partial is None else (lambda rs: on_partial([r.to_json() for r in rs])),
        )
        return [r.to_json() for r in results]

    def result_keys(self, spec: JobSpec) -> dict[str, str]:
        """condition → the key of the stored result (:func:`.storage.result_key`)."""
        return {
            c: result_key(spec.run_id, spec.query_id, spec.retriever, spec.generator, spec.method, spec.params, c)
            for c in spec.conditions
        }

    def store(self, con: duckdb.DuckDBPyConnection, spec: JobSpec, result: list[dict]) -> None:
        """Write each condition's result under its key (a repeated job replaces its rows)."""
        keys = self.result_keys(spec)
        desc = {
            "run_id": spec.run_id,
            "query_id": spec.query_id,
            "retriever": spec.retriever,
            "generator": spec.generator,
            "method": spec.method,
            "params": spec.params,
        }
        store_payloads(con, [(keys[c], {**desc, "condition": c}, p) for c, p in zip(spec.conditions, result)])

    def is_stored(self, con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
        keys = self.result_keys(spec)
        return len(stored_payloads(con, list(keys.values()))) == len(keys)


ATTRIBUTION_JOB = AttributionJob()


def explain_query(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    query_id: str,
    *,
    embedder: Any,
    generator: Any,
    retriever_name: str | None = None,
    generator_name: str | None = None,
    shuffle: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> list[AttributionResult]:
    """Explain one logged query in this process, one result per condition (original[, shuffled]):
    plan it, serve it when stored, else compute and store it — the job's own path, without a
    runner. ``options`` override :data:`~ragaudit_core.defaults.ATTRIBUTION_DEFAULTS`; ``embedder`` /
    ``generator`` are loaded models or zero-argument loaders, called only when not stored yet."""
    job = ATTRIBUTION_JOB
    spec, inputs = job.plan(
        con, run_id, query_id, retriever=retriever_name, generator=generator_name, shuffle=shuffle, **options
    )
    keys = job.result_keys(spec)
    have = stored_results(con, list(keys.values()))
    if len(have) == len(keys):
        return [have[keys[c]] for c in spec.conditions]
    payloads = job.execute(spec, inputs, embedder=embedder, generator=generator, progress=progress)
    job.store(con, spec, payloads)
    return [AttributionResult.from_json(p) for p in payloads]

"""Plan, execute and store one job: the one code path every runner calls.

``plan`` reads what a job needs from the database (the query and its documents) and returns
the description and inputs; ``execute`` is the pure computation (no database); ``store``
writes its result under the keys the dashboard and the CLI look up. A runner — in process,
the dashboard's background worker, a Ray task — only decides where ``execute`` runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import duckdb

from ragaudit_core.jobs.spec import JobInputs, JobSpec

__all__ = ["ATTRIBUTION_DEFAULTS", "JobCancelled", "ModelCache", "execute", "is_stored", "plan", "store"]

ATTRIBUTION_DEFAULTS = {"method": "pmc", "n_samples": 20, "n_fits": 200, "seed": 0, "max_docs": 5,
                        "max_new_tokens": 48, "ig_steps": 24, "ig_baseline": "unk", "ig_method": "gausslegendre"}
"""Defaults of an attribution job, chosen by measurement on 2 CPU cores (docs/benchmarks.md,
"Attribution defaults"): IG by 24-point Gauss–Legendre (completeness within 0.2 % on the bench
documents, against 100 Riemann steps), Shapley by PMCSHAP (N = 20, M = 200; its MSE against
exact Shapley is reported there). Exact Shapley stays one option away (``method="exact"``)."""


class JobCancelled(RuntimeError):
    """Raised inside a job's progress callback when the job was cancelled."""


class ModelCache:
    """Loaded models by (kind, name, device), kept for the life of the process: a worker
    loads each model once for all the jobs it runs."""

    _lock = threading.Lock()
    _models: dict[tuple[str, str, str], object] = {}

    @classmethod
    def get(cls, kind: str, name: str, device: str):
        from ragaudit_core import models

        key = (kind, name, device)
        with cls._lock:
            if key not in cls._models:
                if kind == "embedder":
                    cls._models[key] = models.load_embedder(None if name == models.DEFAULT_EMBEDDER else name,
                                                            device=device)
                else:
                    cls._models[key] = models.load_generator(
                        None if name == models.DEFAULT_GENERATOR_NAME else name, device=device)
            return cls._models[key]


def plan(con: duckdb.DuckDBPyConnection, run_id: str, query_id: str, *, retriever: str | None = None,
         generator: str | None = None, device: str = "auto", shuffle: bool = False, **options) -> tuple[JobSpec, JobInputs]:
    """The attribution job for one logged query: options over :data:`ATTRIBUTION_DEFAULTS`;
    raises ``AttributionError`` when the query or its texts are missing."""
    from ragaudit_core import models
    from ragaudit_core.attribution.explain import job_params, query_documents, resolve_method

    unknown = set(options) - set(ATTRIBUTION_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown attribution option(s): {', '.join(sorted(unknown))}")
    o = {**ATTRIBUTION_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    query, docs = query_documents(con, run_id, query_id, int(o["max_docs"]))
    method = resolve_method(o["method"], len(docs))
    params = job_params(method, max_docs=int(o["max_docs"]), max_new_tokens=int(o["max_new_tokens"]),
                        ig_steps=int(o["ig_steps"]), ig_baseline=o["ig_baseline"], seed=int(o["seed"]),
                        n_samples=int(o["n_samples"]), n_fits=int(o["n_fits"]), ig_method=o["ig_method"])
    spec = JobSpec(run_id=run_id, query_id=query_id, retriever=retriever or models.DEFAULT_EMBEDDER,
                   generator=generator or models.DEFAULT_GENERATOR_NAME, method=method, params=params,
                   conditions=("original", "shuffled") if shuffle else ("original",), device=device)
    return spec, JobInputs(query=query, documents=docs)


def execute(spec: JobSpec, inputs: JobInputs, *, embedder=None, generator=None,
            progress: Callable[[str, float], None] | None = None) -> list[dict]:
    """Compute the job's result (one payload per condition). Models default to the spec's,
    loaded once per process (:class:`ModelCache`)."""
    from ragaudit_core.attribution.explain import compute_attribution

    dev = spec.device
    return compute_attribution(
        spec.run_id, spec.query_id, inputs.query, inputs.documents,
        embedder=embedder or (lambda: ModelCache.get("embedder", spec.retriever, dev)),
        generator=generator or (lambda: ModelCache.get("generator", spec.generator, dev)),
        method=spec.method, params=spec.params, conditions=spec.conditions, progress=progress)


def store(con: duckdb.DuckDBPyConnection, spec: JobSpec, payloads: list[dict]) -> None:
    """Write the job's result under its keys (a repeated job replaces its rows)."""
    from ragaudit_core.attribution.explain import store_payloads

    keys = spec.result_keys()
    desc = {"run_id": spec.run_id, "query_id": spec.query_id, "retriever": spec.retriever,
            "generator": spec.generator, "method": spec.method, "params": spec.params}
    store_payloads(con, [(keys[c], {**desc, "condition": c}, p) for c, p in zip(spec.conditions, payloads)])


def is_stored(con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
    """Whether every condition of the job has a stored result (a batch skips it)."""
    from ragaudit_core.attribution.explain import stored_payloads

    keys = spec.result_keys()
    return len(stored_payloads(con, list(keys.values()))) == len(keys)

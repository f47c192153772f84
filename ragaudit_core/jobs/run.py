"""Plan, execute and store one job: the one code path every runner calls.

``plan`` reads what a job needs from the database (the query and its documents) and returns
the description and inputs; ``execute`` is the pure computation (no database); ``store``
writes its result under the keys the dashboard and the CLI look up. A runner — in process,
the dashboard's background worker, a Ray task — only decides where ``execute`` runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar

import duckdb

from ragaudit_core.jobs.spec import JobInputs, JobSpec

__all__ = [
    "ATTRIBUTION_DEFAULTS",
    "JUDGE_DEFAULTS",
    "JobCancelled",
    "ModelCache",
    "execute",
    "is_stored",
    "plan",
    "plan_judge",
    "store",
]

ATTRIBUTION_DEFAULTS = {
    "method": "auto",
    "n_samples": 20,
    "n_fits": 200,
    "seed": 0,
    "max_docs": 5,
    "max_new_tokens": 48,
    "ig_steps": 24,
    "ig_baseline": "unk",
    "ig_method": "gausslegendre",
}
"""Defaults of an attribution job, chosen by measurement on 2 CPU cores (docs/benchmarks.md,
"Attribution defaults"): IG by 24-point Gauss–Legendre (completeness within 0.6 % on the bench
queries, at a quarter of the time of 100 Riemann steps); Shapley ``auto``: exact up to 6
documents — on five documents the prompts' token trie makes all 32 coalitions cost little
more than PMCSHAP's 12, and PMCSHAP (N = 20, M = 200) was measurably off on some queries
(its MSE against exact is reported there) — and PMCSHAP beyond, one option away below."""


class JobCancelled(RuntimeError):
    """Raised inside a job's progress callback when the job was cancelled."""


class ModelCache:
    """Loaded models by (kind, name, device), kept for the life of the process: a worker
    loads each model once for all the jobs it runs."""

    _lock: ClassVar[threading.Lock] = threading.Lock()
    _models: ClassVar[dict[tuple[str, str, str], object]] = {}

    @classmethod
    def get(cls, kind: str, name: str, device: str) -> Any:
        from ragaudit_core import models

        key = (kind, name, device)
        with cls._lock:
            if key not in cls._models:
                if kind == "embedder":
                    cls._models[key] = models.load_embedder(
                        None if name == models.DEFAULT_EMBEDDER else name, device=device
                    )
                else:
                    cls._models[key] = models.load_generator(
                        None if name == models.DEFAULT_GENERATOR_NAME else name, device=device
                    )
            return cls._models[key]


def plan(
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
    params = job_params(
        method,
        max_docs=int(o["max_docs"]),
        max_new_tokens=int(o["max_new_tokens"]),
        ig_steps=int(o["ig_steps"]),
        ig_baseline=o["ig_baseline"],
        seed=int(o["seed"]),
        n_samples=int(o["n_samples"]),
        n_fits=int(o["n_fits"]),
        ig_method=o["ig_method"],
    )
    spec = JobSpec(
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


_DEFAULT_SEEDS = (0, 1, 2)
JUDGE_DEFAULTS: dict[str, Any] = {"seeds": (0, 1, 2), "max_chars": 400, "explanation_tokens": 16}
"""The judge panel's defaults: three judges (seed 0 greedy, seeds 1 and 2 sampled), context
chunks cut to 400 characters, explanations of at most 16 tokens (local backend)."""


def plan_judge(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    query_id: str,
    *,
    model: str | None = None,
    endpoint: str | None = None,
    seeds: tuple[int, ...] | None = None,
    max_chars: int | None = None,
    device: str = "auto",
) -> tuple[JobSpec, JobInputs]:
    """The Pattern-4 judge job for one provenance record: ``model`` (default the packaged
    SmolLM2) loaded locally, or served by the OpenAI-compatible ``endpoint``."""
    from ragaudit_core import models
    from ragaudit_core.fidelity import load_graphs
    from ragaudit_core.fidelity.judging import judge_inputs

    graphs = load_graphs(con, run_id, [query_id])
    if not graphs:
        raise ValueError(f"run {run_id!r} has no provenance record for query {query_id!r}")
    params = {
        "seeds": list(seeds or _DEFAULT_SEEDS),
        "max_chars": max_chars or JUDGE_DEFAULTS["max_chars"],
        "explanation_tokens": JUDGE_DEFAULTS["explanation_tokens"],
        "endpoint": endpoint,
    }
    query, citations, context = judge_inputs(graphs[0], params["max_chars"])
    if endpoint and not model:
        raise ValueError("an endpoint needs a model name (--judge-model)")
    spec = JobSpec(
        kind="judge",
        run_id=run_id,
        query_id=query_id,
        retriever="",
        generator=model or models.DEFAULT_GENERATOR_NAME,
        method="endpoint" if endpoint else "local",
        params=params,
        device=device,
    )
    return spec, JobInputs(query=query, citations=citations, context=context)


def _judge_backend(spec: JobSpec, generator: Any = None) -> Any:
    import os

    from ragaudit_core.fidelity.judges import EndpointJudge, LocalJudge

    if spec.method == "endpoint":
        return EndpointJudge(spec.params["endpoint"], spec.generator, api_key=os.environ.get("RAGAUDIT_JUDGE_API_KEY"))
    gen = generator or ModelCache.get("generator", spec.generator, spec.device)
    return LocalJudge(
        gen() if callable(gen) and not hasattr(gen, "model") else gen,
        explanation_tokens=spec.params.get("explanation_tokens", 16),
    )


def _execute_judge(
    spec: JobSpec, inputs: JobInputs, generator: Any, progress: Callable[[str, float], None] | None
) -> list[dict]:
    from ragaudit_core.fidelity.judging import judge_citations

    return judge_citations(
        inputs.query, inputs.citations, inputs.context, _judge_backend(spec, generator), spec.params["seeds"], progress
    )


def execute(
    spec: JobSpec,
    inputs: JobInputs,
    *,
    embedder: Any = None,
    generator: Any = None,
    progress: Callable[[str, float], None] | None = None,
) -> list[dict]:
    """Compute the job's result: one payload per condition (attribution) or one row per
    citation and judge (judge). Models default to the spec's, loaded once per process
    (:class:`ModelCache`)."""
    from ragaudit_core.attribution.explain import compute_attribution

    if spec.kind == "judge":
        return _execute_judge(spec, inputs, generator, progress)
    dev = spec.device
    return compute_attribution(
        spec.run_id,
        spec.query_id,
        inputs.query,
        inputs.documents,
        embedder=embedder or (lambda: ModelCache.get("embedder", spec.retriever, dev)),
        generator=generator or (lambda: ModelCache.get("generator", spec.generator, dev)),
        method=spec.method,
        params=spec.params,
        conditions=spec.conditions,
        progress=progress,
    )


def store(con: duckdb.DuckDBPyConnection, spec: JobSpec, payloads: list[dict]) -> None:
    """Write the job's result under its keys (a repeated job replaces its rows)."""
    from ragaudit_core.attribution.explain import store_payloads

    if spec.kind == "judge":
        from ragaudit_core.fidelity.judging import store_verdicts

        store_verdicts(con, spec.result_keys()["verdicts"], spec.run_id, spec.query_id, payloads)
        return

    keys = spec.result_keys()
    desc = {
        "run_id": spec.run_id,
        "query_id": spec.query_id,
        "retriever": spec.retriever,
        "generator": spec.generator,
        "method": spec.method,
        "params": spec.params,
    }
    store_payloads(con, [(keys[c], {**desc, "condition": c}, p) for c, p in zip(spec.conditions, payloads)])


def is_stored(con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
    """Whether every condition of the job has a stored result (a batch skips it)."""
    from ragaudit_core.attribution.explain import stored_payloads

    if spec.kind == "judge":
        from ragaudit_core.fidelity.judging import has_verdicts

        return has_verdicts(con, spec.result_keys()["verdicts"])

    keys = spec.result_keys()
    return len(stored_payloads(con, list(keys.values()))) == len(keys)

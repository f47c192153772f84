"""The citation judge as a job kind (seed 002, Pattern 4): plan one provenance record's
citations and context, run the judge panel (pure, :func:`.judging.judge_citations`), store the
verdicts.

Registered with :mod:`ragaudit_core.jobs.kinds` as ``judge``; this module imports only the job
contract (:mod:`ragaudit_core.jobspec`), never the runners.
"""

from __future__ import annotations

from typing import Any, ClassVar

import duckdb

from ragaudit_core.defaults import JUDGE_DEFAULTS, JUDGE_PRECISIONS
from ragaudit_core.fidelity.graph import load_graphs
from ragaudit_core.fidelity.judging import has_verdicts, judge_citations, judge_inputs, store_verdicts
from ragaudit_core.jobspec import JobInputs, JobSpec, Partial, Progress

__all__ = ["JUDGE_JOB", "JudgeJob"]


class JudgeJob:
    """A panel of LLM judges over one provenance record's extracted citations."""

    name = "judge"
    defaults: ClassVar[dict[str, Any]] = {
        "model": None,
        "endpoint": None,
        "seeds": JUDGE_DEFAULTS["seeds"],
        "max_chars": JUDGE_DEFAULTS["max_chars"],
        "precision": JUDGE_DEFAULTS["precision"],
    }

    def plan(
        self,
        con: duckdb.DuckDBPyConnection,
        run_id: str,
        query_id: str,
        *,
        model: str | None = None,
        endpoint: str | None = None,
        seeds: tuple[int, ...] | None = None,
        max_chars: int | None = None,
        precision: str | None = None,
        device: str = "auto",
    ) -> tuple[JobSpec, JobInputs]:
        """The judge job for one provenance record: ``model`` (default the packaged SmolLM2) loaded
        locally, or served by the OpenAI-compatible ``endpoint``. ``precision`` (a local model's
        weights, :data:`ragaudit_core.defaults.JUDGE_PRECISIONS`) is part of the job's key when it is not
        the default, so verdicts of a bf16 panel are stored beside, not over, the reference's, and
        counted apart (:func:`~ragaudit_core.fidelity.judging.verdict_table`)."""
        from ragaudit_core import models

        precision = precision or JUDGE_DEFAULTS["precision"]
        if precision not in JUDGE_PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; use one of {', '.join(JUDGE_PRECISIONS)}")
        if endpoint and precision != JUDGE_DEFAULTS["precision"]:
            raise ValueError("precision applies to a local judge model; an endpoint serves its own")

        graphs = load_graphs(con, run_id, [query_id])
        if not graphs:
            raise ValueError(f"run {run_id!r} has no provenance record for query {query_id!r}")
        if endpoint and not model:
            raise ValueError("an endpoint needs a model name (--judge-model)")
        if endpoint:  # refused here already (scheme, a key in the URL): the URL is stored with the job
            from ragaudit_core.fidelity.endpoint import check_url

            endpoint = check_url(endpoint)
        params = {
            "seeds": list(seeds or JUDGE_DEFAULTS["seeds"]),
            "max_chars": max_chars or JUDGE_DEFAULTS["max_chars"],
            "explanation_tokens": JUDGE_DEFAULTS["explanation_tokens"],
            "endpoint": endpoint,
        }
        if precision != JUDGE_DEFAULTS["precision"]:  # the default stays out: earlier jobs keep their keys
            params["precision"] = precision
        query, citations, context = judge_inputs(graphs[0], params["max_chars"])
        spec = JobSpec(
            kind=self.name,
            run_id=run_id,
            query_id=query_id,
            retriever="",
            generator=model or models.DEFAULT_GENERATOR_NAME,
            method="endpoint" if endpoint else "local",
            params=params,
            device=device,
        )
        return spec, JobInputs(query=query, citations=citations, context=context)

    def _backend(self, spec: JobSpec, generator: Any = None) -> Any:
        from ragaudit_core.fidelity import endpoint
        from ragaudit_core.fidelity.judges import EndpointJudge, LocalJudge
        from ragaudit_core.models import cached_model

        if spec.method == "endpoint":  # whoever queued it, this process calls only what its operator allowed
            url = endpoint.check_allowed(spec.params["endpoint"])
            key = endpoint.api_key()
            endpoint.check_key_transport(url, key)  # refused before any request, with its sentence
            return EndpointJudge(url, spec.generator, api_key=key)
        precision = spec.params.get("precision", JUDGE_DEFAULTS["precision"])
        if precision != JUDGE_DEFAULTS["precision"]:  # a model given by the caller has the default's weights
            generator = None
        gen = generator or cached_model("generator", spec.generator, spec.device, precision)
        judge = LocalJudge(
            gen() if callable(gen) and not hasattr(gen, "model") else gen,
            explanation_tokens=spec.params.get("explanation_tokens", JUDGE_DEFAULTS["explanation_tokens"]),
        )
        if precision != JUDGE_DEFAULTS["precision"]:
            judge.name += f" ({precision})"  # a judge of its own in the panel's table
        return judge

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
        """One row per (citation, judge) with the verdict's fields. While an endpoint's answer is
        awaited, ``progress`` is called again with the last label (about every 0.2 s) so a cancel
        is seen within that time, not after the network answers."""
        backend = self._backend(spec, generator)
        last: dict[str, Any] = {"label": "judge: waiting for the endpoint", "fraction": 0.0}

        def report(label: str, fraction: float) -> None:
            last.update(label=label, fraction=fraction)
            if progress:
                progress(label, fraction)

        if progress and hasattr(backend, "check_cancel"):
            backend.check_cancel = lambda: progress(last["label"], last["fraction"])
        return judge_citations(inputs.query, inputs.citations, inputs.context, backend, spec.params["seeds"], report)

    def result_keys(self, spec: JobSpec) -> dict[str, str]:
        return {"verdicts": "judge-" + spec.job_id()}

    def store(self, con: duckdb.DuckDBPyConnection, spec: JobSpec, result: list[dict]) -> None:
        store_verdicts(con, self.result_keys(spec)["verdicts"], spec.run_id, spec.query_id, result)

    def is_stored(self, con: duckdb.DuckDBPyConnection, spec: JobSpec) -> bool:
        return has_verdicts(con, self.result_keys(spec)["verdicts"])


JUDGE_JOB = JudgeJob()

"""One job description: what to compute, never where.

A job is a pure function of its description and inputs (seed 001's attribution of one
query; later kinds, such as the citation judge, alike): the same :class:`JobSpec` gives the
same stored result in the process, in the dashboard's background worker or on a Ray
cluster. ``device`` says where the models run and is not part of the result's key (results
agree across devices up to floating-point rounding).
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["JobInputs", "JobSpec"]


class JobSpec(BaseModel):
    """What one job computes: ``kind`` for ``(run_id, query_id)`` with the named models, the
    resolved method and its parameters, on ``device``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["attribution", "judge"] = "attribution"
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

    def result_keys(self) -> dict[str, str]:
        """condition → the key of the stored result (as :func:`attribution.explain.result_key`);
        a judge job has one key, ``verdicts``."""
        from ragaudit_core.attribution.explain import result_key

        if self.kind == "judge":
            return {"verdicts": "judge-" + self.job_id()}

        return {
            c: result_key(self.run_id, self.query_id, self.retriever, self.generator, self.method, self.params, c)
            for c in self.conditions
        }


class JobInputs(BaseModel):
    """The data a job reads, resolved from the database by whoever queues it, so a worker on
    another machine needs no database: the query text and its documents in retriever order
    (attribution), or its citations and context (judge)."""

    model_config = ConfigDict(frozen=True)

    query: str
    documents: list[tuple[str, str]] = []  # attribution: (doc_id, text) in retriever order
    citations: list[dict] = []  # judge: [{citation, score}] (Pattern 3's extraction)
    context: list[dict] = []  # judge: the context chunks with provenance

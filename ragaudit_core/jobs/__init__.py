"""Model work as jobs: a job is a pure function of its description and inputs
(:mod:`ragaudit_core.jobspec`), of a kind registered in :mod:`.kinds` (attribution, the citation
judge), planned from and stored into the database by one code path (:mod:`.run`), run in the
process or on a Ray cluster (:mod:`.batch`), or queued (:mod:`.queue`) for the dashboard's
background worker (:mod:`.worker`). The same description gives the same stored result wherever it
runs. This package imports no job kind's package: kinds are found through the registry.
"""

from ragaudit_core.jobs import kinds
from ragaudit_core.jobs.batch import BatchReport, run_batch
from ragaudit_core.jobs.run import execute, is_stored, plan, plan_judge, result_keys, store
from ragaudit_core.jobspec import JobCancelled, JobInputs, JobKind, JobSpec

__all__ = [
    "BatchReport",
    "JobCancelled",
    "JobInputs",
    "JobKind",
    "JobSpec",
    "execute",
    "is_stored",
    "kinds",
    "plan",
    "plan_judge",
    "result_keys",
    "run_batch",
    "store",
]

"""Model work as jobs (issue #16): a job is a pure function of its description and inputs
(:mod:`.spec`), planned from and stored into the database by one code path (:mod:`.run`),
run in the process or on a Ray cluster (:mod:`.batch`), or queued (:mod:`.queue`) for the
dashboard's background worker (:mod:`.worker`). The same description gives the same stored
result wherever it runs.
"""

from ragaudit_core.jobs.batch import BatchReport, run_batch
from ragaudit_core.jobs.run import (
    ATTRIBUTION_DEFAULTS,
    JUDGE_DEFAULTS,
    JobCancelled,
    ModelCache,
    execute,
    is_stored,
    plan,
    plan_judge,
    store,
)
from ragaudit_core.jobs.spec import JobInputs, JobSpec

__all__ = [
    "ATTRIBUTION_DEFAULTS",
    "JUDGE_DEFAULTS",
    "BatchReport",
    "JobCancelled",
    "JobInputs",
    "JobSpec",
    "ModelCache",
    "execute",
    "is_stored",
    "plan",
    "plan_judge",
    "run_batch",
    "store",
]

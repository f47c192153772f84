"""RagAudit's own RAG pipelines, writing logs in its contracts: the retrieval sweep over a
grid of configurations (:mod:`.sweep`, seed 000 appendix A) and a cited pipeline that
records its provenance (:mod:`.citation_pipeline`, seed 002).
"""

from ragaudit_core.harness.citation_pipeline import run_provenance
from ragaudit_core.harness.sweep import (
    BeirData,
    RunConfig,
    SweepError,
    build_prompt,
    chunk_corpus,
    load_beir,
    parse_run_alias,
    run_sweep,
)

__all__ = [
    "BeirData",
    "RunConfig",
    "SweepError",
    "build_prompt",
    "chunk_corpus",
    "load_beir",
    "parse_run_alias",
    "run_provenance",
    "run_sweep",
]

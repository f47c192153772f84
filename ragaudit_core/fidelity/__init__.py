"""Do citations survive the pipeline? (seed 002) Citation extraction and verification
(:mod:`.citations`) against provenance graphs (:mod:`.graph`), the Citation Fidelity Score,
per-stage survival, alerts and the canary test (:mod:`.score`).
"""

from ragaudit_core.fidelity.citations import (
    DEFAULT_PATTERNS,
    Citation,
    CitationPattern,
    extract_citations,
    verify_citation,
)
from ragaudit_core.fidelity.graph import FIDELITY_STAGES, QueryGraph, graph_layout, load_graphs, provenance_runs
from ragaudit_core.fidelity.score import (
    SURVIVAL_LABELS,
    FidelityRules,
    QueryFidelity,
    RunFidelity,
    canary,
    compute_query,
    fidelity_runs,
    summarise_run,
    survival_table,
    tail_comment,
)

__all__ = [
    "DEFAULT_PATTERNS",
    "FIDELITY_STAGES",
    "SURVIVAL_LABELS",
    "Citation",
    "CitationPattern",
    "FidelityRules",
    "QueryFidelity",
    "QueryGraph",
    "RunFidelity",
    "canary",
    "compute_query",
    "extract_citations",
    "fidelity_runs",
    "graph_layout",
    "load_graphs",
    "provenance_runs",
    "summarise_run",
    "survival_table",
    "tail_comment",
    "verify_citation",
]

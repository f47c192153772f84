"""Is the evidence stable? (seed 000) Document- vs span-level Jaccard between runs, collapse,
flips and nulls (:mod:`.metrics`, in SQL; :mod:`.reference`, the pure-Python oracle), stored
per data version (:mod:`.cache`), effects by what changed (:mod:`.effects`), baseline vs
candidate (:mod:`.compare`), one query under the microscope (:mod:`.drilldown`) and the
evidence–answer probe (:mod:`.probe`).
"""

from ragaudit_core.stability.cache import precompute, stability_cached
from ragaudit_core.stability.compare import CompareResult, CompareSummary, compare_runs
from ragaudit_core.stability.drilldown import chunk_overlap, evidence_side_by_side, query_matrix
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.metrics import (
    StabilityError,
    StabilityOptions,
    StabilityResult,
    compute_stability,
    list_runs,
    span_capable_runs,
)
from ragaudit_core.stability.probe import ProbeResult, probe_pair
from ragaudit_core.stability.reference import reference_stability

__all__ = [
    "CompareResult",
    "CompareSummary",
    "ProbeResult",
    "StabilityError",
    "StabilityOptions",
    "StabilityResult",
    "chunk_overlap",
    "compare_runs",
    "compute_stability",
    "effects_by_change",
    "evidence_side_by_side",
    "list_runs",
    "precompute",
    "probe_pair",
    "query_matrix",
    "reference_stability",
    "span_capable_runs",
    "stability_cached",
]

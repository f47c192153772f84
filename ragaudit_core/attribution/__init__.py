"""Does the generator use what the retriever ranked? (seed 001, RAG-E) Integrated Gradients
on the retriever (:mod:`.saliency`), Shapley values of documents on the generator
(:mod:`.shapley` estimators over the :mod:`.generator_game`), RBO/WARG and failure modes
(:mod:`.alignment`), one query computed (:mod:`.compute`) into a typed result (:mod:`.result`), stored
(:mod:`.storage`), and attribution as a job kind (:mod:`.job`).
Models load lazily: importing this package does not import torch.
"""

from ragaudit_core.attribution.alignment import failure_modes, generator_ranking, rbo, warg, warg_floor
from ragaudit_core.attribution.compute import compute_attribution
from ragaudit_core.attribution.generator_game import GeneratorGame
from ragaudit_core.attribution.job import ATTRIBUTION_JOB, explain_query
from ragaudit_core.attribution.result import AttributionResult, TokenSaliency
from ragaudit_core.attribution.saliency import BASELINES, RetrieverSaliency, SaliencyResult
from ragaudit_core.attribution.shapley import (
    ESTIMATORS,
    CachedGame,
    ExactShapley,
    KernelShap,
    MCShap,
    PMCShap,
    ShapleyResult,
    estimator,
)
from ragaudit_core.attribution.storage import (
    AttributionError,
    batch_tables,
    query_documents,
    stored_attribution,
    stored_results,
)

__all__ = [
    "ATTRIBUTION_JOB",
    "BASELINES",
    "ESTIMATORS",
    "AttributionError",
    "AttributionResult",
    "CachedGame",
    "ExactShapley",
    "GeneratorGame",
    "KernelShap",
    "MCShap",
    "PMCShap",
    "RetrieverSaliency",
    "SaliencyResult",
    "ShapleyResult",
    "TokenSaliency",
    "batch_tables",
    "compute_attribution",
    "estimator",
    "explain_query",
    "failure_modes",
    "generator_ranking",
    "query_documents",
    "rbo",
    "stored_attribution",
    "stored_results",
    "warg",
    "warg_floor",
]

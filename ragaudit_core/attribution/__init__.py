"""Does the generator use what the retriever ranked? (seed 001, RAG-E) Integrated Gradients
on the retriever (:mod:`.saliency`), Shapley values of documents on the generator
(:mod:`.shapley` estimators over the :mod:`.generator_game`), RBO/WARG and failure modes
(:mod:`.alignment`), and one logged query explained end to end and stored (:mod:`.explain`).
Models load lazily: importing this package does not import torch.
"""

from ragaudit_core.attribution.alignment import failure_modes, generator_ranking, rbo, warg, warg_floor
from ragaudit_core.attribution.explain import (
    AttributionError,
    batch_tables,
    explain_query,
    query_documents,
    stored_attribution,
)
from ragaudit_core.attribution.generator_game import GeneratorGame
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

__all__ = [
    "BASELINES",
    "ESTIMATORS",
    "AttributionError",
    "CachedGame",
    "ExactShapley",
    "GeneratorGame",
    "KernelShap",
    "MCShap",
    "PMCShap",
    "RetrieverSaliency",
    "SaliencyResult",
    "ShapleyResult",
    "batch_tables",
    "estimator",
    "explain_query",
    "failure_modes",
    "generator_ranking",
    "query_documents",
    "rbo",
    "stored_attribution",
    "warg",
    "warg_floor",
]

"""The report's methods appendix: every metric defined with its source (plain text)."""

from __future__ import annotations

from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS, EXACT_SHAPLEY_MAX_DOCS

__all__ = ["METHODS", "METHODS_TEXT", "SOURCES"]

_IG_RULES = {"gausslegendre": "Gauss–Legendre quadrature", "riemann_right": "a right Riemann sum"}

METHODS = [
    (
        "Evidence identity and Jaccard (seed 000, §3)",
        "Each evidence entry has a document identity (canonical doc_id) and a span identity (doc_id, span_hash), "
        "the hash computed over the normalised cited text. For a query q and runs A, B with evidence sets E_A, E_B: "
        "J(q; A, B) = |E_A ∩ E_B| / |E_A ∪ E_B|; both empty → 1 (a stable “no evidence” state), one empty → 0. "
        "J_avg is the mean over queries; mean J_doc / mean J_span over every (query, pair) cell.",
    ),
    (
        "Stability Gap, collapse, flips, nulls (seed 000, §3–4)",
        "Gap ratio = mean J_doc / mean J_span (undefined when mean J_span = 0). A pair collapses on a query when "
        "J_span = 0 while both lists are non-empty; the collapse rate is the share of queries with some collapsed "
        "pair (per pair: share of queries collapsed). A query flips when J < τ (τ = 0.5 unless chosen). Null loss: A "
        "non-empty, B empty; null gain: the reverse; null rate: share of queries with empty evidence. J_min: a "
        "query's worst J over every pair. Effects by what changed: a figure's mean over the pairs whose runs differ "
        "in that setting (pairs weigh equally); its 95 % interval (percentile bootstrap over queries, the resamples "
        "every pair shares) takes on each resample the mean of its pairs' figures on that resample.",
    ),
    (
        "Evidence–answer probe (seed 000, Table 1)",
        "Answer similarity = cosine of SBERT embeddings (all-MiniLM-L6-v2) of the two runs' answers to the same "
        "query; drift counts answers with similarity < 0.9 and < 0.8; Spearman ρ between per-query J_span and "
        "similarity; silent jitter: J_span < τ with similarity ≥ 0.9.",
    ),
    (
        "Citation Fidelity Score (seed 002)",
        "Citations are extracted from the generated text by configurable patterns; each is verified against the "
        "query's provenance graph: 1.0 when the cited document and page match a source reachable from the "
        "generation node, 0.3 for the right document with the wrong page, 0.0 otherwise; parse failures are counted "
        "separately. CFS of a query = mean of its citations' scores (queries without citations have none); the "
        "product form multiplies per-stage survival. p50/p95/p99 are percentiles of per-query CFS (the seed's "
        "literal reading: p95 is the 95th percentile). Stage survival = share of the queries with ground truth that "
        "reach a stage holding a ground-truth source and still hold one after it; the funnel counts the same per "
        "query over every query with ground truth (a stage a query's pipeline skips loses nothing). Generation "
        "keeps a source when a citation verified against the context (score 1) names a ground-truth document. "
        "Canary: two-sided Mann–Whitney U on per-query CFS between two runs.",
    ),
    (
        "Retriever saliency (seed 001, §3.1)",
        "Integrated Gradients over the retriever's input token embeddings, for the query and for each document with "
        "the other side fixed, with the retriever's own similarity as output (the cosine of the two embeddings, "
        "pooled as the encoder pools, each text cut at the encoder's input length): β_i = (x_i − x⁰_i) · "
        "∫₀¹ ∂s(x⁰ + α(x − x⁰))/∂x_i dα, the integral by "
        f"{_IG_RULES[ATTRIBUTION_DEFAULTS['ig_method']]} with L = {ATTRIBUTION_DEFAULTS['ig_steps']} points by "
        "default (each stored result records its rule and L); baseline: every non-special token replaced by "
        f"[{ATTRIBUTION_DEFAULTS['ig_baseline'].upper()}] by default. The completeness ratio Σβ / (s(x) − s(x⁰)) "
        "is reported with each result (undefined for an empty text, whose baseline is itself).",
    ),
    (
        "Generator attribution (seed 001, §3.2, Algorithm 1)",
        "The answer is generated once, greedily, with all documents; for a coalition S of documents the prompt is "
        "rebuilt and v_t(S) = log p(y_t | y_<t, prompt(S)) by teacher forcing (eq. 10). Shapley values per output "
        f"token: exact up to {EXACT_SHAPLEY_MAX_DOCS} documents (Σφ = v(all) − v(none)), KernelSHAP, MCSHAP or "
        "PMCSHAP (paired coalitions, "
        "N perturbations, M fits on subsets). Document importance = mean over output tokens (eq. 11).",
    ),
    (
        "Alignment: RBO, WARG, failure modes (seed 001, §3.3, §5.2)",
        "RBO(S, T; p) = (1 − p) Σ_{d=1..k} p^{d−1} |S_:d ∩ T_:d| / d, truncated at the list depth k (eq. 12); "
        "WARG(p) = 1 − RBO, so identical lists give p^k; the extrapolated RBO of Webber et al. is an option. "
        "Ranks count from 1 (the top). Wasted retrieval: the retriever's rank-1 document gets generator rank 4 "
        "or lower; noise distraction: the generator's rank-1 document had retriever rank 4 or lower (the seed's "
        "“rank > 2” counts from 0).",
    ),
    (
        "Deploy gate",
        "Each rule names a metric, where it applies (doc/span level, a pipeline stage or every stage), a comparison "
        "and a threshold, absolute or relative to the baseline (candidate − baseline). Pair metrics (J_avg, flip, "
        "collapse, null loss/gain) are computed between the two runs; run metrics per run. A significant rule decides "
        "on the 95 % bootstrap interval (inconclusive when it straddles the threshold). The verdict fails when an "
        "applicable rule fails or it is thin (min_applicable, require); rules without data are not applicable.",
    ),
]

SOURCES = [
    "Seed 000 — P. Ponnuraj, “Document Overlap Is Not Evidence Continuity: Measuring Retrieval Jitter in "
    "Citation-Based RAG Evaluation” (RagCiteCheck; doi:10.5281/zenodo.18645598).",
    "Seed 001 — K. Randl, G. Rocchietti, A. Henriksson, Z. Abedjan, T. Lindgren, J. Pavlopoulos, “RAG-E: "
    "Quantifying Retriever-Generator Alignment and Failure Modes”, arXiv:2601.21803 (2026).",
    "Seed 002 — “RAG Citation Integrity: Measure Accuracy Loss in Pipelines” (technical article on stage-wise "
    "provenance and the Citation Fidelity Score).",
    "W. Webber, A. Moffat, J. Zobel, “A similarity measure for indefinite rankings”, ACM TOIS 28(4), 2010 (RBO).",
    "M. Sundararajan, A. Taly, Q. Yan, “Axiomatic Attribution for Deep Networks”, ICML 2017 (Integrated Gradients).",
]

METHODS_TEXT = "".join(t + b for t, b in METHODS) + "".join(SOURCES)

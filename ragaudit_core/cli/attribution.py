"""``ragaudit attribute``: explain logged queries — IG on the retriever, Shapley values of the
documents on the generator, WARG and failure modes (seed 001)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragaudit_core.cli.common import Device, LazyModels, connect_db, emit_json, fail
from ragaudit_core.logs import catalog, store

__all__ = ["attribute"]


def attribute(
    db: Annotated[Path, typer.Option("--db", help="DuckDB file holding the run's evidence logs (with texts).")],
    run: Annotated[str, typer.Option("--run", help="The run whose logged queries and documents are explained.")],
    queries: Annotated[Optional[str], typer.Option("--queries", help="Comma-separated query ids.")] = None,
    all_queries: Annotated[bool, typer.Option("--all", help="Every query of the run that has texts.")] = False,
    method: Annotated[str, typer.Option("--method", help="auto, exact, kernel, mc or pmc.")] = "auto",
    n_samples: Annotated[int, typer.Option("--n-samples", help="N coalitions (kernel, mc, pmc).")] = 20,
    n_fits: Annotated[int, typer.Option("--n-fits", help="M Monte-Carlo fits (mc, pmc).")] = 200,
    max_docs: Annotated[int, typer.Option("--max-docs", help="Explain the first K documents.")] = 5,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 48,
    ig_steps: Annotated[int, typer.Option("--ig-steps", help="L Riemann steps of IG.")] = 100,
    ig_baseline: Annotated[str, typer.Option("--ig-baseline", help="unk, mask, pad or zeros.")] = "unk",
    shuffle: Annotated[bool, typer.Option("--shuffle", help="Also attribute with the documents shuffled (seeded).")] = False,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Device = "auto",
    retriever: Annotated[Optional[str], typer.Option("--retriever", help="Encoder model id or folder.")] = None,
    generator: Annotated[Optional[str], typer.Option("--generator", help="Causal LM id, folder or .gguf.")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the results as JSON ('-' = stdout).")] = None,
) -> None:
    """Explain logged queries: IG on the retriever, Shapley on the generator, WARG (seed 001)."""
    from tqdm import tqdm

    from ragaudit_core.attribution.explain import AttributionError, batch_tables, explain_query
    from ragaudit_core.models import DEFAULT_EMBEDDER, DEFAULT_GENERATOR_NAME, ModelLoadError

    if method not in ("auto", "exact", "kernel", "mc", "pmc"):
        fail(f"--method must be auto, exact, kernel, mc or pmc, not {method!r}")
    if ig_baseline not in ("unk", "mask", "pad", "zeros"):
        fail(f"--ig-baseline must be unk, mask, pad or zeros, not {ig_baseline!r}")
    if not db.exists():
        fail(f"{db}: no such database; load logs first with `ragaudit ingest PATH... --db {db}`")
    try:
        con = connect_db(db)
    except store.StoreError as e:
        fail(str(e))
    qids = _chosen_queries(con, run, queries, all_queries)
    models = LazyModels(retriever, generator, device)
    out = []
    try:
        for q in tqdm(qids, desc=f"attribute {run}", unit="query"):
            out += explain_query(con, run, q, embedder=models.embedder, generator=models.generator,
                                 retriever_name=retriever or DEFAULT_EMBEDDER,
                                 generator_name=generator or DEFAULT_GENERATOR_NAME, method=method,
                                 n_samples=n_samples, n_fits=n_fits, seed=seed, max_docs=max_docs,
                                 max_new_tokens=max_new_tokens, ig_steps=ig_steps, ig_baseline=ig_baseline,
                                 shuffle=shuffle)
    except (AttributionError, ModelLoadError, ValueError) as e:
        fail(str(e))
    for r in out:
        typer.echo(f"{r['query_id']}: {r['method']}  generator ranking "
                   f"{' > '.join(str(i + 1) for i in r['generator_ranking'])}  "
                   f"WARG(0.5) {r['warg']['0.5']:.3f}  WARG(0.9) {r['warg']['0.9']:.3f}  "
                   f"wasted retrieval {r['wasted_retrieval']}  noise distraction {r['noise_distraction']}")
    tables = batch_tables(con, run)
    if len(qids) > 1 and tables:
        typer.echo("\nfailure rates (stored results of the run):")
        typer.echo(tables["failure"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        typer.echo("\nmean WARG by p:")
        typer.echo(tables["warg"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    emit_json({"results": out, "tables": {k: json.loads(v.to_json(orient="records")) for k, v in tables.items()}},
              json_out)


def _chosen_queries(con, run: str, queries: str | None, all_queries: bool) -> list[str]:
    """The ``--queries`` of ``run`` (each must exist), or all of them with ``--all``."""
    known = catalog.query_ids(con, run)
    if not known:
        fail(f"run {run!r} not found; runs are: {', '.join(map(repr, catalog.evidence_run_ids(con)))}")
    if all_queries:
        return known
    if not queries:
        fail("name the queries (--queries q1,q2) or pass --all")
    qids = [q.strip() for q in queries.split(",") if q.strip()]
    missing = [q for q in qids if q not in set(known)]
    if missing:
        fail(f"run {run!r} has no quer{'y' if len(missing) == 1 else 'ies'} {', '.join(map(repr, missing))}")
    return qids

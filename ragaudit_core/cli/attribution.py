"""``ragaudit attribute``: explain logged queries — IG on the retriever, Shapley values of the
documents on the generator, WARG and failure modes (seed 001)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import duckdb
import typer

from ragaudit_core.cli.common import Device, emit_json, fail, open_existing_db
from ragaudit_core.cli.jobs import enqueue_and_report
from ragaudit_core.cli.terminal import say, shown
from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS as D
from ragaudit_core.defaults import EXACT_SHAPLEY_MAX_DOCS, IG_BASELINES, IG_METHODS, SHAPLEY_METHODS
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import catalog
from ragaudit_core.wording import listed

if TYPE_CHECKING:
    from ragaudit_core.jobs import BatchReport, JobSpec

__all__ = ["attribute"]


def attribute(
    db: Annotated[Path, typer.Option("--db", help="DuckDB file holding the run's evidence logs (with texts).")],
    run: Annotated[str, typer.Option("--run", help="The run whose logged queries and documents are explained.")],
    queries: Annotated[str | None, typer.Option("--queries", help="Comma-separated query ids.")] = None,
    all_queries: Annotated[bool, typer.Option("--all", help="Every query of the run that has texts.")] = False,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help=f"auto (default: exact up to {EXACT_SHAPLEY_MAX_DOCS} documents, PMCSHAP beyond), "
            + ", ".join(m for m in SHAPLEY_METHODS if m != "auto"),
        ),
    ] = D["method"],
    n_samples: Annotated[int, typer.Option("--n-samples", min=1, help="N coalitions (kernel, mc, pmc).")] = D[
        "n_samples"
    ],
    n_fits: Annotated[int, typer.Option("--n-fits", min=1, help="M Monte-Carlo fits (mc, pmc).")] = D["n_fits"],
    max_docs: Annotated[int, typer.Option("--max-docs", min=1, help="Explain the first K documents.")] = D["max_docs"],
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1)] = D["max_new_tokens"],
    ig_steps: Annotated[int, typer.Option("--ig-steps", min=1, help="L points of the IG path integral.")] = D[
        "ig_steps"
    ],
    ig_method: Annotated[str, typer.Option("--ig-method", help=" or ".join(IG_METHODS) + ".")] = D["ig_method"],
    ig_baseline: Annotated[str, typer.Option("--ig-baseline", help=", ".join(IG_BASELINES) + ".")] = D["ig_baseline"],
    shuffle: Annotated[
        bool, typer.Option("--shuffle", help="Also attribute with the documents shuffled (seeded).")
    ] = False,
    seed: Annotated[int, typer.Option("--seed")] = D["seed"],
    device: Device = "auto",
    retriever: Annotated[str | None, typer.Option("--retriever", help="Encoder model id or folder.")] = None,
    generator: Annotated[str | None, typer.Option("--generator", help="Causal LM id, folder or .gguf.")] = None,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run the queries as Ray tasks: 'local' starts a local "
            "cluster, anything else is the address of one to join.",
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="CPUs of the local Ray cluster (default: all).")
    ] = None,
    json_out: Annotated[str | None, typer.Option("--json", help="Write the results as JSON ('-' = stdout).")] = None,
    queue_only: Annotated[
        bool, typer.Option("--queue", help="Queue the jobs for a worker (ragaudit worker) instead of running them.")
    ] = False,
) -> None:
    """Explain logged queries: IG on the retriever, Shapley on the generator, WARG (seed 001).

    Each query is one job; results already stored are skipped, so a batch resumes where a
    previous one stopped. A failed query is reported with its error; the others are kept."""
    from tqdm import tqdm

    from ragaudit_core.attribution.storage import AttributionError
    from ragaudit_core.jobs import plan, run_batch

    for opt, value, choices in (
        ("--method", method, SHAPLEY_METHODS),
        ("--ig-baseline", ig_baseline, IG_BASELINES),
        ("--ig-method", ig_method, IG_METHODS),
    ):
        if value not in choices:
            fail(f"{opt} must be one of {', '.join(choices)}, not {value!r}")
    con = open_existing_db(db, "logs with texts")
    qids = _chosen_queries(con, run, queries, all_queries)
    opts: dict[str, Any] = dict(
        method=method,
        n_samples=n_samples,
        n_fits=n_fits,
        seed=seed,
        max_docs=max_docs,
        max_new_tokens=max_new_tokens,
        ig_steps=ig_steps,
        ig_baseline=ig_baseline,
        ig_method=ig_method,
    )
    unplanned: list[tuple[str, str]] = []
    planned: list[JobSpec] = []

    def jobs():  # planned one at a time: memory stays flat however many queries
        for q in qids:
            try:
                spec, inputs = plan(
                    con, run, q, retriever=retriever, generator=generator, device=device, shuffle=shuffle, **opts
                )
            except AttributionError as e:
                unplanned.append((q, str(e)))
                bar.update(1)
                continue
            planned.append(spec)
            yield spec, inputs

    if len(qids) == 1:  # one query that cannot be explained: say why, exit 2
        try:
            plan(con, run, qids[0], max_docs=max_docs)
        except AttributionError as e:
            fail(str(e))
    if queue_only and ray:
        fail("--queue and --ray: queued jobs run in a worker (ragaudit worker), not on Ray; choose one")
    desc = f"attribute {run}" + (f" on Ray ({ray})" if ray else "")
    bar = tqdm(total=len(qids), desc=shown(desc), unit="query", disable=queue_only)
    if queue_only:
        enqueue_and_report(con, db, jobs(), unplanned, None)
    try:
        rep = run_batch(con, jobs(), ray=ray, workers=workers, on_result=lambda _s, _st: bar.update(1))
    except (RagAuditError, RuntimeError) as e:  # RuntimeError: Ray not installed or failing
        fail(str(e))
    finally:
        bar.close()
    _report(con, run, qids, planned, unplanned, rep, json_out)
    if unplanned or rep.failed:
        raise typer.Exit(1)


def _report(
    con: duckdb.DuckDBPyConnection,
    run: str,
    qids: list[str],
    planned: list[JobSpec],
    unplanned: list[tuple[str, str]],
    rep: BatchReport,
    json_out: str | None,
) -> None:
    """Print each explained query, the batch's counts and failures, the run's tables; write ``--json``."""
    from ragaudit_core.attribution.storage import batch_tables, stored_results
    from ragaudit_core.jobs import result_keys

    out = []
    for spec in planned:
        keys = result_keys(spec)
        have = stored_results(con, list(keys.values()))
        out += [(c, have[keys[c]]) for c in spec.conditions if keys[c] in have]
    several = len({c for c, _r in out}) > 1  # with --shuffle: which order each line is about
    for c, r in out:
        say(
            f"{r.query_id}{f' ({c} order)' if several else ''}: {r.method}  generator ranking "
            f"{' > '.join(str(i + 1) for i in r.generator_ranking)}  "
            f"WARG(0.5) {r.warg[0.5]:.3f}  WARG(0.9) {r.warg[0.9]:.3f}  "
            f"wasted retrieval {r.wasted_retrieval}  noise distraction {r.noise_distraction}"
        )
    say(
        f"{len(rep.done)} computed, {len(rep.skipped)} already stored, {len(rep.failed) + len(unplanned)} "
        f"failed ({rep.runner}, {rep.seconds:.1f} s)",
        err=True,
    )
    for q, err in unplanned + rep.failed:
        say(f"failed: query {q}: {err}", err=True)
    tables = batch_tables(con, run)
    if len(qids) > 1 and tables:
        say()
        say("failure rates (stored results of the run):")
        say(tables["failure"].to_string(index=False, float_format=lambda x: f"{x:.3f}"), lines=True)
        say()
        say("mean WARG by p:")
        say(tables["warg"].to_string(index=False, float_format=lambda x: f"{x:.3f}"), lines=True)
        say()
        say("95 % intervals over the explained queries (Wilson for the rates, the percentile bootstrap for means):")
        say(tables["intervals"].to_string(index=False, float_format=lambda x: f"{x:.3f}", na_rep="-"), lines=True)
    emit_json(
        {
            "results": [{"condition": c, **r.to_json()} for c, r in out],
            "failed": [{"query_id": q, "error": e} for q, e in unplanned + rep.failed],
            "tables": {k: json.loads(v.to_json(orient="records")) for k, v in tables.items()},
        },
        json_out,
    )


def _chosen_queries(con: duckdb.DuckDBPyConnection, run: str, queries: str | None, all_queries: bool) -> list[str]:
    """The ``--queries`` of ``run`` (each must exist), or all of them with ``--all``."""
    known = catalog.query_ids(con, run)
    if not known:
        fail(f"run {run!r} not found; runs are: {', '.join(map(repr, catalog.evidence_run_ids(con)))}")
    if all_queries and queries:
        fail("--all and --queries both name the queries: give one of them")
    if all_queries:
        return known
    if not queries:
        fail("name the queries (--queries q1,q2) or pass --all")
    qids = [q.strip() for q in queries.split(",") if q.strip()]
    have = set(known)  # once: a run may hold 100,000s of queries
    missing = [q for q in qids if q not in have]
    if missing:
        fail(f"run {run!r} has no {listed('query', list(map(repr, missing)))}")
    return qids

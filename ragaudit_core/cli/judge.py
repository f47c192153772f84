"""``ragaudit judge``: seed 002's Pattern 4 — an LLM judge panel verifies each citation of a
run's provenance records against the retrieved context, beside Pattern 3's rule-based score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragaudit_core.cli.common import Device, connect_db, emit_json, fail
from ragaudit_core.logs import store

__all__ = ["judge"]


def judge(
    db: Annotated[Path, typer.Option("--db", help="DuckDB file holding the run's provenance logs.")],
    run: Annotated[str, typer.Option("--run", help="The provenance run whose citations are judged.")],
    queries: Annotated[Optional[str], typer.Option("--queries", help="Comma-separated query ids (default: all).")] = None,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", help="Causal LM id, folder or .gguf (local), "
                                                       "or the endpoint's model name (default: the packaged "
                                                       "SmolLM2, local).")] = None,
    endpoint: Annotated[Optional[str], typer.Option("--endpoint", help="OpenAI-compatible base URL (e.g. "
                                                    "http://localhost:8000/v1); API key from "
                                                    "RAGAUDIT_JUDGE_API_KEY.")] = None,
    judges: Annotated[int, typer.Option("--judges", help="Judges in the panel: seeds 0..n-1 (seed 0 greedy).")] = 3,
    device: Device = "auto",
    ray: Annotated[Optional[str], typer.Option("--ray", help="Run as Ray tasks: 'local' or a cluster address.")] = None,
    workers: Annotated[Optional[int], typer.Option("--workers", help="CPUs of the local Ray cluster.")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the verdicts as JSON ('-' = stdout).")] = None,
) -> None:
    """Judge a run's citations with an LLM panel (seed 002, Pattern 4); majority vote,
    disagreement rate and agreement with the rule-based verification."""
    from tqdm import tqdm

    from ragaudit_core.fidelity import provenance_runs
    from ragaudit_core.fidelity.judging import judge_summary, verdict_table
    from ragaudit_core.jobs import plan_judge, run_batch

    if judges < 1:
        fail("--judges must be at least 1")
    if not db.exists():
        fail(f"{db}: no such database; load provenance logs first with `ragaudit ingest PATH... --db {db}`")
    try:
        con = connect_db(db)
    except store.StoreError as e:
        fail(str(e))
    if run not in provenance_runs(con):
        fail(f"run {run!r} has no provenance logs; provenance runs: {', '.join(map(repr, provenance_runs(con)))}")
    known = [q for (q,) in con.execute("SELECT query_id FROM prov_records WHERE run_id = ? ORDER BY query_id",
                                       [run]).fetchall()]
    qids = known if not queries else [q.strip() for q in queries.split(",") if q.strip()]
    missing = sorted(set(qids) - set(known))
    if missing:
        fail(f"run {run!r} has no provenance record for {', '.join(map(repr, missing))}")
    try:
        jobs = [plan_judge(con, run, q, model=judge_model, endpoint=endpoint, seeds=tuple(range(judges)),
                           device=device) for q in qids]
    except ValueError as e:
        fail(str(e))
    jobs = [(s, i) for s, i in jobs if i.citations]           # records without citations: nothing to judge
    bar = tqdm(total=len(jobs), desc=f"judge {run}", unit="query")
    try:
        rep = run_batch(con, jobs, ray=ray, workers=workers, on_result=lambda _s, _st: bar.update(1))
    except RuntimeError as e:
        fail(str(e))
    finally:
        bar.close()
    s = judge_summary(con, run)
    a, d = s["agreement"], s["disagreement"]
    typer.echo(f"{run}: {s['n_citations']} citations judged by {judges} judge(s); "
               f"agreement with Pattern 3 {_pct(a['rate'])}; judges disagree on {_pct(d['rate'])} of citations "
               f"(pairwise {_pct(d['pairwise'])}); {s['n_invalid_votes']} invalid vote(s)")
    for k, v in a["confusion"].items():
        typer.echo(f"  rule → judges: {k}: {v}")
    typer.echo(f"{len(rep.done)} computed, {len(rep.skipped)} already stored, {len(rep.failed)} failed "
               f"({rep.runner}, {rep.seconds:.1f} s)", err=True)
    for q, err in rep.failed:
        typer.echo(f"failed: query {q}: {err}", err=True)
    table = verdict_table(con, run).drop(columns=["_votes"], errors="ignore")
    emit_json({"summary": s, "citations": json.loads(table.to_json(orient="records"))}, json_out)
    if rep.failed:
        raise typer.Exit(1)


def _pct(v) -> str:
    return "n/a" if v is None else f"{v:.1%}"

"""``ragaudit quality``: ranking quality of each run from relevance labels, with intervals and
paired tests between runs (does jitter cost quality?)."""

from __future__ import annotations

from typing import Annotated

import typer

from ragaudit_core.cli.common import (
    DbOrMemory,
    DocidMap,
    LogPaths,
    NoStoredPassages,
    NoStoredQuestions,
    Qrels,
    Queries,
    alias_run,
    aliased,
    emit_json,
    fail,
    ints,
    open_logs,
    read_docid_map,
)
from ragaudit_core.cli.terminal import say
from ragaudit_core.intervals import DEFAULT_RESAMPLES, DEFAULT_SEED
from ragaudit_core.logs.qrels import unlabelled_runs_note
from ragaudit_core.logs.selection import comparable_runs, natural_sorted
from ragaudit_core.quality import DEFAULT_CUTOFFS
from ragaudit_core.quality.summary import QualityResult, compute_quality
from ragaudit_core.wording import bracket, counted, listed

__all__ = ["quality"]


def quality(
    paths: LogPaths = None,
    db: DbOrMemory = None,
    qrels: Qrels = None,
    queries: Queries = None,
    no_stored_questions: NoStoredQuestions = False,
    no_stored_passages: NoStoredPassages = False,
    docid_map: DocidMap = None,
    k: Annotated[str, typer.Option("--k", help="Cut-offs, comma-separated.")] = ",".join(map(str, DEFAULT_CUTOFFS)),
    runs: Annotated[
        str | None, typer.Option("--runs", help="Comma-separated runs (default: those sharing queries).")
    ] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Pair every run with this one only.")] = None,
    resamples: Annotated[
        int, typer.Option("--resamples", help="Bootstrap resamples of the queries.")
    ] = DEFAULT_RESAMPLES,
    seed: Annotated[
        int, typer.Option("--seed", help="Seed of the resampling and of the randomisation test.")
    ] = DEFAULT_SEED,
    test: Annotated[str, typer.Option("--test", help="Paired test: t (Student) or randomization (Fisher).")] = "t",
    json_out: Annotated[str | None, typer.Option("--json", help="Write the results as JSON ('-' = stdout).")] = None,
) -> None:
    """nDCG@k, recall@k, precision@k, hit rate, MRR and MAP per run (trec_eval's definitions) with
    95 % bootstrap intervals; per run pair the change with its interval and a paired test."""
    if test not in ("t", "randomization"):
        fail(f"--test must be t or randomization, not {test!r}")
    if resamples < 0:
        fail("--resamples must be 0 or more")
    cutoffs = ints(k, "--k")
    con = open_logs(
        paths,
        db,
        qrels=qrels,
        queries=queries,
        stored_questions=not no_stored_questions,
        stored_passages=not no_stored_passages,
    )
    if not con.execute("SELECT count(*) FROM qrels").fetchall()[0][0]:
        fail(
            "no relevance labels are loaded: give --qrels FILE (TREC or BEIR qrels), "
            "or a log folder holding a qrels/ folder"
        )
    all_runs = natural_sorted(r for (r,) in con.execute("SELECT DISTINCT run_id FROM records").fetchall())
    chosen = aliased([r.strip() for r in runs.split(",") if r.strip()], all_runs) if runs else comparable_runs(con).runs
    baseline = alias_run(baseline, all_runs) or baseline if baseline else None
    unknown = [r for r in [*chosen, *([baseline] if baseline else [])] if r not in all_runs]
    if unknown:
        fail(f"{listed('unknown run', list(map(repr, unknown)))}; runs are: {', '.join(map(repr, all_runs))}")
    if baseline and baseline not in chosen:
        chosen = [baseline, *chosen]
    pairs = [(baseline, r) for r in chosen if r != baseline] if baseline else None
    mapping = read_docid_map(con, docid_map)
    try:
        result = compute_quality(
            con,
            chosen,
            cutoffs=cutoffs,
            pairs=pairs,
            docid_map=mapping,
            resamples=resamples,
            seed=seed,
            test=test,  # type: ignore[arg-type]
        )
    except ValueError as e:
        fail(str(e))
    if json_out != "-":
        _print(result, unlabelled_runs_note(con, chosen))
    emit_json(result.to_json(), json_out)


def _print(res: QualityResult, note: str | None = None) -> None:
    """The table; ``note``: why the loaded labels label no query of some run (said under its rows)."""
    head = [*[m for m in res.metrics if m.startswith(("ndcg@", "recall@"))][:4], "mrr", "map"]
    say(
        "ranking quality, mean over labelled queries "
        + (
            f"[95 % bootstrap interval, {counted(res.resamples, 'resample')}]"
            if res.resamples
            else "(no resamples: no intervals)"
        )
    )
    for r in res.runs:
        cells = "  ".join(
            f"{m} {e.value:.3f} {bracket(e.lo, e.hi)}".rstrip() for m, e in r.metrics.items() if m in head and e.n
        )
        left = f" ({r.n_unlabelled} unlabelled left out)" if r.n_unlabelled else ""
        say(f"{r.run_id}: {counted(r.n_queries, 'query')}{left}  {cells or 'no labelled query'}")
    if note:
        say(f"note: {note}")
    key = "ndcg@10" if "ndcg@10" in res.metrics else next(m for m in res.metrics if m.startswith("ndcg@"))
    if res.pairs:
        ci = " [interval]" if res.resamples else ""
        say()
        say(f"change of {key} (b − a){ci}, paired {res.test}-test p (Holm over the pair's metrics)")
    for (a, b), ms in res.pairs.items():
        c = ms[key]
        say(
            f"{a} → {b}: {c.delta:+.3f} {bracket(c.lo, c.hi, '+.3f')}".rstrip()
            + f"  p {c.p:.3g} (Holm {c.p_holm:.3g}), n {c.n}"
        )

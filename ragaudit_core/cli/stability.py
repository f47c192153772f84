"""``ragaudit stability`` and ``ragaudit probe``: evidence stability across runs and the
evidence–answer probe (seed 000)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import duckdb
import pandas as pd
import typer

from ragaudit_core.cli.common import (
    CasefoldSpans,
    CaseSensitive,
    CollapseWs,
    DbOrMemory,
    Device,
    DocIdKey,
    DocidMap,
    Format,
    LazyModels,
    LogPaths,
    MaxLine,
    NoStoredPassages,
    NoStoredQuestions,
    Qrels,
    Queries,
    RunId,
    alias_run,
    aliased,
    emit_json,
    fail,
    fmt,
    ingest_options,
    open_logs,
    read_docid_map,
    resolve_run,
)
from ragaudit_core.cli.terminal import say
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.errors import RagAuditError
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import catalog
from ragaudit_core.logs.jsonl import DEFAULT_MAX_LINE_BYTES
from ragaudit_core.logs.qrels import unlabelled_runs_note
from ragaudit_core.logs.selection import comparable_runs
from ragaudit_core.quality.summary import QualityResult, compute_quality
from ragaudit_core.review.runlabels import run_labels
from ragaudit_core.review.spreadsheet import write_csv
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.metrics import NoComparablePairs, StabilityOptions, StabilityResult, compute_stability
from ragaudit_core.stability.mixed_ids import pairs_to_compare
from ragaudit_core.stability.uncertainty import EFFECT_INTERVAL_METRICS
from ragaudit_core.wording import bracket

__all__ = ["probe", "stability"]


_TABLE_RUN_CHARS = 40
"""Characters of a run id in the pairs table (cut in the middle: :func:`run_labels`)."""


def stability(
    paths: LogPaths = None,
    db: DbOrMemory = None,
    docid_map: DocidMap = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Compare every run with this one.")] = None,
    runs: Annotated[str | None, typer.Option("--runs", help="Comma-separated runs to include (default: all).")] = None,
    flip_threshold: Annotated[
        float, typer.Option("--flip-threshold", help="τ: a pair flips when J < τ.")
    ] = FLIP_THRESHOLD,
    topk: Annotated[int | None, typer.Option("--topk", help="Keep only the first K entries of each list.")] = None,
    allow_missing: Annotated[
        bool, typer.Option("--allow-missing", help="Evaluate the queries all runs share.")
    ] = False,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    fmt: Format = "auto",
    run_id: RunId = None,
    doc_id_key: DocIdKey = None,
    queries: Queries = None,
    no_stored_questions: NoStoredQuestions = False,
    no_stored_passages: NoStoredPassages = False,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the metrics as JSON here ('-' = stdout).")
    ] = None,
    csv_dir: Annotated[
        Path | None, typer.Option("--csv-dir", help="Write runs.csv, pairs.csv, queries.csv here.")
    ] = None,
    qrels: Qrels = None,
    resamples: Annotated[
        int, typer.Option("--resamples", help="Bootstrap resamples of the queries for 95 % intervals (0: none).")
    ] = DEFAULT_RESAMPLES,
) -> None:
    """Document- and span-level evidence stability across runs (seed 000), with 95 % bootstrap
    intervals; with relevance labels loaded, ranking quality beside it (does jitter cost quality?)."""
    if resamples < 0:
        fail("--resamples must be 0 or more")
    con = open_logs(
        paths,
        db,
        options=ingest_options(
            case_sensitive, collapse_internal_whitespace, casefold_spans, max_line_bytes, fmt, run_id, doc_id_key
        ),
        qrels=qrels,
        queries=queries,
        stored_questions=not no_stored_questions,
        stored_passages=not no_stored_passages,
    )
    try:
        mapping = read_docid_map(con, docid_map)
        every = catalog.all_run_ids(con)  # (a grid alias — base, c128 — names its run, as gate takes it)
        chosen = aliased([r.strip() for r in runs.split(",") if r.strip()], every) if runs else None
        baseline = alias_run(baseline, every) or baseline if baseline else None
        if chosen is None and baseline is None:
            selection = comparable_runs(con)  # runs left out (no query shared, other questions, few queries) named
            if selection.partial:
                chosen = selection.runs
                note = (selection.note or "").replace("; pick runs", "; use --runs")
                note = re.sub(r"; pick (it|them)\b", r"; name \1 with --runs", note)
                say(f"warning: {note}", err=True)
        opts = StabilityOptions(
            runs=chosen,
            baseline=baseline,
            flip_threshold=flip_threshold,
            topk=topk,
            allow_missing=allow_missing,
            docid_map=mapping,
            resamples=resamples,
        )
        result = compute_stability(con, opts)
        quality = _quality(con, result, opts, resamples)
    except NoComparablePairs as e:  # every pair mixes document ids with passage hashes: name the runs to pick
        fail(f"{e} (--runs)")
    except RagAuditError as e:
        fail(str(e))
    if json_out != "-":
        _print_stability(result)
        if quality is not None:
            _print_quality(quality, unlabelled_runs_note(con, result.summary.runs))
    for w in result.summary.warnings:
        say(f"warning: {w}", err=True)
    emit_json({**result.to_json(), **({"quality": quality.to_json()} if quality is not None else {})}, json_out)
    if csv_dir:
        try:
            csv_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:  # a file where the folder should be, a read-only disk
            why = "a file, not a folder" if isinstance(e, FileExistsError) else e.strerror or e
            fail(f"--csv-dir {csv_dir}: {why}")
        write_csv(result.runs, csv_dir / "runs.csv")  # formula-leading cells neutralised
        write_csv(result.pairs, csv_dir / "pairs.csv")
        write_csv(result.queries, csv_dir / "queries.csv")


def _quality(
    con: duckdb.DuckDBPyConnection, result: StabilityResult, opts: StabilityOptions, resamples: int
) -> QualityResult | None:
    """Ranking quality of the compared runs and pairs, when relevance labels are loaded."""
    if not con.execute("SELECT count(*) FROM qrels").fetchall()[0][0]:
        return None
    pairs = [(a, b) for a, b in result.pairs[result.pairs.level == "doc"][["run_a", "run_b"]].itertuples(index=False)]
    return compute_quality(con, result.summary.runs, pairs=pairs, docid_map=opts.docid_map, resamples=resamples)


def _print_quality(q: QualityResult, note: str | None = None) -> None:
    """Each run's nDCG@10 and recall@10; ``note``: why the loaded labels label no query of some run."""
    shown = [(r, r.metrics.get("ndcg@10"), r.metrics.get("recall@10")) for r in q.runs]
    bounded = any(e is not None and e.n and e.lo == e.lo for _, e, _ in shown)  # (no resamples: NaN bounds)
    say()
    say(
        "ranking quality (relevance labels; mean over labelled queries"
        + (" [95 % interval]):" if bounded else "; no intervals without resamples):")
    )
    for r, e, m in shown:
        if e is None or m is None or not e.n:
            say(f"  {r.run_id}: no labelled query")
            continue
        say(
            f"  {r.run_id}: nDCG@10 {e.value:.3f}{_bounds(e.lo, e.hi)}  recall@10 {m.value:.3f}"
            f"{_bounds(m.lo, m.hi)}  ({r.n_queries} labelled, {r.n_unlabelled} without labels left out)"
        )
    if note:
        say(f"  note: {note}")


def _bounds(lo: float, hi: float) -> str:
    """`` [lo, hi]``, or nothing where there is no interval (NaN bounds: no resamples, one query)."""
    return f" {bracket(lo, hi)}" if bracket(lo, hi) else ""


def _ci(result: StabilityResult, key: str) -> str:
    iv = result.intervals
    e = iv.summary.get(key) if iv is not None else None
    return "" if e is None or e.lo != e.lo else f" [{e.lo:.3f}, {e.hi:.3f}]"


def _print_stability(result: StabilityResult) -> None:
    s = result.summary
    lines = [
        f"queries evaluated: {s.n_queries}   run pairs: {s.n_pairs}   flip threshold τ = {s.flip_threshold}",
        f"mean J_doc = {fmt(s.mean_j_doc)}{_ci(result, 'mean_j_doc')}   "
        f"mean J_span = {fmt(s.mean_j_span)}{_ci(result, 'mean_j_span')}   "
        f"gap ratio = {fmt(s.gap_ratio)}{_ci(result, 'gap_ratio')}",
        f"collapse rate (span) = {fmt(s.collapse_rate)}{_ci(result, 'collapse_rate')}   flip rate doc/span = "
        f"{fmt(s.flip_rate['doc'])}/{fmt(s.flip_rate['span'])}   null transitions = {s.null_transitions}   "
        f"same docs, different spans = {fmt(s.same_docs_diff_spans)}",
    ]
    if s.gap_ratio_note:
        lines.append(s.gap_ratio_note)
    for line in lines:
        say(line)
    table = result.pairs[
        [
            "run_a",
            "run_b",
            "changed",
            "level",
            "j_avg",
            "flip_rate",
            "null_loss",
            "null_gain",
            "collapse_rate",
            "same_docs_diff_spans",
        ]
    ]
    same = table["same_docs_diff_spans"]  # counted on span rows only: a dash on doc rows, not <NA>
    table = table.assign(same_docs_diff_spans=same.astype(object).where(same.notna(), "—"))
    # a 200-character run id padded every row of the table to 320 columns: cut in the middle, apart
    labels = run_labels([*table["run_a"], *table["run_b"]], _TABLE_RUN_CHARS)
    table = table.assign(run_a=table["run_a"].map(labels), run_b=table["run_b"].map(labels))
    say(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"), lines=True)
    if any(label != run for run, label in labels.items()):
        say(f"(run ids past {_TABLE_RUN_CHARS} characters are cut in the middle here; --json and --csv-dir keep them)")
    effects = effects_by_change(result.pairs, result.intervals)
    if not effects.empty and set(effects["changed"]) != {"unknown"}:
        bounded = bool(effects.filter(like="_lo").notna().to_numpy().any())
        say()
        say(
            "by what changed between the two runs (mean over the pairs, pairs weigh equally"
            + ("; [95 % interval over queries]):" if bounded else "; no intervals without resamples):")
        )
        say(_effects_table(effects).to_string(index=False), lines=True)


def _effects_table(effects: pd.DataFrame) -> pd.DataFrame:
    """The effects as the terminal shows them: each figure with its interval beside it (keys as
    headers, as the pair table above)."""
    shown = effects[["changed", "level", "n_pairs"]].copy()
    for m in EFFECT_INTERVAL_METRICS:
        shown[m] = [
            f"{fmt(float(v))}{_bounds(lo, hi)}" for v, lo, hi in zip(effects[m], effects[f"{m}_lo"], effects[f"{m}_hi"])
        ]
    return shown


def probe(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Run files or folders to ingest first.", readable=False)
    ] = None,
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB file.")] = None,
    pair: Annotated[
        list[str] | None, typer.Option("--pair", help="A:B (run ids or aliases base, o0, c128, …); repeatable.")
    ] = None,
    flip_threshold: Annotated[
        float, typer.Option("--flip-threshold", help="τ for silent jitter (J_span < τ).")
    ] = FLIP_THRESHOLD,
    embedder: Annotated[str | None, typer.Option("--embedder", help="SBERT model (default: packaged MiniLM).")] = None,
    device: Device = "auto",
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write rows and summaries as JSON ('-' = stdout).")
    ] = None,
) -> None:
    """The evidence–answer probe: answer similarity vs J_span (seed 000, Table 1)."""
    from ragaudit_core.stability.probe import DEFAULT_SIMILARITY_MODEL, probe_pair

    con = open_logs(paths, db, keep=True)  # the similarities it computes are kept when the file may be written
    pairs = _probe_pairs(con, pair)
    models = LazyModels(embedder=embedder, device=device)  # loaded only for similarities not stored yet
    try:
        results = [
            probe_pair(con, a, b, models.embedder, tau=flip_threshold, model=embedder or DEFAULT_SIMILARITY_MODEL)
            for a, b in pairs
        ]
    except RagAuditError as e:
        fail(str(e))
    if json_out != "-":
        say(f"{'pair':40} {'n':>4} {'J_span':>7} {'Sim':>6} {'Drift<0.9':>9} {'Drift<0.8':>9} {'rho':>7}")
        for r in results:
            s = r.summary
            say(
                f"{s['pair']:40} {s['n_queries']:>4} {fmt(s['mean_j_span']):>7} {fmt(s['mean_sim']):>6} "
                f"{s['drift_0.9']:>9} {s['drift_0.8']:>9} {fmt(s['spearman_rho']):>7}"
            )
    emit_json([{"summary": r.summary, "rows": json.loads(r.rows.to_json(orient="records"))} for r in results], json_out)


def _probe_pairs(con: duckdb.DuckDBPyConnection, pair: list[str] | None) -> list[tuple[str, str]]:
    """The ``--pair A:B`` options resolved, else every answered run against the sample's base run."""
    if pair:
        runs = catalog.evidence_run_ids(con)
        pairs = []
        for p in pair:
            if ":" not in p:
                fail(f"--pair must be A:B, got {p!r}")
            a, b = p.split(":", 1)
            pairs.append((resolve_run(a, runs), resolve_run(b, runs)))
        return pairs
    answered = catalog.answered_runs(con)
    if len(answered) < 2:
        fail("fewer than two runs carry answers; nothing to probe")
    base = catalog.preferred_run(answered)
    pairs, said, none_left = pairs_to_compare(
        [(base, r) for r in answered if r != base], set(catalog.text_id_runs(con)), named=False
    )
    if none_left:  # J_span and its correlation with the answers would be 0 by how the runs were logged
        fail(f"{none_left} (--pair A:B probes a pair as named)")
    for sentence in said:
        say(f"warning: {sentence}", err=True)
    return pairs

"""``ragaudit gate`` and ``ragaudit report``: the deploy verdict (exit code for CI) and the
PDF audit report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit_core.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_GATE_INCONCLUSIVE,
    DbOrMemory,
    Device,
    DocidMap,
    LazyModels,
    LogPaths,
    NoStoredPassages,
    NoStoredQuestions,
    Qrels,
    Queries,
    emit_json,
    fail,
    known_runs,
    open_logs,
    read_docid_map,
    resolve_run,
)
from ragaudit_core.cli.terminal import say
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.errors import RagAuditError
from ragaudit_core.review.gate import PRESETS, GatePolicy, load_policy, review, verdict_lines

__all__ = ["gate", "report"]


def _rules_file(rules: Path) -> GatePolicy:
    """The policy of a TOML file, or exit 2 naming the file and what is wrong."""
    try:
        return load_policy(rules)
    except FileNotFoundError:
        fail(f"{rules}: no such rules file")
    except (OSError, ValueError) as e:  # tomllib.TOMLDecodeError and pydantic errors are ValueErrors
        fail(f"{rules}: {e}")


def gate(
    paths: LogPaths = None,
    db: DbOrMemory = None,
    qrels: Qrels = None,
    queries: Queries = None,
    no_stored_questions: NoStoredQuestions = False,
    no_stored_passages: NoStoredPassages = False,
    docid_map: DocidMap = None,
    baseline: Annotated[str, typer.Option("--baseline", help="The run in production (id or alias).")] = ...,  # type: ignore[assignment]  # typer: required
    candidate: Annotated[str, typer.Option("--candidate", help="The run that would replace it (id or alias).")] = ...,  # type: ignore[assignment]  # typer: required
    rules: Annotated[Path | None, typer.Option("--rules", help="TOML rules (preset and/or [[rule]] tables).")] = None,
    preset: Annotated[
        str, typer.Option("--preset", help="Rule preset when --rules is not given: default, strict or review.")
    ] = "default",
    flip_threshold: Annotated[
        float, typer.Option("--flip-threshold", help="τ: a query flips when J < τ.")
    ] = FLIP_THRESHOLD,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write the verdict as JSON here ('-' = stdout).")
    ] = None,
) -> None:
    """Deploy gate: may CANDIDATE replace BASELINE? Exit 0 pass, 1 fail, 2 bad input, 3 inconclusive
    (a rule asking for significance whose interval straddles its threshold, or too few queries)."""
    if rules is not None:
        policy = _rules_file(rules)
    elif preset in PRESETS:
        policy = PRESETS[preset]
    else:
        fail(f"--preset must be one of {', '.join(PRESETS)}, not {preset!r}")
    if not policy.rules:
        fail("no rules to evaluate")
    con = open_logs(
        paths,
        db,
        qrels=qrels,
        queries=queries,
        stored_questions=not no_stored_questions,
        stored_passages=not no_stored_passages,
    )
    runs = known_runs(con)
    try:
        mapping = read_docid_map(con, docid_map)
        verdict = review(
            con,
            policy,
            resolve_run(baseline, runs),
            resolve_run(candidate, runs),
            tau=flip_threshold,
            docid_map=mapping,
        )
    except RagAuditError as e:
        fail(str(e))
    if json_out != "-":
        for line in verdict_lines(verdict):
            say(line)
    emit_json({**verdict.model_dump(mode="json"), "headline": verdict.headline()}, json_out)
    raise typer.Exit({"pass": 0, "fail": EXIT_GATE_FAILED, "inconclusive": EXIT_GATE_INCONCLUSIVE}[verdict.status])


def report(
    paths: LogPaths = None,
    db: DbOrMemory = None,
    qrels: Qrels = None,
    queries: Queries = None,
    no_stored_questions: NoStoredQuestions = False,
    no_stored_passages: NoStoredPassages = False,
    docid_map: DocidMap = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write the PDF.")] = Path("audit.pdf"),
    baseline: Annotated[str | None, typer.Option("--baseline", help="Run in production (for the verdict).")] = None,
    candidate: Annotated[str | None, typer.Option("--candidate", help="Run that would replace it.")] = None,
    rules: Annotated[
        Path | None, typer.Option("--rules", help="Gate rules TOML (default: the default preset).")
    ] = None,
    flip_threshold: Annotated[
        float, typer.Option("--flip-threshold", help="τ: a query flips when J < τ.")
    ] = FLIP_THRESHOLD,
    runs: Annotated[
        str | None,
        typer.Option(
            "--runs",
            help="Comma-separated runs the stability section compares "
            "(default: the runs that share the most queries between the most runs).",
        ),
    ] = None,
    no_probe: Annotated[
        bool,
        typer.Option(
            "--no-probe",
            help="Do not load SBERT for answer similarities that are not stored yet (their pairs are left out).",
        ),
    ] = False,
    device: Device = "auto",
) -> None:
    """The PDF audit report: cover, verdict, stability, worst queries, probe, fidelity, attributions, methods."""
    from ragaudit_core.review.report import ReportOptions, build_report

    if not out.parent.is_dir():
        fail(f"{out}: the folder {out.parent} does not exist")
    the_rules, source = (None, "default preset") if rules is None else (_rules_file(rules), str(rules))
    con = open_logs(
        paths,
        db,
        qrels=qrels,
        queries=queries,
        stored_questions=not no_stored_questions,
        stored_passages=not no_stored_passages,
    )
    known = known_runs(con)
    pair = [None if r is None else resolve_run(r, known) for r in (baseline, candidate)]
    chosen = None if runs is None else [resolve_run(r.strip(), known) for r in runs.split(",") if r.strip()]
    opts = ReportOptions(
        baseline=pair[0],
        candidate=pair[1],
        docid_map=read_docid_map(con, docid_map),
        rules=the_rules,
        rules_source=source,
        runs=chosen,
        tau=flip_threshold,
        probe=not no_probe,
        embedder=LazyModels(device=device).embedder,
        db_label=str(db) if db is not None else ", ".join(map(str, paths or [])),
    )
    try:
        _blob, data = build_report(con, out, opts, progress=lambda m: say(f"report: {m}…", err=True))
    except RagAuditError as e:
        fail(str(e))
    except OSError as e:
        fail(f"{out}: {e}")
    verdict = f"; verdict {data.verdict.status.upper()}" if data.verdict is not None else ""
    say(f"wrote {out} ({data.timings.get('pages', '?')} pages{verdict})")

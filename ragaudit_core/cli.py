"""The ``ragaudit`` command line (typer).

Exit codes: 0 success; 2 bad input or usage (the message goes to stderr).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import __version__, store
from .identity import CanonOptions, DocIdMapError, load_docid_map
from .ingest import IngestError, IngestOptions, IngestReport, ingest_paths
from .jsonl import DEFAULT_MAX_LINE_BYTES
from .stability import StabilityError, StabilityOptions, compute_stability

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems from their logs: evidence stability, citation fidelity, attribution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _print_ingest(report: IngestReport, max_lines: int = 50) -> None:
    typer.echo(report.summary(), err=True)
    for issue in report.rejected[:max_lines]:
        typer.echo(f"rejected: {issue}", err=True)
    if len(report.rejected) > max_lines:
        typer.echo(f"rejected: … and {len(report.rejected) - max_lines} more (see the quarantine table)", err=True)
    for w in report.warnings[:max_lines]:
        typer.echo(f"warning: {w}", err=True)
    if len(report.warnings) > max_lines:
        typer.echo(f"warning: … and {len(report.warnings) - max_lines} more (see the ingest_warnings table)", err=True)


def _progress():
    last = {"path": None}

    def cb(path: str, n: int) -> None:
        if sys.stderr.isatty() or n % 100000 == 0 or last["path"] != path:
            typer.echo(f"ingest: {path}: {n:,} lines read", err=True)
        last["path"] = path
    return cb


def _ingest_options(case_sensitive: bool, collapse_ws: bool, casefold_spans: bool,
                    max_line_bytes: int) -> IngestOptions:
    return IngestOptions(canon=CanonOptions(case_sensitive=case_sensitive,
                                            collapse_internal_whitespace=collapse_ws),
                         casefold_spans=casefold_spans, max_line_bytes=max_line_bytes)


CaseSensitive = Annotated[bool, typer.Option("--case-sensitive", help="Keep the case of doc ids (default: lower-case).")]
CollapseWs = Annotated[bool, typer.Option("--collapse-internal-whitespace",
                                          help="Collapse whitespace runs inside doc ids to one space.")]
CasefoldSpans = Annotated[bool, typer.Option("--casefold-spans", help="Case-fold cited text before span hashing.")]
MaxLine = Annotated[int, typer.Option("--max-line-bytes", help="Reject lines longer than this many bytes.")]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="JSONL / JSONL.gz files or folders.")],
    db: Annotated[Path, typer.Option("--db", help="DuckDB file to load into.")] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 if any line was rejected.")] = False,
) -> None:
    """Validate evidence logs and load them into a DuckDB file (one transaction)."""
    db = db or store.default_db_path()
    try:
        con = store.connect(db)
        report = ingest_paths(con, paths, _ingest_options(case_sensitive, collapse_internal_whitespace,
                                                          casefold_spans, max_line_bytes),
                              progress=_progress())
    except (IngestError, store.StoreError) as e:
        _fail(str(e))
    _print_ingest(report)
    typer.echo(f"database: {db}", err=True)
    if strict and report.rejected:
        raise typer.Exit(EXIT_BAD_INPUT)


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


@app.command()
def stability(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="JSONL files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")] = None,
    docid_map: Annotated[Optional[Path], typer.Option("--docid-map", help="Alias map CSV with headers raw,canonical.")] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Compare every run with this one.")] = None,
    runs: Annotated[Optional[str], typer.Option("--runs", help="Comma-separated runs to include (default: all).")] = None,
    flip_threshold: Annotated[float, typer.Option("--flip-threshold", help="τ: a pair flips when J < τ.")] = 0.5,
    topk: Annotated[Optional[int], typer.Option("--topk", help="Keep only the first K entries of each list.")] = None,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Evaluate the queries all runs share.")] = False,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the metrics as JSON here ('-' = stdout).")] = None,
    csv_dir: Annotated[Optional[Path], typer.Option("--csv-dir", help="Write runs.csv, pairs.csv, queries.csv here.")] = None,
) -> None:
    """Document- and span-level evidence stability across runs (seed 000)."""
    if not paths and db is None:
        _fail("give log files or folders, or --db with an ingested database")
    try:
        con = store.connect(db if db is not None else ":memory:")
        if paths:
            report = ingest_paths(con, paths, _ingest_options(case_sensitive, collapse_internal_whitespace,
                                                              casefold_spans, max_line_bytes))
            _print_ingest(report)
        mapping = {}
        if docid_map is not None:
            mapping = load_docid_map(docid_map, case_sensitive=case_sensitive,
                                     collapse_internal_whitespace=collapse_internal_whitespace)
        opts = StabilityOptions(
            runs=[r.strip() for r in runs.split(",") if r.strip()] if runs else None,
            baseline=baseline, flip_threshold=flip_threshold, topk=topk,
            allow_missing=allow_missing, docid_map=mapping)
        result = compute_stability(con, opts)
    except (IngestError, StabilityError, DocIdMapError, store.StoreError) as e:
        _fail(str(e))

    s = result.summary
    lines = [
        f"queries evaluated: {s['n_queries']}   run pairs: {s['n_pairs']}   flip threshold τ = {s['flip_threshold']}",
        f"mean J_doc = {_fmt(s['mean_j_doc'])}   mean J_span = {_fmt(s['mean_j_span'])}   "
        f"gap ratio = {_fmt(s['gap_ratio'])}",
        f"collapse rate (span) = {_fmt(s['collapse_rate'])}   flip rate doc/span = "
        f"{_fmt(s['flip_rate']['doc'])}/{_fmt(s['flip_rate']['span'])}   null transitions = {s['null_transitions']}   "
        f"same docs, different spans = {_fmt(s['same_docs_diff_spans'])}",
    ]
    if s["gap_ratio_note"]:
        lines.append(s["gap_ratio_note"])
    if json_out != "-":
        typer.echo("\n".join(lines))
        table = result.pairs[["run_a", "run_b", "level", "j_avg", "flip_rate", "null_loss", "null_gain",
                              "collapse_rate", "same_docs_diff_spans"]]
        typer.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for w in s["warnings"]:
        typer.echo(f"warning: {w}", err=True)
    if json_out:
        payload = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
        if json_out == "-":
            typer.echo(payload)
        else:
            Path(json_out).write_text(payload + "\n", encoding="utf-8")
    if csv_dir:
        csv_dir.mkdir(parents=True, exist_ok=True)
        result.runs.to_csv(csv_dir / "runs.csv", index=False)
        result.pairs.to_csv(csv_dir / "pairs.csv", index=False)
        result.queries.to_csv(csv_dir / "queries.csv", index=False)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""``ragaudit ingest``: validate logs and load them into a DuckDB file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ragaudit_core import workspace
from ragaudit_core.cli.common import (
    EXIT_BAD_INPUT,
    CasefoldSpans,
    CaseSensitive,
    CollapseWs,
    DocIdKey,
    Format,
    MaxLine,
    Qrels,
    RunId,
    connect_db,
    fail,
    fail_on_rejected_files,
    ingest_options,
    print_ingest,
    progress,
)
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store
from ragaudit_core.logs.jsonl import DEFAULT_MAX_LINE_BYTES

__all__ = ["ingest"]


def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Log files (JSONL, JSON, CSV, Parquet; .gz) or folders.")],
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB file to load into.")] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    fmt: Format = "auto",
    run_id: RunId = None,
    doc_id_key: DocIdKey = None,
    qrels: Qrels = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 if any line was rejected.")] = False,
    ids_are_texts: Annotated[
        bool,
        typer.Option(
            "--ids-are-texts",
            help="The logs' document ids are passage texts (a contexts list of strings): read each as the entry's "
            "text, with its span hash and a 'text:' document id.",
        ),
    ] = False,
    init: Annotated[
        bool,
        typer.Option(
            "--init",
            help="Add RagAudit's tables to a DuckDB file another program made (refused without it; its own tables "
            "are left as they are).",
        ),
    ] = False,
    no_precompute: Annotated[
        bool, typer.Option("--no-precompute", help="Skip storing the stability overview the dashboard opens on.")
    ] = False,
) -> None:
    """Validate logs (ours or another tool's: Ragas, RAGChecker, OpenInference, LangSmith, Langfuse) and load them
    into a DuckDB file (one transaction)."""
    db = db or store.default_db_path()
    options = ingest_options(
        case_sensitive, collapse_internal_whitespace, casefold_spans, max_line_bytes, fmt, run_id, doc_id_key
    )
    try:
        con = connect_db(db, init=init)
        report = workspace.load_paths(
            con,
            paths,
            options,
            precompute_overview=not no_precompute,
            progress=progress(),
            qrels=qrels or [],
            ids_are_texts=ids_are_texts,
        )
    except RagAuditError as e:
        fail(str(e))
    print_ingest(report)
    typer.echo(f"database: {db}", err=True)
    fail_on_rejected_files(report)
    if strict and report.rejected:
        raise typer.Exit(EXIT_BAD_INPUT)

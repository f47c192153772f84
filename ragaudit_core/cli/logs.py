"""``ragaudit ingest``: validate logs and load them into a DuckDB file."""

from __future__ import annotations

import dataclasses
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
    NoStoredPassages,
    NoStoredQuestions,
    Qrels,
    Queries,
    RunId,
    connect_db,
    fail,
    fail_on_rejected_files,
    ingest_options,
    print_ingest,
    progress,
)
from ragaudit_core.cli.terminal import say
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store
from ragaudit_core.logs.documents import DEFAULT_MAX_DEPTH
from ragaudit_core.logs.jsonl import DEFAULT_MAX_EXPANSION, DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_LINE_BYTES
from ragaudit_core.logs.listing import list_paths
from ragaudit_core.logs.questions import read_questions
from ragaudit_core.logs.runs import parse_settings

__all__ = ["ingest"]


def ingest(
    paths: Annotated[  # not checked by typer (readable=False): a path that cannot be read is refused alone
        list[Path], typer.Argument(help="Log files (JSONL, JSON, CSV, Parquet; .gz) or folders.", readable=False)
    ],
    db: Annotated[Path | None, typer.Option("--db", help="DuckDB file to load into.")] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    fmt: Format = "auto",
    run_id: RunId = None,
    doc_id_key: DocIdKey = None,
    qrels: Qrels = None,
    max_file_bytes: Annotated[
        int, typer.Option("--max-file-bytes", help="Bytes one file may hold once decompressed (64 GiB).")
    ] = DEFAULT_MAX_FILE_BYTES,
    max_expansion: Annotated[
        int, typer.Option("--max-expansion", help="Times its size a compressed file may expand (past 64 MiB).")
    ] = DEFAULT_MAX_EXPANSION,
    max_depth: Annotated[
        int, typer.Option("--max-depth", help="Nesting depth of a JSON value in a JSON document.")
    ] = DEFAULT_MAX_DEPTH,
    settings: Annotated[
        str | None,
        typer.Option(
            "--settings",
            help="Settings of the runs this load makes that log none (a Ragas export, a trace export whose "
            "metadata names none), e.g. "
            "'top_k=5,chunk_size=256,embedder=bge': the pages then say what changed between runs.",
        ),
    ] = None,
    queries: Queries = None,
    no_stored_questions: NoStoredQuestions = False,
    no_stored_passages: NoStoredPassages = False,
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
        bool,
        typer.Option(
            "--no-precompute",
            help="Skip storing what the dashboard's pages open on (the stability overview, the default pair, …).",
        ),
    ] = False,
) -> None:
    """Validate logs (ours or another tool's: Ragas, RAGChecker, OpenInference, LangSmith, Langfuse, MLflow,
    TruLens, DeepEval) and load them into a DuckDB file (one transaction per file)."""
    db = db or store.default_db_path()
    options = ingest_options(
        case_sensitive, collapse_internal_whitespace, casefold_spans, max_line_bytes, fmt, run_id, doc_id_key
    )
    if min(max_file_bytes, max_expansion, max_depth) < 1:
        fail("--max-file-bytes, --max-expansion and --max-depth must be at least 1")
    options = dataclasses.replace(
        options,
        max_file_bytes=max_file_bytes,
        max_expansion=max_expansion,
        max_depth=max_depth,
        queries=str(queries) if queries is not None else None,
        stored_questions=not no_stored_questions,
        stored_passages=not no_stored_passages,
    )
    lines = progress()
    try:
        given = parse_settings(settings) if settings is not None else None
        if not Path(db).exists():  # a call with nothing to read, or no questions, fails before it makes a database
            list_paths(list[str | Path](paths))
            if queries is not None:
                read_questions(queries)
        con = connect_db(db, init=init)
        report = workspace.load_paths(
            con,
            paths,
            options,
            precompute_overview=not no_precompute,
            progress=lines,
            qrels=qrels or [],
            ids_are_texts=ids_are_texts,
            settings=given,
        )
    except RagAuditError as e:
        fail(str(e))
    lines.finish()
    print_ingest(report, refusals_follow=True)
    say(f"database: {db}", err=True)
    fail_on_rejected_files(report)
    if strict and report.rejected:
        raise typer.Exit(EXIT_BAD_INPUT)

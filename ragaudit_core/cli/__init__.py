"""The ``ragaudit`` command line (typer): one module per audit question, helpers in :mod:`.common`.

Exit codes: 0 success; 2 bad input or usage (the message goes to stderr); ``gate`` exits 1
when the candidate fails an applicable rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import duckdb
import typer

from ragaudit_core import __version__
from ragaudit_core.cli import attribution, fidelity, harness, jobs, judge, logs, quality, review, stability
from ragaudit_core.cli.terminal import say
from ragaudit_core.errors import RagAuditError

__all__ = ["app", "main"]

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems from their logs: evidence stability, citation fidelity, attribution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _bad_input_exits_2(command: Callable[..., Any]) -> Callable[..., Any]:
    """Any :class:`RagAuditError` a command lets through is bad input: its message on stderr,
    exit 2 (never a traceback); so is DuckDB's error on a damaged file (an I/O error, a block whose
    checksum fails: :func:`store.damage_message`). Other exceptions are bugs and keep their traceback."""
    from ragaudit_core.logs import store

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except RagAuditError as e:
            say(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        except duckdb.Error as e:  # a database file damaged past what the open's checks see
            why = store.damage_message(kwargs.get("db") or "file", e)
            if why is None:
                raise
            say(f"error: {why}", err=True)
            raise typer.Exit(2) from None

    return run


for command in (
    logs.ingest,
    stability.stability,
    quality.quality,
    harness.sweep,
    harness.provenance,
    fidelity.fidelity,
    attribution.attribute,
    judge.judge,
    jobs.worker,
    jobs.jobs,
    stability.probe,
    review.gate,
    review.report,
):
    app.command()(_bad_input_exits_2(command))


@app.command()
def version() -> None:
    """Print the version."""
    say(__version__)


def main() -> None:
    app()

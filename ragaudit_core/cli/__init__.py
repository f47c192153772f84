"""The ``ragaudit`` command line (typer): one module per audit question, helpers in :mod:`.common`.

Exit codes: 0 success; 2 bad input or usage (the message goes to stderr); ``gate`` exits 1
when the candidate fails an applicable rule.
"""

from __future__ import annotations

import typer

from ragaudit_core import __version__
from ragaudit_core.cli import attribution, fidelity, harness, judge, logs, quality, review, stability

__all__ = ["app", "main"]

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems from their logs: evidence stability, citation fidelity, attribution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for command in (
    logs.ingest,
    stability.stability,
    quality.quality,
    harness.sweep,
    harness.provenance,
    fidelity.fidelity,
    attribution.attribute,
    judge.judge,
    stability.probe,
    review.gate,
    review.report,
):
    app.command()(command)


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    app()

"""What every command shares: failing with exit 2, opening logs or a database, writing JSON,
loading models once, resolving run aliases, progress output."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn

import duckdb
import typer

from ragaudit_core.cli.terminal import json_shown, say, shown
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.identity import CanonOptions
from ragaudit_core.logs.ingest import IngestOptions, IngestReport
from ragaudit_core.logs.jsonl import DEFAULT_MAX_LINE_BYTES
from ragaudit_core.wording import counted, shell_word

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_GATE_FAILED",
    "EXIT_GATE_INCONCLUSIVE",
    "DocidMap",
    "EndpointTimeout",
    "KeyFile",
    "LazyModels",
    "alias_run",
    "aliased",
    "emit_json",
    "fail",
    "fail_on_rejected_files",
    "fmt",
    "ingest_options",
    "ints",
    "known_runs",
    "open_existing_db",
    "open_logs",
    "print_ingest",
    "progress",
    "read_db",
    "read_docid_map",
    "resolve_run",
    "tqdm_progress",
]

EXIT_BAD_INPUT = 2
EXIT_GATE_FAILED = 1
EXIT_GATE_INCONCLUSIVE = 3
MAX_LINE_LIMIT = 1 << 30

CaseSensitive = Annotated[
    bool, typer.Option("--case-sensitive", help="Keep the case of doc ids (default: lower-case).")
]
CollapseWs = Annotated[
    bool, typer.Option("--collapse-internal-whitespace", help="Collapse whitespace runs inside doc ids to one space.")
]
CasefoldSpans = Annotated[bool, typer.Option("--casefold-spans", help="Case-fold cited text before span hashing.")]
MaxLine = Annotated[
    int,
    typer.Option(
        "--max-line-bytes",
        help="Reject a record longer than this many bytes: a line, a value or a container's record of a JSON "
        "document, a CSV row, a Parquet row.",
    ),
]
DocidMap = Annotated[
    Path | None,
    typer.Option("--docid-map", help="Alias map CSV with headers raw,canonical, applied to evidence and labels."),
]
"""A document-id alias map a metric command applies (:func:`read_docid_map`)."""
LogPaths = Annotated[list[Path] | None, typer.Argument(help="Log files or folders to ingest first.", readable=False)]
"""The logs a read command loads first (into ``--db``, or a database in memory)."""
DbOrMemory = Annotated[Path | None, typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")]
"""The database a read command opens (read-only unless PATHs are given)."""
Device = Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")]
FlipThreshold = Annotated[float, typer.Option("--flip-threshold", help="τ: a query flips between two runs when J < τ.")]
Qrels = Annotated[
    list[Path] | None,
    typer.Option(
        "--qrels",
        help="Relevance labels (TREC or BEIR qrels; repeatable). A log folder's qrels/ is read with it; BEIR's "
        "queries.jsonl (beside qrels/, or given too) labels logs without query ids by their questions.",
    ),
]


def fail(msg: str) -> NoReturn:
    """Print ``error: msg`` to stderr and exit 2 (bad input or usage)."""
    say(f"error: {msg}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def ints(v: str, what: str) -> list[int]:
    """Comma-separated integers of an option, or exit 2 naming the option."""
    try:
        out = [int(x) for x in v.split(",") if x.strip()]
    except ValueError:
        fail(f"{what} must be comma-separated integers, got {v!r}")
    if not out:
        fail(f"{what} is empty")
    return out


Format = Annotated[
    str,
    typer.Option(
        "--format",
        help="auto (each record by its fields), native, ragas, ragchecker, openinference, langsmith, langfuse, "
        "mlflow, trulens or deepeval.",
    ),
]
RunId = Annotated[
    str | None,
    typer.Option(
        "--run-id", help="Run id for foreign records without one (default: the file name without extensions)."
    ),
]
Queries = Annotated[
    Path | None,
    typer.Option(
        "--queries",
        help="The questions of the benchmark these logs ran (BEIR's queries.jsonl, an id,text TSV/CSV, or "
        "query_id/query JSONL): a record without a query id (Ragas, a trace export: q:… from its question's "
        "hash) takes its question's id, so it pairs with a native run over the same questions. Without it, "
        "the questions the database's runs already store (with their ids) serve as the file.",
    ),
]
"""``--queries``: the ids another tool's id-less records take (:mod:`ragaudit_core.logs.questions`)."""
NoStoredQuestions = Annotated[
    bool,
    typer.Option(
        "--no-stored-questions",
        help="Without --queries, keep the hashed query ids (q:…) of records that log none, instead of giving them "
        "the ids the runs stored earlier log for the same questions.",
    ),
]
"""``--no-stored-questions``: the stored runs' questions give no ids (:mod:`ragaudit_core.logs.stored_questions`)."""
NoStoredPassages = Annotated[
    bool,
    typer.Option(
        "--no-stored-passages",
        help="Keep the text-hash document ids (text:…) of passages logged without an id, instead of giving them "
        "the document ids the runs stored earlier log for the same passages word for word.",
    ),
]
"""``--no-stored-passages``: the stored passages give no document ids (:mod:`ragaudit_core.logs.stored_passages`)."""

DocIdKey = Annotated[
    str | None,
    typer.Option(
        "--doc-id-key",
        help="Metadata key holding document ids in foreign records (e.g. source); wins over a logged "
        "id (a chunk's node id) where a passage's metadata holds it.",
    ),
]


def ingest_options(
    case_sensitive: bool = False,
    collapse_ws: bool = False,
    casefold_spans: bool = False,
    max_line_bytes: int | None = None,
    fmt: str = "auto",
    run_id: str | None = None,
    doc_id_key: str | None = None,
) -> IngestOptions:
    """Ingest options from command-line values (exit 2 for an unknown format)."""
    from ragaudit_core.logs.formats import NAMES

    if fmt not in ("auto", *NAMES):
        fail(f"--format must be auto or one of {', '.join(NAMES)}, not {fmt!r}")
    if max_line_bytes is not None and not 1 <= max_line_bytes <= MAX_LINE_LIMIT:
        fail(f"--max-line-bytes must be between 1 and {MAX_LINE_LIMIT:,} (1 GiB), not {max_line_bytes:,}")
    return IngestOptions(
        canon=CanonOptions(case_sensitive=case_sensitive, collapse_internal_whitespace=collapse_ws),
        casefold_spans=casefold_spans,
        format=None if fmt == "auto" else fmt,
        run_id=run_id,
        doc_id_key=doc_id_key,
        max_line_bytes=DEFAULT_MAX_LINE_BYTES if max_line_bytes is None else max_line_bytes,
    )


def print_ingest(report: IngestReport, max_lines: int = 50, *, refusals_follow: bool = False) -> None:
    """The ingest summary, rejected lines and warnings on stderr (at most ``max_lines`` of each);
    ``refusals_follow``: files refused as a whole are left to :func:`fail_on_rejected_files`,
    which ends the output with one sentence each (said once, not twice)."""
    say(report.summary(), err=True)
    for f in report.files[:max_lines]:
        if f.formats:
            say(f.read_as(), err=True)
    shown = [i for i in report.rejected if not (refusals_follow and i.code == "unreadable")]
    for issue in shown[:max_lines]:
        say(f"{'refused' if issue.code == 'unreadable' else 'rejected'}: {issue}", err=True)
    if len(shown) > max_lines:
        say(f"rejected: … and {len(shown) - max_lines} more (see the quarantine table)", err=True)
    said = report.said_once()  # the same words about several files, once
    for w in said[:max_lines]:
        say(f"{w.kind}: {w}", err=True)  # warning: / note: (what the load did as asked or documented)
    if report.labels is not None:
        for why in report.labels.rejected[:max_lines]:
            say(f"rejected label: {why}", err=True)
        for note in report.labels.warnings[:max_lines]:
            say(f"warning: {note}", err=True)
    if len(said) > max_lines:
        say(f"warning: … and {len(said) - max_lines} more (see the ingest_warnings table)", err=True)


def fail_on_rejected_files(report: IngestReport) -> None:
    """Exit 2 when some file was refused or every line of it rejected (nothing of it could be loaded),
    each named in one sentence; the last line says that the other files of the call did load."""
    bad = report.failed_files
    for f in bad:
        say(
            f"error: {report.failure(f)}" + ("" if f.status == "unreadable" else " (see the reasons above)"),
            err=True,
        )
    if not bad:
        return
    if ok := len(report.files) - len(bad):
        say(
            f"error: {counted(len(bad), 'file')} of {len(report.files):,} not loaded (above); the "
            f"{counted(ok, 'other file')} {'is' if ok == 1 else 'are'} in the database",
            err=True,
        )
    raise typer.Exit(EXIT_BAD_INPUT)


class LineProgress:
    """``progress(path, n_read, unit)`` for ingestion (``unit``: ``line`` for JSON Lines, ``record``
    for a JSON document, CSV or Parquet): on a terminal every call; otherwise (a CI log) a file's
    first call, every 100,000 read, and its last count — printed when the next file
    starts, or by :meth:`finish` after the ingest — so the log ends on each file's real total."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.path: str | None = None
        self.last: tuple[int, bool] = (0, True)  # the current file's latest count, and whether it was printed
        self.unit = "line"

    def __call__(self, path: str, n: int, unit: str = "line") -> None:
        if path != self.path:
            self.finish()  # the previous file's total, in its own unit
            self.path = path
        elif n == self.last[0] and self.last != (0, True):
            return  # the file's closing call repeats its last count
        self.unit = unit
        shown = self.tty or n // 100000 > self.last[0] // 100000 or self.last == (0, True)
        if shown:
            say(f"ingest: {path}: {counted(n, unit)} read", err=True)
        self.last = (n, shown)

    def finish(self) -> None:
        """Print the current file's last count, when it was not."""
        if self.path is not None and not self.last[1]:
            say(f"ingest: {self.path}: {counted(self.last[0], self.unit)} read", err=True)
        self.last = (0, True)


def progress() -> LineProgress:
    """A :class:`LineProgress` for one ingest (call its ``finish`` when the ingest returns)."""
    return LineProgress()


KeyFile = Annotated[Path | None, typer.Option("--key-file", help="A file whose first line is the endpoint's API key.")]
EndpointTimeout = Annotated[
    float | None,
    typer.Option("--timeout", help="Seconds one endpoint request may take (default 30; RAGAUDIT_JUDGE_TIMEOUT_S)."),
]
"""The judge endpoint's options, shared by ``ragaudit judge`` and ``ragaudit worker``."""


def tqdm_progress() -> Callable[[str, int, int], None]:
    """``progress(label, i, n)`` drawn as one tqdm bar per label."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def cb(label: str, i: int, n: int) -> None:
        bar = bars.get(label)
        if bar is None:
            bar = bars[label] = tqdm(total=n, desc=shown(label), unit="it", mininterval=2.0)
        bar.update(i - bar.n)
        if i >= n:
            bar.close()

    return cb


def db_wait_s() -> float:
    """How long a command waits for a database another program holds (``RAGAUDIT_DB_WAIT``
    seconds, default 60): a dashboard holds it only while an interaction runs."""
    try:
        return max(0.0, float(os.environ.get("RAGAUDIT_DB_WAIT", "60")))
    except ValueError:
        fail(f"RAGAUDIT_DB_WAIT must be a number of seconds, not {os.environ['RAGAUDIT_DB_WAIT']!r}")


def connect_db(
    db: Path | str, *, init: bool = False, read_only: bool = False, create: bool = True, wait: bool = True
) -> Any:
    """The database ``db``, waiting while another program holds it (said once on stderr; not without
    ``wait``); a file that is not a RagAudit database is refused unless ``init`` (``--init``) asks to
    add the tables. ``read_only`` never creates or changes anything; without ``create`` a missing file
    is refused."""
    wait_s = db_wait_s() if str(db) != ":memory:" and wait else 0.0
    return store.connect(
        db,
        wait_s=wait_s,
        on_wait=lambda msg: say(f"{msg} (waiting up to {wait_s:.0f} s)", err=True),
        init=init,
        read_only=read_only,
        create=create,
    )


def read_db(db: Path, *, keep: bool = False) -> Any:
    """An existing database opened for a command that reads it: read-only (nothing is created or
    changed; what the command computes is not stored), or with ``keep`` read-write when this user may
    write the file and no other program holds it — what it computes is kept for the next command —
    and read-only otherwise. A file written by an earlier RagAudit that lacks tables gets them when it
    may be written (the one change a reading command makes), else is refused with what to do."""
    if keep:
        try:
            return connect_db(db, create=False, wait=False)
        except (store.StoreReadOnly, store.StoreBusy):
            pass
    try:
        return connect_db(db, read_only=True)
    except store.TablesOutOfDate as refused:
        try:
            connect_db(db, create=False).close()  # the tables added, in one transaction
        except store.StoreBusy:
            raise
        except store.StoreError:  # it may not be written: the refusal says what to do
            raise refused from None
    return connect_db(db, read_only=True)


def open_existing_db(db: Path, what: str) -> Any:
    """An existing database for a command that reads ``what`` from it and writes its results (exit 2
    with what to do when it is missing, held elsewhere, or not writable); never creates one."""
    from ragaudit_core.logs import store

    if not db.exists():
        fail(f"{db}: no such database; load {what} first with `ragaudit ingest PATH... --db {shell_word(db)}`")
    try:
        return connect_db(db, create=False)
    except store.StoreError as e:
        fail(str(e))


def open_logs(
    paths: list[Path] | None,
    db: Path | None,
    *,
    what: str = "log files or folders",
    options: IngestOptions | None = None,
    qrels: list[Path] | None = None,
    keep: bool = False,
    queries: Path | None = None,
    stored_questions: bool = True,
    stored_passages: bool = True,
) -> Any:
    """A connection to ``db``, or to an in-memory database with ``paths`` ingested first
    (their report on stderr) with the relevance labels of ``qrels`` and of each folder's
    ``qrels/``, and the ids of ``queries`` (``--queries``: for the paths loaded; without paths it
    exits 2, since stored runs are never renamed), else of the stored questions unless not
    ``stored_questions`` (``--no-stored-questions``, which exits 2 without paths too; so does
    ``--no-stored-passages``, ``stored_passages``: the stored runs' passages give no document ids). ``db`` alone
    is opened for reading (:func:`read_db`; ``keep`` as there): never created, never changed; with
    ``paths`` or ``qrels`` they are loaded into it (a write; ``paths`` may create it). Exits 2 when
    neither is given, the database file is missing (without paths) or cannot be opened, or ingestion
    cannot start."""
    from ragaudit_core import workspace
    from ragaudit_core.logs.qrels import load_qrels

    if not paths and db is None:
        fail(f"give {what}, or --db with an ingested database")
    if db is not None and not paths and not Path(db).exists():
        fail(f"{db}: no such database file (ingest logs first: ragaudit ingest PATH... --db {shell_word(db)})")
    if queries is not None and not paths:
        fail(
            "--queries gives ids to the records of the PATHs this call loads; the runs stored in the database keep "
            "theirs (remove a run's file and load it again with --queries to pair it)"
        )
    for off, flag in ((stored_questions, "--no-stored-questions"), (stored_passages, "--no-stored-passages")):
        if not off and not paths:
            fail(
                f"{flag} is about the records of the PATHs a call loads; the runs stored in the database keep their ids"
            )
    _runs_given_as_paths(paths, db)
    try:
        if db is None or paths or qrels:
            con = connect_db(db if db is not None else ":memory:", create=bool(paths))
        else:
            con = read_db(db, keep=keep)
        if paths:
            opts = options or IngestOptions()
            if queries is not None or not stored_questions or not stored_passages:
                opts = dataclasses.replace(
                    opts,
                    queries=str(queries) if queries is not None else None,
                    stored_questions=stored_questions,
                    stored_passages=stored_passages,
                )
            print_ingest(workspace.load_paths(con, paths, opts, precompute_overview=False, qrels=qrels or []))
        elif qrels:
            say(load_qrels(con, qrels).summary(), err=True)
    except store.StoreReadOnly:  # a reading command asked to load something into a file it may not write
        fail(
            f"cannot load {'the PATHs' if paths else 'the --qrels labels'} into {db}: permission denied (this user "
            "may not write it); load them into a copy this user may write, or give the logs as PATHs without --db"
        )
    except RagAuditError as e:
        fail(str(e))
    return con


def _runs_given_as_paths(paths: list[Path] | None, db: Path | None) -> None:
    """Exit 2 when a PATH that does not exist is the name of a run stored in ``db``: ``--runs a b``
    reads ``b`` as a log file to load (``--runs`` takes one value, comma-separated), and "b: no such
    file or folder" would not say so."""
    missing = [str(p) for p in paths or () if not os.path.lexists(p)]
    if not missing or db is None or not Path(db).is_file():
        return
    from ragaudit_core.logs import store

    try:  # through the store's checks (no extension fetched for an SQLite file, nothing created)
        with store.connect(db, read_only=True, create=False) as con:
            named = {r for (r,) in con.execute("SELECT run_id FROM runs WHERE run_id IN ?", [missing]).fetchall()}
    except (store.StoreError, duckdb.Error):
        return  # not a database these words fit: the load says what it is
    if named:
        first = next(m for m in missing if m in named)
        fail(
            f"{first}: no such file or folder, but {db} holds a run of that name: name runs with --runs, "
            f"comma-separated (--runs a,b); PATHs are log files to load"
        )


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float as None: JSON has no NaN (``json.dumps`` would
    write a bare ``NaN`` that strict readers — jq, JavaScript — refuse)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def emit_json(
    payload: Any, target: str | None, *, indent: int = 2, default: Callable[[Any], Any] | None = None
) -> None:
    """``payload`` as JSON to ``target``: a file, ``-`` for stdout, or nowhere when None."""
    if not target:
        return
    text = json.dumps(_finite(payload), indent=indent, ensure_ascii=False, default=default)
    if target == "-":
        say(json_shown(text), lines=True)
    else:
        try:
            Path(target).write_text(text + "\n", encoding="utf-8")
        except OSError as e:
            fail(f"{target}: {e}")


def known_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every run of the database (evidence and provenance); exit 2 when there is none."""
    runs = catalog.all_run_ids(con)
    if not runs:
        fail("no runs are loaded")
    return runs


def resolve_run(name: str, runs: list[str]) -> str:
    """A run id, or an alias of the harness grid (``base``, ``o0``, ``c128``, …) among ``runs``."""
    got = alias_run(name, runs)
    if got is None:
        fail(f"run {name!r} not found; runs are: {', '.join(map(repr, runs))}")
    return got


def aliased(names: list[str], runs: list[str]) -> list[str]:
    """``names`` with each grid alias among ``runs`` replaced by its run id; a name that is neither
    stays as it is (for the command's own message about runs it does not know)."""
    return [alias_run(n, runs) or n for n in names]


def alias_run(name: str, runs: list[str]) -> str | None:
    """The run ``name`` is, by id or by the harness grid's alias (``base``: k10-c256-o32, ``o0``,
    ``c128``, ``k5``, … among the runs named ``k<N>-c<N>-o<N>``); None when it is neither."""
    if name in runs:
        return name
    from ragaudit_core.harness.sweep import RunConfig, SweepError, parse_run_alias

    grid = []
    for r in runs:
        try:
            parts = {p[0]: int(p[1:]) for p in r.split("-")}
            grid.append(RunConfig(parts["k"], parts["c"], parts["o"]))
        except (KeyError, ValueError, IndexError):
            continue
    try:
        return parse_run_alias(name, grid).run_id
    except (SweepError, KeyError, ValueError):
        return None


class LazyModels:
    """The embedder and generator a command may need, each loaded on first use and kept."""

    def __init__(self, embedder: str | None = None, generator: str | None = None, device: str = "auto") -> None:
        self.embedder_name, self.generator_name, self.device = embedder, generator, device
        self._loaded: dict[str, Any] = {}

    def embedder(self) -> Any:
        if "e" not in self._loaded:
            from ragaudit_core.models import load_embedder

            self._loaded["e"] = load_embedder(self.embedder_name, device=self.device)
        return self._loaded["e"]

    def generator(self) -> Any:
        if "g" not in self._loaded:
            from ragaudit_core.models import load_generator

            self._loaded["g"] = load_generator(self.generator_name, device=self.device)
        return self._loaded["g"]


def read_docid_map(con: duckdb.DuckDBPyConnection, path: Path | None) -> dict[str, str]:
    """The ``--docid-map`` file's aliases, normalised as the stored ids were (the database's
    options, not this call's); empty without one."""
    if path is None:
        return {}
    from ragaudit_core.logs.identity import load_docid_map
    from ragaudit_core.logs.options import stored_canon

    canon = stored_canon(con)
    return load_docid_map(
        path, case_sensitive=canon.case_sensitive, collapse_internal_whitespace=canon.collapse_internal_whitespace
    )

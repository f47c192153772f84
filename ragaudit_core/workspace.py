"""Loading logs into a database and keeping its derived results fresh.

The one place where the log spine (:mod:`ragaudit_core.logs`) meets a metric package:
after a load that added records (or a removal), what every page opens on — the catalog's
facts, the identity checks, the default run selection and pair, the stability overview, the
default pair's comparison, ranking quality — is computed once and stored with the data
(:func:`ragaudit_core.logs.derived.precompute`, over what the imported packages registered),
while the user waits for the load anyway. The log store itself imports no metric.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import duckdb

from ragaudit_core.jobs import queue
from ragaudit_core.logs import catalog, derived, removal, sanity, store
from ragaudit_core.logs.ingest import IngestOptions, IngestReport, ingest_paths
from ragaudit_core.logs.qrels import QrelsError, QrelsReport, load_qrels, qrels_files
from ragaudit_core.logs.report import NOTE, Issue
from ragaudit_core.logs.runs import set_settings
from ragaudit_core.logs.stored_passages import unpaired as unpaired_passages
from ragaudit_core.logs.stored_questions import unpaired
from ragaudit_core.logs.uploads import keep_uploads
from ragaudit_core.quality import cache as _quality_cache  # noqa: F401 — registers what ingest stores
from ragaudit_core.stability import cache as _stability_cache  # noqa: F401 — registers what ingest stores
from ragaudit_core.wording import counted, listed

log = logging.getLogger("ragaudit.workspace")

__all__ = [
    "clear",
    "load_paths",
    "load_qrels_uploads",
    "load_sample_logs",
    "load_uploads",
    "remove_file",
    "remove_runs",
]


def load_paths(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | Path],
    options: IngestOptions = IngestOptions(),
    *,
    precompute_overview: bool = True,
    progress: Callable[[str, int, str], None] | None = None,
    qrels: Iterable[str | Path] = (),
    ids_are_texts: bool = False,
    settings: dict[str, object] | None = None,
) -> IngestReport:
    """:func:`ingest_paths` on a cursor of its own (its own transaction, whatever other
    sessions do on a shared connection), then the relevance labels — ``qrels`` files and those
    under each folder's ``qrels/`` (:func:`ragaudit_core.logs.qrels.qrels_files`) — and the stored
    stability overview when records were added and ``precompute_overview``. The identity checks
    (:mod:`ragaudit_core.logs.sanity`) add their warnings to the report; ``ids_are_texts`` re-reads
    the loaded runs' document ids as passage texts first; ``settings`` (top-k, chunk size, …) go to
    the runs of this load that log none (:func:`ragaudit_core.logs.runs.set_settings`)."""
    paths = list(paths)
    label_files = [*(f for p in paths if Path(p).is_dir() for f in qrels_files(p)), *map(Path, qrels)]
    before = set(catalog.evidence_run_ids(con))
    cur = con.cursor()
    try:
        report = ingest_paths(cur, paths, options, progress=progress)
    finally:
        cur.close()
    if joined := [r for r in report.runs if r in before]:
        report.warnings.append(Issue(None, None, _joined_runs(joined), "runs"))
    if settings and report.runs:
        for run in set_settings(con, report.runs, settings):
            note = f"run {run!r} logs its own settings: they are kept (the settings given apply to runs that log none)"
            report.warnings.append(Issue(None, None, note, "runs", NOTE))
        store.bump_data_version(con)
    report.warnings += _named_alike(con, report)
    if report.n_records:  # a run of hashed ids asking this load's questions (or passages): why no pair, what to do
        loaded = [f.sha256 for f in report.files if f.status == "loaded"]
        report.warnings += [Issue(None, None, m, "query-ids") for m in unpaired(con, loaded)]
        report.warnings += [Issue(None, None, m, "doc-ids") for m in unpaired_passages(con, loaded)]
    if ids_are_texts and report.runs:
        n = sanity.read_ids_as_texts(con, report.runs)
        texts = "a passage text" if n == 1 else "passage texts"
        note = f"read {counted(n, 'document id')} of this load as {texts}"
        report.warnings.append(Issue(None, None, note, "identity", NOTE))
    if report.n_records:
        report.warnings += [Issue(None, None, w, "identity") for w in sanity.identity_warnings(con, report.runs)]
    if label_files:
        report.labels = load_qrels(con, label_files)
    if report.n_records and precompute_overview:
        derived.precompute(con)  # what every page opens on (logs.derived's registry)
    return report


def _named_alike(con: duckdb.DuckDBPyConnection, report: IngestReport) -> list[Issue]:
    """Files of this load whose questions were read as repeats (``q:…#2``) of another file's of this load
    in the same run (a run of an earlier load says so itself, :func:`_joined_runs`): two exports named
    alike (``k5/spans.parquet``, ``k10/spans.parquet``) make one run, as a log that names no run is named
    after its file — one sentence per file, saying what to do."""
    loaded = [f.sha256 for f in report.files if f.status == "loaded"]
    if not loaded or not report.runs:
        return []
    rows = con.execute(
        """SELECT fb.path, b.run_id, fa.path, count(*)
           FROM records a JOIN records b ON b.run_id = a.run_id AND b.query_id = a.query_id || '#2'
           JOIN files fa ON fa.file_id = a.file_id JOIN files fb ON fb.file_id = b.file_id
           WHERE a.file_id <> b.file_id AND list_contains(?, fa.sha256) AND list_contains(?, fb.sha256)
             AND list_contains(?, b.run_id)
           GROUP BY ALL ORDER BY fb.path, b.run_id""",
        [loaded, loaded, report.runs],
    ).fetchall()
    seen: set[tuple[str, str]] = set()
    out = []
    for path, run, other, n in rows:
        if (path, run) in seen:
            continue
        seen.add((path, run))
        out.append(
            Issue(
                path,
                None,
                f"this file and {Path(other).name} (another file of this load) both make run {run!r} (a log that "
                "names no run is named "
                f"after its file), so this file's {counted(n, 'question')} were read as repeats of the other's "
                f"(q:…#2): if they are two runs, remove run {run!r} and load them with names apart (rename the "
                "files, or one ingest each with --run-id)",
                "runs",
            )
        )
    return out


def _joined_runs(runs: list[str]) -> str:
    """The sentence for runs an earlier load had made that this load's records joined."""
    it = "it" if len(runs) == 1 else "them"
    return (
        f"{listed('run', [repr(r) for r in runs])} already held records of an earlier load: this load's "
        f"records were added to {it} (another tool's log is a run named after its file without "
        "extensions: rename a file to keep its records apart)"
    )


def load_uploads(
    con: duckdb.DuckDBPyConnection,
    uploads: Iterable[tuple[str, bytes]],
    dest: Path,
    options: IngestOptions = IngestOptions(),
    *,
    ids_are_texts: bool = False,
    settings: dict[str, object] | None = None,
    questions: tuple[str, bytes] | None = None,
) -> IngestReport:
    """Keep uploaded ``(name, bytes)`` files under ``dest`` (:func:`~ragaudit_core.logs.uploads.keep_uploads`) and load
    them; the report names each file as it was uploaded, not where it is kept. ``questions``: an
    uploaded questions file, kept there too, whose ids hashed query ids take (``IngestOptions.queries``)."""
    uploads = list(uploads)
    paths = keep_uploads(uploads, dest)
    if questions is not None:
        options = dataclasses.replace(options, queries=str(keep_uploads([questions], dest)[0]))
    report = load_paths(con, paths, options, ids_are_texts=ids_are_texts, settings=settings)
    kept = re.compile(re.escape(str(dest)) + r"[/\\][0-9a-f]{16}[/\\]")  # an earlier upload's kept path
    renamed = report.with_paths({str(p): name for p, (name, _data) in zip(paths, uploads)})
    return renamed.with_messages(lambda m: kept.sub("", m))  # "same content as a.csv", not its folder


def load_qrels_uploads(con: duckdb.DuckDBPyConnection, uploads: Iterable[tuple[str, bytes]], dest: Path) -> QrelsReport:
    """Keep uploaded relevance-label files under ``dest`` and load them (:func:`load_qrels`), then
    refresh the stored quality table of the default runs; errors name each file as uploaded."""
    uploads = list(uploads)
    paths = keep_uploads(uploads, dest)
    names = {str(p): name for p, (name, _data) in zip(paths, uploads)}
    try:
        report = load_qrels(con, paths)
    except QrelsError as e:
        msg = str(e)
        for kept, name in names.items():
            msg = msg.replace(kept, name)
        raise QrelsError(msg) from None
    derived.precompute(con)
    return report


def load_sample_logs(con: duckdb.DuckDBPyConnection) -> IngestReport:
    """Load the bundled SciFact sample logs (see ``sample_logs/README.md``)."""
    root = catalog.sample_logs_dir()
    if root is None:
        raise FileNotFoundError("the bundled sample logs are missing (sample_logs/scifact/*.jsonl.gz)")
    return load_paths(con, [root])


def _db_file(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return row[0] if row and row[0] else None


def clear(con: duckdb.DuckDBPyConnection) -> None:
    """Clear every loaded log and derived result (:func:`store.clear_data`) and the job queue beside
    the database file."""
    store.clear_data(con)
    if _db_file(con):
        _forget(con, None)


def _forget(con: duckdb.DuckDBPyConnection, runs: list[str] | None) -> None:
    """The jobs of removed runs forgotten (:func:`queue.forget_runs`); a damaged queue file does not
    undo or fail a removal already committed — it is logged, and said wherever the queue is read
    (a worker never stores a result for a run that is gone)."""
    try:
        queue.forget_runs(con, runs)
    except queue.QueueDamaged as e:
        log.warning("%s", e)


def remove_runs(con: duckdb.DuckDBPyConnection, runs: list[str]) -> removal.Removed:
    """:func:`removal.remove_runs`, and the runs' jobs in the queue."""
    done = removal.remove_runs(con, runs)
    if _db_file(con):
        _forget(con, done.runs)
    derived.precompute(con)
    return done


def remove_file(con: duckdb.DuckDBPyConnection, file_id: int) -> removal.Removed:
    """:func:`removal.remove_file`, and the jobs of the runs it removed entirely."""
    done = removal.remove_file(con, file_id)
    if done.runs and _db_file(con):
        _forget(con, done.runs)
    derived.precompute(con)
    return done

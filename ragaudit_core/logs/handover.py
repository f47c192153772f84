"""Rows crossing from the ingest's worker processes to the ingesting process, as Arrow files.

A worker writes the rows of each range it decoded as an Arrow file in a folder of the call
(:func:`hand_over`); the ingesting process maps the file and removes it at once (:func:`take`:
the mapping keeps the pages until the table is dropped, and they are read where they lie, not
copied). Through the pipe, the rows (about 650 bytes an entry with texts) were pickled, copied
through the kernel in 64 KB pieces and unpickled: the pipe alone took 1.6 ms of CPU a MB on its
two sides, and a 1M-entry ingest 1.0–1.4 CPU-s more (docs/benchmarks.md, "Rows handed over as
files"). Where the folder cannot be made, or a file cannot be written (a full ``TMPDIR``), the
table itself crosses the pipe as before.

The folder is named after the ingesting process (:data:`OUT_PREFIX` and its id) and removed when
the call ends (:func:`remove_folder`); a range that will not be taken (read ahead for a file read
otherwise, or in flight when a file is refused) gives its file back as it ends (:func:`discard`);
a folder left by a killed ingest is removed when a later ingest call starts
(:func:`remove_stale_folders`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import suppress

import pyarrow as pa

from ragaudit_core.logs.jsonl import TemporaryFileError

__all__ = [
    "OUT_PREFIX",
    "STALE_AFTER_S",
    "discard",
    "hand_over",
    "new_folder",
    "remove_folder",
    "remove_stale_folders",
    "take",
]

OUT_PREFIX = "ragaudit-rows-"
"""A call's folder of handed-over rows is named this, the ingesting process's id and ``-``."""


def new_folder() -> str | None:
    """A new folder for a call's handed-over rows under ``TMPDIR``, or None where it cannot be
    made: the rows then cross the pipe."""
    try:
        return tempfile.mkdtemp(prefix=f"{OUT_PREFIX}{os.getpid()}-")
    except OSError:
        return None


def hand_over(table: pa.Table, folder: str | None, name: str) -> pa.Table | str:
    """In a worker: ``table`` written as the Arrow file ``name`` in ``folder``, and its path
    returned; the table itself where there is no folder, no row, or the file cannot be written."""
    if folder is None or not table.num_rows:
        return table
    path = os.path.join(folder, f"{name}.arrow")
    try:
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    except OSError:  # (pyarrow's IO errors are OSErrors too)
        with suppress(OSError):
            os.unlink(path)
        return table
    return path


def take(rows: pa.Table | str) -> pa.Table:
    """In the ingesting process: the rows a worker handed over, a file mapped (read, where the file
    system cannot map it) and removed at once. A file that cannot be read back raises
    :class:`~ragaudit_core.logs.jsonl.TemporaryFileError` (the log file being read is refused in
    that sentence; the call's other files stay)."""
    if not isinstance(rows, str):
        return rows
    try:
        try:
            return pa.ipc.open_file(pa.memory_map(rows)).read_all()
        except OSError:  # a file system that cannot map files: read it into memory
            return pa.ipc.open_file(pa.OSFile(rows)).read_all()
    except (OSError, pa.ArrowException) as e:  # (a cut or damaged file: ArrowInvalid)
        raise TemporaryFileError(
            f"the rows its workers decoded could not be read back from {rows} ({e}); nothing of it was "
            "loaded: keep TMPDIR's temporary files while a load runs, and load it again"
        ) from e
    finally:
        with suppress(OSError):
            os.unlink(rows)


def remove_folder(folder: str) -> None:
    """Remove a call's folder with the files of ranges decoded but not taken (a refused file's)."""
    shutil.rmtree(folder, ignore_errors=True)


STALE_AFTER_S = 600.0
"""A folder whose process is not running is removed only once it has been left alone this long:
a live ingest creates and removes files in its folder every few seconds while its pool runs, and
a process of another container sharing ``/tmp`` (another pid namespace) looks gone from here."""


def remove_stale_folders(parent: str | None = None, *, now: float | None = None) -> list[str]:
    """Remove the folders of handed-over rows that ingests which no longer run left in ``parent``
    (default ``TMPDIR``; a ``kill -9`` or a crash leaves the files of the ranges in flight, up to
    6 × 4 MB of lines' rows), untouched for :data:`STALE_AFTER_S`; return the names removed. A
    folder whose process id runs again (reused) stays until a later call finds it free. Never
    raises: with no usable temporary folder there is nothing to remove."""
    gone: list[str] = []
    try:
        parent = tempfile.gettempdir() if parent is None else parent
        names = os.listdir(parent)
    except OSError:
        return gone
    now = time.time() if now is None else now
    for name in names:
        pid = name[len(OUT_PREFIX) :].split("-", 1)[0]
        if not name.startswith(OUT_PREFIX) or not pid.isdigit() or _running(int(pid)):
            continue
        path = os.path.join(parent, name)
        try:
            if now - os.stat(path).st_mtime < STALE_AFTER_S:
                continue
        except OSError:
            continue
        remove_folder(path)
        if not os.path.exists(path):  # (another user's folder stays)
            gone.append(name)
    return gone


def _running(pid: int) -> bool:
    """Whether process ``pid`` may be running (an id this system cannot hold counts as running:
    such a folder is not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # another user's process; an impossible id
        return True
    return True


def discard(rows: pa.Table | str) -> None:
    """Give back the rows of a range that will not be taken (its file, if it was written)."""
    if isinstance(rows, str):
        with suppress(OSError):
            os.unlink(rows)

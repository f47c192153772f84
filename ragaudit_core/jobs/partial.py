"""A running job's first estimate, kept beside the database until the job ends.

An anytime job (attribution: marginal contributions in retriever order and a few IG points first,
then exact) hands its first result to ``on_partial`` while it refines. The worker writes it here —
one JSON file per job in a folder beside the database (``.NAME.partial/JOB_ID.json``), never the DuckDB file, so a page
reads it without waiting on anyone — and removes it when the job ends (done, failed, cancelled),
so a partial never outlives its job. The write is atomic (a temporary file renamed over the old
one): a reader sees the whole previous or the whole new estimate. An in-memory database
(``:memory:``) has no folder: writes are dropped and reads give None.

Edge cases: a folder that cannot be written (read-only, full disk) drops the partial silently —
it is a preview, the job's result does not depend on it; an unreadable or half-written file
reads as None.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

__all__ = ["clear", "partial_file", "read", "write"]


_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def partial_file(db_path: str | os.PathLike, job_id: str) -> Path | None:
    """Where the first estimate of ``job_id`` on the database ``db_path`` is kept (None in memory,
    and None for an id that is not a plain name: a job id read from a queue file someone else wrote
    never becomes a path outside the folder — ``/home/x/notes`` or ``../x`` — to write or remove)."""
    if str(db_path) in ("", ":memory:") or not _SAFE_ID.fullmatch(str(job_id)):
        return None
    p = Path(db_path)
    return p.with_name(f".{p.name}.partial") / f"{job_id}.json"


def write(db_path: str | os.PathLike, job_id: str, payloads: list[dict]) -> None:
    """Keep ``payloads`` (the job's partial result, JSON-ready) as the job's first estimate."""
    f = partial_file(db_path, job_id)
    if f is None:
        return
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(payloads))
        os.replace(tmp, f)
    except OSError:
        return  # a preview only: the job goes on without it


def read(db_path: str | os.PathLike, job_id: str) -> list[dict] | None:
    """The job's first estimate, or None (none yet, the job ended, or the file is unreadable)."""
    f = partial_file(db_path, job_id)
    if f is None:
        return None
    try:
        data = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def clear(db_path: str | os.PathLike, job_id: str) -> None:
    """Forget the job's first estimate (its job ended)."""
    f = partial_file(db_path, job_id)
    if f is not None:
        with contextlib.suppress(OSError):
            f.unlink()

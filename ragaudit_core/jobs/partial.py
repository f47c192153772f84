"""A running job's first estimate, kept beside the database until the job ends.

An anytime job (attribution: marginal contributions in retriever order and a few IG points first,
then exact) hands its first result to ``on_partial`` while it refines. The worker writes it here —
one JSON file per job in a folder beside the database (``.NAME.partial/JOB_ID.json``), never the DuckDB file, so a page
reads it without waiting on anyone — and removes it when the job ends (done, failed, cancelled),
so a partial never outlives its job. The write is atomic (a temporary file renamed over the old
one): a reader sees the whole previous or the whole new estimate. An in-memory database
(``:memory:``) has no folder: writes are dropped and reads give None.

Edge cases: a folder that cannot be written (read-only, full disk) drops the partial silently —
it is a preview, the job's result does not depend on it; so does a payload that is not JSON, or
whose JSON is over :data:`MAX_BYTES` (the page shows the exact result when the job ends).

**Bounded reading.** The folder is beside the database, so anyone who can write there can put
any file in it: a page reads at most :data:`MAX_BYTES` (4 MiB; a five-document attribution's first
estimate, document texts and Integrated Gradients included, is some tens of KB) of a regular file
(not a link, a FIFO or a device), and :func:`load` gives the reason — over the limit, not JSON
(nesting too deep included), not a list of JSON objects, not readable — for a file it treats as
absent; :func:`first_estimate` further checks what the attributions page draws. Nothing a partial
file holds raises out of this module: a page or a worker never crashes on one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "clear", "first_estimate", "load", "partial_file", "read", "write"]

MAX_BYTES = 4 << 20
"""Bytes of one first estimate that are written and read (module doc, "Bounded reading")."""


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
    """Keep ``payloads`` (the job's partial result, JSON-ready) as the job's first estimate; one
    over :data:`MAX_BYTES` as JSON, or not JSON at all, is not kept (nor an older one)."""
    f = partial_file(db_path, job_id)
    if f is None:
        return
    try:
        text = json.dumps(payloads)
    except (TypeError, ValueError, RecursionError):
        text = None
    try:
        if text is None or len(text.encode()) > MAX_BYTES:
            f.unlink(missing_ok=True)
            return
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, f)
    except OSError:
        return  # a preview only: the job goes on without it


def read(db_path: str | os.PathLike, job_id: str) -> list[dict] | None:
    """The job's first estimate, or None (none yet, the job ended, or a file :func:`load` refuses)."""
    return load(db_path, job_id)[0]


def load(db_path: str | os.PathLike, job_id: str) -> tuple[list[dict] | None, str | None]:
    """(the job's first estimate, None), or (None, why a file that is there is treated as absent),
    or (None, None) when there is none; at most :data:`MAX_BYTES` are read, and nothing raises."""
    f = partial_file(db_path, job_id)
    if f is None:
        return None, None
    data, why = _bytes(f)
    if data is None:
        return None, why
    try:
        payloads = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: "[[[[…" nested past the decoder's stack
        return None, _refused(f, "is not JSON")
    if not isinstance(payloads, list) or not all(isinstance(p, dict) for p in payloads):
        return None, _refused(f, "is not a list of JSON objects")
    return payloads, None


def _bytes(f: Path) -> tuple[bytes | None, str | None]:
    """The file's bytes when it is a regular file (not a link, FIFO or device) of at most
    :data:`MAX_BYTES` — never more are read —, else None and the reason (None when absent)."""
    try:  # O_NONBLOCK: a FIFO put there opens at once (and is refused below) instead of waiting a writer
        fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, _refused(f, f"cannot be read ({e.strerror or e}: a link, or not this user's?)")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, _refused(f, "is not a regular file")
        data = os.read(fd, MAX_BYTES + 1) if st.st_size <= MAX_BYTES else None
        while data is not None and len(data) <= MAX_BYTES and (more := os.read(fd, MAX_BYTES + 1 - len(data))):
            data += more  # a short read: the rest, up to one byte over the limit
    except OSError as e:
        return None, _refused(f, f"cannot be read ({e.strerror or e})")
    finally:
        os.close(fd)
    if data is None or len(data) > MAX_BYTES:
        size = f"{st.st_size:,} bytes" if data is None else "more than that"
        return None, _refused(f, f"holds {size}, over the {MAX_BYTES:,}-byte limit, and was not read")
    return data, None


def _refused(f: Path, what: str) -> str:
    return (
        f"The first estimate kept beside the database ({f.parent.name}/{f.name}) {what}, so it is not shown; "
        "the job's exact result is shown when it ends (a file there that RagAudit did not write can be removed)."
    )


def first_estimate(db_path: str | os.PathLike, job_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """What the attributions page draws of a running job's first estimate — ``doc_ids`` (text),
    ``importance`` (numbers, one per document) and ``method`` — checked, or None and why not (as
    :func:`load`; None, None when there is none)."""
    payloads, why = load(db_path, job_id)
    if not payloads:
        return None, why
    p = payloads[0]
    ids, imp, method = p.get("doc_ids"), p.get("importance"), p.get("method", "loo")
    ok = (
        isinstance(ids, list)
        and isinstance(imp, list)
        and len(ids) == len(imp)
        and all(isinstance(d, str) for d in ids)
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in imp)
        and isinstance(method, str)
    )
    if not ok:
        f = partial_file(db_path, job_id)
        assert f is not None
        return None, _refused(f, "does not hold an attribution's first estimate (doc_ids and importance, one each)")
    return {"doc_ids": ids, "importance": imp, "method": method}, None


def clear(db_path: str | os.PathLike, job_id: str) -> None:
    """Forget the job's first estimate (its job ended)."""
    f = partial_file(db_path, job_id)
    if f is not None:
        with contextlib.suppress(OSError):
            f.unlink()

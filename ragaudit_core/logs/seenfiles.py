"""The files a database holds, by the SHA-256 of their bytes: what tells the ingest that a file's
content is already loaded (skipped with a warning, not loaded twice).

A file and its gzip-compressed copy — ``x.json`` and ``x.json.gz`` — hold the same content in other
bytes. Both map to run ``x``; loaded twice, a native log's records are rejected as duplicates and
another tool's repeated questions become numbered samples (``q:…#2``), doubling the run. So a
file named as an already loaded one with ``.gz`` added or removed is compared by content: the
compressed one is expanded and hashed (in bounded memory, within the default limits on expanded
bytes); only such a pair of names costs that read.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from pathlib import Path

from ragaudit_core.logs.jsonl import InputFileError, Limits, open_limited, stream_sha256

__all__ = ["SeenFiles", "already_loaded"]


def _expanded_sha256(path: Path) -> str | None:
    """The SHA-256 of a gzip file's expanded content; None when it is not gzip, cannot be read
    or expands past the default limits."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return None
        with open_limited(path, Limits()) as f:
            return stream_sha256(f)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, InputFileError):
        return None


class SeenFiles(dict[str, str]):
    """SHA-256 of a loaded file's bytes → its path, with its name's index for :meth:`same_content`."""

    def __init__(self, rows: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__()
        self._by_name: dict[str, tuple[str, str]] = {}
        for sha, path in rows:
            self[sha] = path

    def __setitem__(self, sha: str, path: str) -> None:
        super().__setitem__(sha, path)
        self._by_name[Path(path).name] = (sha, path)

    def __delitem__(self, sha: str) -> None:
        path = self[sha]
        super().__delitem__(sha)
        if self._by_name.get(Path(path).name, (None,))[0] == sha:
            del self._by_name[Path(path).name]

    def pop(self, sha: str, default: str | None = None) -> str | None:  # type: ignore[override]
        if sha not in self:
            return default
        path = self[sha]
        del self[sha]
        return path

    def same_content(self, path: Path, sha: str) -> str | None:
        """Where ``path``'s content (SHA-256 of its bytes: ``sha``) is already loaded, as the
        ingest's warning words it; None when it is not: a file with the same bytes, or the file
        named as ``path`` with ``.gz`` added or removed when one holds the other's content
        compressed."""
        if sha in self:
            return f"{self[sha]} (SHA-256 {sha[:12]}…)"
        name = path.name
        if name.lower().endswith(".gz"):
            twin = self._by_name.get(name[:-3])
            if twin is not None and _expanded_sha256(path) == twin[0]:
                return f"{twin[1]}, which holds it uncompressed"
        else:
            twin = self._by_name.get(name + ".gz")
            if twin is not None and _expanded_sha256(Path(twin[1])) == sha:
                return f"{twin[1]}, which holds it compressed"
        return None


def already_loaded(same: str, fmt: str | None) -> str:
    """The note on a file skipped as loaded before (``same``: which file, by its content); with a
    format asked for (``fmt``), how to read it as that format — a file is read once."""
    if fmt in (None, "auto"):
        return f"same content as {same}, already loaded; skipped"
    from ragaudit_core.logs.formats import get

    return (
        f"same content as {same}, already loaded; skipped; a file is read once — to read it as {get(fmt).label}, "
        "remove it first ('Remove a file or a run…' on the home page) or load it into another database"
    )

"""Which files one ingest call reads: the paths it was given, folders searched.

Each path is its own unit, as each file is once read: a path that cannot be used (missing, not a
regular file, a folder holding no log, a folder that cannot be read) is refused in one sentence
and the call reads the others; only a call left with nothing to read fails as a whole
(:class:`~ragaudit_core.logs.jsonl.InputFileError`).

Folders are searched recursively for JSON and JSON Lines files (:data:`~.jsonl.LOG_SUFFIXES`),
leaving out hidden files and folders — names starting with ``.`` (``.git``, ``.ipynb_checkpoints``,
``.DS_Store``): they hold no logs, and a JSON file in them would be refused as one. A path named on
its own is read whatever its name. Links to files are followed, links to folders are not (a link
back up the tree would list it again and again). A subfolder that cannot be read is skipped with a
warning naming it. What a search leaves unread is said once per folder: its CSV and Parquet files
(read when named on their own), and its archives and files compressed otherwise than with gzip
(``.zip``, ``.7z``, ``.tar``, ``.bz2``, ``.xz``, ``.zst``…: unpack them and give the folder again).
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from ragaudit_core.logs.jsonl import LOG_SUFFIXES, InputFileError
from ragaudit_core.logs.report import Issue
from ragaudit_core.wording import counted

__all__ = ["Listing", "list_paths", "unopened"]


@dataclass
class Listing:
    """The files to read, in order (each once), the paths refused and the warnings of the search."""

    files: list[Path] = field(default_factory=list)
    refused: list[Issue] = field(default_factory=list)
    warnings: list[Issue] = field(default_factory=list)


def list_paths(paths: list[str | Path]) -> Listing:
    """Files named directly, plus every log file found under named folders (in sorted order, hidden
    names left out); each path that cannot be used refused in one sentence. Raises
    :class:`InputFileError` when no file is left to read (every path refused, or none given)."""
    out = Listing()
    found: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files, hidden, tables, archives = _search(p, out)
            if files is not None and not files:
                why = "folder holds no .jsonl, .jsonl.gz, .ndjson or .json files"
                note = " (hidden files and folders, named with a leading '.', are not searched)" if hidden else ""
                if tables:
                    note += f"; {_unsearched(tables)}"
                if archives:
                    note += f"; {_unpack(p, archives)}"
                out.refused.append(Issue(str(p), None, why + note))
            else:
                if tables:
                    out.warnings.append(Issue(str(p), None, _unsearched(tables), "unsearched-tables"))
                if archives:
                    out.warnings.append(Issue(str(p), None, _unpack(p, archives), "unsearched-archives"))
            found.extend(files or [])
        elif p.is_file():
            found.append(p)
        else:
            out.refused.append(Issue(str(p), None, _why_unusable(p)))
    seen: dict[Path, Path] = {}
    for f in found:
        r = f.resolve()
        if r not in seen:
            seen[r] = f
            out.files.append(f)
        elif any(f == Path(raw) for raw in paths):  # named again, not met again in a folder searched
            out.warnings.append(Issue(str(f), None, f"given twice (also as {seen[r]}); read once", "same-path"))
    if not out.files:
        raise InputFileError("; ".join(map(str, out.refused)) or "no input files given")
    return out


def _why_unusable(p: Path) -> str:
    """Why a path given is neither a folder nor a regular file, in words: a link loop and a link to
    nothing are there (``ls`` shows them), unlike a path that does not exist."""
    if p.is_symlink():
        try:
            os.stat(p)
        except OSError as e:
            if e.errno == errno.ELOOP:
                return "a loop of symbolic links, which never reaches a file"
            if e.errno == errno.ENOENT:
                return f"a symbolic link to {os.readlink(p)}, which does not exist"
    return "not a regular file" if p.exists() else "no such file or folder"


_TABLE_SUFFIXES = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".parquet", ".parquet.gz")


def _unsearched(tables: list[Path]) -> str:
    """The sentence for CSV and Parquet files a folder search left unread (they are read when named)."""
    n = len(tables)
    return (
        f"{counted(n, 'CSV or Parquet file')} in it {'was' if n == 1 else 'were'} not read (folders are searched "
        f"for JSON and JSON Lines only): name {'it' if n == 1 else 'them'} on {'its' if n == 1 else 'their'} own, "
        f"as {tables[0]}"
    )


_ARCHIVE_SUFFIXES = (".zip", ".7z", ".rar", ".tar", ".tgz", ".tar.gz", ".bz2", ".tbz2", ".xz", ".txz", ".zst", ".zstd")
"""Archives and compressions other than gzip: a folder search does not read them (named on its own, such a
file is refused by its magic bytes, with how to unpack it: :func:`~.jsonl.unreadable`)."""
_NAMED_ARCHIVES = 3


def _unpack(root: Path, archives: list[Path]) -> str:
    """The sentence for archives a folder search left unread: how many, the first few, what to do."""
    n = len(archives)
    names = ", ".join(str(a.relative_to(root)) for a in archives[:_NAMED_ARCHIVES])
    more = f" and {n - _NAMED_ARCHIVES:,} more" if n > _NAMED_ARCHIVES else ""
    return (
        f"{counted(n, 'archive or compressed file', 'archives or compressed files')} in it "
        f"{'was' if n == 1 else 'were'} not read (RagAudit reads logs plain or gzip-compressed, not archives): "
        f"{names}{more}; unpack {'it' if n == 1 else 'them'} and give the folder again"
    )


def _search(root: Path, out: Listing) -> tuple[list[Path] | None, bool, list[Path], list[Path]]:
    """The log files under ``root`` (None: the folder refused, ``root`` itself cannot be read),
    whether hidden files or folders were left out, and the CSV and Parquet files and the archives
    left unread."""
    errors: list[OSError] = []
    found = []
    tables: list[Path] = []
    archives: list[Path] = []
    hidden = False
    for folder, subfolders, names in os.walk(root, onerror=errors.append):
        hidden = hidden or any(n.startswith(".") for n in (*subfolders, *names))
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        found += [
            f
            for name in names
            if not name.startswith(".") and name.lower().endswith(LOG_SUFFIXES) and (f := Path(folder, name)).is_file()
        ]
        # a qrels/ folder's .tsv files are relevance labels, read with the folder (qrels.qrels_files)
        labels = Path(folder).name == "qrels"
        tables += [
            Path(folder, n)
            for n in names
            if not n.startswith(".")
            and n.lower().endswith(_TABLE_SUFFIXES)
            and not (labels and n.lower().endswith((".tsv", ".tsv.gz")))
        ]
        archives += [Path(folder, n) for n in names if not n.startswith(".") and n.lower().endswith(_ARCHIVE_SUFFIXES)]
    for e in errors:
        why = (e.strerror or type(e).__name__).lower()
        if Path(e.filename or root) == root:
            out.refused.append(Issue(str(root), None, f"the folder cannot be read ({why}); nothing in it was loaded"))
            return None, hidden, [], []
        out.warnings.append(
            Issue(
                str(e.filename),
                None,
                f"this folder cannot be read ({why}) and was skipped: nothing in it was loaded",
                "unreadable-folder",
            )
        )
    return sorted(found), hidden, sorted(tables), sorted(archives)


def unopened(e: OSError) -> str:
    """Why a listed file could not be opened, in words (the sentence that refuses it)."""
    if isinstance(e, FileNotFoundError):
        return "the file is gone (deleted or moved after the paths were listed); nothing of it was loaded"
    if isinstance(e, PermissionError):
        return "permission denied (this user may not read the file); nothing of it was loaded"
    return f"the file cannot be read ({e.strerror or type(e).__name__}); nothing of it was loaded"

"""Uploads kept beside the database: the name an upload is kept under (:func:`upload_name`) and
the keeping itself (:func:`keep_uploads`: content-addressed, atomic, never through a link)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import unicodedata
from collections.abc import Iterable
from pathlib import Path

from ragaudit_core.errors import RagAuditError

__all__ = ["MAX_NAME_BYTES", "UploadNotKept", "keep_uploads", "upload_name"]

_KNOWN_SUFFIXES: tuple[str, ...] = (".jsonl.gz", ".ndjson.gz", ".json.gz", ".csv.gz", ".tsv.gz", ".jsonl", ".ndjson")
_KNOWN_SUFFIXES += (".json", ".csv", ".tsv", ".parquet", ".gz", ".txt")
MAX_NAME_BYTES = 150
"""Longer upload names (UTF-8 bytes; file systems allow 255) keep their start, a hash of the whole
name and their extension."""


def _is_mark(c: str) -> bool:
    """A combining mark (Unicode category M: a vowel sign, an accent left uncomposed)."""
    return unicodedata.category(c)[0] == "M"


def upload_name(name: str) -> str:
    """The file name an upload is kept under: its last path component, letters and digits of any
    script kept (``报告.csv`` stays ``报告.csv``), other characters (separators, controls, bidi
    marks) replaced by ``_``, the extension kept whole (``.jsonl.gz``), and a name over
    :data:`MAX_NAME_BYTES` bytes shortened to its start, ``-`` and 10 hex digits of its SHA-1.
    The extension is what tells the reader the container when the content cannot. The name is
    read in Unicode's composed form (NFC: a decomposed ``résumé`` from macOS is ``résumé``), with
    the combining marks of scripts that write vowels as marks (Devanagari ``रिपोर्ट``) kept, and
    white space around it dropped (``run.csv `` is ``run.csv``)."""
    base = unicodedata.normalize("NFC", name.replace("\\", "/").rsplit("/", 1)[-1]).strip()
    lower = base.lower()
    suffix = next((base[-len(x) :] for x in _KNOWN_SUFFIXES if lower.endswith(x) and len(base) > len(x)), "")
    if not suffix and "." in base.strip("."):
        suffix = "." + base.rsplit(".", 1)[1]
    stem = base[: len(base) - len(suffix)] if suffix else base
    clean = "".join(c if c.isalnum() or c in "-_." or _is_mark(c) else "_" for c in stem).strip("._") or "upload"
    suffix = "".join(c if c.isascii() and (c.isalnum() or c == ".") else "_" for c in suffix.lower())[:16]
    if len(clean.encode()) + len(suffix) > MAX_NAME_BYTES:
        tag = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        head = clean.encode()[: MAX_NAME_BYTES - len(suffix) - 11].decode("utf-8", "ignore")
        clean = head + "-" + tag
    return clean + suffix


class UploadNotKept(RagAuditError, OSError):
    """An upload could not be kept where the database keeps its uploads (one sentence)."""


def keep_uploads(uploads: Iterable[tuple[str, bytes]], dest: Path) -> list[Path]:
    """Keep uploaded files on disk (``dest/<sha256 prefix>/<name>``); returns their paths.

    Keeping the bytes makes the audit reproducible (the report lists each file's
    SHA-256) and lets the same upload be recognised by content. Names are reduced to
    their last path component with unusual characters replaced. The kept file is the upload's
    bytes: it is written to a temporary name and renamed into place (a write cut short leaves no
    part of it there), a file already there is used only when its bytes are the upload's (else
    written again), and no link is followed — a link at the file's or its folder's place is
    replaced, and an uploads folder that is itself a link is refused — so an upload never writes
    or reads outside ``dest``. Raises :class:`UploadNotKept` (one sentence) when it cannot be kept.
    """
    _refuse_linked(dest)
    paths = []
    for name, data in uploads:
        digest = hashlib.sha256(data).hexdigest()
        target = dest / digest[:16] / upload_name(name)
        try:
            _keep(target, data, digest)
        except OSError as e:
            raise UploadNotKept(
                f"the upload {upload_name(name)} could not be kept in {dest} ({e.strerror or e}): nothing of it "
                "was loaded; free space there, or make the folder writable"
            ) from None
        paths.append(target)
    return paths


def _refuse_linked(dest: Path) -> None:
    if dest.is_symlink():
        raise UploadNotKept(
            f"the uploads folder {dest} is a link (to {dest.resolve()}): uploads are kept only in a real folder "
            "beside the database; remove the link"
        )


def _keep(target: Path, data: bytes, digest: str) -> None:
    folder = target.parent
    if folder.is_symlink():
        folder.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    if not target.is_symlink() and target.is_file() and _sha256(target) == digest:
        return
    # a fresh name (O_EXCL, random: never through a link, never one a crashed write left behind)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)  # replaces a link or a wrong file at the place itself, never its target
    finally:
        Path(tmp).unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

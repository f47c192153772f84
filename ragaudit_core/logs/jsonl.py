"""Reading JSONL input: plain or gzip, line by line (which files a call reads: :mod:`.listing`).

The reader never raises for a bad *line*: it yields the line's number with either its
bytes or a human reason, so that one bad line costs only itself. Problems that make a
whole *file* unreadable (missing, UTF-16, unreadable gzip header) raise
:class:`InputFileError` with the file named.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Protocol

from ragaudit_core.errors import RagAuditError

__all__ = [
    "DEFAULT_MAX_EXPANSION",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "LOG_SUFFIXES",
    "OTLP_ADVICE",
    "CellLine",
    "FileRefused",
    "InputFileError",
    "Limits",
    "Line",
    "TemporaryFileError",
    "file_sha256",
    "gunzipped_head",
    "iter_lines",
    "open_limited",
    "plain_lf_file",
    "range_lines",
    "read_lines",
    "stream_sha256",
    "too_long_advice",
    "unreadable",
    "utf16_evidence",
    "value_too_long",
]

DEFAULT_MAX_LINE_BYTES = 8 * 1024 * 1024
"""Bytes of one line, one JSON value of a document, one CSV row (so one cell) — ``--max-line-bytes``."""
DEFAULT_MAX_FILE_BYTES = 64 * 1024**3
"""Bytes one file may hold once decompressed — ``--max-file-bytes``."""
DEFAULT_MAX_EXPANSION = 100
"""How many times its own size a compressed file may expand (checked once past 64 MiB) —
``--max-expansion``; log text compresses 5–20×, a decompression bomb about 1000×."""
_EXPANSION_FLOOR = 64 * 1024 * 1024
_KEEP_OF_LONG_LINE = 64 * 1024
LOG_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz", ".json", ".json.gz")
_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_HOLDS_RECORDS = re.compile(
    rb'[ \t\r\n]*(?:\[|\{[ \t\r\n]*"(?:observations|post|patch|data|results|testCases|goldens|traces|trace|child_runs)"'
    rb"[ \t\r\n]*:)"
)


_OTLP_EXPORT = re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"resourceSpans"[ \t\r\n]*:')
OTLP_ADVICE = "raise --max-line-bytes, or have the exporter write fewer spans per export"
"""What to do about an OTLP trace export past ``--max-line-bytes`` (read whole, never split)."""


def value_too_long(limit: int) -> str:
    """How the reason a JSON value past ``--max-line-bytes`` is rejected with starts (what to do
    follows it: :func:`too_long_advice`, or the container's own advice)."""
    return f"JSON value is longer than the {limit:,}-byte limit"


def too_long_advice(head: bytes) -> str:
    """What to do about a line or JSON value past ``--max-line-bytes`` that starts with ``head``:
    split the record — unless it holds records (an array, or an object whose first member is a
    record array or a trace), which are written one per line instead, or is an OTLP trace export
    (its spans are read from the one export)."""
    if _OTLP_EXPORT.match(head):
        return f"it is an OTLP trace export, read whole: {OTLP_ADVICE}"
    if _HOLDS_RECORDS.match(head):
        return "it holds records: write them one per line (JSON Lines), or raise --max-line-bytes"
    return "split the record or raise --max-line-bytes"


class InputFileError(RagAuditError, ValueError):
    """A whole input file cannot be used. The message names the file."""


class FileRefused(InputFileError):
    """A whole file refused past a limit while it was read: what it gave is taken back."""


class TemporaryFileError(InputFileError):
    """Rows or lines could not be written to or read from their temporary file (a full or
    unwritable ``TMPDIR``): the file being read is refused with this sentence, the call's other
    files stay."""


@dataclass(frozen=True)
class Limits:
    """The bounds on what one file may make the ingest hold (``docs/log-contract.md``)."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_expansion: int = DEFAULT_MAX_EXPANSION
    max_depth: int = 64


class _Counted(io.BufferedIOBase):
    """A binary file that raises :class:`FileRefused` once more than the limits allow is read."""

    def __init__(self, raw: Any, path: Path, limits: Limits, compressed_size: int | None) -> None:
        super().__init__()
        self._raw, self._path, self._limits = raw, path, limits
        self._cap = limits.max_file_bytes
        if compressed_size is not None:
            self._cap = min(self._cap, max(_EXPANSION_FLOOR, compressed_size * limits.max_expansion))
        self._compressed = compressed_size
        self.n = 0

    def _count(self, data: bytes) -> bytes:
        self.n += len(data)
        if self.n > self._cap:
            if self._compressed is not None and self._cap < self._limits.max_file_bytes:
                raise FileRefused(
                    f"{self._path}: the {self._compressed:,}-byte compressed file expands more than "
                    f"{self._limits.max_expansion}× (past {self._cap:,} bytes), as a decompression bomb does; "
                    "nothing of it was loaded (raise --max-expansion if it is a real log)"
                )
            raise FileRefused(
                f"{self._path}: the file holds more than {self._cap:,} bytes (decompressed); nothing of it "
                "was loaded (split it, or raise --max-file-bytes)"
            )
        return data

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        return self._count(self._raw.read(-1 if size is None else size))

    def read1(self, size: int = -1, /) -> bytes:
        return self.read(size if size >= 0 else 1 << 16)

    def readline(self, size: int | None = -1, /) -> bytes:
        """A line; after a blank line, the blank lines that follow it come with it (up to 1 MiB),
        so a file of blank lines is read in C, not one Python step per line."""
        line = self._raw.readline(-1 if size is None else size)
        if line in (b"\n", b"\r\n") and hasattr(self._raw, "peek"):
            more = bytearray(line)
            while len(more) < (1 << 20):
                head = self._raw.peek(1 << 16)[: 1 << 16]
                n = len(head) - len(head.lstrip(b"\r\n"))
                if n < len(head) and head[n - 1 : n] == b"\r":
                    n -= 1  # a CR before a line's text is the line's
                if n == 0:
                    break
                more += self._raw.read(n)
            line = bytes(more)
        return self._count(line)

    def close(self) -> None:
        self._raw.close()
        super().close()


def open_limited(path: Path, limits: Limits) -> Any:
    """``path`` opened for reading bytes — decompressed when it is gzip (by its magic bytes) —
    counting what is read against ``limits`` (:class:`FileRefused` past them)."""
    with open(path, "rb") as f:
        gz = f.read(2) == _GZIP_MAGIC
    raw = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 — closed by _Counted
    return _Counted(raw, path, limits, path.stat().st_size if gz else None)


class _Readable(Protocol):
    """What the line reader needs of a file: ``readline`` of bytes."""

    def readline(self, size: int = -1, /) -> bytes: ...


@dataclass(frozen=True)
class Line:
    """One physical line: ``data`` (without the newline) or, when unusable, ``error``."""

    line_no: int
    data: bytes
    error: str | None = None
    note: str | None = None  # a non-fatal remark (e.g. a byte-order mark was stripped)
    offset: int | None = None  # byte offset of the line in an uncompressed file, where known
    cells: ClassVar[bool] = False  # a row whose cells may hold lists written as text (CellLine)


@dataclass(frozen=True)
class CellLine(Line):
    """A CSV or Parquet row (:mod:`.containers`): a list or an object may be written as text in a
    cell. (A class, not a field: a field costs every line of every file its construction.)"""

    cells: ClassVar[bool] = True


def file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return stream_sha256(f)


def stream_sha256(f: BinaryIO) -> str:
    """The SHA-256 (hex) of what ``f`` reads to its end, read a MiB at a time."""
    h = hashlib.sha256()
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
    return h.hexdigest()


def iter_lines(
    path: Path,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    warn: list[str] | None = None,
    limits: Limits | None = None,
) -> Generator[Line, None, None]:
    """Yield every non-blank line of ``path`` as a :class:`Line`.

    * gzip is recognised by its magic bytes, whatever the file is called; a ``.gz``
      file that is not gzip is read as plain text and a note is added to ``warn``;
    * a UTF-8 byte-order mark at the start of a line is stripped (noted on the line);
    * CR before LF is dropped; a file whose lines end in CR alone (classic Mac) is split
      on CR; blank lines are skipped;
    * a line longer than ``max_line_bytes`` is not parsed: its first 64 KiB are kept;
    * a corrupt or truncated gzip stream ends the file with one error line after the
      last good line;
    * past ``limits`` (decompressed size, expansion) :class:`FileRefused` is raised.
    """
    limits = limits or Limits(max_line_bytes=max_line_bytes)
    try:
        with open(path, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError as e:
        raise InputFileError(f"{path}: cannot read ({e.strerror})") from None
    what = unreadable(head)
    if what is not None:
        raise InputFileError(f"{path}: file is {what}")
    is_gzip = head[:2] == _GZIP_MAGIC
    if is_gzip and (what := unreadable(gunzipped_head(path, _HEAD_BYTES))) is not None:
        raise InputFileError(f"{path}: the file in this gzip stream is {what}")
    if path.name.lower().endswith(".gz") and not is_gzip and warn is not None:
        warn.append(f"{path}: named .gz but not gzip-compressed (no gzip header); read as plain text")

    def opener() -> Any:
        return open_limited(path, limits)

    cr_only = _cr_only(lambda: gzip.open(path, "rb") if is_gzip else open(path, "rb"))  # noqa: SIM115 — closed by _cr_only
    with opener() as raw:
        yield from read_lines(_CrLines(raw) if cr_only else raw, max_line_bytes=max_line_bytes)


def gunzipped_head(path: Path, n: int = 4) -> bytes:
    """The first ``n`` bytes of a gzip file's content (fewer, or none, where it is damaged: the
    reader then says so)."""
    try:
        with gzip.open(path, "rb") as g:
            return g.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


_HEAD_BYTES = 10
"""The first bytes of a file :func:`unreadable` looks at (bzip2's magic and its first block's)."""

_HOW = "RagAudit reads logs plain or gzip-compressed: "
_ARCHIVES = (
    ((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08"), "a ZIP archive", "extract its files (unzip) and give them"),
    ((b"BZh",), "bzip2-compressed", "decompress it (bunzip2), or compress it with gzip"),
    ((b"\xfd7zXZ\x00",), "xz-compressed", "decompress it (unxz), or compress it with gzip"),
    ((b"\x28\xb5\x2f\xfd",), "zstd-compressed", "decompress it (unzstd), or compress it with gzip"),
    ((b"7z\xbc\xaf\x27\x1c",), "a 7-Zip archive", "extract its files (7z x) and give them"),
)
"""Containers a log may come in that are not read, by their magic bytes: a stored ZIP's lines are
plain text between its headers (its first and last line were rejected, the others loaded), the
others' bytes were rejected line by line as binary — neither said what the file is."""


def unreadable(head: bytes) -> str | None:
    """What a file's first :data:`_HEAD_BYTES` bytes show it to be when it is not text we read —
    the end of a sentence after "file is", with what to do — or None."""
    if head[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):  # before UTF-16, whose mark starts UTF-32LE's
        return f"UTF-32 encoded (byte-order mark {head[:4].hex(' ')}); save it as UTF-8"
    utf16 = utf16_evidence(head[:4])
    if utf16 is not None:
        return f"UTF-16 encoded ({utf16}); save it as UTF-8"
    for magics, what, how in _ARCHIVES:
        if head.startswith(magics) and (magics[0] != b"BZh" or _bzip2(head)):
            return f"{what}; {_HOW}{how}"
    return None


def _bzip2(head: bytes) -> bool:
    """bzip2's ``BZh`` is followed by its block size (``1``–``9``) and a block's or the end's magic:
    a text that starts with "BZh" does not."""
    return head[3:4] in b"123456789" and len(head) >= 10 and head[4:10] in (b"1AY&SY", b"\x17\x72\x45\x38\x50\x90")


def utf16_evidence(head: bytes) -> str | None:
    """What shows a file's first 4 bytes to be UTF-16 — its byte-order mark, or ASCII text with
    a NUL byte after (little-endian) or before (big-endian) each character, as a UTF-16 file
    without a mark starts (``{"`` is ``7b 00 22 00``); None otherwise. No UTF-8 log starts so:
    JSON and CSV text never holds a NUL."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return f"byte-order mark {head[:2].hex(' ')}"
    if len(head) == 4 and head[1] == head[3] == 0 and head[0] and head[2] and head[0] < 128 and head[2] < 128:
        return "no byte-order mark; a NUL byte after each character: UTF-16LE"
    if len(head) == 4 and head[0] == head[2] == 0 and head[1] and head[3] and head[1] < 128 and head[3] < 128:
        return "no byte-order mark; a NUL byte before each character: UTF-16BE"
    return None


def plain_lf_file(path: Path) -> bool:
    """Whether ``path`` is uncompressed with LF line ends: then any byte range of it that starts
    after a LF can be read on its own (:func:`read_lines` with ``end``)."""
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    return (
        head[:2] != _GZIP_MAGIC
        and head[:2] not in (b"\xff\xfe", b"\xfe\xff")
        and not (b"\r" in head and b"\n" not in head)
    )


def read_lines(
    f: _Readable,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    end: int | None = None,
    offset: int | None = None,
    counted: list[int] | None = None,
) -> Iterator[Line]:
    """The lines of an open binary file from its current position (line numbers from 1), as
    :func:`iter_lines` describes; with ``end`` (a byte count from the current position that ends
    after a LF), only that range. With ``offset`` (the current position in an uncompressed file)
    each line carries its byte offset. ``counted``, when given, receives the physical lines read
    (blank ones included) as its one element."""
    line_no = 0
    left = end
    pos = offset
    try:
        while left is None or left > 0:
            try:
                chunk = f.readline(max_line_bytes + 1 if left is None else min(max_line_bytes + 1, left))
            except (OSError, EOFError, zlib.error) as e:
                yield Line(
                    line_no + 1,
                    b"",
                    error=(
                        f"gzip stream is corrupt or truncated after line {line_no} ({e}); "
                        "the lines before it were read, nothing after it could be"
                    ),
                )
                return
            if not chunk:
                return
            if left is not None:
                left -= len(chunk)
            line_no += 1
            at = pos
            if pos is not None:
                pos += len(chunk)
            if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                line, rest = _long_line(f, line_no, chunk, max_line_bytes)
                if left is not None:
                    left -= rest
                if pos is not None:
                    pos += rest
                yield line
                continue
            data = chunk.rstrip(b"\n").rstrip(b"\r")
            note = None
            if data.startswith(_UTF8_BOM):
                data = data[len(_UTF8_BOM) :]
                note = "a UTF-8 byte-order mark at the start of the line was ignored"
            if not data or data.isspace():
                line_no += max(0, chunk.count(b"\n") - 1)  # blank lines read together (_Counted.readline)
                continue
            yield Line(line_no, data, note=note, offset=at)
    finally:
        if counted is not None:
            counted[:] = [line_no]


def _long_line(f: _Readable, line_no: int, chunk: bytes, max_line_bytes: int) -> tuple[Line, int]:
    """A line over the limit: its first 64 KiB kept with the reason, the rest of it read past;
    returns the line and how many bytes were read after ``chunk``."""
    first = total = len(chunk)
    kept = chunk[:_KEEP_OF_LONG_LINE]
    try:
        while chunk and not chunk.endswith(b"\n"):
            chunk = f.readline(1 << 20)
            total += len(chunk)
    except (OSError, EOFError, zlib.error):
        pass
    return Line(
        line_no,
        kept,
        error=(
            f"line is longer than the {max_line_bytes:,}-byte limit (at least {total:,} bytes); "
            + too_long_advice(kept[:256])
        ),
        note="truncated",
    ), total - first


def _cr_only(opener: Callable[[], Any]) -> bool:  # opens the file, binary (plain or gzip)
    """Whether the file's lines end in a bare CR: its first MiB holds a CR and no LF."""
    try:
        with opener() as f:
            head = f.read(1 << 20)
    except (OSError, EOFError, zlib.error):
        return False  # the reader reports the damage line by line
    return b"\r" in head and b"\n" not in head


class _CrLines:
    """A binary file whose lines end in CR, read line by line as if they ended in LF."""

    def __init__(self, raw: Any) -> None:  # a binary file object
        self._text = io.TextIOWrapper(raw, encoding="latin-1", newline="\r")  # latin-1: bytes unchanged

    def readline(self, size: int = -1) -> bytes:
        line = self._text.readline(size).encode("latin-1")
        return line[:-1] + b"\n" if line.endswith(b"\r") else line


def range_lines(
    f: BinaryIO, length: int, offset: int, *, max_line_bytes: int, counted: list[int] | None = None
) -> Iterator[Line]:
    """:func:`read_lines` of the ``length`` bytes from ``offset`` (the current position of an
    uncompressed file; the range ends after a LF). A range no longer than the line limit holds no
    line too long, so it is read in one call and split here (a third of the time of a
    ``readline`` per line), giving the same lines, numbers and offsets."""
    if length > max_line_bytes:
        yield from read_lines(f, max_line_bytes=max_line_bytes, end=length, offset=offset, counted=counted)
        return
    line_no = 0
    try:
        buf = f.read(length)
        n, pos = len(buf), 0
        while pos < n:
            nl = buf.find(b"\n", pos)
            stop = n if nl < 0 else nl + 1
            line_no += 1
            data = buf[pos : stop - 1 if nl >= 0 else stop].rstrip(b"\r")
            at, pos = pos, stop
            note = None
            if data.startswith(_UTF8_BOM):
                data = data[len(_UTF8_BOM) :]
                note = "a UTF-8 byte-order mark at the start of the line was ignored"
            if data and not data.isspace():
                yield Line(line_no, data, note=note, offset=offset + at)
    finally:
        if counted is not None:
            counted[:] = [line_no]

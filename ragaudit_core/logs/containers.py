"""Log files that are not JSON Lines — a JSON document (an array of records, or RAGChecker's
``{"results": [...]}``), CSV with a header row, Parquet — read as rows.

Each row comes out as a :class:`~ragaudit_core.logs.jsonl.Line` holding the row as one JSON
object (``line_no`` = the row's number from 1; for CSV the file line the row starts on), so
it goes through the same decoding, validation and quarantine as a line of a JSONL file.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ragaudit_core.logs.jsonl import InputFileError, Line

__all__ = ["iter_rows"]


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8")


def iter_rows(path: Path) -> Iterator[Line] | None:
    """The rows of a JSON document, CSV or Parquet file; None for a JSON Lines file (read it
    with :func:`jsonl.iter_lines`). Raises :class:`InputFileError` for an unreadable file."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        return _parquet_rows(path)
    if name.endswith((".csv", ".csv.gz")):
        return _csv_rows(path)
    if name.endswith((".json", ".json.gz")):
        return _json_document_rows(path)
    return None


def _read_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
        return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise InputFileError(f"{path}: cannot read the file ({e})") from None


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e})") from None


def _check_utf8(path: Path, opener: Callable[[], Any]) -> None:  # opener: the binary file, plain or gzip
    """InputFileError naming the byte offset when the (decompressed) file is not UTF-8."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    done = 0
    try:
        with opener() as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                try:
                    decoder.decode(block)
                except UnicodeDecodeError as e:
                    raise InputFileError(
                        f"{path}: not UTF-8 text (byte offset {done + e.start}); re-encode the file as UTF-8"
                    ) from None
                done += len(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as e:
        raise InputFileError(
            f"{path}: not UTF-8 text (byte offset {done + e.start}); re-encode the file as UTF-8"
        ) from None
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise InputFileError(f"{path}: cannot read the file ({e})") from None


def _json_document_rows(path: Path) -> Iterator[Line] | None:
    """A JSON array of records, or ``{"results": [...]}``; None when the file is JSON Lines
    (several documents, or one record object)."""
    data = _read_bytes(path)
    head = data.lstrip()[:1]
    if head not in (b"[", b"{"):
        return None
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return None  # JSON Lines, or broken: the line reader reports each line
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        rows = doc["results"]
    elif isinstance(doc, list):
        rows = doc
    else:
        return None
    return (Line(i, _dumps(r)) for i, r in enumerate(rows, start=1))


def _csv_rows(path: Path) -> Iterator[Line]:
    """A CSV file (plain or gzip), streamed row by row: checked to be UTF-8 first, in 1 MiB
    blocks, then parsed from the file (memory does not grow with the file)."""
    gz = _is_gzip(path)
    opener = (lambda: gzip.open(path, "rb")) if gz else (lambda: open(path, "rb"))  # noqa: SIM115 — closed by its caller
    _check_utf8(path, opener)
    reader = csv.DictReader(io.TextIOWrapper(opener(), encoding="utf-8-sig", newline=""))
    if not reader.fieldnames:
        return iter(())
    header = list(reader.fieldnames)

    def rows() -> Iterator[Line]:
        line_no = reader.line_num + 1
        for row in reader:
            if None in row:
                yield Line(
                    line_no,
                    _dumps({k: v for k, v in row.items() if k is not None}),
                    error=f"row has {len(header) + len(row[None])} fields, the header {len(header)}",
                )
            else:
                yield Line(line_no, _dumps({k: (None if v == "" else v) for k, v in row.items()}))
            line_no = reader.line_num + 1

    return rows()


def _parquet_rows(path: Path) -> Iterator[Line]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise InputFileError(f"{path}: not a readable Parquet file ({e})") from None

    def rows() -> Iterator[Line]:
        n = 0
        for batch in pf.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                n += 1
                yield Line(n, _dumps(row))

    return rows()

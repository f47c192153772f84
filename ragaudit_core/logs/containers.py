"""Log files that are not JSON Lines — a JSON document (recognised by content: pretty-printed,
an array, an object holding records, values back to back), CSV with a header row, Parquet —
read as rows, streamed in bounded memory.

Each row comes out as a :class:`~ragaudit_core.logs.jsonl.Line` holding the row as one JSON
value (``line_no`` = the file line the value or CSV row starts on; for Parquet the row's number
from 1), so it goes through the same decoding, detection, validation and quarantine as a line
of a JSONL file. A row past a limit, or a CSV row that is not UTF-8, comes out as an error line
and costs only itself; a file past the size limits raises
:class:`~ragaudit_core.logs.jsonl.FileRefused` and is refused as a whole.

CSV: the delimiter is the one of ``,`` ``;`` tab ``|`` that splits the header into the most
fields (a comma on a tie); a row is the bytes up to a line end outside double quotes, at most
``max_line_bytes``; each row is decoded on its own.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ragaudit_core.logs import formats
from ragaudit_core.logs.documents import iter_values, sniff
from ragaudit_core.logs.formats import native
from ragaudit_core.logs.jsonl import (
    CellLine,
    InputFileError,
    Limits,
    Line,
    gunzipped_head,
    open_limited,
    unreadable,
)
from ragaudit_core.wording import counted

__all__ = ["iter_rows"]

_KEEP = 64 * 1024
_ROW_GROUP_READ = (
    64 << 20
)  # a Parquet row group larger than this, whose rows average past the row limit, is not decoded
_DELIMITERS = (",", ";", "\t", "|")
_NONBLANK = re.compile(rb"[^\r\n]")
_QUOTE_OR_LF = re.compile(rb'["\n]')
_UTF8_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_BOM_NOTE = "a UTF-8 byte-order mark at the start of the file was ignored"


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, ensure_ascii=False, default=str).encode("utf-8")


def iter_rows(path: Path, limits: Limits | None = None, notes: list[str] | None = None) -> Iterator[Line] | None:
    """The rows of a JSON document, CSV or Parquet file; None for JSON Lines (read them with
    :func:`jsonl.iter_lines`). Parquet and CSV are named by their extension (or Parquet's magic
    bytes); any other file is a JSON document when its content reads as one (:func:`documents.sniff`),
    whatever its name — a ``.jsonl`` that holds one gets a note in ``notes``. Raises
    :class:`InputFileError` for an unreadable file."""
    limits = limits or Limits()
    name = path.name.lower()
    try:
        with open(path, "rb") as f:
            magic = f.read(10)
        if unreadable(magic) is not None or (magic[:2] == _GZIP_MAGIC and unreadable(gunzipped_head(path, 10))):
            return None  # UTF-16 (as Excel's "Unicode text" is), an archive…: the line reader refuses it with advice
        if name.endswith(".parquet") or magic[:4] == b"PAR1":
            return _parquet_rows(path, limits)
        if magic[:2] == _GZIP_MAGIC and (name.endswith(".parquet.gz") or gunzipped_head(path) == b"PAR1"):
            return _gzipped_parquet(path, limits)
        named_csv = name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz"))
        if named_csv and not _holds_json(path, limits):
            return _csv_rows(path, limits)
    except OSError as e:
        raise InputFileError(f"{path}: cannot read the file ({e})") from None
    head = b""
    try:
        with open_limited(path, limits) as f:
            while len(head) < 1 << 20:  # in small reads: a damaged gzip stream loses only its last one
                block = f.read(1 << 16)
                if not block:
                    break
                head += block
    except (OSError, EOFError, zlib.error):
        if not head:
            return None  # the line reader says what is wrong
    delim = _csv_table(head)
    if delim is not None:
        if notes is not None:
            notes.append(
                f"holds a CSV table ({_DELIMITER_NAMES[delim]}-separated, with a header row) though not named .csv: "
                "read as CSV"
            )
        return _csv_rows(path, limits)
    if sniff(head) != "document" or _long_first_line(path, limits, head):
        if named_csv and notes is not None:
            notes.append(f"named {_suffix(name)} but holds JSON Lines, not a table: read as JSON Lines")
        return None
    if named_csv and notes is not None:
        notes.append(f"named {_suffix(name)} but holds a JSON document, not a table: read as a document")
    if notes is not None and name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")):
        notes.append(
            "named as JSON Lines but holds a JSON document (a value spread over lines, or an array): "
            "read as a document, its records one by one; JSON Lines has one object per line"
        )
    return _document_rows(path, limits, head.startswith(_UTF8_BOM))


def _suffix(name: str) -> str:
    return next(s for s in (".csv.gz", ".tsv.gz", ".csv", ".tsv") if name.endswith(s))


def _holds_json(path: Path, limits: Limits) -> bool:
    """Whether a file named as CSV holds JSON instead (JSON Lines saved as ``.csv``): its first
    non-blank byte opens an object or an array, and its first line is one whole JSON value or that
    bracket alone (a pretty-printed document), or its first 64 KiB are the whole file and one JSON
    value. A table's header (``[id],text``) never is."""
    try:
        with open_limited(path, limits) as f:
            head = f.read(1 << 16)
    except (OSError, EOFError, zlib.error, InputFileError):
        return False
    text = head.lstrip(_UTF8_BOM + b" \t\r\n")
    if text[:1] not in (b"{", b"["):
        return False
    first = text.split(b"\n", 1)[0].strip()
    for candidate in (first, text if len(head) < 1 << 16 else b""):
        if candidate in (b"{", b"["):
            return True
        try:
            if isinstance(orjson.loads(candidate), (dict, list)):
                return True
        except orjson.JSONDecodeError:
            continue
    return False


def _long_first_line(path: Path, limits: Limits, head: bytes) -> bool:
    """Whether a file whose first MiB (``head``) is cut inside its first line is JSON Lines after
    all: that line — a record of more than a MiB — ends within ``--max-line-bytes``, parses on its
    own as a JSON object or array, and another line follows it (:func:`documents.sniff`'s rule, on
    the whole line). Read as a document, one broken line later on would swallow the records after
    it. A file of that one line stays a document (it reads the same, its records numbered by place)."""
    start = len(head) - len(head.lstrip(_UTF8_BOM + b" \t\r\n"))
    if len(head) < 1 << 20 or b"\n" in head[start:]:
        return False
    buf = bytearray()
    try:
        with open_limited(path, limits) as f:
            nl = -1
            while nl < 0:
                block = f.read(1 << 20)
                if not block or len(buf) - start > limits.max_line_bytes:
                    return False  # one line to the end of the file, or a line past the limit: a document's
                at = len(buf)
                buf += block
                nl = buf.find(b"\n", max(at, start))
            more = bytes(buf[nl + 1 :])
            while not more.strip() and len(more) < 1 << 20:
                block = f.read(1 << 16)
                if not block:
                    return False
                more += block
    except (OSError, EOFError, zlib.error, InputFileError):
        return False
    if nl - start > limits.max_line_bytes:
        return False
    try:
        return isinstance(orjson.loads(bytes(buf[start:nl])), (dict, list)) and bool(more.strip())
    except orjson.JSONDecodeError:
        return False


def _gzipped_parquet(path: Path, limits: Limits) -> Iterator[Line]:
    """A gzipped Parquet file (Parquet reads by seeking, which a gzip stream cannot): expanded,
    within the limits on expanded bytes, into a temporary file, read as Parquet, then removed."""
    try:
        tmp = tempfile.NamedTemporaryFile(prefix="ragaudit-", suffix=".parquet", delete=False)  # noqa: SIM115
    except OSError as e:
        raise InputFileError(f"{path}: a gzipped Parquet file needs a temporary file to expand into ({e})") from None
    done = False
    try:
        with tmp, open_limited(path, limits) as src:
            shutil.copyfileobj(src, tmp, 1 << 20)
        rows = _parquet_rows(Path(tmp.name), limits, shown=path)
        done = True
    except (OSError, EOFError, zlib.error) as e:
        raise InputFileError(
            f"{path}: the gzip stream is corrupt or truncated ({e}); nothing of it was loaded"
        ) from None
    finally:
        if not done:
            os.unlink(tmp.name)
    return _removing(rows, Path(tmp.name))


def _removing(rows: Iterator[Line], path: Path) -> Iterator[Line]:
    try:
        yield from rows
    finally:
        path.unlink(missing_ok=True)


_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "bar"}


def _csv_table(head: bytes) -> str | None:
    """The delimiter of a file whose first bytes read as a CSV table of a format we read, else
    None: a header row of at least two columns, among them one a format reads (``run_id``,
    ``user_input``, ``span_kind``, …: :func:`formats.detect`, :func:`formats.foreign_keys`),
    then rows, the first five (those whole in ``head``) each with as many fields as the header.
    Never a JSON file (it starts with a brace or a bracket), prose or a TREC run."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] in (b"{", b"[", b""):
        return None
    lines = text.decode("utf-8", "replace").splitlines()
    delim = _delimiter(lines[0])
    names = [n.strip() for n in next(csv.reader([lines[0]], delimiter=delim), [])]
    columns = dict.fromkeys(names, "")
    if len(names) < 2 or not (
        native.detect(columns) or formats.detect(columns).kind != "native" or formats.foreign_keys(columns)
    ):
        return None
    try:
        rows = [r for r in itertools.islice(csv.reader(lines[1:], delimiter=delim), 6) if r]
    except csv.Error:
        return None
    if len(head) >= 1 << 20:
        rows = rows[:-1]  # the last may be cut
    return delim if rows and all(len(r) == len(names) for r in rows[:5]) else None


def _document_rows(path: Path, limits: Limits, bom: bool = False) -> Iterator[Line]:
    """A JSON document's values (:func:`documents.iter_values`); ``bom``: a UTF-8 byte-order mark
    starts it (noted on the first value: one warning, as a JSON Lines line's mark is)."""
    with open_limited(path, limits) as f:
        last = 0
        try:
            for ln in iter_values(f, max_value_bytes=limits.max_line_bytes, max_depth=limits.max_depth):
                if bom and last == 0 and ln.note is None and ln.error is None:
                    ln = dataclasses.replace(ln, note=_BOM_NOTE)
                last = ln.line_no
                yield ln
        except (OSError, EOFError, zlib.error) as e:
            yield Line(last + 1, b"", error=_damaged(last, e))


def _damaged(last: int, e: BaseException) -> str:
    return (
        f"gzip stream is corrupt or truncated after line {last} ({e or type(e).__name__}); "
        "the records before it were read, nothing after it could be"
    )


# --------------------------------------------------------------------------- CSV


def _csv_records(f: Any, max_bytes: int) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, bytes, too long) per CSV record: up to a LF outside double quotes; blank
    lines between records are skipped without a Python step per line."""
    buf = b""
    base_line = 1  # line number of buf[0]
    eof = False
    while True:
        m = _NONBLANK.search(buf)
        while m is None and not eof:
            base_line += buf.count(b"\n")
            buf = f.read(1 << 16)
            eof = not buf
            m = _NONBLANK.search(buf)
        if m is None:
            return
        base_line += buf.count(b"\n", 0, m.start())
        buf = buf[m.start() :]
        start_line = base_line
        pos, quoted, too_long, kept = 0, False, False, b""
        while True:
            q = _QUOTE_OR_LF.search(buf, pos)
            if q is None:
                if eof:
                    end = len(buf)
                    break
                if len(buf) > max_bytes:  # keep the first 64 KiB, read on to the record's end
                    too_long, kept = True, kept or buf[:_KEEP]
                    base_line += buf.count(b"\n")
                    buf, pos = b"", 0
                more = f.read(1 << 16)
                eof = not more
                pos = len(buf)
                buf += more
                continue
            pos = q.end()
            if q.group() == b'"':
                quoted = not quoted
            elif not quoted:
                end = pos
                break
        record = buf[:end]
        base_line += record.count(b"\n")
        buf = buf[end:]
        if too_long or len(record) > max_bytes:
            yield start_line, kept or record[:_KEEP], True
        else:
            yield start_line, record.rstrip(b"\r\n"), False
        if eof and not buf:
            return


def _delimiter(header: str) -> str:
    best, best_n = ",", 0
    for d in _DELIMITERS:
        n = len(next(csv.reader([header], delimiter=d), []))
        if n > best_n:
            best, best_n = d, n
    return best


def _csv_rows(path: Path, limits: Limits) -> Iterator[Line]:
    """A CSV file (plain or gzip), streamed row by row (see the module's docstring)."""
    csv.field_size_limit(max(csv.field_size_limit(), limits.max_line_bytes))
    f = open_limited(path, limits)
    records = _csv_records(f, limits.max_line_bytes)
    first = next(records, None)
    if first is None:
        f.close()
        return iter(())
    if first[2]:
        f.close()
        raise InputFileError(f"{path}: the header row is longer than the {limits.max_line_bytes:,}-byte limit")
    try:
        head = first[1].decode("utf-8-sig")
    except UnicodeDecodeError as e:
        f.close()
        raise InputFileError(
            f"{path}: the header row is not UTF-8 (byte offset {e.start}); re-encode the file"
        ) from None
    delim = _delimiter(head)
    header = next(csv.reader([head], delimiter=delim), [])
    return _csv_body(f, records, header, delim, limits, first[1].startswith(_UTF8_BOM))


def _csv_body(
    f: Any, records: Iterator[tuple[int, bytes, bool]], header: list[str], delim: str, limits: Limits, bom: bool
) -> Iterator[Line]:
    with f:
        try:
            lines = _csv_lines(records, header, delim, limits)
            first = next(lines, None)
            if first is not None:  # a mark before the header is noted on the first row (one warning)
                yield dataclasses.replace(first, note=_BOM_NOTE) if bom and first.note is None else first
            yield from lines
        except (OSError, EOFError, zlib.error) as e:
            yield Line(0, b"", error=_damaged(0, e).replace("after line 0", "part-way"))


def _csv_lines(
    records: Iterator[tuple[int, bytes, bool]], header: list[str], delim: str, limits: Limits
) -> Iterator[Line]:
    for line_no, data, too_long in records:
        if too_long:
            yield Line(
                line_no,
                data,
                error=f"CSV row is longer than the {limits.max_line_bytes:,}-byte limit; "
                "split the record or raise --max-line-bytes",
                note="truncated",
            )
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            yield Line(
                line_no,
                data,
                error=f"row is not valid UTF-8 (byte 0x{data[e.start]:02x} at byte offset {e.start}); "
                "re-encode the file as UTF-8",
            )
            continue
        try:
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delim))
        except csv.Error as e:
            yield Line(line_no, data, error=f"not a CSV row ({e})")
            continue
        row = [c for r in rows for c in r] if len(rows) > 1 else (rows[0] if rows else [])
        if len(row) != len(header):
            yield Line(
                line_no,
                _dumps(dict(zip(header, row))),
                error=f"row has {counted(len(row), 'field')}, the header {len(header)} (delimiter {delim!r})",
            )
            continue
        yield CellLine(line_no, _dumps({k: (None if v == "" else v) for k, v in zip(header, row)}))


# --------------------------------------------------------------------------- Parquet


def _parquet_rows(path: Path, limits: Limits, shown: Path | None = None) -> Iterator[Line]:
    """A Parquet file's rows; ``shown``: the name its messages give it (``path`` by default)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    shown = shown or path

    try:
        schema = pq.read_schema(path)
        texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_binary(f.type)]
        # text columns stay dictionary-encoded while read: a value repeated in many rows is held once
        pf = pq.ParquetFile(path, read_dictionary=texts)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several types for a bad file
        raise InputFileError(
            f"{shown}: not a readable Parquet file ({str(e).replace(str(path), str(shown))})"
        ) from None
    md = pf.metadata
    size = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    if size > limits.max_file_bytes:
        raise InputFileError(
            f"{shown}: the Parquet file holds {size:,} bytes of data, more than the {limits.max_file_bytes:,}-byte "
            "limit; nothing of it was loaded (split it, or raise --max-file-bytes)"
        )

    def rows() -> Iterator[Line]:
        n = 0
        for rg in range(md.num_row_groups):
            meta = md.row_group(rg)
            per_row = meta.total_byte_size / max(1, meta.num_rows)
            if per_row > limits.max_line_bytes and meta.total_byte_size > _ROW_GROUP_READ:
                # rows past the limit on average, in a row group too large to decode: not read at all
                reason = (
                    f"row group {rg} holds {meta.total_byte_size:,} bytes for {meta.num_rows:,} rows, more than the "
                    f"{limits.max_line_bytes:,}-byte limit per row; its rows are not read (raise --max-line-bytes)"
                )
                for _ in range(meta.num_rows):
                    n += 1
                    yield Line(n, b"", error=reason)
                continue
            batch = int(max(1, min(4096, (64 << 20) / max(1.0, per_row))))
            for b in pf.iter_batches(batch_size=batch, row_groups=[rg]):
                longest = _longest_text(b, texts, pc)
                big = [i for i, (x, _c) in enumerate(longest) if x > limits.max_line_bytes]
                if not big:
                    for row in b.to_pylist():
                        n += 1
                        yield _parquet_line(n, row, limits)
                    continue
                for i in range(b.num_rows):  # a batch with cells past the limit: those rows are not decoded
                    n += 1
                    if longest[i][0] > limits.max_line_bytes:
                        yield Line(
                            n,
                            b"",
                            error=f"cell {longest[i][1]!r} is longer than the {limits.max_line_bytes:,}-byte limit; "
                            "raise --max-line-bytes",
                        )
                    else:
                        yield _parquet_line(n, b.slice(i, 1).to_pylist()[0], limits)

    return rows()


def _longest_text(batch: Any, texts: list[str], pc: Any) -> list[tuple[int, str]]:
    """Per row of an Arrow batch, the length and column of its longest text cell (dictionary-encoded
    columns measured on their dictionary, then taken per row): nothing is decoded to Python."""
    longest: list[tuple[int, str]] = []
    for name in texts:
        if name not in batch.schema.names:
            continue
        col = batch.column(name)
        if hasattr(col, "dictionary"):
            lengths = pc.take(pc.binary_length(col.dictionary), col.indices)
        else:
            lengths = pc.binary_length(col)
        values = [(x or 0, name) for x in lengths.to_pylist()]
        longest = values if not longest else [max(a, b, key=lambda t: t[0]) for a, b in zip(longest, values)]
    return longest


def _parquet_line(n: int, row: dict, limits: Limits) -> Line:
    """One Parquet row as a line, or the reason it is past the limit."""
    big = next((k for k, v in row.items() if isinstance(v, (str, bytes)) and len(v) > limits.max_line_bytes), None)
    if big is not None:
        return Line(
            n,
            b"",
            error=f"cell {big!r} is longer than the {limits.max_line_bytes:,}-byte limit; raise --max-line-bytes",
        )
    data = _dumps(row)
    if len(data) > limits.max_line_bytes:
        return Line(
            n,
            data[:_KEEP],
            error=f"row is longer than the {limits.max_line_bytes:,}-byte limit; raise --max-line-bytes",
            note="truncated",
        )
    return CellLine(n, data)

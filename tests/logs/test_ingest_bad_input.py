"""Every kind of bad input gets a clear message (file, line, reason) and costs only itself:
the good lines around it are loaded, the bad line is kept verbatim in the quarantine."""

from __future__ import annotations

import gzip
import json

import pytest

from ragaudit_core.logs.ingest import IngestError, ingest_paths
from tests.helpers import write_jsonl

GOOD1 = {"run_id": "r", "query_id": "good1", "cited": ["a"]}
GOOD2 = {"run_id": "r", "query_id": "good2", "cited": ["b"]}


def _quarantine(con):
    return con.execute("SELECT path, line_no, reason, raw, raw_bytes FROM quarantine ORDER BY path, line_no").fetchall()


def _loaded(con):
    return [q for (q,) in con.execute("SELECT query_id FROM records ORDER BY query_id").fetchall()]


CASES = [
    (
        "broken-json",
        b'{"run_id": "r", "query_id": "x", "cited": ["a"',
        "invalid JSON: unexpected end of data: line 1 column 47 (char 46)",
    ),
    ("top-level-array", b'["r", "x", ["a"]]', "expected a JSON object per line, got array"),
    (
        "query-id-wrong-type",
        b'{"run_id": "r", "query_id": ["x"], "cited": []}',
        "query_id: query_id must be a string or an integer, got array",
    ),
    (  # pandas writes an integer column holding a missing value as floats: said
        "query-id-float",
        b'{"run_id": "r", "query_id": 7.0, "cited": []}',
        "query_id: query_id must be a string or an integer, got number (7.0: pandas writes a column of integers "
        "that has a missing value as floats — write the ids as integers or strings)",
    ),
    (
        "run-id-missing",
        b'{"query_id": "x", "cited": []}',
        "missing run id: none of run_id, runId, config_id, run, id is present",
    ),
    ("query-id-missing", b'{"run_id": "r", "cited": []}', "missing query id: none of query_id, qid, id is present"),
    (  # a CSV of something else (the walk's inventory.csv): not "missing run id", as if one key would do
        "not-a-log",
        b'{"sku": "A1", "name": "widget", "price": "3.50"}',
        "not an evidence record: it has no run id, no query id and no evidence list (keys found: name, price, sku)",
    ),
    (
        "only-id",
        b'{"id": "x", "cited": []}',
        "the only id key is 'id', which could be the run or the query; name them 'run_id' and 'query_id'",
    ),
    (
        "evidence-missing",
        b'{"run_id": "r", "query_id": "x", "answer": "y"}',
        "missing evidence list: none of evidence, cited, docs, documents, retrieved, contexts is present "
        "(keys found: answer, query_id, run_id)",
    ),
    (
        "evidence-not-list",
        b'{"run_id": "r", "query_id": "x", "cited": "docA"}',
        "'cited' must be a list of evidence entries, got string",
    ),
    (
        "evidence-null",
        b'{"run_id": "r", "query_id": "x", "evidence": null}',
        "'evidence' must be a list of evidence entries, got null",
    ),
    (
        "entry-wrong-type",
        b'{"run_id": "r", "query_id": "x", "cited": ["a", true]}',
        "evidence[1]: an evidence entry must be a string (a doc_id) or an object, got boolean",
    ),
    (
        "entry-no-doc-id",
        b'{"run_id": "r", "query_id": "x", "cited": [{"text": "t", "meta": {"a": {"b": {"c": {"doc_id": "deep"}}}}}]}',
        "evidence[0]: evidence entry has no document id: none of doc_id, document_id, docid, id, source_id is present "
        "(also searched 3 levels of nesting)",
    ),
    (
        "empty-doc-id",
        b'{"run_id": "r", "query_id": "x", "cited": ["  "]}',
        "evidence[0].doc_id: doc_id is an empty string",
    ),
    (
        "text-wrong-type",
        b'{"run_id": "r", "query_id": "x", "cited": [{"doc_id": "a", "text": 42}]}',
        "evidence[0].text: Input should be a valid string",
    ),
    (
        "negative-rank",
        b'{"run_id": "r", "query_id": "x", "cited": [{"doc_id": "a", "rank": -1}]}',
        "evidence[0].rank: Input should be greater than or equal to 0",
    ),
    (
        "rank-too-large",
        b'{"run_id": "r", "query_id": "x", "cited": [{"doc_id": "a", "rank": 4294967296}]}',
        "evidence[0].rank: Input should be less than or equal to 2147483647",
    ),
    (
        "offsets-reversed",
        b'{"run_id": "r", "query_id": "x", "cited": [{"doc_id": "a", "char_start": 9, "char_end": 3}]}',
        "evidence[0]: char_end (3) is before char_start (9)",
    ),
    (
        "config-not-object",
        b'{"run_id": "r", "query_id": "x", "config": [5], "cited": []}',
        "config: Input should be a valid dictionary",
    ),
    (
        "nul-bytes",
        b'{"run_id": "r", "query_id": "x", "cited": ["a\x00"]}',
        "line contains NUL bytes (\\x00); the file may be binary or corrupted",
    ),
    (
        "non-utf8",
        b'{"run_id": "r", "query_id": "x", "cited": ["caf\xe9"]}',
        "line is not valid UTF-8 (byte 0xe9 at byte offset 47); re-encode the file as UTF-8",
    ),
    (  # json reads the line (orjson refuses NaN) and would keep half of the emoji, which no text can store
        "lone-surrogate-beside-nan",
        b'{"run_id": "r", "query_id": "x", "cited": [{"doc_id": "a\\ud83d", "score": NaN}]}',
        "invalid JSON: a string holds \\ud83d, half of a UTF-16 surrogate pair, not a character",
    ),
    (
        "duplicate-run-query",
        b'{"run_id": "r", "query_id": "good1", "cited": ["z"]}',
        "duplicate record for run 'r', query 'good1': already loaded from {path} line 1; only the first is kept",
    ),
]


@pytest.mark.parametrize("name,bad,reason", CASES, ids=[c[0] for c in CASES])
def test_bad_line_is_quarantined_and_good_lines_load(con, tmp_path, name, bad, reason):
    f = write_jsonl(tmp_path / f"{name}.jsonl", [GOOD1, bad, GOOD2])
    rep = ingest_paths(con, [f])
    assert _loaded(con) == ["good1", "good2"]
    want = reason.format(path=f)
    assert [str(i) for i in rep.rejected] == [f"{f} line 2: {want}"]
    ((path, line_no, got_reason, raw, raw_bytes),) = _quarantine(con)
    assert (path, line_no, got_reason) == (str(f), 2, want)
    assert bytes(raw_bytes) == bad  # verbatim
    assert raw == bad.decode("utf-8", errors="replace")


def test_ten_megabyte_line(con, tmp_path):
    huge = b'{"run_id": "r", "query_id": "x", "cited": ["' + b"a" * (10 * 1024 * 1024) + b'"]}'
    f = write_jsonl(tmp_path / "huge.jsonl", [GOOD1, huge, GOOD2])
    rep = ingest_paths(con, [f])
    assert _loaded(con) == ["good1", "good2"]
    assert [str(i) for i in rep.rejected] == [
        f"{f} line 2: line is longer than the 8,388,608-byte limit (at least {len(huge) + 1:,} bytes); "
        "split the record or raise --max-line-bytes"
    ]
    ((_, _, _, _, raw_bytes),) = _quarantine(con)
    assert bytes(raw_bytes) == huge[: 64 * 1024]  # the first 64 KiB are kept


def test_bom_is_stripped_with_a_warning(con, tmp_path):
    f = write_jsonl(
        tmp_path / "bom.jsonl", [b"\xef\xbb\xbf" + b'{"run_id": "r", "query_id": "good1", "cited": ["a"]}', GOOD2]
    )
    rep = ingest_paths(con, [f])
    assert _loaded(con) == ["good1", "good2"]
    assert rep.rejected == []
    assert [str(w) for w in rep.warnings if w.code == "bom"] == [
        f"{f} line 1: a UTF-8 byte-order mark at the start of the line was ignored"
    ]


def test_a_csv_files_bom_is_stripped_with_a_warning_at_its_first_line(con, tmp_path):
    f = tmp_path / "bom.csv"
    f.write_bytes(b'\xef\xbb\xbfuser_input,retrieved_contexts\nWhy?,"[""Tides follow the moon.""]"\n')
    rep = ingest_paths(con, [f])
    assert con.execute("SELECT count(*) FROM evidence").fetchone() == (1,)  # the header read as 'user_input'
    assert [str(w) for w in rep.warnings if w.code == "bom"] == [
        f"{f} line 1: a UTF-8 byte-order mark at the start of the file was ignored"
    ]


def test_empty_file_is_reported(con, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n  \n")
    good = write_jsonl(tmp_path / "good.jsonl", [GOOD1])
    rep = ingest_paths(con, [tmp_path])
    assert _loaded(con) == ["good1"]
    assert [str(w) for w in rep.warnings if w.code == "empty-file"] == [
        f"{empty}: file holds no records (it is empty or blank)"
    ]
    assert good.exists()


def test_gz_that_is_not_gzip_is_read_as_plain_text(con, tmp_path):
    f = write_jsonl(tmp_path / "plain.jsonl.gz", [GOOD1, GOOD2])  # not compressed
    rep = ingest_paths(con, [f])
    assert _loaded(con) == ["good1", "good2"]
    assert [str(w) for w in rep.warnings if w.code == "not-gzip"] == [
        f"{f}: named .gz but not gzip-compressed (no gzip header); read as plain text"
    ]


def test_gzip_garbage_after_a_gz_name_is_rejected_line_by_line(con, tmp_path):
    f = tmp_path / "noise.jsonl.gz"
    f.write_bytes(b"\x00\x01\x02binary\xff\xfe\n")
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [
        f"{f} line 1: line contains NUL bytes (\\x00); the file may be binary or corrupted"
    ]


def test_truncated_gzip_keeps_the_lines_before_the_damage(con, tmp_path):
    lines = [{"run_id": "r", "query_id": f"q{i:04d}", "cited": ["a" * 50 + str(i)]} for i in range(2000)]
    whole = gzip.compress(b"\n".join(__import__("json").dumps(r).encode() for r in lines) + b"\n")
    f = tmp_path / "cut.jsonl.gz"
    f.write_bytes(whole[: len(whole) // 2])
    rep = ingest_paths(con, [f])
    n = len(_loaded(con))
    assert 0 < n < 2000
    assert [i.line_no for i in rep.rejected] == [n + 1]
    assert rep.rejected[0].message.startswith(f"gzip stream is corrupt or truncated after line {n} (")
    assert rep.rejected[0].message.endswith("the lines before it were read, nothing after it could be")


def test_utf16_file_is_refused_with_advice(con, tmp_path):
    f = tmp_path / "u16.jsonl"
    f.write_bytes('{"run_id": "r", "query_id": "x", "cited": []}\n'.encode("utf-16"))
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [f"{f}: file is UTF-16 encoded (byte-order mark ff fe); save it as UTF-8"]


@pytest.mark.parametrize(
    ("encoding", "how"),
    [
        ("utf-16-le", "a NUL byte after each character: UTF-16LE"),
        ("utf-16-be", "a NUL byte before each character: UTF-16BE"),
    ],
)
@pytest.mark.parametrize("name", ["u16.jsonl", "u16.json", "u16.csv"])
def test_utf16_file_without_a_byte_order_mark_is_refused_with_advice(con, tmp_path, encoding, how, name):
    """Without a mark each line was read twice over (NUL bytes, then "text between values"), and
    named as JSON Lines holding a document; Excel writes its "Unicode text" this way too."""
    f = tmp_path / name
    body = "user_input,retrieved_contexts\n" if name.endswith(".csv") else '{"run_id": "r", "query_id": "x"}\n'
    f.write_bytes(body.encode(encoding))
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [
        f"{f}: file is UTF-16 encoded (no byte-order mark; {how}); save it as UTF-8"
    ]


@pytest.mark.parametrize(
    ("encoding", "how"),
    [
        ("utf-16", "byte-order mark ff fe"),
        ("utf-16-le", "no byte-order mark; a NUL byte after each character: UTF-16LE"),
    ],
)
@pytest.mark.parametrize("name", ["u16.jsonl.gz", "u16.csv.gz"])
def test_a_gzipped_utf16_file_is_refused_with_advice(con, tmp_path, encoding, how, name):
    """Its raw bytes are gzip's, so the check of the first bytes missed it: every line was rejected
    for NUL bytes, or a CSV header read as " e v i d e n c e"."""
    import gzip

    f = tmp_path / name
    body = "run_id,query_id,evidence\nr,x,d\n" if ".csv" in name else '{"run_id": "r", "query_id": "x"}\n'
    f.write_bytes(gzip.compress(body.encode(encoding)))
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [
        f"{f}: the file in this gzip stream is UTF-16 encoded ({how}); save it as UTF-8"
    ]


def test_missing_path_is_an_error_before_anything_is_written(con, tmp_path):
    with pytest.raises(IngestError, match=r"nope.jsonl: no such file or folder"):
        ingest_paths(con, [tmp_path / "nope.jsonl"])
    assert con.execute("SELECT count(*) FROM files").fetchall()[0][0] == 0


def test_many_bad_kinds_in_one_file(con, tmp_path):
    """All the line-level cases above, interleaved with good lines in one file."""
    lines, good_ids = [], []
    for i, (_name, bad, _reason) in enumerate(CASES):
        if b"good1" in bad:
            continue
        lines.append({"run_id": "r", "query_id": f"g{i:02d}", "cited": ["a"]})
        good_ids.append(f"g{i:02d}")
        lines.append(bad)
    f = write_jsonl(tmp_path / "mixed.jsonl", lines)
    rep = ingest_paths(con, [f])
    assert _loaded(con) == good_ids
    assert len(rep.rejected) == len(CASES) - 1
    assert [i.line_no for i in rep.rejected] == list(range(2, 2 * len(good_ids) + 1, 2))


def test_a_json_documents_bom_is_stripped_with_a_warning_at_its_first_line(con, tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes(
        b"\xef\xbb\xbf" + json.dumps([{"run_id": "r", "query_id": "good1", "cited": ["a"]}], indent=2).encode()
    )
    rep = ingest_paths(con, [f])
    assert _loaded(con) == ["good1"]
    assert [str(w) for w in rep.warnings if w.code == "bom"] == [
        f"{f} line 1: a UTF-8 byte-order mark at the start of the file was ignored"
    ]


def test_a_utf32_file_is_named_utf32_not_utf16(con, tmp_path):
    """Its mark ``ff fe 00 00`` starts as UTF-16's does: it was refused as "UTF-16 encoded"."""
    f = tmp_path / "u32.jsonl"
    f.write_bytes('{"run_id": "r", "query_id": "x", "cited": []}\n'.encode("utf-32"))
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [
        f"{f}: file is UTF-32 encoded (byte-order mark ff fe 00 00); save it as UTF-8"
    ]


def _zip(body: bytes) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:  # stored, not deflated: the lines inside are plain text
        z.writestr("inner.jsonl", body)
    return buf.getvalue()


def _compressed(kind: str, body: bytes) -> bytes:
    import bz2
    import lzma

    return {"zip": _zip, "bz2": bz2.compress, "xz": lzma.compress}[kind](body)


@pytest.mark.parametrize(
    ("kind", "name", "what", "how"),
    [
        ("zip", "logs.zip", "a ZIP archive", "extract its files (unzip) and give them"),
        ("bz2", "logs.jsonl.bz2", "bzip2-compressed", "decompress it (bunzip2), or compress it with gzip"),
        ("xz", "logs.jsonl.xz", "xz-compressed", "decompress it (unxz), or compress it with gzip"),
    ],
)
def test_an_archive_or_other_compression_is_refused_in_one_sentence(con, tmp_path, kind, name, what, how):
    """A stored ZIP loaded the lines between its headers and rejected the first and last (the
    headers' bytes glued to them) — exit 0 with records missing; bzip2 and xz were rejected line by
    line "may be binary or corrupted", never saying what the file is or what to do."""
    body = b"".join(json.dumps({"run_id": "r", "query_id": f"q{i}", "cited": ["a"]}).encode() + b"\n" for i in range(5))
    f = tmp_path / name
    f.write_bytes(_compressed(kind, body))
    good = write_jsonl(tmp_path / "ok.jsonl", [GOOD1])
    rep = ingest_paths(con, [f, good])
    assert _loaded(con) == ["good1"]
    assert [str(i) for i in rep.rejected] == [
        f"{f}: file is {what}; RagAudit reads logs plain or gzip-compressed: {how}"
    ]

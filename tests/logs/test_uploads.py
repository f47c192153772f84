"""Uploads are kept beside the database as their own bytes: never through a link left in the
uploads folder, never trusting a file already at the kept place without its hash, and a write that
fails says so in one sentence (a security review's findings)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from ragaudit_core.logs.uploads import UploadNotKept, keep_uploads

DATA = "".join(
    json.dumps({"run_id": "up", "query_id": str(i), "evidence": [{"doc_id": f"d{i}", "text": "t"}]}) + "\n"
    for i in range(100)
).encode()
KEY = hashlib.sha256(DATA).hexdigest()[:16]


def test_links_in_the_uploads_folder_are_replaced_never_followed(tmp_path):
    """A broken link at the kept place pointing outside: the bytes were written outside. A link
    to an outside file: that file was loaded instead of the upload. A hash folder linked outside:
    the file landed there. Each link is replaced now; nothing outside is written or read."""
    dest, outside = tmp_path / "audit.duckdb.uploads", tmp_path / "outside"
    outside.mkdir()
    (dest / KEY).mkdir(parents=True)
    (dest / KEY / "run.jsonl").symlink_to(outside / "written_by_upload.jsonl")  # broken, pointing out
    (path,) = keep_uploads([("run.jsonl", DATA)], dest)
    assert not path.is_symlink() and path.read_bytes() == DATA and list(outside.iterdir()) == []
    secret = outside / "secret.jsonl"
    secret.write_text('{"run_id": "SECRET-run"}\n')
    path.unlink()
    path.symlink_to(secret)
    keep_uploads([("run.jsonl", DATA)], dest)
    assert path.read_bytes() == DATA and secret.read_text() == '{"run_id": "SECRET-run"}\n'
    for p in (path, path.parent):
        p.unlink() if p.is_symlink() or p.is_file() else p.rmdir()
    (dest / KEY).symlink_to(outside, target_is_directory=True)
    (path,) = keep_uploads([("run.jsonl", DATA)], dest)
    assert (
        not path.parent.is_symlink() and path.read_bytes() == DATA and sorted(os.listdir(outside)) == ["secret.jsonl"]
    )


def test_a_file_cut_short_at_the_kept_place_is_written_again(tmp_path):
    """A third of the file left where the upload is kept (a write cut short) was loaded as it
    stood: 33 of 100 records, nothing said. A kept file whose bytes are not the upload's is
    written again; one that is the upload's is used as it is."""
    dest = tmp_path / "audit.duckdb.uploads"
    (dest / KEY).mkdir(parents=True)
    (dest / KEY / "run.jsonl").write_bytes(DATA[: len(DATA) // 3])
    (path,) = keep_uploads([("run.jsonl", DATA)], dest)
    assert path.read_bytes() == DATA
    before = path.stat().st_mtime_ns
    keep_uploads([("run.jsonl", DATA)], dest)
    assert path.stat().st_mtime_ns == before and [p.name for p in path.parent.iterdir()] == ["run.jsonl"]


def test_an_uploads_folder_that_is_a_link_or_cannot_be_made_is_refused_in_one_sentence(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    dest = tmp_path / "audit.duckdb.uploads"
    dest.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UploadNotKept, match="is a link"):
        keep_uploads([("run.jsonl", DATA)], dest)
    assert list(elsewhere.iterdir()) == []
    blocked = tmp_path / "blocked.duckdb.uploads"
    blocked.write_text("a file where the folder goes")
    with pytest.raises(UploadNotKept) as e:
        keep_uploads([("run.jsonl", DATA)], blocked)
    assert str(e.value).startswith("the upload run.jsonl could not be kept in ") and "nothing of it" in str(e.value)


def test_a_write_cut_short_earlier_leaves_nothing_in_the_way(tmp_path):
    """A temporary file a crashed write left beside the kept place (named as this process would
    name one) neither blocks the next upload of the same file nor is taken for it."""
    dest = tmp_path / "audit.duckdb.uploads"
    (dest / KEY).mkdir(parents=True)
    (dest / KEY / f".run.jsonl.{os.getpid()}.part").write_bytes(DATA[:10])
    (path,) = keep_uploads([("run.jsonl", DATA)], dest)
    assert path.read_bytes() == DATA

"""A running job's first estimate (``.NAME.partial/JOB.json`` beside the database) is a file anyone
who can write that folder can replace: a page reads at most ``partial.MAX_BYTES`` of it, treats an
over-limit or malformed one as absent with the reason, and neither a page nor a worker crashes or
hangs on one. Real files: the database, its queue, the partial folder; a judge job against a local
endpoint (no model)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.jobs import partial, queue
from ragaudit_core.jobs.worker import run_one
from tests.fidelity.test_endpoint import _queue_judge
from tests.fidelity.test_judge import GOOD, _Server

JOB = "0123456789abcdef"
FIRST = {"doc_ids": ["D0", "D1"], "importance": [0.75, -0.25], "estimate_stage": "first", "method": "marginal"}


def _place(tmp_path, content: bytes | None = None):
    db = tmp_path / "a.duckdb"
    f = partial.partial_file(db, JOB)
    f.parent.mkdir(parents=True, exist_ok=True)
    if content is not None:
        f.write_bytes(content)
    return db, f


def test_a_partial_of_gigabytes_is_not_read_and_says_why(tmp_path):
    """A sparse 3 GiB file (no disk used): refused by its size at once, nothing of it read."""
    db, f = _place(tmp_path)
    with open(f, "wb") as fh:
        fh.truncate(3 << 30)
    t0 = time.monotonic()
    got, why = partial.load(db, JOB)
    assert time.monotonic() - t0 < 1.0
    assert got is None and partial.read(db, JOB) is None
    assert why is not None and f"over the {partial.MAX_BYTES:,}-byte limit" in why and f.name in why
    assert partial.first_estimate(db, JOB) == (None, why)


def test_a_partial_just_over_the_limit_is_refused_and_one_at_it_is_read(tmp_path):
    payload = [{"pad": ""}]
    room = partial.MAX_BYTES - len(json.dumps(payload).encode())
    payload[0]["pad"] = "x" * room
    db, f = _place(tmp_path, json.dumps(payload).encode())
    assert f.stat().st_size == partial.MAX_BYTES
    assert partial.load(db, JOB) == (payload, None)
    f.write_bytes(json.dumps(payload).encode() + b" ")
    got, why = partial.load(db, JOB)
    assert got is None and "over the" in why


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'[{"doc_ids": ["D0"], ', "is not JSON"),  # half-written
        (b"[" * 200_000 + b"]" * 200_000, "is not JSON"),  # nested past the decoder's stack (RecursionError)
        (b'{"doc_ids": ["D0"]}', "is not a list of JSON objects"),
        (b"[1, 2]", "is not a list of JSON objects"),
        (b"\xff\xfe not utf-8", "is not JSON"),
    ],
)
def test_a_malformed_partial_is_absent_with_the_reason(tmp_path, content, reason):
    db, _f = _place(tmp_path, content)
    got, why = partial.load(db, JOB)
    assert got is None and reason in why
    assert partial.first_estimate(db, JOB) == (None, why)


@pytest.mark.parametrize(
    "bad",
    [
        {"importance": [0.5]},  # no doc_ids
        {"doc_ids": ["D0", "D1"], "importance": [0.5]},  # not one each
        {"doc_ids": [{"x": 1}], "importance": [0.5]},
        {"doc_ids": ["D0"], "importance": ["big"]},
        {"doc_ids": ["D0"], "importance": [0.5], "method": ["loo"]},
    ],
)
def test_a_partial_that_is_not_a_first_estimate_is_absent_with_the_reason(tmp_path, bad):
    db, _f = _place(tmp_path, json.dumps([bad]).encode())
    est, why = partial.first_estimate(db, JOB)
    assert est is None and "does not hold an attribution's first estimate" in why


def test_a_partial_that_is_not_a_regular_file_is_refused_without_waiting(tmp_path):
    """A FIFO (opening it for reading would wait for a writer for ever), a folder, a link elsewhere."""
    db, f = _place(tmp_path)
    os.mkfifo(f)
    box: list = []
    t = threading.Thread(target=lambda: box.append(partial.load(db, JOB)), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "reading a FIFO put in place of the partial hangs"
    assert box[0][0] is None and "is not a regular file" in box[0][1]
    f.unlink()
    f.mkdir()
    assert partial.load(db, JOB)[0] is None and partial.load(db, JOB)[1]
    f.rmdir()
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps([FIRST]))
    f.symlink_to(outside)
    got, why = partial.load(db, JOB)
    assert got is None and "cannot be read" in why


def test_the_round_trip_and_what_a_page_draws(tmp_path):
    db = tmp_path / "a.duckdb"
    assert partial.load(db, JOB) == (None, None) and partial.first_estimate(db, JOB) == (None, None)
    partial.write(db, JOB, [FIRST])
    assert partial.load(db, JOB) == ([FIRST], None)
    assert partial.first_estimate(db, JOB) == (
        {"doc_ids": ["D0", "D1"], "importance": [0.75, -0.25], "method": "marginal"},
        None,
    )


def test_a_worker_never_keeps_a_partial_over_the_limit_nor_fails_on_one_it_cannot_write(tmp_path):
    db = tmp_path / "a.duckdb"
    partial.write(db, JOB, [FIRST])
    partial.write(db, JOB, [{"pad": "x" * partial.MAX_BYTES}])  # over the limit: not kept, nor the older one
    assert partial.load(db, JOB) == (None, None)
    partial.write(db, JOB, [{"x": object()}])  # not JSON: dropped, nothing raised
    assert partial.load(db, JOB) == (None, None)


def test_a_worker_runs_its_job_to_the_end_beside_a_hostile_partial(tmp_path, monkeypatch):
    """The job's partial path is a folder and a FIFO in turn: the worker ends the job done (its
    ``clear`` and a page's read neither crash nor hang)."""
    server = _Server(lambda _b: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    monkeypatch.delenv(endpoint.ENV_KEY, raising=False)
    try:
        for make in (os.mkdir, os.mkfifo):
            (tmp_path / make.__name__).mkdir()
            db, jid = _queue_judge(tmp_path / make.__name__, server.url)
            f = partial.partial_file(db, jid)
            f.parent.mkdir(parents=True, exist_ok=True)
            make(f)
            got = queue.claim(db, "feedfacecafebeef")
            assert got is not None
            assert run_one(db, *got, token="feedfacecafebeef") == "done"
            assert partial.read(db, jid) is None
    finally:
        server.close()

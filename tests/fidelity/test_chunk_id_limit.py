"""A judge's ``matching_chunk_id`` is bounded (``judge.MAX_CHUNK_ID_CHARS``), wherever it comes from:
an endpoint's reply naming a longer one is an invalid reply (retried, then no vote), with the reason
in the log; a chunk id read from the logs that is longer is shown to the judge, and stored, cut to
the limit in a form that keeps distinct ids distinct and shows the cut. Real parts: a local
endpoint in a thread, a real DuckDB database and its queue, the worker."""

from __future__ import annotations

import json
import logging
import re

import duckdb
import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judge import MAX_CHUNK_ID_CHARS, JudgeVerdict, bounded_chunk_id
from ragaudit_core.fidelity.judges import EndpointJudge
from ragaudit_core.jobs import plan_judge, queue
from ragaudit_core.jobs.worker import work
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import pipeline, write_jsonl

LONG = "chunk-" + "x" * 1_000_000


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in (endpoint.ENV_ENDPOINTS, endpoint.ENV_KEY, endpoint.ENV_TIMEOUT):
        monkeypatch.delenv(name, raising=False)


def test_a_reply_naming_an_over_long_chunk_is_an_invalid_vote_with_the_reason(caplog):
    at_limit = "c" * MAX_CHUNK_ID_CHARS
    replies = iter([{**GOOD, "matching_chunk_id": LONG}] * 2 + [{**GOOD, "matching_chunk_id": at_limit}])
    server = _Server(lambda _b: json.dumps(next(replies)))
    try:
        judge = EndpointJudge(server.url, "m", retries=1, timeout_s=10)
        with caplog.at_level(logging.WARNING, logger="ragaudit.judge"):
            assert judge.verdicts("P", ["c1", at_limit], [0]) == [None]  # two attempts, both refused: no vote
        assert judge.n_invalid == 2
        (v,) = judge.verdicts("P", ["c1", at_limit], [0])  # an id at the limit, of the context: taken
        assert v is not None and v.matching_chunk_id == at_limit
    finally:
        server.close()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all(f"over the {MAX_CHUNK_ID_CHARS}-character limit" in m for m in said)
    assert all(len(m) < 1_000 for m in said)  # the reason, not the id
    with pytest.raises(ValueError, match="matching_chunk_id is 1,000,006 characters long"):
        JudgeVerdict.model_validate({**GOOD, "matching_chunk_id": LONG})


def test_chunk_ids_read_from_the_logs_are_text_within_the_limit_and_stay_distinct():
    other = LONG[:-1] + "y"  # the same first million characters but one
    a, b = bounded_chunk_id(LONG), bounded_chunk_id(other)
    assert len(a) == len(b) == MAX_CHUNK_ID_CHARS and a != b
    assert a.startswith(LONG[:200]) and re.search(r"…[0-9a-f]{15}$", a)
    assert bounded_chunk_id(a) == a and bounded_chunk_id("c1") == "c1"
    assert bounded_chunk_id(7) == "7" and bounded_chunk_id(True) is None and bounded_chunk_id({"x": 1}) is None


def test_a_judge_job_over_logs_with_an_over_long_chunk_id_stores_it_bounded(tmp_path, monkeypatch):
    """Provenance whose first context chunk carries a chunk id of a million characters and whose second
    an integer one: the job plans, the endpoint sees (and echoes) the bounded id, the worker stores
    it; no stored matching_chunk_id is over the limit, and a reply naming an over-long id stores no vote."""
    rec = pipeline("base", "q1", text="[Source: D1, p. 2]")
    for n in rec["nodes"]:
        if n["node_id"] == "c1":
            n["metadata"]["chunk_id"] = LONG
        if n["node_id"] == "c2":
            n["metadata"]["chunk_id"] = 7  # ids may be integers (the contract): read as text

    seen: list[str] = []

    def echo_first(body):  # seed 0: names the first chunk of the context it was shown; seed 1: an over-long id
        seen.append(re.search(r'"chunk_id": "([^"]*)"', body["messages"][0]["content"]).group(1))
        return json.dumps({**GOOD, "matching_chunk_id": seen[0] if body["seed"] == 0 else LONG})

    rows = judged_rows(tmp_path, monkeypatch, [rec], echo_first, check=_context_is_bounded)
    assert rows == [(0, bounded_chunk_id(LONG), GOOD["verdict"]), (1, None, None)]


def _context_is_bounded(inputs) -> None:
    assert [c["chunk_id"] for c in inputs.context] == [bounded_chunk_id(LONG), "7"]


def judged_rows(tmp_path, monkeypatch, records, reply, *, check=None) -> list[tuple]:
    """One judge job (seeds 0 and 1) over ``records``' first query, against a local endpoint whose
    answers ``reply(body)`` writes, run by a real worker; the stored (seed, matching_chunk_id,
    verdict) rows. ``check(inputs)`` sees the planned job's inputs."""
    server = _Server(reply)
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    db = tmp_path / "j.duckdb"
    try:
        with store.connect(db) as con:
            ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", records)])
            spec, inputs = plan_judge(con, "base", "q1", model="m", endpoint=server.url, seeds=(0, 1))
            if check is not None:
                check(inputs)
            queue.enqueue(con, spec, inputs)
        assert work(str(db), idle_s=0, max_jobs=1) == 1
    finally:
        server.close()
    (j,) = queue.jobs(str(db))
    assert j.status == "done", j.error
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT seed, matching_chunk_id, verdict FROM judge_verdicts ORDER BY seed").fetchall()
    finally:
        con.close()

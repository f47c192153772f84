"""Issue #24, item 2: the queue from the command line, end to end as subprocesses — ``judge
--queue`` / ``attribute --queue`` enqueue, ``ragaudit jobs`` lists, cancels and retries,
``ragaudit worker`` runs the queue in the foreground (only allowed endpoints; Ctrl-C gives its job
back)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragaudit_core.jobs import heartbeat
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.fidelity.test_endpoint import _Slow
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import ROOT, pipeline, write_jsonl

RAGAUDIT = str(Path(sys.executable).parent / "ragaudit")
ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("RAGAUDIT_JUDGE_")},
    "PYTHONPATH": str(ROOT),
}


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([RAGAUDIT, *args], capture_output=True, text=True, timeout=300, env=env or ENV)


def _listed(db: Path) -> list[dict]:
    p = _cli("jobs", "--db", str(db), "--json", "--no-start")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["jobs"]


def _prov_db(tmp_path: Path) -> Path:
    db = tmp_path / "j.duckdb"
    with store.connect(db) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
    return db


def test_judge_queue_jobs_and_worker_end_to_end(tmp_path):
    db = _prov_db(tmp_path)
    server = _Server(lambda body: json.dumps({**GOOD, "verdict": "ACCURATE"}))
    judge = ["judge", "--db", str(db), "--run", "base", "--endpoint", server.url, "--judge-model", "m"]
    try:
        q = _cli(*judge, "--judges", "1", "--queue")
        assert q.returncode == 0, q.stderr
        (jid,) = [line.rsplit(" ", 1)[1] for line in q.stdout.splitlines() if line.startswith("queued: query q1: job ")]
        assert f"1 job queued on {db}; run it with: ragaudit worker --db {db} --endpoint {server.url}" in q.stderr
        assert [(j["job_id"], j["status"], j["kind"]) for j in _listed(db)] == [(jid, "queued", "judge")]
        assert server.requests == []  # queued, not run
        # a worker whose operator allowed no endpoint: the job fails with a sentence, nothing is called
        w = _cli("worker", "--db", str(db), "--idle", "0")
        assert w.returncode == 0, w.stderr
        assert "1 job run, none left" in w.stdout and server.requests == []
        (j,) = _listed(db)
        assert j["status"] == "failed" and j["error"].startswith("EndpointNotAllowed: the judge endpoint")
        text = _cli("jobs", "--db", str(db), "--no-start")
        assert f"{jid}  judge       base/q1  failed" in text.stdout
        assert "    error: EndpointNotAllowed: the judge endpoint" in text.stdout
        assert "1 job on" in text.stderr and "no live worker" in text.stderr
        # retried by a prefix of its id, run by a worker allowed to call it
        r = _cli("jobs", "retry", jid[:6], "--db", str(db), "--no-start")
        assert r.returncode == 0 and "1 job queued again" in r.stdout
        key = tmp_path / "judge.key"
        key.write_text("sk-from-a-file\n")
        w = _cli("worker", "--db", str(db), "--idle", "0", "--endpoint", server.url, "--key-file", str(key))
        assert w.returncode == 0, w.stderr
        (j,) = _listed(db)
        assert (j["status"], j["fraction"], j["error"]) == ("done", 1.0, None)
        assert [h["Authorization"] for _p, h, _b in server.requests] == ["Bearer sk-from-a-file"]
        # a queued job cancelled by --all; bad ids and actions are usage errors
        assert _cli(*judge, "--judges", "2", "--queue").returncode == 0
        c = _cli("jobs", "cancel", "--all", "--db", str(db), "--no-start")
        assert c.returncode == 0 and "cancel asked for 1 job:" in c.stdout
        assert sorted(j["status"] for j in _listed(db)) == ["cancelled", "done"]
        bad = _cli("jobs", "retry", "ffffffff", "--db", str(db))
        assert bad.returncode == 2 and "'ffffffff' names no job" in bad.stderr
        assert _cli("jobs", "stop", "--db", str(db)).returncode == 2
        # listing is an opener: jobs wait and no worker is live → it starts one, which runs them
        assert _cli("jobs", "retry", "--all", "--db", str(db), "--no-start").returncode == 0
        env = {**ENV, "RAGAUDIT_JUDGE_ENDPOINTS": server.url}
        started = _cli("jobs", "--db", str(db), env=env)
        assert "no live worker: started one in the background (PID" in started.stderr
        deadline = time.monotonic() + 60
        while any(j["status"] != "done" for j in _listed(db)) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert [j["status"] for j in _listed(db)] == ["done", "done"]
    finally:
        server.close()
        for b in heartbeat.live_workers(db):  # the background worker would idle for two minutes
            os.kill(int(b["pid"]), signal.SIGTERM)


def test_file_endpoints_and_keys_in_urls_are_refused_on_the_command_line(tmp_path):
    db = _prov_db(tmp_path)
    base = ["judge", "--db", str(db), "--run", "base", "--judge-model", "m", "--queue", "--endpoint"]
    p = _cli(*base, "file:///etc/hostname")
    assert p.returncode == 2 and "is not an http:// or https:// URL" in p.stderr
    p = _cli(*base, "http://u:sk-secret@127.0.0.1:9/v1")
    assert p.returncode == 2 and "carries user info" in p.stderr and "sk-secret" not in p.stderr
    assert _listed(db) == []


def test_ctrl_c_on_a_worker_gives_its_job_back_to_the_queue(tmp_path):
    db = _prov_db(tmp_path)
    slow = _Slow(hold_s=40.0)
    try:
        assert _cli("judge", "--db", str(db), "--run", "base", "--endpoint", slow.url, "--judge-model", "m",
                    "--judges", "1", "--queue").returncode == 0  # fmt: skip
        w = subprocess.Popen(
            [RAGAUDIT, "worker", "--db", str(db), "--endpoint", slow.url],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert slow.got.wait(60), "the worker never called the endpoint"
        w.send_signal(signal.SIGINT)
        _out, err = w.communicate(timeout=30)
    finally:
        slow.close()
    assert w.returncode == 130 and "stopped: its running job, if any, is queued again" in err
    (j,) = _listed(db)
    assert j["status"] == "queued" and j["label"] == "queued again (its worker was stopped)"


@pytest.mark.slow
def test_attribute_queue_then_a_worker(tmp_path):
    """The packaged models with small settings: queued, run by ``ragaudit worker --idle 0``,
    then ``attribute`` finds the result stored."""
    db = tmp_path / "a.duckdb"
    rec = {
        "run_id": "base",
        "query_id": "q1",
        "query": "Where was Marie Curie born?",
        "evidence": [
            {"doc_id": "d0", "text": "Marie Curie was born in Warsaw."},
            {"doc_id": "d1", "text": "Paris is in France."},
        ],
    }
    with store.connect(db) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", [rec])])
    small = ["--max-docs", "2", "--ig-steps", "4", "--max-new-tokens", "6"]
    q = _cli("attribute", "--db", str(db), "--run", "base", "--queries", "q1", *small, "--queue")
    assert q.returncode == 0, q.stderr
    assert [j["status"] for j in _listed(db)] == ["queued"]
    w = _cli("worker", "--db", str(db), "--idle", "0")
    assert w.returncode == 0, w.stderr
    (j,) = _listed(db)
    assert j["status"] == "done", j["error"]
    again = _cli("attribute", "--db", str(db), "--run", "base", "--queries", "q1", *small)
    assert again.returncode == 0 and "0 computed, 1 already stored, 0 failed" in again.stderr


def test_judge_precision_on_the_command_line(tmp_path):
    """``--precision bf16`` queues a judge job of its own (its spec says bf16); a precision that is
    not one, or one for an endpoint, exits 2 with the sentence."""
    db = _prov_db(tmp_path)
    judge = ["judge", "--db", str(db), "--run", "base"]
    bad = _cli(*judge, "--precision", "fp8")
    assert bad.returncode == 2 and "--precision must be one of auto, bf16, not 'fp8'" in bad.stderr
    remote = _cli(*judge, "--precision", "bf16", "--endpoint", "http://127.0.0.1:9/v1", "--judge-model", "m")
    assert remote.returncode == 2 and "--precision applies to a local judge model" in remote.stderr
    q = _cli(*judge, "--precision", "bf16", "--queue")
    assert q.returncode == 0, q.stderr
    (job,) = _listed(db)
    assert job["status"] == "queued"
    from ragaudit_core.jobs import queue

    (spec,) = [j.spec for j in queue.jobs(str(db))]
    assert spec.params["precision"] == "bf16"

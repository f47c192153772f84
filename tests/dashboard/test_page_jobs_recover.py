"""AppTest, issue #24 item 1: after a worker died the pages say "worker stopped — restarting"
(its job queued again, a worker started) and offer Retry for failed jobs. ``ensure_worker`` is
replaced by a recorder: no process is started here."""

from __future__ import annotations

import pytest

from ragaudit_core.jobs import plan_judge, queue
from ragaudit_core.jobs import worker as worker_mod
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import app_test, pipeline, plain, write_jsonl

pytestmark = pytest.mark.slow
PAGE = "pages/4_Citation_fidelity.py"


@pytest.fixture
def judged(app_env, tmp_path, monkeypatch):
    """A provenance database with one endpoint judge job queued; ensure_worker records its calls."""
    started: list[str] = []
    monkeypatch.setattr(worker_mod, "ensure_worker", lambda db, idle_s=120.0: started.append(str(db)) or 1)
    path = app_env()
    with store.connect(path) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
        spec, inputs = plan_judge(con, "base", "q1", model="m", endpoint="http://127.0.0.1:9/v1")
        jid = queue.enqueue(con, spec, inputs)
    return path, jid, started


def test_a_job_whose_worker_died_is_queued_again_and_the_page_says_so(judged):
    path, _jid, started = judged
    with store.connect(path) as con:
        queue.claim(con, "a-worker-that-died")  # running, no heartbeat under that token
    at = app_test(PAGE).run()
    assert not at.exception
    assert any(plain(w.value).startswith("Worker stopped — restarting") for w in at.warning)
    assert started == [str(path)]
    with store.connect(path) as con:
        assert [j.status for j in queue.jobs(con)] == ["queued"]


def test_a_failed_job_offers_retry(judged):
    path, jid, started = judged
    with store.connect(path) as con:
        queue.claim(con, "w")
        queue.finish(con, jid, "failed", "JudgeUnreachable: the judge endpoint gave no usable reply")
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("1 judge job failed; the first: JudgeUnreachable" in plain(e.value) for e in at.error)
    next(b for b in at.button if b.label == "Retry failed judge jobs").click().run()
    with store.connect(path) as con:
        assert [j.status for j in queue.jobs(con)] == ["queued"]
    assert started == [str(path)]


def test_200_interactions_while_a_worker_reports_progress_never_meet_store_busy(app_env, tmp_path, monkeypatch):
    """Issue #24's lock-out: a real worker process runs endpoint judge jobs (queued again as they
    finish, so it reports progress and stores results all along) while the fidelity page is run
    200 times; no run shows StoreBusy or fails, and the worker stored results meanwhile. With
    RAGAUDIT_TEST_UNDER_LOAD=1 two CPU-bound processes run beside it (tests/conftest.py)."""
    import json
    import subprocess
    import sys
    import threading
    import time

    from ragaudit_core.fidelity import endpoint
    from tests.fidelity.test_judge import GOOD, _Server
    from tests.helpers import ROOT, released_app_test

    server = _Server(lambda body: (time.sleep(0.05), json.dumps(GOOD))[1])
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, server.url)
    path = app_env()
    recs = [pipeline("base", f"q{i}", text="[Source: D1, p. 2] [Source: D9, p. 1]") for i in range(4)]
    with store.connect(path) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", recs)])
        plans = [plan_judge(con, "base", f"q{i}", model="m", endpoint=server.url) for i in range(4)]
    for spec, inputs in plans:
        queue.enqueue(str(path), spec, inputs)
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "ragaudit_core.jobs.worker", "--db", str(path), "--idle", "30"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stop, finished = threading.Event(), []

    def keep_busy() -> None:  # a job that lands is queued again: the worker never runs dry
        while not stop.wait(0.2):
            for j in queue.jobs(str(path)):
                if j.status == "done":
                    finished.append(j.job_id)
                    queue.enqueue(str(path), j.spec, next(i for s, i in plans if s.job_id() == j.job_id))

    feeder = threading.Thread(target=keep_busy, daemon=True)
    feeder.start()
    at = released_app_test(PAGE, monkeypatch)
    try:
        for _ in range(200):
            at.run()
            assert not at.exception, at.exception
            shown = [plain(w.value) for w in at.warning] + [plain(e.value) for e in at.error]
            assert not any("in use by another program" in t for t in shown), shown
    finally:
        stop.set()
        feeder.join(timeout=10)
        worker.terminate()
        worker.wait()
        server.close()
    assert len(finished) >= 3, finished  # the worker stored results while the page ran

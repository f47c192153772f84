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
    assert any("1 judge job(s) failed; the first: JudgeUnreachable" in plain(e.value) for e in at.error)
    next(b for b in at.button if b.label == "Retry failed judge jobs").click().run()
    with store.connect(path) as con:
        assert [j.status for j in queue.jobs(con)] == ["queued"]
    assert started == [str(path)]

"""Issue #24, item 3: a judge endpoint cannot be turned against the server — real local HTTP
servers in threads: a redirect is an error and its target never hears from us, file:// and keys
in URLs are refused, a queued job naming an endpoint the operator did not allow fails with a
sentence, and a cancel stops a job waiting on a slow endpoint within the poll, not the timeout."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import duckdb
import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judges import EndpointJudge, JudgeUnreachable
from ragaudit_core.jobs import plan_judge, queue
from ragaudit_core.jobs.worker import work
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import pipeline, write_jsonl

KEY = "sk-test-0123456789"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (endpoint.ENV_ENDPOINTS, endpoint.ENV_KEY, endpoint.ENV_TIMEOUT):
        monkeypatch.delenv(name, raising=False)


class _Redirect:
    """Answers every POST with ``code`` and ``Location: target``."""

    def __init__(self, target: str, code: int = 302):
        outer = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                outer.hits += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(code)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


class _Slow:
    """Holds every POST open until released (or ``hold_s``), then answers a valid verdict."""

    def __init__(self, hold_s: float = 40.0):
        outer = self
        self.release, self.got = threading.Event(), threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.set()
                outer.release.wait(hold_s)
                data = json.dumps({"choices": [{"message": {"content": json.dumps(GOOD)}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()


def _queue_judge(tmp_path, url: str, *, spec_endpoint: str | None = None) -> tuple[str, str]:
    """A database with one provenance record citing [Source: D1, p. 2] and its judge job queued
    against ``url`` (``spec_endpoint`` overrides what the stored spec names); (db, job id)."""
    db = tmp_path / "j.duckdb"
    with store.connect(db) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
        spec, inputs = plan_judge(con, "base", "q1", model="m", endpoint=url, seeds=(0,))
        if spec_endpoint is not None:
            spec = spec.model_copy(update={"params": {**spec.params, "endpoint": spec_endpoint}})
        return str(db), queue.enqueue(con, spec, inputs)


def _job(db: str, jid: str) -> queue.Job:
    with store.connect(db) as con:
        (j,) = queue.jobs(con, job_ids=[jid])
    return j


def _everything_stored(db: str) -> str:
    """Every value of every table of the database and of its queue, as one string."""
    con = duckdb.connect(db, read_only=True)
    try:
        tables = [t for (t,) in con.execute("SHOW TABLES").fetchall()]
        out = [str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables]
    finally:
        con.close()
    with sqlite3.connect(queue.queue_file(db)) as q:
        out.append(str(q.execute("SELECT * FROM jobs").fetchall()))
    assert len(out) > 2
    return "\n".join(out)


def test_a_redirect_is_an_error_naming_its_target_and_the_target_hears_nothing(tmp_path, monkeypatch):
    """The endpoint answers 302 to a second local server: the job fails with a sentence naming
    the target; the second server receives no request at all (so none with the key); the key is
    nowhere in the database."""
    second = _Server(lambda body: json.dumps(GOOD))
    first = _Redirect(second.url + "/chat/completions")
    monkeypatch.setenv(endpoint.ENV_KEY, KEY)
    try:
        with pytest.raises(endpoint.EndpointRedirected, match="answered 302"):
            EndpointJudge(first.url, "m", api_key=KEY).verdicts("P", ["c1"], [0])
        assert first.hits == 1  # not retried
        monkeypatch.setenv(endpoint.ENV_ENDPOINTS, first.url)
        db, jid = _queue_judge(tmp_path, first.url)
        assert work(db, idle_s=0, max_jobs=1) == 1
    finally:
        first.close()
        second.close()
    assert second.requests == []
    j = _job(db, jid)
    assert j.status == "failed"
    assert j.error.startswith(
        f"EndpointRedirected: the judge endpoint {first.url}/chat/completions answered 302 (Found) redirecting to "
        f"{second.url}/chat/completions; redirects are not followed"
    )
    assert KEY not in _everything_stored(db)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("file:///etc/hostname", "is not an http:// or https:// URL"),
        ("ftp://example.org/v1", "is not an http:// or https:// URL"),
        ("localhost:8000/v1", "is not an http:// or https:// URL"),
        (f"http://user:{KEY}@127.0.0.1:9/v1", "carries user info"),
        (f"http://127.0.0.1:9/v1?api_key={KEY}", "carries 'api_key' in its query"),
        (f"https://h.example/v1?api-version=1&access_token={KEY}", "carries 'access_token' in its query"),
        (f"https://h.example/v1?apiKey={KEY}&X-Amz-Signature={KEY}", "carries 'apiKey', 'X-Amz-Signature' in"),
    ],
)
def test_urls_that_are_not_http_or_carry_a_key_are_refused_without_repeating_it(tmp_path, url, why):
    with pytest.raises(endpoint.EndpointRefused, match=why) as e:
        EndpointJudge(url, "m")
    assert KEY not in str(e.value)
    with store.connect(tmp_path / "x.duckdb") as con:
        ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
        with pytest.raises(endpoint.EndpointRefused, match=why):
            plan_judge(con, "base", "q1", model="m", endpoint=url)
    with pytest.raises(endpoint.EndpointRefused):
        endpoint.allow(url)


def test_a_queued_file_url_fails_in_the_worker_with_a_sentence(tmp_path, monkeypatch):
    """A spec written straight into the queue (not planned) naming file:// — the worker refuses it."""
    server = _Server(lambda body: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, "file:///etc")
    try:
        db, jid = _queue_judge(tmp_path, server.url, spec_endpoint="file:///etc/hostname")
        work(db, idle_s=0, max_jobs=1)
    finally:
        server.close()
    j = _job(db, jid)
    assert j.status == "failed" and j.error.startswith(
        "EndpointRefused: the judge endpoint 'file:///etc/hostname' is not an http:// or https:// URL"
    )


def test_a_queued_job_naming_an_endpoint_outside_the_allowlist_fails_and_calls_nothing(tmp_path, monkeypatch):
    server = _Server(lambda body: json.dumps(GOOD))
    other = _Server(lambda body: json.dumps(GOOD))
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, other.url + "/")  # normalised: the trailing / does not matter
    monkeypatch.setenv(endpoint.ENV_KEY, KEY)
    try:
        db, jid = _queue_judge(tmp_path, server.url)
        work(db, idle_s=0, max_jobs=1)
        j = _job(db, jid)
        assert server.requests == []
        assert j.status == "failed"
        assert j.error.startswith(
            f"EndpointNotAllowed: the judge endpoint {server.url} is not one this worker may call "
            f"(allowed: {other.url}); an operator allows it with RAGAUDIT_JUDGE_ENDPOINTS={server.url}"
        )
        # allowed (as the command line's --endpoint does): retried, it runs, the key sent only there
        endpoint.allow(server.url)
        with store.connect(db) as con:
            spec = queue.jobs(con, job_ids=[jid])[0].spec
            queue.enqueue(con, spec, plan_judge(con, "base", "q1", model="m", endpoint=server.url, seeds=(0,))[1])
        work(db, idle_s=0, max_jobs=1)
    finally:
        server.close()
        other.close()
    assert _job(db, jid).status == "done"
    assert [h["Authorization"] for _p, h, _b in server.requests] == [f"Bearer {KEY}"]
    assert other.requests == [] and KEY not in _everything_stored(db)


def test_query_parameters_that_carry_no_secret_are_kept():
    assert endpoint.check_url("HTTPS://H.example:443/v1/?api-version=2024-02-01&author=x") == (
        "https://h.example/v1?api-version=2024-02-01&author=x"
    )


def test_a_request_is_capped_by_the_time_limit(monkeypatch):
    """A server that holds the request for 40 s; a 0.6 s limit and one retry: two attempts,
    JudgeUnreachable after about 1.2 s."""
    slow = _Slow()
    monkeypatch.setenv(endpoint.ENV_TIMEOUT, "0.6")
    try:
        judge = EndpointJudge(slow.url, "m", retries=1)
        t0 = time.monotonic()
        with pytest.raises(JudgeUnreachable, match=r"no reply within 0\.6 s"):
            judge.verdicts("P", ["c1"], [0])
        took = time.monotonic() - t0
    finally:
        slow.close()
    assert judge.timeout_s == 0.6 and 1.1 < took < 3.0


def test_cancel_while_waiting_on_a_slow_endpoint_stops_within_the_poll(tmp_path, monkeypatch):
    """The endpoint holds the request for 40 s (timeout 30 s); the job is cancelled once the
    request is in: it ends cancelled within a couple of seconds."""
    slow = _Slow(hold_s=40.0)
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, slow.url)
    try:
        db, jid = _queue_judge(tmp_path, slow.url)
        t = threading.Thread(target=work, args=(db,), kwargs={"idle_s": 0, "max_jobs": 1}, daemon=True)
        t.start()
        assert slow.got.wait(30)
        t0 = time.monotonic()
        with store.connect(db, wait_s=10) as con:
            queue.cancel(con, [jid])
        t.join(timeout=endpoint.DEFAULT_TIMEOUT_S)
        took = time.monotonic() - t0
    finally:
        slow.close()
    assert not t.is_alive() and _job(db, jid).status == "cancelled"
    assert took < 5.0, took

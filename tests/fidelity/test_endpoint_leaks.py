"""The API key stays out of error text however the endpoint or the operator's shell behaves, and a
reply cannot stall or crash a judge job: real local HTTP servers in threads."""

from __future__ import annotations

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judges import EndpointJudge
from tests.fidelity.test_endpoint import _Redirect
from tests.fidelity.test_judge import GOOD, _Server

KEY = "sk-test-0123456789"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (endpoint.ENV_ENDPOINTS, endpoint.ENV_KEY, endpoint.ENV_TIMEOUT, "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)


def test_a_key_with_a_line_end_is_refused_without_repeating_it(monkeypatch):
    """``export RAGAUDIT_JUDGE_API_KEY=$(cat key.txt)`` keeps a Windows file's \\r: http.client then
    refused the header with its repr in the message, which the masking (of the raw key) missed, so
    the key went into the job's error, the queue and the page."""
    monkeypatch.setenv(endpoint.ENV_KEY, KEY + "\r")
    with pytest.raises(endpoint.EndpointRefused) as e:
        endpoint.api_key()
    assert KEY not in str(e.value)
    assert endpoint.ENV_KEY in str(e.value)


def test_a_redirect_echoing_the_key_is_reported_without_it():
    target = "/elsewhere?echo=" + KEY  # a server that puts what it got into its Location
    first = _Redirect(target)
    try:
        with pytest.raises(endpoint.EndpointRedirected) as e:
            EndpointJudge(first.url, "m", api_key=KEY, retries=0, timeout_s=5).verdicts("p", ["c1"], [0])
    finally:
        first.close()
    assert KEY not in str(e.value)
    assert "redirect" in str(e.value)


def test_a_reply_of_many_open_braces_is_an_invalid_vote_at_once():
    """The reply's first JSON object was found with ``\\{.*\\}`` (re.S): quadratic in the open braces
    without a close — 32k took 0.6 s, a 4 MB reply hours, with no cancel polled."""
    server = _Server(lambda _b: "{" * 200_000)
    try:
        t0 = time.monotonic()
        assert EndpointJudge(server.url, "m", retries=0, timeout_s=5).verdicts("p", ["c1"], [0]) == [None]
        assert time.monotonic() - t0 < 2.0
    finally:
        server.close()


@pytest.mark.parametrize("content", [5, {"verdict": "ACCURATE"}, ["x"]])
def test_a_reply_whose_content_is_not_text_is_an_invalid_vote(content):
    server = _Server(lambda _b: content)
    try:
        judge = EndpointJudge(server.url, "m", retries=1, timeout_s=5)
        assert judge.verdicts("p", ["c1"], [0]) == [None]
        assert judge.n_invalid == 2
    finally:
        server.close()


def test_a_loopback_endpoint_never_goes_through_a_proxy(monkeypatch):
    """urllib honours http_proxy for 127.0.0.1 unless no_proxy says otherwise: the key went, in
    clear, to the proxy for an endpoint on this machine."""
    seen = []

    class Proxy(BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(self.headers.get("Authorization"))
            self.send_response(502)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    server = _Server(lambda _b: json.dumps(GOOD))
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
    try:
        for url in (server.url, server.url.replace("127.0.0.1", "localhost")):
            (v,) = EndpointJudge(url, "m", api_key=KEY, retries=0, timeout_s=5).verdicts("p", ["c1"], [0])
            assert v is not None and v.verdict == GOOD["verdict"]
    finally:
        server.close()
        proxy.shutdown()
    assert seen == []
    assert server.requests[0][1]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize(
    ("url", "key", "opt_in", "refused"),
    [
        ("http://judge.example.org/v1", KEY, False, True),  # another machine, plain http: the key in clear
        ("http://10.0.0.7:8000/v1", KEY, False, True),
        ("http://judge.example.org/v1", KEY, True, False),  # the operator says the network is trusted
        ("https://judge.example.org/v1", KEY, False, False),
        ("http://127.0.0.1:8000/v1", KEY, False, False),  # this machine
        ("http://localhost:8000/v1", KEY, False, False),
        ("http://[::1]:8000/v1", KEY, False, False),
        ("http://127.8.9.10:8000/v1", KEY, False, False),  # all of 127.0.0.0/8
        # names that only start like a loopback address resolve wherever their owner likes (review finding)
        ("http://127.attacker.example:8000/v1", KEY, False, True),
        ("http://127.0.0.1.nip.io:8000/v1", KEY, False, True),
        ("http://judge.localhost:8000/v1", KEY, False, True),  # reserved, but glibc asks the network resolver
        ("http://judge.example.org/v1", None, False, False),  # no key, nothing to leak
    ],
)
def test_a_key_is_sent_over_plain_http_only_to_this_machine(monkeypatch, url, key, opt_in, refused):
    if opt_in:
        monkeypatch.setenv(endpoint.ENV_ALLOW_PLAIN_HTTP, "1")
    else:
        monkeypatch.delenv(endpoint.ENV_ALLOW_PLAIN_HTTP, raising=False)
    if not refused:
        endpoint.check_key_transport(url, key)
        return
    with pytest.raises(endpoint.EndpointRefused) as e:
        endpoint.check_key_transport(url, key)
    msg = str(e.value)
    assert msg.startswith("the API key would cross the network in clear: ")
    assert endpoint.ENV_ALLOW_PLAIN_HTTP in msg and "https" in msg and KEY not in msg


def test_a_queued_job_with_a_key_for_a_plain_http_host_fails_before_any_request(tmp_path, monkeypatch):
    """192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there; the job must fail with the sentence
    at once, not after trying to reach it, and the key is stored nowhere."""
    from ragaudit_core.jobs.worker import work
    from tests.fidelity.test_endpoint import _everything_stored, _job, _queue_judge

    url = "http://192.0.2.1:8000/v1"
    monkeypatch.setenv(endpoint.ENV_ENDPOINTS, url)
    monkeypatch.setenv(endpoint.ENV_KEY, KEY)
    monkeypatch.delenv(endpoint.ENV_ALLOW_PLAIN_HTTP, raising=False)
    db, jid = _queue_judge(tmp_path, url)
    t0 = time.monotonic()
    work(db, idle_s=0, max_jobs=1)
    j = _job(db, jid)
    assert j.status == "failed"
    assert j.error.startswith("EndpointRefused: the API key would cross the network in clear: http://192.0.2.1:8000")
    assert time.monotonic() - t0 < 20  # no connection attempt (the time limit is 30 s a request)
    assert KEY not in _everything_stored(db)


def test_a_status_line_echoing_the_key_is_masked_and_retried():
    """A server whose status line repeats the request's Authorization header made http.client raise
    BadStatusLine with the key in its text, which escaped the retry and its masking: the key went
    into the job's error, the worker's log and the page (review finding). Now an unusable reply,
    masked, retried, then ``JudgeUnreachable`` without the key."""
    import socket

    from ragaudit_core.fidelity.judges import JudgeUnreachable

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    hits = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(65536).decode("latin-1")
                auth = next(
                    (ln.split(":", 1)[1].strip() for ln in data.split("\r\n") if ln.startswith("Authorization")), ""
                )
                hits.append(auth)
                conn.sendall(f"{auth}\r\n\r\n".encode())

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    try:
        with pytest.raises(JudgeUnreachable) as e:
            EndpointJudge(url, "m", api_key=KEY, retries=1, timeout_s=5).verdicts("p", ["c1"], [0])
    finally:
        srv.close()
    assert len(hits) == 2 and hits[0] == f"Bearer {KEY}"  # asked twice (one retry), the key sent
    assert KEY not in str(e.value) and "BadStatusLine" in str(e.value) and "***" in str(e.value)


def test_a_body_nested_too_deep_is_an_unusable_reply_not_a_crash():
    """A 100,000-deep JSON body raised RecursionError, which escaped the retry and failed the job
    at once with a traceback (review finding); now it is a reply not in the chat-completions shape,
    as any body that is not JSON: retried, then ``JudgeUnreachable`` saying why."""
    from ragaudit_core.fidelity.judges import JudgeUnreachable

    server = _Server(lambda _b: "x")
    server.httpd.RequestHandlerClass.do_POST = _deep_reply
    try:
        with pytest.raises(JudgeUnreachable, match="nested too deep"):
            EndpointJudge(server.url, "m", retries=1, timeout_s=5).verdicts("p", ["c1"], [0])
    finally:
        server.close()


def _deep_reply(handler):
    handler.rfile.read(int(handler.headers["Content-Length"]))
    data = b"[" * 100_000
    handler.send_response(200)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@pytest.mark.parametrize("query", ["code=SECRET", "x=1;api_key=SECRET"])
def test_keys_in_a_query_are_refused_however_the_query_is_written(query):
    with pytest.raises(endpoint.EndpointRefused) as e:
        endpoint.check_url(f"https://judge.example.org/v1?{query}")
    assert "SECRET" not in str(e.value)


def test_the_command_refuses_a_key_over_plain_http_once_not_once_per_query(tmp_path, monkeypatch):
    """`ragaudit judge --endpoint http://<another host>` with a key: refused once per query (28
    identical lines), then "0 citations judged" and exit 1. Refused once now, exit 2, the key nowhere."""
    import subprocess
    import sys

    from tests.fidelity.test_endpoint import _queue_judge

    url = "http://192.0.2.1:8000/v1"
    db, _ = _queue_judge(tmp_path, url)
    env = {**os.environ, endpoint.ENV_KEY: KEY}
    env.pop(endpoint.ENV_ALLOW_PLAIN_HTTP, None)
    cmd = [sys.executable, "-m", "ragaudit_core.cli", "judge", "--db", db, "--run", "base", "--endpoint", url]
    p = subprocess.run([*cmd, "--judge-model", "m"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("the API key would cross the network in clear") == 1 and KEY not in p.stderr + p.stdout

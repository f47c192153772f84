"""A judge endpoint that trickles its reply cannot hold a request thread: the request's time limit is
one deadline for the whole request, not a socket timeout that each byte resets — real local HTTP
servers in threads, one of which sends its reply a byte at a time."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judges import EndpointJudge, JudgeUnreachable
from tests.fidelity.test_judge import GOOD

KEY = "sk-test-0123456789"
THREAD = "ragaudit-judge-request"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (endpoint.ENV_ENDPOINTS, endpoint.ENV_KEY, endpoint.ENV_TIMEOUT, "http_proxy", "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)


class _Trickle:
    """Answers every POST with a valid reply, one byte every ``every_s`` seconds (the status line and
    headers too, when ``from_start``; else the headers at once and the body trickled), until the
    client goes away or the server is closed; ``cut`` is set when a write finds the client gone."""

    def __init__(self, every_s: float, *, from_start: bool = True):
        outer = self
        self.stop, self.cut, self.got = threading.Event(), threading.Event(), threading.Event()
        self.sent = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                outer.got.set()
                body = json.dumps({"choices": [{"message": {"content": json.dumps(GOOD)}}]}).encode()
                head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                data = head.encode() + body
                try:
                    if not from_start:
                        self.wfile.write(data[: len(head)])
                        data = data[len(head) :]
                    for i in range(len(data)):
                        if outer.stop.wait(every_s):
                            return
                        self.wfile.write(data[i : i + 1])
                        outer.sent += 1
                except OSError:
                    outer.cut.set()  # the client closed the connection: nobody reads any more

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"http://{self.host}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _readers(before: set[threading.Thread]) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD and t.is_alive() and t not in before]


@pytest.mark.parametrize("from_start", [True, False], ids=["status-line-trickled", "body-trickled"])
def test_a_trickling_endpoint_is_abandoned_at_the_deadline_and_no_thread_keeps_reading(monkeypatch, from_start):
    """One byte every 0.4 s (under the old per-read socket timeout of limit + 1 s, so each byte reset
    it): the call ends within the 1.2 s limit and a little slack with a sentence naming the host and
    not the key, the request's thread has ended, and the server sees the connection closed."""
    server = _Trickle(0.4, from_start=from_start)
    before = {t for t in threading.enumerate() if t.name == THREAD}
    try:
        t0 = time.monotonic()
        with pytest.raises(TimeoutError) as e:
            endpoint.post_json(server.url + "/chat/completions", {"model": "m"}, key=KEY, timeout=1.2)
        took = time.monotonic() - t0
        lingering = _readers(before)
        assert server.cut.wait(5), f"the server still trickled to a reader ({server.sent} bytes sent)"
    finally:
        server.close()
    assert 1.1 < took < 1.2 + 0.8, took
    assert lingering == [], "the request's thread is still reading after the call returned"
    msg = str(e.value)
    assert server.host in msg and KEY not in msg and endpoint.ENV_TIMEOUT in msg
    assert ". " not in msg.rstrip(".")  # one sentence


def test_a_judge_on_a_trickling_endpoint_fails_with_the_host_and_leaves_no_reader(monkeypatch):
    """Through the judge (two attempts, as for any timeout): JudgeUnreachable after about twice the
    limit, naming the endpoint, never the key; no request thread is left behind."""
    server = _Trickle(0.3)
    monkeypatch.setenv(endpoint.ENV_KEY, KEY)
    monkeypatch.setenv(endpoint.ENV_TIMEOUT, "0.8")
    before = {t for t in threading.enumerate() if t.name == THREAD}
    try:
        judge = EndpointJudge(server.url, "m", api_key=KEY, retries=1)
        t0 = time.monotonic()
        with pytest.raises(JudgeUnreachable) as e:
            judge.verdicts("P", ["c1"], [0])
        took = time.monotonic() - t0
        lingering = _readers(before)
    finally:
        server.close()
    assert 1.5 < took < 2 * 0.8 + 1.5, took
    assert lingering == []
    assert server.host in str(e.value) and KEY not in str(e.value)


def test_a_cancel_while_an_endpoint_trickles_ends_the_request_thread_too():
    """A cancel stops the wait within the poll; the request's thread, told to stop, ends within about
    a poll as well rather than reading on until the limit (here 30 s)."""
    server = _Trickle(0.3)
    before = {t for t in threading.enumerate() if t.name == THREAD}
    cancelled = threading.Event()

    def check_cancel() -> None:
        if server.sent >= 3:
            cancelled.set()
            raise RuntimeError("cancelled")

    try:
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="cancelled"):
            endpoint.post_json(server.url + "/chat/completions", {}, key=None, timeout=30.0, check_cancel=check_cancel)
        took = time.monotonic() - t0
        lingering = _readers(before)
        assert server.cut.wait(5)
    finally:
        server.close()
    assert cancelled.is_set() and took < 5.0
    assert lingering == []

"""How RagAudit calls a judge endpoint without it being turned against the server (issue #24).

The rules, each enforced here and nowhere else:

- **http and https only.** A ``file://``, ``ftp://`` or schemeless endpoint is refused with a
  sentence (:func:`check_url`) before anything is opened.
- **No secret in a URL.** A URL with user info (``https://user:key@host``) or a key-like query
  parameter (``?api_key=…``, ``apiKey``, ``access_token``, ``secret``, ``password``, ``sig``…;
  not ``api-version`` or ``author``) is refused, and the refusal names the URL with that part
  masked: the URL goes into the job's spec, its error and the database, so it must never carry
  the key.
- **The key** comes only from the environment (``RAGAUDIT_JUDGE_API_KEY``) or a key file the
  operator names (:func:`use_key_file`, the command line's ``--key-file``); it is sent only as
  ``Authorization: Bearer`` to the endpoint itself, and masked out of any error text.
- **No key in clear over the network**: a key is sent over plain ``http://`` only to this machine
  (a loopback host); to another host it needs https, or the operator's explicit
  ``RAGAUDIT_JUDGE_ALLOW_PLAIN_HTTP=1`` (a trusted network) — :func:`check_key_transport`. Without a
  key, plain http to any allowed host is called as before.
- **No proxy for this machine**: an endpoint on a loopback host is called directly, whatever
  ``http_proxy`` says.
- **Redirects are not followed**: a 3xx answer is an error naming its target
  (:class:`EndpointRedirected`), so the key never goes to another address.
- **Only allowed endpoints are called** (:func:`check_allowed`): those the operator lists in
  ``RAGAUDIT_JUDGE_ENDPOINTS`` (comma-separated base URLs), or the endpoint given on the command
  line of this process (:func:`allow`, which adds it to this process's environment so the
  processes it starts — a local Ray cluster — inherit it). A queued job naming any other
  endpoint fails with a sentence: a database cannot make a worker call URLs of its choosing.
- **Bounded waiting**: one request takes at most ``timeout_s`` (default
  :data:`DEFAULT_TIMEOUT_S` = 30 s, ``RAGAUDIT_JUDGE_TIMEOUT_S`` or ``--timeout``) from the
  request to the last byte: one deadline for the whole request (connecting, sending, every read),
  not a socket timeout each byte resets — a server trickling its reply a byte at a time is
  abandoned at the deadline with a sentence naming its host (:class:`_Deadline`). The request
  runs in a helper thread while the caller polls ``check_cancel`` every :data:`POLL_S` s, so a
  cancelled job stops within that poll, not after the network answers; the helper reads in
  slices of at most :data:`POLL_S` s and ends, closing its connection, within a slice of the
  deadline or of the caller giving up (only a connect still under way runs on, to the deadline at
  most): no thread is left reading. A reply is read up to :data:`MAX_REPLY_BYTES`.

URLs are compared after normalisation: scheme and host lower-cased, the default port dropped,
trailing ``/`` removed.
"""

from __future__ import annotations

import functools
import http.client
import io
import ipaddress
import json
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragaudit_core.errors import RagAuditError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ENV_ALLOW_PLAIN_HTTP",
    "ENV_ENDPOINTS",
    "ENV_KEY",
    "ENV_TIMEOUT",
    "MAX_REPLY_BYTES",
    "MAX_TIMEOUT_S",
    "POLL_S",
    "EndpointNotAllowed",
    "EndpointRedirected",
    "EndpointRefused",
    "allow",
    "allowed",
    "api_key",
    "call_url",
    "check_allowed",
    "check_key_transport",
    "check_url",
    "mask",
    "normalise",
    "post_json",
    "timeout_s",
    "use_key_file",
]

ENV_KEY = "RAGAUDIT_JUDGE_API_KEY"
ENV_ENDPOINTS = "RAGAUDIT_JUDGE_ENDPOINTS"
ENV_TIMEOUT = "RAGAUDIT_JUDGE_TIMEOUT_S"
ENV_ALLOW_PLAIN_HTTP = "RAGAUDIT_JUDGE_ALLOW_PLAIN_HTTP"
DEFAULT_TIMEOUT_S = 30.0
POLL_S = 0.2
MAX_REPLY_BYTES = 4 << 20

_KEY_WORDS = frozenset(
    [
        "key",
        "apikey",
        "token",
        "accesstoken",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "authorization",
        "sig",
        "signature",
        "credential",
        "credentials",
        "session",
        "sessionid",
        "bearer",
        "code",  # Azure Functions' function key (?code=…)
    ]
)


def _query(query: str) -> list[tuple[str, str]]:
    """A query's parameters, split at ``&`` and at ``;`` (which some servers take as ``&``: a key
    after one must be seen as well)."""
    return [kv for part in query.split(";") for kv in urllib.parse.parse_qsl(part, keep_blank_values=True)]


def _keylike(name: str) -> bool:
    """A query parameter's name that says it carries a secret: one of its parts (split at ``_ - .``)
    or the whole name, lower-cased, is a key word (``api_key``, ``apiKey``, ``X-Amz-Signature``)."""
    low = name.lower()
    return low.replace("_", "").replace("-", "") in _KEY_WORDS or any(p in _KEY_WORDS for p in re.split(r"[_\-.]", low))


class EndpointRefused(RagAuditError, ValueError):
    """An endpoint URL RagAudit will not call (scheme, user info, a key in the query)."""


class EndpointNotAllowed(RagAuditError, RuntimeError):
    """A job names an endpoint the operator did not allow for this worker."""


class EndpointRedirected(RagAuditError, RuntimeError):
    """The endpoint answered with a redirect (not followed: the key would go with it)."""


def _redact(url: str) -> str:
    """The URL with user info and key-like query values masked (for messages)."""
    p = urllib.parse.urlsplit(url)
    netloc = p.netloc.rsplit("@", 1)[-1]
    if "@" in p.netloc:
        netloc = "***@" + netloc
    query = "&".join(f"{k}=***" if _keylike(k) else f"{k}={v}" for k, v in _query(p.query))
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, query, ""))


def normalise(url: str) -> str:
    """Scheme and host lower-cased, the default port and trailing ``/`` dropped."""
    p = urllib.parse.urlsplit(url.strip())
    scheme, host = p.scheme.lower(), (p.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = p.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    return urllib.parse.urlunsplit((scheme, netloc, p.path.rstrip("/"), p.query, ""))


def check_url(url: str) -> str:
    """The normalised base URL, or :class:`EndpointRefused` saying why it cannot be an endpoint."""
    p = urllib.parse.urlsplit((url or "").strip())
    shown = _redact(url or "")
    if p.scheme.lower() not in ("http", "https") or not p.hostname:
        raise EndpointRefused(
            f"the judge endpoint {shown!r} is not an http:// or https:// URL with a host; "
            "give the server's base URL, e.g. http://localhost:8000/v1"
        )
    if "@" in p.netloc:
        raise EndpointRefused(
            f"the judge endpoint {shown!r} carries user info (a name or key before '@'); a URL is stored "
            f"with the job, so a key never goes in it: remove it and set {ENV_KEY} or use --key-file"
        )
    bad = [k for k, _v in _query(p.query) if _keylike(k)]
    if bad:
        raise EndpointRefused(
            f"the judge endpoint {shown!r} carries {', '.join(map(repr, bad))} in its query; a URL is "
            f"stored with the job, so a key never goes in it: remove it and set {ENV_KEY} or use --key-file"
        )
    return normalise(url)


def allowed() -> list[str]:
    """The endpoints this process may call: ``RAGAUDIT_JUDGE_ENDPOINTS`` (normalised)."""
    return [normalise(u) for u in os.environ.get(ENV_ENDPOINTS, "").split(",") if u.strip()]


def allow(url: str) -> str:
    """Allow ``url`` (checked) for this process and the processes it starts; returns it normalised."""
    u = check_url(url)
    if u not in allowed():
        os.environ[ENV_ENDPOINTS] = ",".join([*allowed(), u])
    return u


def check_allowed(url: str) -> str:
    """The normalised URL if this process may call it, else :class:`EndpointNotAllowed`."""
    u = check_url(url)
    if u not in allowed():
        raise EndpointNotAllowed(
            f"the judge endpoint {u} is not one this worker may call (allowed: "
            f"{', '.join(allowed()) or 'none'}); an operator allows it with {ENV_ENDPOINTS}={u} in the "
            "worker's environment, or gives it as --endpoint on the command line that runs the job"
        )
    return u


def use_key_file(path: Path) -> None:
    """Read the API key from ``path`` (first line, stripped) for this process and its children."""
    try:
        key = Path(path).read_text(encoding="utf-8").strip().splitlines()
    except OSError as e:
        raise EndpointRefused(f"cannot read the key file {path}: {e.strerror or e}; give a readable file") from None
    if not key or not key[0].strip():
        raise EndpointRefused(f"the key file {path} is empty; write the API key on its first line")
    os.environ[ENV_KEY] = key[0].strip()


def api_key() -> str | None:
    """The API key: ``RAGAUDIT_JUDGE_API_KEY`` (set from a key file by :func:`use_key_file`). A key
    holding a control character (the ``\\r`` ``$(cat key.txt)`` keeps from a Windows file) is refused
    here, without repeating it: the HTTP library would refuse the header quoting it, escaped, where
    :func:`mask` cannot find it."""
    key = os.environ.get(ENV_KEY) or None
    if key is not None and any(not c.isprintable() for c in key):
        raise EndpointRefused(
            f"the API key in {ENV_KEY} holds a control character (a line end?); set it to the key alone, "
            "or write it on the first line of a --key-file"
        )
    return key


def timeout_s() -> float:
    """The request time limit: ``RAGAUDIT_JUDGE_TIMEOUT_S`` or 30 s."""
    raw = os.environ.get(ENV_TIMEOUT, "")
    try:
        v = float(raw) if raw.strip() else DEFAULT_TIMEOUT_S
    except ValueError:
        raise EndpointRefused(f"{ENV_TIMEOUT}={raw!r} is not a number of seconds") from None
    if not 0 < v <= MAX_TIMEOUT_S:  # NaN and inf too: a socket cannot wait past its clock's range
        raise EndpointRefused(
            f"{ENV_TIMEOUT}={raw!r}: the request time limit must be above 0 s and at most "
            f"{MAX_TIMEOUT_S:,.0f} s (a day)"
        )
    return v


MAX_TIMEOUT_S = 86_400.0


def call_url(base: str, path: str) -> str:
    """The URL of ``path`` under the endpoint's base URL, the base's query kept after it
    (``…/v1?api-version=2024-02-01`` → ``…/v1/chat/completions?api-version=2024-02-01``)."""
    p = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit((p.scheme, p.netloc, p.path.rstrip("/") + "/" + path.lstrip("/"), p.query, ""))


def mask(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` replaced by ``***`` (error messages never carry the key)."""
    return text.replace(secret, "***") if secret else text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        fp.close()
        raise EndpointRedirected(
            f"the judge endpoint {req.full_url} answered {code} ({msg}) redirecting to {_redact(newurl)}; "
            "redirects are not followed so the API key never goes to another address: give the address "
            "that answers as the endpoint"
        )


def check_key_transport(url: str, key: str | None) -> None:
    """:class:`EndpointRefused` when ``key`` would cross the network in clear: ``url`` is plain
    http to a host other than this machine and the operator has not set
    ``RAGAUDIT_JUDGE_ALLOW_PLAIN_HTTP=1``. No key, https, or a loopback host: nothing to refuse."""
    if not key or urllib.parse.urlsplit(url).scheme.lower() != "http" or _loopback(url):
        return
    if os.environ.get(ENV_ALLOW_PLAIN_HTTP, "").strip() == "1":
        return
    raise EndpointRefused(
        f"the API key would cross the network in clear: {_redact(url)} is plain http to another machine; "
        f"use its https address, or, on a network you trust, set {ENV_ALLOW_PLAIN_HTTP}=1 for the worker"
    )


def _loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine: the name ``localhost`` (the hosts file's) or a literal
    loopback address (127.0.0.0/8, ``::1``) — not a name that merely starts or ends like one
    (``127.0.0.1.nip.io``, ``127.attacker.example``; ``api.localhost``, which RFC 6761 reserves but
    glibc sends to the network's resolver, which may answer with any address)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Deadline:
    """When one request must have ended (monotonic ``at``), for the endpoint ``host``; ``stop`` is
    set when the caller gives up earlier (a cancel). :meth:`left` is what every blocking step of
    the request may still wait, and raises the request's ``TimeoutError`` once nothing is left."""

    def __init__(self, seconds: float, host: str) -> None:
        self.seconds, self.host = seconds, host
        self.at = time.monotonic() + seconds
        self.stop = threading.Event()

    def message(self) -> str:
        return (
            f"the judge endpoint {self.host} gave no reply within {self.seconds:g} s (the request's time limit, "
            f"from sending it to the reply's last byte), so the request was abandoned: check the server, or raise "
            f"{ENV_TIMEOUT} or --timeout (default {DEFAULT_TIMEOUT_S:g} s) if it is slow but working"
        )

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0 or self.stop.is_set():
            raise TimeoutError(self.message())
        return left


class _DeadlineReader(io.RawIOBase):
    """A response's socket, read in slices of at most :data:`POLL_S` s up to the deadline (the
    socket's own timeout would restart with every byte)."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline
        self._ref = sock.makefile("rb", buffering=0)  # keeps the socket open until this reader closes

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while True:
            self._sock.settimeout(min(POLL_S, self._deadline.left()))
            try:
                return self._sock.recv_into(b)
            except TimeoutError:  # a quiet slice: the deadline (or a stop) is checked again
                continue

    def close(self) -> None:
        self._ref.close()
        super().close()


class _DeadlineSocket:
    """What ``http.client.HTTPResponse`` asks of its socket (``makefile``), read under a deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(_DeadlineSocket(sock, deadline), *args, **kwargs)  # type: ignore[arg-type]


class _DeadlineConnection(http.client.HTTPConnection):
    """Connects and sends within what is left of the deadline; its responses read under it."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        self.response_class = functools.partial(_DeadlineResponse, deadline=deadline)  # type: ignore[assignment]

    def connect(self) -> None:
        self.timeout = self._deadline.left()
        super().connect()

    def send(self, data: Any) -> None:
        if self.sock is not None:
            self.sock.settimeout(self._deadline.left())
        super().send(data)


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    pass


class _DeadlineHandler(urllib.request.AbstractHTTPHandler):
    """Opens http (and, as :class:`_DeadlineHTTPSHandler`, https) with :class:`_DeadlineConnection`."""

    deadline: _Deadline
    connection: type[_DeadlineConnection] = _DeadlineConnection

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(functools.partial(self.connection, deadline=self.deadline), req, **kwargs)


class _DeadlineHTTPHandler(_DeadlineHandler, urllib.request.HTTPHandler):
    pass


class _DeadlineHTTPSHandler(_DeadlineHandler, urllib.request.HTTPSHandler):
    connection = _DeadlineHTTPSConnection


def _opener(url: str, deadline: _Deadline) -> urllib.request.OpenerDirector:
    """http(s) only, no redirects (no file:, ftp: or data: handler at all), every step under
    ``deadline``; an endpoint on this machine is never reached through a proxy (``http_proxy``
    without ``no_proxy`` would send the key, in clear for http, to the proxy)."""
    o = urllib.request.OpenerDirector()
    http_handler, https_handler = _DeadlineHTTPHandler(), _DeadlineHTTPSHandler()
    http_handler.deadline = https_handler.deadline = deadline
    for h in (
        urllib.request.ProxyHandler({} if _loopback(url) else None),
        http_handler,
        https_handler,
        urllib.request.HTTPDefaultErrorHandler(),
        _NoRedirect(),
        urllib.request.HTTPErrorProcessor(),
    ):
        o.add_handler(h)
    return o


def post_json(
    url: str,
    body: dict,
    *,
    key: str | None,
    timeout: float,
    check_cancel: Callable[[], None] | None = None,
) -> Any:
    """POST ``body`` as JSON to ``url`` (checked again here) and return the decoded reply.

    At most ``timeout`` seconds in all, to the reply's last byte (:class:`_Deadline`);
    ``check_cancel()`` is called every :data:`POLL_S` s while waiting and stops the wait by raising
    (the request's thread is told to stop and ends within a poll). Raises ``TimeoutError`` (a
    sentence naming the endpoint's host) past the limit, ``urllib.error.URLError`` when
    unreachable, an HTTP error, :class:`EndpointRedirected` on a 3xx."""
    check_url(url)
    check_key_transport(url, key)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")  # noqa: S310
    deadline = _Deadline(timeout, urllib.parse.urlsplit(url).netloc)  # check_url: no user info in it
    out: dict[str, Any] = {}
    done = threading.Event()

    def send() -> None:
        try:
            with _opener(url, deadline).open(req, timeout=timeout) as r:
                out["reply"] = r.read(MAX_REPLY_BYTES + 1)
        except BaseException as e:  # noqa: BLE001 — handed to the waiting thread
            out["error"] = e
        finally:
            done.set()

    thread = threading.Thread(target=send, name="ragaudit-judge-request", daemon=True)
    thread.start()
    try:
        while not done.wait(max(0.0, min(POLL_S, deadline.at - time.monotonic()))):
            if check_cancel is not None:
                check_cancel()
            if time.monotonic() >= deadline.at:
                raise TimeoutError(deadline.message())
    finally:
        if not done.is_set():  # given up (the deadline, a cancel): the reader stops within a slice
            deadline.stop.set()
            thread.join(POLL_S + 1.0)
    error = out.get("error")
    if isinstance(error, urllib.error.URLError) and isinstance(error.reason, TimeoutError):
        error = error.reason  # connecting or sending ran past the deadline
    if isinstance(error, TimeoutError):  # the deadline, seen by the request's thread first
        raise TimeoutError(deadline.message())
    if error is not None:
        raise error
    if len(out["reply"]) > MAX_REPLY_BYTES:
        raise ValueError(f"the reply is longer than {MAX_REPLY_BYTES} bytes")
    try:
        return json.loads(out["reply"])
    except RecursionError:
        raise ValueError("the reply is JSON nested too deep to read") from None

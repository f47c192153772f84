"""Worker liveness by heartbeat, not by PID (issue #24, item 1).

A worker writes a heartbeat beside its database every :data:`BEAT_EVERY_S` seconds, from a
thread of its own (so a long model call does not silence it): one small JSON file per worker in
``.<db name>.workers/<token>.json`` holding ``time`` (wall clock), ``host``, ``pid``, the
worker's random start ``token`` and ``proc_start`` (the kernel's start time of that PID, where
``/proc`` has it).

A worker is **live** when its heartbeat is younger than :data:`STALE_AFTER_S` seconds and, on
the same host, its PID names a running process (not a zombie) that started when the heartbeat
says. So a worker killed with ``kill -9`` stops being live at once on its host (its PID is gone
or a zombie — a zombie's parent may never reap it) and after :data:`STALE_AFTER_S` seconds seen
from elsewhere; a PID reused by an unrelated process never passes (another start time, and no
fresh heartbeat with its token). A job claimed by a worker carries its token; a job whose
worker is not live is queued again by whoever looks (:func:`ragaudit_core.jobs.queue.requeue_stale`).

Edge cases: clocks of different hosts are trusted to agree within a few seconds; a heartbeat
file that cannot be read (being replaced) counts as absent for that look only — files are
replaced atomically, so this is rare; heartbeats of workers found dead are removed. A heartbeat
dated more than STALE_AFTER_S in the future, or not in this shape, is not live.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from typing import Any

__all__ = [
    "BEAT_EVERY_S",
    "STALE_AFTER_S",
    "Heartbeat",
    "folder",
    "heartbeats",
    "is_live",
    "live_workers",
    "new_token",
    "proc_alive",
    "proc_start",
]

BEAT_EVERY_S = 2.0
STALE_AFTER_S = 15.0
HOST = socket.gethostname()


def new_token() -> str:
    return secrets.token_hex(8)


def folder(db_path: str | os.PathLike) -> Path:
    p = Path(db_path)
    return p.with_name(f".{p.name}.workers")


def proc_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (``/proc/<pid>/stat`` field 22), None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # fields after the command name; 22nd overall


def proc_alive(pid: int | None, start: str | None = None) -> bool:
    """Whether ``pid`` runs on this host and is not a zombie (and, given ``start``, is the process
    that started then — not a later one that reused the PID)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): the heartbeat's age decides
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return False
    return start is None or fields[19] == start


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def heartbeats(db_path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every heartbeat beside ``db_path`` (live or not)."""
    return [b for _p, b in _files(db_path)]


def _files(db_path: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    d = folder(db_path)
    if not d.is_dir():
        return []
    return [(p, b) for p in sorted(d.glob("*.json")) if isinstance(b := _read(p), dict)]


def is_live(beat: dict[str, Any], now: float | None = None) -> bool:
    """The rule above, for one heartbeat."""
    now = time.time() if now is None else now
    try:
        age = now - float(beat.get("time", 0))
        pid = int(beat.get("pid") or 0)
    except (TypeError, ValueError):
        return False  # not a heartbeat this code wrote
    if not -STALE_AFTER_S <= age <= STALE_AFTER_S:  # stale, or dated in the future past any clock skew:
        return False  # a heartbeat from the future would keep a dead worker live for ever
    if beat.get("host") == HOST:
        return proc_alive(pid, beat.get("proc_start"))
    return True


def live_workers(db_path: str | os.PathLike) -> list[dict[str, Any]]:
    """The live workers' heartbeats; those of dead workers on this host (or stale for over an
    hour anywhere) are removed."""
    now, live = time.time(), []
    for path, b in _files(db_path):
        if is_live(b, now):
            live.append(b)
        elif b.get("host") == HOST or not _recent(b, now, 3600):
            with contextlib.suppress(OSError):
                path.unlink()  # the file read, never one named by its contents
    return live


def _recent(beat: dict[str, Any], now: float, within_s: float) -> bool:
    try:
        return abs(now - float(beat.get("time", 0))) <= within_s
    except (TypeError, ValueError):
        return False


class Heartbeat:
    """A worker's heartbeat: ``start()`` writes it and keeps it fresh from a daemon thread;
    ``stop()`` removes it."""

    def __init__(self, db_path: str | os.PathLike, token: str | None = None, every_s: float = BEAT_EVERY_S) -> None:
        self.db_path, self.token, self.every_s = db_path, token or new_token(), every_s
        self.path = folder(db_path) / f"{self.token}.json"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        rec = {"time": time.time(), "host": HOST, "pid": os.getpid(), "token": self.token}
        rec["proc_start"] = proc_start(os.getpid())
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(rec))
        os.replace(tmp, self.path)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            with contextlib.suppress(OSError):
                self.beat()

    def start(self) -> Heartbeat:
        self.beat()
        self._thread = threading.Thread(target=self._loop, name="ragaudit-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self.path.unlink()

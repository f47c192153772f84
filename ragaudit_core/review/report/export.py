"""The dashboard's Plotly figures as PNG for the PDF (Kaleido driving headless Chromium), in a
child process with a time limit.

Kaleido's in-process sync server hangs for ever when Chromium cannot start (its worker thread
dies with ``BrowserFailedError`` and the caller waits on a queue nobody serves), which kept
``ragaudit report`` from exiting. Here the export runs in ``python -m
ragaudit_core.review.report.export_worker`` in a session of its own: a browser that fails to
start ends that process with its reason, one that hangs is killed with its children after
``timeout`` seconds, and a figure that fails alone leaves the others exported. The caller gets
the PNGs it could make and, per figure that has none, the reason (the report draws that chart's
table instead, with a note).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from ragaudit_core.review.fonts import code_points

__all__ = ["EXPORT_TIMEOUT_S", "export_figures"]

EXPORT_TIMEOUT_S = 120.0  # for all figures together; a normal report needs 5-15 s


def export_figures(
    figs: dict[str, go.Figure],
    *,
    width: int = 780,
    scale: float = 2.0,
    timeout: float = EXPORT_TIMEOUT_S,
    missing: frozenset[str] = frozenset(),
) -> tuple[dict[str, bytes], str | None]:
    """PNG bytes of each figure that could be exported, and a message saying why the others
    were not (None when every figure was exported). Each character of ``missing`` (no installed
    font draws it: an emoji in a run id) is written as its code point, ``[U+1F680]``, as the
    report's text writes it, instead of the box Chromium would draw."""
    if not figs:
        return {}, None
    with _EXPORT_LOCK:  # one Chromium at a time: concurrent reports take turns
        return _export(figs, width, scale, timeout, missing)


_EXPORT_LOCK = threading.Lock()


def _code_points(value: Any, missing: frozenset[str]) -> Any:
    """Every text of a figure's JSON with the characters of ``missing`` as their code points."""
    if isinstance(value, str):
        return code_points(value, missing)
    if isinstance(value, list):
        return [_code_points(v, missing) for v in value]
    if isinstance(value, dict):
        return {k: _code_points(v, missing) for k, v in value.items()}
    return value


def _export(
    figs: dict[str, go.Figure], width: int, scale: float, timeout: float, missing: frozenset[str] = frozenset()
) -> tuple[dict[str, bytes], str | None]:
    names = list(figs)
    with tempfile.TemporaryDirectory(prefix="ragaudit-charts-") as tmp:
        d = Path(tmp)
        specs = [
            {"fig": _code_points(json.loads(figs[n].to_json()), missing), "height": int(figs[n].layout.height or 450)}
            for n in names
        ]
        (d / "figures.json").write_text(json.dumps({"width": width, "scale": scale, "figures": specs}))
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragaudit_core.review.report.export_worker", str(d)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its Chromium in the same process group: killed with it
            env=_child_env(),
        )
        try:
            _out, err = proc.communicate(timeout=timeout)
            why = _last_line(err)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            why = f"the chart export did not finish within {timeout:.0f} s (Chromium hung) and was stopped"
        out = {n: (d / f"{i}.png").read_bytes() for i, n in enumerate(names) if (d / f"{i}.png").is_file()}
        errors = {n: (d / f"{i}.err").read_text() for i, n in enumerate(names) if (d / f"{i}.err").is_file()}
    if len(out) == len(names):
        return out, None
    reason = why or next(iter(errors.values()), "") or "no image came back"
    if errors and not why:
        reason = "; ".join(f"{n}: {e}" for n, e in errors.items())
    return out, (
        f"charts could not be exported ({reason}); install Chromium for Kaleido (`plotly_get_chrome` or "
        "`choreo_get_chrome`) or set BROWSER_PATH"
    )


def _child_env() -> dict[str, str]:
    """The environment of the export process: this one's, with the folder holding this
    ``ragaudit_core`` first on PYTHONPATH (the child runs the same code as its parent, whatever is
    installed), and Python's warnings off (its stderr carries only the reason of a failure)."""
    root = str(Path(__file__).resolve().parents[3])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else ""), "PYTHONWARNINGS": "ignore"}


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill the export process, its process group and every process under it (Chromium starts
    in a session of its own, so the group alone would leave it running)."""
    import psutil  # type: ignore[import-untyped]  # no stubs installed (types-psutil is not a dependency)

    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    proc.wait()
    psutil.wait_procs(children, timeout=5)


def _last_line(err: bytes | None) -> str:
    """The error a failed worker printed last (its exception line), cut to 300 characters."""
    lines = [line.strip() for line in (err or b"").decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1]
    return line if len(line) <= 300 else line[:299] + "…"

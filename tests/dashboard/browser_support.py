"""A Streamlit server on a loopback port and Debian's Chromium, for the browser test and
the dashboard benchmark (bench/dashboard_bench.py)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(db_path: Path, log_path: Path, *, start_timeout: float = 90):
    """``streamlit run app.py`` headless on 127.0.0.1 with ``RAGAUDIT_DB=db_path``; yields its URL."""
    port = free_port()
    env = dict(os.environ, RAGAUDIT_DB=str(db_path), PYTHONUNBUFFERED="1")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                str(ROOT / "app.py"),
                "--server.headless",
                "true",
                "--server.address",
                "127.0.0.1",
                "--server.port",
                str(port),
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.time() + start_timeout
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None:
                        raise RuntimeError("streamlit exited: " + Path(log_path).read_text()) from None
                    if time.time() > deadline:
                        raise RuntimeError(f"streamlit did not listen within {start_timeout} s") from None
                    time.sleep(0.3)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def launch_chromium(playwright):
    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"Debian's Chromium is missing at {CHROMIUM}: run `bash scripts/setup.sh`")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def wait_idle(page, timeout: float = 60_000) -> None:
    """Wait until Streamlit has finished running the page's script."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)


def upload_logs(page, url: str, files) -> None:
    """Open the home page, upload ``files`` through the file input and load them."""
    page.goto(url)
    page.get_by_text("Load logs").first.wait_for(timeout=60_000)
    wait_idle(page)
    page.locator('input[type="file"]').set_input_files([str(f) for f in files])
    page.get_by_role("button", name="Load the uploaded files").click(timeout=60_000)
    page.get_by_text("Runs and their configurations").wait_for(timeout=60_000)
    wait_idle(page)

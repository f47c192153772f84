"""A Streamlit server on a loopback port and Debian's Chromium, for the browser tests and the
dashboard benchmark (bench/dashboard_bench.py), and the waits they use.

Every wait here is a wait on the page's state with an upper bound (``TIMEOUT_MS``), never a pause:
a test waits for what it is about to read (an element, a metric's value, a text) and for Streamlit
to have *settled* (``settled``). What "settled" means was measured on this Streamlit (1.67) by
recording the DOM around a click that loads logs:

- ``[data-testid="stApp"]`` carries ``data-test-script-state`` (``initial`` before the first run,
  then ``running`` / ``notRunning`` / ``rerunRequested`` / ``stopRequested`` / ``compilationError``)
  and ``data-test-connection-state`` (``CONNECTED`` once the websocket is up).
- The status widget (``stStatusWidget``) is *not* a running signal: the frontend shows it only
  500 ms after a run starts (and fades it out over 200 ms after), so its absence is also what the
  first half-second of every run looks like. Waiting for it to be gone is what let a test read the
  home page's metrics before they were drawn on a loaded machine.
- A script that calls ``st.rerun()`` goes ``running`` → ``notRunning`` → ``running`` in a few ms:
  ``notRunning`` alone can be the gap between two runs, so a test also waits for content that only
  the run it waits for draws.
- Elements whose code loads lazily (metrics, tables, charts, …) are drawn as
  ``[data-testid="stSkeleton"]`` until their chunk arrives, which can be after the run finished:
  "settled" requires that no skeleton is left.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
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
TIMEOUT_MS = 180_000  # the most any one wait may take (a loaded 2-core machine): an upper bound, not a pause

_SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app
    && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]');
}"""
_BODY_HAS = """needles => {
  const text = document.body.innerText.replaceAll('\\u2060', '');
  return needles.every(n => text.includes(n));
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


@contextmanager
def streamlit_server(db_path: Path, log_path: Path, *, start_timeout: float = 180):
    """``streamlit run app.py`` headless on 127.0.0.1 with ``RAGAUDIT_DB=db_path``; yields its URL
    once the server answers its health check (polled; ``start_timeout`` is the upper bound)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
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
            deadline = time.monotonic() + start_timeout
            while not _healthy(url):
                if proc.poll() is not None:
                    raise RuntimeError("streamlit exited: " + Path(log_path).read_text())
                if time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not answer its health check within {start_timeout} s")
                time.sleep(0.2)  # the poll interval of a wait on state (the server answering), not a pause
            yield url
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


def new_page(browser, width: int = 1500, height: int = 1100):
    """A tab whose actions, auto-waits and navigations all have the generous upper bound."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT_MS)
    page.set_default_navigation_timeout(TIMEOUT_MS)
    return page


def settled(page, timeout: float = TIMEOUT_MS) -> None:
    """Wait until the app is connected, no script run is under way and every element is drawn (no
    lazy element still a skeleton). Alone it cannot tell an old run's end from a new one's: after an
    action, wait first for something the action's run draws (``shown``, ``metric``, ``body_text``)."""
    page.wait_for_function(_SETTLED, timeout=timeout)


def shown(page, target, timeout: float = TIMEOUT_MS) -> None:
    """Wait until ``target`` (a locator, or a text that some element contains) is visible, then settled."""
    loc = page.get_by_text(target) if isinstance(target, str) else target
    loc.first.wait_for(state="visible", timeout=timeout)
    settled(page, timeout)


def metric_value(page, label: str):
    """The value element of the ``st.metric`` whose label is exactly ``label``."""
    box = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    )
    return box.first.get_by_test_id("stMetricValue")


def metric(page, label: str, expected: str | re.Pattern = re.compile(r"\S"), timeout: float = TIMEOUT_MS) -> str:
    """Wait until the metric ``label`` shows ``expected`` (a string matched whole, or a pattern; by
    default any value), then until the page has settled; return the value read after that."""
    from playwright.sync_api import expect

    value = metric_value(page, label)
    expect(value).to_have_text(expected, timeout=timeout)
    settled(page, timeout)
    return value.inner_text()


def body_text(page, *needles: str, timeout: float = TIMEOUT_MS) -> str:
    """Wait until the page's text holds every needle (md()'s invisible U+2060 removed), then until
    the page has settled; return that text."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(_BODY_HAS, arg=list(needles), timeout=timeout)
    except PlaywrightTimeout:
        text = page.inner_text("body").replace("\u2060", "")
        missing = [n for n in needles if n not in text]
        raise AssertionError(
            f"not on the page after {timeout / 1000:.0f} s: {missing!r}\n--- page ---\n{text}"
        ) from None
    settled(page, timeout)
    return page.inner_text("body").replace("\u2060", "")


def charts(page, n: int, timeout: float = TIMEOUT_MS) -> None:
    """Wait until at least n Plotly charts have drawn their plot area (Plotly's bundle loads lazily,
    after the script ends)."""
    page.wait_for_function(
        "n => [...document.querySelectorAll('.js-plotly-plot')].filter(p => p.querySelector('.main-svg')).length >= n",
        arg=n,
        timeout=timeout,
    )


def images_done(page, timeout: float = TIMEOUT_MS) -> None:
    """Wait until every image on the page has loaded or failed, so any load/error handler has fired."""
    page.wait_for_function("() => [...document.images].every(i => i.complete)", timeout=timeout)


def upload_logs(page, url: str, files) -> None:
    """Open the home page, upload ``files`` through the file input and load them; returns when the
    loaded page has settled."""
    page.goto(url)
    shown(page, page.get_by_role("heading", name="Load logs"))
    # the logs' input (the qrels expander holds a second file input, which takes .jsonl questions too)
    page.locator('input[type="file"][accept*=".parquet"]').set_input_files([str(f) for f in files])
    # every file uploaded (a chip each) and the rerun that offers the button finished
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stFileChip")).to_have_count(len(files), timeout=TIMEOUT_MS)
    load = page.get_by_role("button", name="Load the uploaded files")
    shown(page, load)
    load.click()
    # the load's st.rerun() gives the uploader a new key: its chips go only once the load has ended
    # (on a database that already held runs, the heading below is on the page before the click)
    expect(page.get_by_test_id("stFileChip")).to_have_count(0, timeout=TIMEOUT_MS)
    shown(page, "Runs and their configurations")

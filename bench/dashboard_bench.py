"""Benchmark: how long each dashboard page takes, first visit and later visits, at 1M and 10M entries.

    .venv/bin/python bench/dashboard_bench.py [--entries 1000000 10000000] [--mode script browser]
        [--repeat 3] [--out bench/out/dashboard.json]

Databases: the bundled sample logs (12 runs × 300 queries, 42,000 entries), and for each
``--entries`` N the text logs of ``bench/ingest_bench.py`` (canonical dialect: 12 runs × N/96
queries × 8 entries of ~470-character passages), loaded with ``ragaudit ingest`` — which stores
what every page opens on (``ragaudit_core.logs.derived``) — and timed.

Two measurements of every page (home, stability, drill-down, compare, citation fidelity,
attributions):

* ``script``: the page's script alone, in Streamlit's AppTest, each page in a fresh process:
  "first" = its first run (the process's caches empty: what a first visit after an ingest or a
  server restart costs the server), "later" = a second run in the same process (``st.cache_*``
  warm). The median of ``--repeat`` processes.
* ``browser``: ``streamlit run app.py`` and Debian's Chromium (Playwright, headless): a new tab on
  the home page (this includes loading Streamlit's frontend), then every page through the sidebar
  twice ("first": the server's caches empty; "later": second visit). A page counts when its key
  element is visible and Streamlit's status is idle. Medians of ``--repeat`` server starts.

Server, browser and pages share the machine's 2 cores; the 1-minute load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

PAGES = {  # name: (script, sidebar label, its title, an element its first screen shows)
    "home": ("app.py", "Home", "RagAudit", "text=Runs and their configurations"),
    "stability": ("pages/1_Stability.py", "Evidence stability", "Evidence stability", ".js-plotly-plot"),
    "drilldown": ("pages/2_Query_drilldown.py", "Query drill-down", "Query drill-down", ".js-plotly-plot"),
    "compare": ("pages/3_Compare.py", "Compare runs", "Compare two runs", "text=Evidence–answer probe"),
    "fidelity": ("pages/4_Citation_fidelity.py", "Citation fidelity", "Citation fidelity", "h1"),
    "attributions": ("pages/5_Attributions.py", "Attributions", "Attributions", "h1"),
}

_SCRIPT_RUN = """
import json, os, sys, time
sys.path.insert(0, {root!r})
import streamlit as st
from streamlit.testing.v1 import AppTest
os.environ["RAGAUDIT_DB"] = {empty!r}  # a server that has started: the page's modules imported
AppTest.from_file({page!r}, default_timeout=600).run()
st.cache_data.clear()
st.cache_resource.clear()
os.environ["RAGAUDIT_DB"] = {db!r}
at = AppTest.from_file({page!r}, default_timeout=600)
out = []
for _ in range(2):
    t = time.perf_counter()
    at.run()
    out.append(time.perf_counter() - t)
print(json.dumps({{"first": out[0], "later": out[1], "exception": bool(at.exception)}}))
"""


def build_db(kind: str, path: Path) -> dict:
    """The database for ``kind`` ("sample" or an entry count), and how long its load took."""
    from ragaudit_core import workspace
    from ragaudit_core.logs import catalog, store

    t = time.perf_counter()
    if kind == "sample":
        con = store.connect(path)
        workspace.load_sample_logs(con)
        con.close()
    else:
        from ingest_bench import write_logs

        files = sorted(str(p) for p in write_logs(int(kind)).glob("*.jsonl"))
        exe = str(Path(sys.executable).parent / "ragaudit")
        subprocess.run([exe, "ingest", *files, "--db", str(path)], check=True, stdout=subprocess.DEVNULL)
    load_s = time.perf_counter() - t
    con = store.connect(path, read_only=True)
    info = {**catalog.overview(con), "load_s": round(load_s, 1)}
    con.close()
    return info


def time_scripts(db: Path, repeat: int) -> dict:
    """Each page's script alone (AppTest), in a fresh process per page and repeat: the page run
    once on an empty database (its modules imported, as in a started server), the caches
    cleared, then its first and a later run on ``db``."""
    out = {}
    for name, (script, *_rest) in PAGES.items():
        runs = []
        for _ in range(repeat):
            scratch = tempfile.mkdtemp(dir=ROOT / "bench" / "out")
            empty = Path(scratch) / "empty.duckdb"
            env = dict(os.environ, RAGAUDIT_WORKSPACE=scratch)
            code = _SCRIPT_RUN.format(root=str(ROOT), page=str(ROOT / script), empty=str(empty), db=str(db))
            res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
            shutil.rmtree(scratch, ignore_errors=True)
        if any(r["exception"] for r in runs):
            raise RuntimeError(f"{script} raised on {db}")
        out[name] = {k: round(statistics.median(r[k] for r in runs), 2) for k in ("first", "later")}
        out[name]["first_max"] = round(max(r["first"] for r in runs), 2)
    return out


def _ready(page, name: str, t0: float) -> float:
    """Seconds from ``t0`` until page ``name`` is drawn: its title replaced the last page's, its
    key element is visible and Streamlit's status is idle."""
    from tests.dashboard.browser_support import settled

    _script, _label, title, key = PAGES[name]
    page.locator("h1", has_text=title).first.wait_for(timeout=300_000)
    page.locator(key).first.wait_for(timeout=300_000)
    settled(page, timeout=300_000)
    return time.perf_counter() - t0


def _browser_once(url: str, browser) -> dict:
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    out = {}
    t = time.perf_counter()
    page.goto(url)
    out["new tab: home"] = _ready(page, "home", t)
    for rnd in ("first", "later"):
        for name in ("stability", "drilldown", "compare", "fidelity", "attributions", "home"):
            t = time.perf_counter()
            page.locator('[data-testid="stSidebarNav"] a', has_text=PAGES[name][1]).first.click()
            out[f"{rnd}: {name}"] = _ready(page, name, t)
            page.wait_for_timeout(300)
    page.close()
    return out


def time_browser(db: Path, repeat: int, tmp: Path) -> dict:
    from playwright.sync_api import sync_playwright

    from tests.dashboard.browser_support import launch_chromium, streamlit_server

    runs = []
    with sync_playwright() as p:
        browser = launch_chromium(p)
        for i in range(repeat):
            with streamlit_server(db, tmp / f"server-{db.stem}-{i}.log") as url:
                runs.append(_browser_once(url, browser))
        browser.close()
    return {k: {"median": round(statistics.median(r[k] for r in runs), 2), "max": round(max(r[k] for r in runs), 2)}
            for k in runs[0]}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, nargs="*", default=[1_000_000, 10_000_000])
    ap.add_argument("--sample", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--mode", nargs="+", choices=("script", "browser"), default=["script", "browser"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--db", type=Path, help="time this existing database instead of building one")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "dashboard.json")
    args = ap.parse_args()

    results = {}
    with tempfile.TemporaryDirectory(dir=ROOT / "bench" / "out") as tmp_name:
        tmp = Path(tmp_name)
        kinds = ["db"] if args.db else (["sample"] if args.sample else []) + [str(n) for n in args.entries]
        for kind in kinds:
            db = args.db or tmp / f"{kind}.duckdb"
            row = {"load_avg_start": os.getloadavg()[0]}
            if not args.db:
                row["database"] = build_db(kind, db)
            if "script" in args.mode:
                row["script"] = time_scripts(db, args.repeat)
            if "browser" in args.mode:
                row["browser"] = time_browser(db, args.repeat, tmp)
            row["load_avg_end"] = os.getloadavg()[0]
            results[kind] = row
            print(kind, json.dumps(row), file=sys.stderr, flush=True)
            if not args.db:
                for p in (db, Path(str(db) + ".wal")):
                    p.unlink(missing_ok=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

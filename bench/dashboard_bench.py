"""Benchmark: how long each dashboard page takes to render, in a real browser.

    .venv/bin/python bench/dashboard_bench.py [--queries 10000] [--repeat 3]

Two databases: the bundled sample logs (12 runs × 300 queries, 42,000 entries) and the
synthetic 1,000,000-entry logs of bench/stability_bench.py (12 runs × 10,000 queries).
For each, a fresh `streamlit run app.py` is started and Debian's Chromium (Playwright)
opens every page in a new browser session; the time is from navigation to the page's
script having finished (Streamlit's status widget gone) with its key element visible.

Per server start: the home page opened in a new tab (this includes loading Streamlit's
frontend), then every page visited through the sidebar twice: "cold" = the first visit
after the server started (st.cache_data empty; the stability overview is read from the
database, where ingest stored it), "warm" = the second visit (cache hits). Medians and
maxima over --repeat server starts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from tests.dashboard.browser_support import launch_chromium, settled, streamlit_server  # noqa: E402

KEY = {  # an element each page shows once its content is drawn
    "home": "text=Runs and their configurations",
    "stability": ".js-plotly-plot",
    "drilldown": ".js-plotly-plot",
    "compare": "text=Evidence–answer probe",
}


def build_db(kind: str, path: Path, queries: int) -> dict:
    from ragaudit_core import workspace
    from ragaudit_core.logs import catalog, store
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.stability import cache as derived

    con = store.connect(path)
    if kind == "sample":
        workspace.load_sample_logs(con)
    else:
        from stability_bench import generate

        logs = ROOT / "bench" / "out" / f"logs_{queries}"
        if not logs.exists():
            generate(logs, queries)
        ingest_paths(con, [logs])
        derived.precompute(con)  # as `ragaudit ingest` and the dashboard's upload do
    info = catalog.overview(con)
    con.close()
    return info


NAV = {"home": "Home", "stability": "Evidence stability", "drilldown": "Query drill-down", "compare": "Compare runs"}


def _ready(page, name: str, t0: float) -> float:
    page.locator(KEY[name]).first.wait_for(timeout=120_000)
    settled(page, timeout=120_000)
    return time.perf_counter() - t0


def time_pages(url: str, browser) -> dict:
    """One fresh server: open the home page in a new tab (loads the Streamlit frontend),
    then visit every page through the sidebar twice (first = cold caches, second = warm)."""
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    out = {}
    t = time.perf_counter()
    page.goto(url)
    out["new tab: home"] = _ready(page, "home", t)
    for rnd in ("cold", "warm"):
        for name in ("stability", "drilldown", "compare", "home"):
            t = time.perf_counter()
            page.locator('[data-testid="stSidebarNav"] a', has_text=NAV[name]).first.click()
            out[f"{rnd}: {name}"] = _ready(page, name, t)
            page.wait_for_timeout(300)
    page.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    results = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = launch_chromium(p)
        for kind in ("sample", "bench"):
            db = Path(tmp) / f"{kind}.duckdb"
            info = build_db(kind, db, args.queries)
            runs = []
            for _ in range(args.repeat):
                with streamlit_server(db, Path(tmp) / f"{kind}.log") as url:
                    runs.append(time_pages(url, browser))
            results[kind] = {
                "entries": info["entries"],
                "runs": info["runs"],
                "queries": info["queries"],
                "median_s": {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]},
                "max_s": {k: round(max(r[k] for r in runs), 2) for k in runs[0]},
            }
            print(kind, json.dumps(results[kind]), file=sys.stderr)
        browser.close()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark: generating the PDF audit report from the bundled sample logs (issue #7).

    .venv/bin/python bench/report_bench.py [--repeat 3]

Each repetition runs in a fresh process (so model loading and Chromium start are paid
as a user pays them) on a fresh DuckDB file into which the sample logs are ingested
first (timed separately). Then, for the pair k10-c256-o32 (baseline) vs k10-c128-o32:

* **cold** — the first report on that database: the answer probe's similarities are not
  stored yet, so the packaged MiniLM is loaded and 120 answer pairs are embedded;
* **warm** — a second report on the same database (similarities now stored).

Wall time of ``build_report`` (gather + chart export + layout + writing), its per-step
split, the page count and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
from ragaudit_core import workspace
from ragaudit_core.logs import catalog, store
from ragaudit_core.review.report import ReportOptions, build_report
db, out = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
con = store.connect(db)
workspace.load_sample_logs(con)
t_ingest = time.perf_counter() - t0
res = {{"ingest_s": t_ingest}}
for label in ("cold", "warm"):
    t = time.perf_counter()
    blob, data = build_report(con, out, ReportOptions(baseline="k10-c256-o32", candidate="k10-c128-o32", db_label=db))
    res[label] = {{"seconds": time.perf_counter() - t, "pages": data.timings["pages"], "bytes": len(blob),
                  "steps": {{k: v for k, v in data.timings.items() if k != "pages"}}}}
res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(res))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "report_bench.json")
    args = ap.parse_args()
    runs = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(
                [sys.executable, "-c", _CHILD.format(root=str(ROOT)), f"{d}/s.duckdb", f"{d}/a.pdf"],
                capture_output=True,
                text=True,
                env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
            )
            if p.returncode:
                sys.exit(p.stderr)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            runs.append(r)
            print(
                f"run {i + 1}: ingest {r['ingest_s']:.1f} s, report cold {r['cold']['seconds']:.1f} s, "
                f"warm {r['warm']['seconds']:.1f} s, {r['cold']['pages']} pages, peak RSS {r['peak_rss_mb']:.0f} MB",
                flush=True,
            )
    summary = {
        "repeat": args.repeat,
        "ingest_median_s": statistics.median(r["ingest_s"] for r in runs),
        "cold_median_s": statistics.median(r["cold"]["seconds"] for r in runs),
        "cold_max_s": max(r["cold"]["seconds"] for r in runs),
        "warm_median_s": statistics.median(r["warm"]["seconds"] for r in runs),
        "warm_max_s": max(r["warm"]["seconds"] for r in runs),
        "cold_steps_median": {
            k: statistics.median(r["cold"]["steps"][k] for r in runs) for k in runs[0]["cold"]["steps"]
        },
        "warm_steps_median": {
            k: statistics.median(r["warm"]["steps"][k] for r in runs) for k in runs[0]["warm"]["steps"]
        },
        "pages": runs[0]["cold"]["pages"],
        "peak_rss_mb_max": max(r["peak_rss_mb"] for r in runs),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}, indent=2))


if __name__ == "__main__":
    main()

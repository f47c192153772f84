"""Benchmark: a 20-query attribution batch in the process vs on a local Ray cluster (issue #16).

    .venv/bin/python bench/jobs_bench.py [--queries 20] [--workers 2] [--modes process,ray]

Each mode starts from a fresh copy of the sample database (nothing stored), plans the first
``--queries`` queries of run k10-c256-o32 with the defaults (``jobs.ATTRIBUTION_DEFAULTS``)
and runs ``jobs.run_batch``; wall time includes loading the models (once in the process;
once per Ray worker) and, for Ray, starting the local cluster. Then it checks that the two
modes stored the same generator rankings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _sample import sample_db  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--modes", default="process,ray")
    ap.add_argument("--db", default=str(ROOT / "bench" / "out" / "sample.duckdb"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from ragaudit_core.attribution.explain import stored_payloads
    from ragaudit_core.jobs import plan, run_batch
    from ragaudit_core.logs import store

    src = sample_db(args.db)
    run = "k10-c256-o32"
    results, rankings = {}, {}
    for mode in args.modes.split(","):
        tmp = Path(tempfile.mkdtemp()) / "bench.duckdb"
        shutil.copy(src, tmp)
        con = store.connect(tmp)
        con.execute("DROP TABLE IF EXISTS attributions")
        qids = [q for (q,) in con.execute("SELECT query_id FROM records WHERE run_id = ? ORDER BY query_id",
                                          [run]).fetchall()][: args.queries]
        jobs = [plan(con, run, q, device="cpu") for q in qids]
        t = time.perf_counter()
        rep = run_batch(con, jobs, ray="local" if mode == "ray" else None, workers=args.workers)
        wall = time.perf_counter() - t
        rankings[mode] = {s.query_id: next(iter(stored_payloads(con, list(s.result_keys().values())).values()))
                          ["generator_ranking"] for s, _ in jobs}
        results[mode] = {"wall_s": round(wall, 1), "per_query_s": round(wall / len(jobs), 2),
                         "done": len(rep.done), "failed": rep.failed}
        print(json.dumps({"mode": mode, **results[mode]}), flush=True)
        con.close()
    if len(rankings) == 2:
        a, b = rankings.values()
        results["same_rankings"] = sum(a[q] == b[q] for q in a)
    print(json.dumps(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

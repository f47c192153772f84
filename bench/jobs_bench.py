"""Benchmark: a 20-query attribution batch in the process vs on a local Ray cluster (issue #16).

    .venv/bin/python bench/jobs_bench.py [--queries 20] [--workers 2] [--modes process,ray]

Each mode starts from a fresh copy of the sample database (nothing stored), plans the first
``--queries`` queries of run k10-c256-o32 with the defaults (``defaults.ATTRIBUTION_DEFAULTS``)
and runs ``jobs.run_batch``; wall time includes loading the models (once in the process;
once per Ray worker) and, for Ray, starting the local cluster. Then it checks that the two
modes stored the same generator rankings.

``--memory N1,N2`` instead measures peak memory at each batch size (e.g. 20,80: 1× and 4×), each
mode in a fresh process whose whole tree is sampled (``ingest_bench._peaks``: summed PSS of
the driver, the Ray cluster and its workers). ``--small`` uses small jobs (2 documents, 4 IG
points, 6 answer tokens) so 4× the batch stays short: the memory of a batch is the models and
the jobs in flight, not the number of queries, which is what this checks.
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
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or auto (the jobs' models load there)")
    ap.add_argument(
        "--precision",
        default=None,
        choices=["auto", "fp32", "bf16"],
        help="load the process's models first, the generator in this precision (a bench option: a job "
        "always asks for auto), and report their loading apart from the batch's wall time",
    )
    ap.add_argument("--memory", default=None, help="batch sizes to measure peak memory at, e.g. 20,80")
    args = ap.parse_args()
    if args.memory:
        return memory(args)

    from ragaudit_core.attribution.storage import stored_payloads
    from ragaudit_core.jobs import plan, result_keys, run_batch
    from ragaudit_core.logs import store

    src = sample_db(args.db)
    run = "k10-c256-o32"
    results, rankings = {}, {}
    if args.precision:
        results["load_s"] = preload(args.device, args.precision)
    for mode in args.modes.split(","):
        tmp = Path(tempfile.mkdtemp()) / "bench.duckdb"
        shutil.copy(src, tmp)
        con = store.connect(tmp)
        con.execute("DROP TABLE IF EXISTS attributions")
        qids = [
            q
            for (q,) in con.execute("SELECT query_id FROM records WHERE run_id = ? ORDER BY query_id", [run]).fetchall()
        ][: args.queries]
        small = dict(max_docs=2, ig_steps=4, max_new_tokens=6) if args.small else {}
        jobs = (plan(con, run, q, device=args.device, **small) for q in qids)  # planned lazily
        t = time.perf_counter()
        rep = run_batch(con, jobs, ray="local" if mode == "ray" else None, workers=args.workers)
        wall = time.perf_counter() - t
        rankings[mode] = {
            q: next(
                iter(
                    stored_payloads(
                        con, list(result_keys(plan(con, run, q, device=args.device, **small)[0]).values())
                    ).values()
                )
            )["generator_ranking"]
            for q in qids
        }
        from ragaudit_core import models

        dtypes = sorted(  # the weights the process's jobs ran with (Ray's workers load their own)
            {str(m.model.dtype) for (kind, *_), m in models._CACHE.items() if kind == "generator"}
        )
        results[mode] = {
            "generator_dtype": dtypes or None,
            "wall_s": round(wall, 1),
            "per_query_s": round(wall / len(qids), 2),
            "done": len(rep.done),
            "failed": rep.failed,
        }
        print(json.dumps({"mode": mode, **results[mode]}), flush=True)
        con.close()
    if len(rankings) == 2:
        a, b = rankings.values()
        results["same_rankings"] = sum(a[q] == b[q] for q in a)
    print(json.dumps(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


def preload(device: str, precision: str) -> float:
    """Load the default models into the process's cache under the keys the jobs ask for (the
    generator in ``precision`` under ``auto``); the seconds it took."""
    from ragaudit_core import models

    t = time.perf_counter()
    models.cached_model("embedder", models.DEFAULT_EMBEDDER, device)
    key = ("generator", models.DEFAULT_GENERATOR_NAME, device, "auto")
    models._CACHE[key] = models.load_generator(device=device, precision=precision)
    return round(time.perf_counter() - t, 1)


def memory(args) -> None:
    """Peak memory of the whole process tree per (mode, batch size), each a fresh process."""
    from ingest_bench import _peaks  # memory is the point here: one observed run

    out = []
    for n in (int(x) for x in args.memory.split(",")):
        for mode in args.modes.split(","):
            cmd = [
                sys.executable,
                __file__,
                "--queries",
                str(n),
                "--modes",
                mode,
                "--workers",
                str(args.workers),
                "--db",
                args.db,
            ] + (["--small"] if args.small else [])
            wall, tree_gb, largest_gb = _peaks(cmd)
            row = {
                "mode": mode,
                "queries": n,
                "wall_s": round(wall, 1),
                "tree_pss_gb": round(tree_gb, 2),
                "largest_rss_gb": round(largest_gb, 2),
            }
            out.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

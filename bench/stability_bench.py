"""Benchmark: ingest + full stability metrics on 1,000,000 evidence entries.

    .venv/bin/python bench/stability_bench.py [--queries 10000] [--out bench/out] [--repeat 3]

Generates synthetic logs (10,000 queries × 12 runs × about 8 entries; the paper's grid
shape: 3 list depths × 2 chunk sizes × 2 overlaps), then measures, each in its own
process so that peak RSS is its own:

1. ``ragaudit``: ingest into a DuckDB file + all stability metrics (66 pairs, doc and
   span level);
2. the reference: a straightforward pure-Python, set-based implementation of the same
   metrics (``ragaudit_core.reference``) reading the same files with ``json``.

Overlap is realistic: runs with the same chunking share span hashes, a run with a
smaller k returns a prefix of a deeper one, different chunkings share documents but not
spans, and each config perturbs the ranking a little.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KS = (6, 8, 10)
CHUNKS = (128, 256)
OVERLAPS = (0, 32)


def generate(out: Path, n_queries: int, seed: int = 0) -> int:
    import numpy as np

    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    n_entries = 0
    configs = [(k, c, o) for c in CHUNKS for o in OVERLAPS for k in KS]
    for k, c, o in configs:
        files[(k, c, o)] = open(out / f"k{k}_c{c}_o{o}.jsonl", "w")
    for q in range(n_queries):
        pool = rng.choice(100_000, size=14, replace=False)
        base_scores = rng.normal(size=14)
        for c in CHUNKS:
            for o in OVERLAPS:
                scores = base_scores + rng.normal(scale=0.35, size=14)
                order = pool[np.argsort(-scores)]
                chunk_of = rng.integers(0, 3, size=10)  # which chunk of the doc the chunking surfaces
                for k in KS:
                    ev = []
                    for i in range(k):
                        d = int(order[i])
                        ev.append(
                            '{"doc_id":"doc%d","span_hash":"%x","rank":%d}'
                            % (d, hash((d, c, o, int(chunk_of[i]))) & 0xFFFFFFFFFFFF, i)
                        )
                    n_entries += k
                    files[(k, c, o)].write(
                        '{"run_id":"k%d_c%d_o%d","query_id":"q%d","config":{"top_k":%d,"chunk_size":%d,'
                        '"chunk_overlap":%d},"evidence":[%s]}\n' % (k, c, o, q, k, c, o, ",".join(ev))
                    )
    for f in files.values():
        f.close()
    return n_entries


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_ragaudit(logs: Path, db: Path) -> dict:
    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.stability.metrics import compute_stability

    if db.exists():
        db.unlink()
    t0 = time.perf_counter()
    con = store.connect(db)
    rep = ingest_paths(con, [logs])
    t1 = time.perf_counter()
    res = compute_stability(con)
    t2 = time.perf_counter()
    return {
        "ingest_s": t1 - t0,
        "metrics_s": t2 - t1,
        "total_s": t2 - t0,
        "peak_rss_mb": _peak_mb(),
        "entries": rep.n_entries,
        "records": rep.n_records,
        "pairs": len(res.pairs),
        "gap_ratio": res.summary.gap_ratio,
        "mean_j_doc": res.summary.mean_j_doc,
    }


def run_reference(logs: Path) -> dict:
    from ragaudit_core.logs.identity import canonical_doc_id
    from ragaudit_core.stability.reference import reference_stability

    t0 = time.perf_counter()
    records = []
    for f in sorted(logs.glob("*.jsonl")):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                records.append(
                    (
                        r["run_id"],
                        r["query_id"],
                        [(canonical_doc_id(e["doc_id"]), e.get("span_hash")) for e in r["evidence"]],
                    )
                )
    t1 = time.perf_counter()
    res = reference_stability(records)
    t2 = time.perf_counter()
    return {
        "read_s": t1 - t0,
        "metrics_s": t2 - t1,
        "total_s": t2 - t0,
        "peak_rss_mb": _peak_mb(),
        "pairs": len(res["pairs"]),
        "gap_ratio": res["gap_ratio"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--phase", choices=["all", "ragaudit", "reference"], default="all")
    ap.add_argument("--repeat", type=int, default=3, help="runs per phase; the median run is reported")
    args = ap.parse_args()
    logs = args.out / f"logs_{args.queries}"
    if args.phase == "ragaudit":
        print(json.dumps(run_ragaudit(logs, args.out / "bench.duckdb")))
        return
    if args.phase == "reference":
        print(json.dumps(run_reference(logs)))
        return
    if not logs.exists():
        t = time.perf_counter()
        n = generate(logs, args.queries)
        print(f"generated {n:,} entries in {time.perf_counter() - t:.1f} s -> {logs}", file=sys.stderr)
    size = sum(f.stat().st_size for f in logs.glob("*.jsonl"))
    results = {"logs_bytes": size, "cpu_count": os.cpu_count()}
    for phase in ("ragaudit", "reference"):
        runs = []
        for _ in range(args.repeat):  # alternate-free repeats; each in a fresh process
            p = subprocess.run(
                [sys.executable, __file__, "--queries", str(args.queries), "--out", str(args.out), "--phase", phase],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        runs.sort(key=lambda r: r["total_s"])
        results[phase] = runs[len(runs) // 2]
        results[phase]["all_total_s"] = [round(r["total_s"], 2) for r in runs]
        print(phase, results[phase], file=sys.stderr)
    results["ratio_total"] = results["ragaudit"]["total_s"] / results["reference"]["total_s"]
    results["ratio_metrics"] = results["ragaudit"]["metrics_s"] / results["reference"]["metrics_s"]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

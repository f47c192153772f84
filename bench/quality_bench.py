"""Benchmark: what ranking quality and the bootstrap intervals add to ``ragaudit stability``.

    .venv/bin/python bench/quality_bench.py [--queries 10000] [--repeat 3]

Generates the stability bench's synthetic logs (``bench/stability_bench.py``: 12 runs × 10,000
queries × about 8 entries ≈ 1,000,000 entries, the paper's grid shape) plus relevance labels (one or
two relevant documents per query, drawn from the query's document pool, so each run finds some and
misses some), ingests them once, then times in one process, each ``--repeat`` times:

1. ``compute_stability`` without intervals (what ``ragaudit stability --resamples 0`` computes);
2. the same with 1,000 bootstrap resamples (the headline figures and every pair's);
3. ``compute_quality`` of the 12 runs and the 66 pairs (16 metrics each, intervals, paired tests);

and reports (2 − 1) + 3, the time the quality figures and all the intervals add, with peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_qrels(logs: Path, out: Path, seed: int = 1) -> int:
    """One or two relevant documents per query, among the documents the runs retrieve for it."""
    import numpy as np

    rng = np.random.default_rng(seed)
    docs: dict[str, set[str]] = {}
    for f in sorted(logs.glob("*.jsonl")):
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                docs.setdefault(r["query_id"], set()).update(e["doc_id"] for e in r["evidence"])
    n = 0
    with open(out, "w") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for q, ds in docs.items():
            pool = sorted(ds)
            for d in rng.choice(pool, size=min(len(pool), int(rng.integers(1, 3))), replace=False):
                fh.write(f"{q}\t{d}\t{int(rng.integers(1, 3))}\n")
                n += 1
    return n


def main() -> None:
    from bench.stability_bench import generate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "quality_bench"))
    args = ap.parse_args()

    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths
    from ragaudit_core.logs.qrels import load_qrels
    from ragaudit_core.quality.summary import compute_quality
    from ragaudit_core.stability.metrics import StabilityOptions, compute_stability

    out = Path(args.out)
    logs = out / "logs"
    if not logs.exists():
        n = generate(logs, args.queries)
        print(f"generated {n:,} entries", file=sys.stderr)
    qrels = out / "qrels.tsv"
    n_labels = write_qrels(logs, qrels)
    db = out / "q.duckdb"
    if db.exists():
        db.unlink()
    con = store.connect(db)
    rep = ingest_paths(con, [logs])
    load_qrels(con, [qrels])
    runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    times: dict[str, list[float]] = {"stability": [], "stability_intervals": [], "quality": []}
    for _ in range(args.repeat):
        t = time.perf_counter()
        compute_stability(con, StabilityOptions())
        times["stability"].append(time.perf_counter() - t)
        t = time.perf_counter()
        res = compute_stability(con, StabilityOptions(resamples=1000))
        times["stability_intervals"].append(time.perf_counter() - t)
        t = time.perf_counter()
        q = compute_quality(con, runs)
        times["quality"].append(time.perf_counter() - t)
    med = {k: statistics.median(v) for k, v in times.items()}
    added = med["stability_intervals"] - med["stability"] + med["quality"]
    result = {
        "entries": rep.n_entries,
        "queries": args.queries,
        "runs": len(runs),
        "pairs": len(q.pairs),
        "labels": n_labels,
        "median_s": {k: round(v, 2) for k, v in med.items()},
        "all_s": {k: [round(x, 2) for x in v] for k, v in times.items()},
        "added_s": round(added, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "interval_pairs": len(res.intervals.pairs) if res.intervals is not None else 0,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

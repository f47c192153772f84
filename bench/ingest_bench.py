"""Ingest + every stability metric on logs **with texts**, beside a bare DuckDB scan of the same files.

Data (written once per size under bench/out/ingest/<entries>): 12 runs (the seed's grid of
top-k × chunk size × overlap) × Q queries × 8 evidence entries, each entry a ~470-character
passage text (span identity from the text, as a real log carries it), drawn per query from a
pool of 30 passages so runs share documents and spans the way a sweep does. 10,000 queries are
960,000 entries.

Measured, each in its own process (wall time and peak RSS of that process):

* ``scan``: DuckDB ``SELECT count(*) FROM read_json(files, format='newline_delimited')`` —
  the floor of reading the same bytes;
* ``ragaudit``: ``ragaudit stability FILES --db fresh.duckdb --json out.json`` — validation,
  identities, the one-transaction load, and every stability metric.

    .venv/bin/python bench/ingest_bench.py --entries 1000000 4000000 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "ingest"
GRID = [(k, c, o) for k in (5, 10, 20) for c in (128, 256) for o in (0, 32)]
WORDS = [
    "evidence",
    "retrieval",
    "stability",
    "citation",
    "span",
    "document",
    "query",
    "answer",
    "model",
    "chunk",
    "overlap",
    "index",
    "vector",
    "score",
    "rank",
    "protein",
    "cell",
    "gene",
    "tumour",
    "therapy",
    "patient",
    "trial",
    "outcome",
    "dose",
    "effect",
    "risk",
    "cohort",
    "analysis",
    "signal",
    "pathway",
    "receptor",
    "expression",
    "mutation",
    "binding",
    "assay",
]


def _passage(rng: random.Random) -> str:
    words = []
    while sum(len(w) + 1 for w in words) < 470:
        words.append(rng.choice(WORDS))
    return " ".join(words).capitalize() + "."


def write_logs(entries: int) -> Path:
    """The bench logs for ``entries`` evidence entries (written once, then reused)."""
    n_queries = max(1, entries // (len(GRID) * 8))
    d = OUT / str(entries)
    done = d / ".done"
    if done.exists():
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    rng = random.Random(0)
    pools = []
    for q in range(n_queries):
        pools.append([(f"doc{q}-{j // 3}", _passage(rng)) for j in range(30)])
    for k, c, o in GRID:
        r = random.Random(k * 1000 + c * 10 + o)
        with open(d / f"k{k}-c{c}-o{o}.jsonl", "w", encoding="utf-8") as f:
            for q, pool in enumerate(pools):
                picks = r.sample(range(30), 8)
                rec = {
                    "run_id": f"k{k}-c{c}-o{o}",
                    "query_id": str(q),
                    "query": f"question {q}",
                    "config": {"top_k": k, "chunk_size": c, "chunk_overlap": o},
                    "evidence": [{"doc_id": pool[p][0], "text": pool[p][1], "rank": i} for i, p in enumerate(picks)],
                }
                f.write(json.dumps(rec) + "\n")
    done.touch()
    return d


def _measure(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak memory of the whole process tree (GB: the proportional set size of the
    command and its worker processes, summed, sampled every 50 ms; PSS counts a shared library's
    pages once across the processes that map it, where summed RSS would count them per process)
    and peak RSS of its largest single process (GB, from the kernel)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    ps = psutil.Process(proc.pid)
    tree_peak = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            tree_peak = max(tree_peak, sum(p.memory_full_info().pss for p in (ps, *ps.children(recursive=True))))
        except psutil.Error:
            pass
        time.sleep(0.05)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:3]} exited {proc.returncode}")
    return wall, tree_peak / 1024**3, usage.ru_maxrss / 1024**2


def run(entries: int, repeat: int) -> dict:
    d = write_logs(entries)
    files = sorted(str(p) for p in d.glob("*.jsonl"))
    scan = [
        sys.executable,
        "-c",
        'import duckdb, sys; duckdb.sql("SET threads=2"); print(duckdb.sql('
        "\"SELECT count(*) FROM read_json(?, format='newline_delimited')\", params=[sys.argv[1:]]).fetchall())",
        *files,
    ]
    exe = str(Path(sys.executable).parent / "ragaudit")
    rows = {"entries": entries, "bytes": sum(Path(f).stat().st_size for f in files), "scan": [], "ragaudit": []}
    for _ in range(repeat):
        rows["scan"].append(_measure(scan))
        db = OUT / f"bench-{entries}.duckdb"
        for p in (db, Path(str(db) + ".wal")):
            p.unlink(missing_ok=True)
        rows["ragaudit"].append(_measure([exe, "stability", *files, "--db", str(db), "--json", str(OUT / "out.json")]))
        db.unlink(missing_ok=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    for n in args.entries:
        r = run(n, args.repeat)
        scan = statistics.median(w for w, _, _ in r["scan"])
        wall = statistics.median(w for w, _, _ in r["ragaudit"])
        print(json.dumps(r))
        print(
            f"{n:>11,} entries ({r['bytes'] / 1e9:.2f} GB), median of {args.repeat}: scan {scan:.1f} s / "
            f"{max(m for _, m, _ in r['scan']):.2f} GB; ragaudit {wall:.1f} s / "
            f"{max(m for _, m, _ in r['ragaudit']):.2f} GB peak RSS of the process tree "
            f"({max(m for _, _, m in r['ragaudit']):.2f} GB largest process); ratio {wall / scan:.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()

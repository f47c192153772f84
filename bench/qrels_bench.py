"""Benchmark: loading relevance labels (``ragaudit quality --qrels``) — time and peak memory at
1× and 4× the input.

    .venv/bin/python bench/qrels_bench.py [--lines 1000000 4000000] [--repeat 2]

Writes a BEIR-style qrels file per size (``query-id  corpus-id  score``, a header line, 50,000
queries, document ids up to 5,000,000, grades 0–2, a few repeated judgements as real files have)
under ``bench/out/qrels/``, then loads it into a fresh database file in a child process
(``load_qrels``), ``--repeat`` times: wall seconds and the child's peak RSS (``ru_maxrss``), with
the same for a child that only opens the database (the interpreter and its imports).
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import sys
from ragaudit_core.logs import store
from ragaudit_core.logs.qrels import load_qrels
con = store.connect(sys.argv[1])
if len(sys.argv) > 2:
    rep = load_qrels(con, [sys.argv[2]])
    assert rep.n_labels > 0, rep.summary()
con.close()
"""


def write_qrels(path: Path, lines: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with path.open("w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for _ in range(lines):
            f.write(f"{rng.randrange(50_000)}\t{rng.randrange(5_000_000)}\t{rng.choice((0, 1, 2))}\n")


def child(*args: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process loading ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", _CHILD, *args], check=True, cwd=ROOT)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024  # ru_maxrss of the largest child so far: run sizes smallest first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, nargs="+", default=[1_000_000, 4_000_000])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "qrels"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = out / "bench.duckdb"
    db.unlink(missing_ok=True)
    _, base = child(str(db))
    print(f"open only: peak RSS {base:.0f} MB")
    for n in sorted(args.lines):
        f = out / f"qrels-{n}.tsv"
        if not f.exists():
            write_qrels(f, n)
        walls = []
        for _ in range(args.repeat):
            db.unlink(missing_ok=True)
            wall, peak = child(str(db), str(f))
            walls.append(wall)
        print(
            f"{n:,} lines ({f.stat().st_size / 1e6:.1f} MB): median {statistics.median(walls):.1f} s "
            f"({', '.join(f'{w:.1f}' for w in walls)}), peak RSS {peak:.0f} MB"
        )
    db.unlink(missing_ok=True)


if __name__ == "__main__":
    main()

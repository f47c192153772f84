"""The ingest workers' share of a load, alone: every byte range of a folder's ``.jsonl`` files
decoded in this one process as a worker decodes it (``parallel._decode_range``: lines, the record
formats' fast paths, evidence rows, the Arrow table handed back), timed in CPU seconds.

    PYTHONPATH=. .venv/bin/python bench/worker_cpu_probe.py bench/out/ingest/ragas-1000000 [--rounds 2]

Run it against two checkouts alternately (``PYTHONPATH`` naming each) to compare a change to the
workers' hot path without the ingesting process, DuckDB or the stored overview in the figure
(docs/benchmarks.md, "Fourteenth session")."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ragaudit_core.logs import parallel
from ragaudit_core.logs.rows import RowOptions


def decode_folder(folder: Path) -> tuple[float, int]:
    """CPU seconds to decode every range of the folder's files, and the evidence rows made."""
    parallel._init_worker(RowOptions(), 64 << 20)
    rows = 0
    t0 = time.process_time()
    for path in sorted(folder.glob("*.jsonl")):
        for start, length in parallel.byte_ranges(path, parallel.CHUNK_BYTES):
            _n, _items, table = parallel._decode_range(str(path), start, length, (path.stem, None))
            rows += parallel._taken((0, [], table))[2].num_rows
    return time.process_time() - t0, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    for _ in range(args.rounds):
        cpu, rows = decode_folder(args.folder)
        print(f"{args.folder.name}: {rows:,} rows, {cpu:.2f} CPU-s")


if __name__ == "__main__":
    main()

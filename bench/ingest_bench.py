"""Ingest (or ingest + every stability metric) of logs **with texts** in one dialect, beside a bare DuckDB scan.

Data (written once per dialect and size under bench/out/ingest/<dialect>-<entries>): 12 runs (the seed's grid of
top-k × chunk size × overlap) × Q queries × 8 evidence entries, each entry a ~470-character
passage text (span identity from the text, as a real log carries it), drawn per query from a
pool of 30 passages so runs share documents and spans the way a sweep does. 10,000 queries are
960,000 entries. The same logical records in four dialects (``--dialect``):

* ``canonical``: our contract's canonical shape (``run_id``, ``query_id``, ``evidence`` objects);
* ``rcc``: RagCiteCheck's dialect — the evidence list under ``docs``, ``cited``, ``retrieved`` or
  ``contexts`` (rotating by query), every fourth record a plain list of document ids (no texts);
* ``ragas``: Ragas v0.2 rows (``user_input``, ``retrieved_contexts``, ``retrieved_context_ids``,
  ``response``), the run id from the file name, the query id the hash of the question;
* ``openinference``: one OpenInference RETRIEVER span per record, as OpenTelemetry exporters write
  it (``context.trace_id``, flattened ``attributes`` with ``retrieval.documents.{i}.document.*``).

Measured, each in its own process, twice: the wall time from a run nothing watches, the peak
memory of the process tree from a second run sampled every 50 ms (sampling ``smaps`` on 2 cores
takes CPU from the command and added about 1 s to a 12 s ingest when both came from one run):

* ``scan``: DuckDB ``SELECT count(*) FROM read_json(files, format='newline_delimited')`` —
  the floor of reading the same bytes;
* ``ragaudit``: ``ragaudit ingest FILES --db fresh.duckdb`` (``--command ingest``, the default:
  validation, identities, the one-transaction load and the precomputed metrics) or ``ragaudit
  stability FILES --db fresh.duckdb --json out.json`` (``--command stability``).

    .venv/bin/python bench/ingest_bench.py --dialect rcc --entries 1000000 --repeat 1
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
from collections.abc import Callable
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


def _record(dialect: str, run: str, cfg: dict, q: int, entries: list[tuple[str, str]]) -> dict:
    """One logical record (run, query ``q``, ranked (doc_id, text) entries) in ``dialect``."""
    if dialect == "canonical":
        ev = [{"doc_id": d, "text": t, "rank": i} for i, (d, t) in enumerate(entries)]
        return {"run_id": run, "query_id": str(q), "query": f"question {q}", "config": cfg, "evidence": ev}
    if dialect == "rcc":
        key = ("docs", "cited", "retrieved", "contexts")[q % 4]
        docs: list = [d for d, _ in entries] if q % 4 == 3 else [{"doc_id": d, "text": t} for d, t in entries]
        return {"run_id": run, "query_id": str(q), "query": f"question {q}", key: docs}
    if dialect == "ragas":
        return {
            "user_input": f"question {q}",
            "retrieved_contexts": [t for _, t in entries],
            "retrieved_context_ids": [d for d, _ in entries],
            "response": f"answer {q}",
        }
    if dialect == "openinference":
        attrs: dict = {"openinference.span.kind": "RETRIEVER", "input.value": f"question {q}"}
        for i, (d, t) in enumerate(entries):
            attrs[f"retrieval.documents.{i}.document.id"] = d
            attrs[f"retrieval.documents.{i}.document.content"] = t
            attrs[f"retrieval.documents.{i}.document.score"] = round(1 - i / 10, 2)
        return {
            "name": "retrieve",
            "context": {"trace_id": f"{run}-t{q}", "span_id": f"s{q}"},
            "parent_id": None,
            "attributes": attrs,
        }
    raise ValueError(f"unknown dialect {dialect!r}")


def write_logs(entries: int, dialect: str = "canonical") -> Path:
    """The bench logs for ``entries`` evidence entries in ``dialect`` (written once, then reused)."""
    n_queries = max(1, entries // (len(GRID) * 8))
    d = OUT / f"{dialect}-{entries}"
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
        run = f"k{k}-c{c}-o{o}"
        cfg = {"top_k": k, "chunk_size": c, "chunk_overlap": o}
        with open(d / f"{run}.jsonl", "w", encoding="utf-8") as f:
            for q, pool in enumerate(pools):
                picks = r.sample(range(30), 8)
                f.write(json.dumps(_record(dialect, run, cfg, q, [pool[p] for p in picks])) + "\n")
    done.touch()
    return d


def _timed(cmd: list[str]) -> float:
    """Wall seconds of ``cmd`` with nothing else running: the memory sampler below reads every
    process's ``smaps`` 20 times a second, which on 2 cores takes CPU from the command measured
    (it added about 1 s to a 12 s ingest), so the time comes from a run of its own."""
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t
    if rc != 0:
        raise RuntimeError(f"{cmd[:3]} exited {rc}")
    return wall


def _peaks(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds of an observed run (the sampling's CPU included), peak memory of the whole
    process tree (GB: the proportional set size of the command and
    its worker processes, summed, sampled every 50 ms; PSS counts a shared library's pages once
    across the processes that map it, where summed RSS would count them per process) and peak
    RSS of its largest single process (GB, from the kernel)."""
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
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[:3]} exited {os.waitstatus_to_exitcode(status)}")
    return wall, tree_peak / 1024**3, usage.ru_maxrss / 1024**2


def _nothing() -> None:
    pass


def _measure(cmd: list[str], fresh: Callable[[], None] = _nothing) -> tuple[float, float, float]:
    """(wall seconds, tree peak GB, largest process GB): the time from an unobserved run, the
    memory from an observed one (:func:`_peaks`); ``fresh()`` before each (a new database)."""
    fresh()
    wall = _timed(cmd)
    fresh()
    return (wall, *_peaks(cmd)[1:])


def run(entries: int, repeat: int, dialect: str = "canonical", command: str = "ingest") -> dict:
    d = write_logs(entries, dialect)
    files = sorted(str(p) for p in d.glob("*.jsonl"))
    scan = [
        sys.executable,
        "-c",
        'import duckdb, sys; duckdb.sql("SET threads=2"); print(duckdb.sql('
        "\"SELECT count(*) FROM read_json(?, format='newline_delimited')\", params=[sys.argv[1:]]).fetchall())",
        *files,
    ]
    exe = str(Path(sys.executable).parent / "ragaudit")
    rows = {
        "dialect": dialect,
        "command": command,
        "entries": entries,
        "load": os.getloadavg()[0],
        "bytes": sum(Path(f).stat().st_size for f in files),
        "scan": [],
        "ragaudit": [],
    }
    for _ in range(repeat):
        rows["scan"].append(_measure(scan))
        db = OUT / f"bench-{entries}.duckdb"

        def fresh(db: Path = db) -> None:
            for p in (db, Path(str(db) + ".wal")):
                p.unlink(missing_ok=True)

        extra = ["--json", str(OUT / "out.json")] if command == "stability" else []
        rows["ragaudit"].append(_measure([exe, command, *files, "--db", str(db), *extra], fresh))
        fresh()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--entries", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--dialect", choices=("canonical", "rcc", "ragas", "openinference"), default="canonical")
    ap.add_argument("--command", choices=("ingest", "stability"), default="ingest")
    args = ap.parse_args()
    for n in args.entries:
        r = run(n, args.repeat, args.dialect, args.command)
        scan = statistics.median(w for w, _, _ in r["scan"])
        wall = statistics.median(w for w, _, _ in r["ragaudit"])
        print(json.dumps(r))
        print(
            f"{args.dialect} {args.command} {n:>11,} entries ({r['bytes'] / 1e9:.2f} GB), "
            f"median of {args.repeat}: scan {scan:.1f} s / "
            f"{max(m for _, m, _ in r['scan']):.2f} GB; ragaudit {wall:.1f} s / "
            f"{max(m for _, m, _ in r['ragaudit']):.2f} GB peak RSS of the process tree "
            f"({max(m for _, _, m in r['ragaudit']):.2f} GB largest process); ratio {wall / scan:.1f}x; "
            f"load average {r['load']:.1f} at start, {os.getloadavg()[0]:.1f} at end",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""MLflow spans against our own format: the same retrievals (N traces of 10 documents with
~470-character texts, a root chain with the answer, a chat model's draft) written as MLflow's span
dicts (every attribute JSON-encoded) and as canonical records, each loaded by ``ragaudit ingest
--no-precompute`` into a fresh database, alternately; wall time, user CPU and peak RSS.

    .venv/bin/python bench/mlflow_bench.py --traces 10000 --rounds 2

MLflow spans take the general path (no fast path): this is what it costs (docs/benchmarks.md,
"Fourteenth session")."""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("cell", "patient", "dose", "stability", "expression", "pathway", "analysis", "assay", "index", "score")


def _span(kind: str, trace: str, span_id: str, parent: str | None, inputs, outputs) -> dict:
    attrs = {"mlflow.traceRequestId": json.dumps(trace), "mlflow.spanType": json.dumps(kind)}
    attrs |= {"mlflow.spanInputs": json.dumps(inputs), "mlflow.spanOutputs": json.dumps(outputs)}
    ids = {"trace_id": trace, "span_id": span_id, "parent_span_id": parent, "name": kind.lower()}
    return ids | {"start_time_unix_nano": 1, "end_time_unix_nano": 2, "status": {"code": "OK"}, "attributes": attrs}


def write(folder: Path, n: int) -> tuple[Path, Path]:
    rng = random.Random(0)
    flow, canon = folder / "flow.jsonl", folder / "canon.jsonl"
    with flow.open("w") as f, canon.open("w") as g:
        for i in range(n):
            t, q = f"tr-{i}", f"question {i}"
            texts = [" ".join(rng.choice(WORDS) for _ in range(64)).capitalize() + "." for _ in range(10)]
            docs = [{"page_content": x, "metadata": {}, "id": f"d{i}-{j}"} for j, x in enumerate(texts)]
            chat = {"choices": [{"message": {"content": "draft"}}]}
            for s in (
                _span("CHAIN", t, "a", None, {"query": q}, {"result": "answer"}),
                _span("RETRIEVER", t, "b", "a", q, docs),
                _span("CHAT_MODEL", t, "c", "a", {"messages": []}, chat),
            ):
                f.write(json.dumps(s) + "\n")
            ev = [{"doc_id": d["id"], "text": d["page_content"], "rank": j} for j, d in enumerate(docs)]
            rec = {"run_id": "canon", "query_id": str(i), "query": q, "answer": "answer", "evidence": ev}
            g.write(json.dumps(rec) + "\n")
    return flow, canon


def ingest(path: Path, db: Path) -> tuple[float, float, float]:
    """Wall seconds, user CPU seconds of the command and its workers, peak RSS (GB) of the largest."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [str(Path(sys.executable).with_name("ragaudit")), "ingest", str(path), "--db", str(db), "--no-precompute"]
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_maxrss / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        paths = write(folder, args.traces)
        for r in range(args.rounds):
            for path in paths:
                wall, user, rss = ingest(path, folder / f"{path.stem}-{r}.duckdb")
                what = f"{path.stem}: {args.traces * 10:,} entries"
                print(f"{what}, {wall:.2f} s, {user:.2f} user CPU-s, {rss:.2f} GB max RSS")


if __name__ == "__main__":
    main()

"""MLflow traces and DeepEval test cases against our own format: the same retrievals (N traces of
10 documents with ~470-character texts, a root chain with the answer, a chat model's draft)
written as MLflow's span dicts (every attribute JSON-encoded) in JSON Lines, as the DataFrame
``mlflow.search_traces()`` returns saved with ``to_parquet`` (a trace per row, its spans a column
of structs), as a DeepEval test run (``{"testCases": [...]}``, one JSON document, streamed case by
case past ``--max-line-bytes``), and as canonical records; each loaded by ``ragaudit ingest
--no-precompute`` into a fresh database, the shapes alternating: wall time (an unobserved run),
the peak memory of the process tree (PSS of the command and its workers, sampled: the ingest
bench's meter) and the peak RSS of its largest process.

    .venv/bin/python bench/mlflow_bench.py --traces 10000 40000 --rounds 2

These shapes take the general path (no fast path): this is what they cost at 1× and 4× the input
(docs/benchmarks.md, "Fourteenth session" and "Fifteenth session")."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ingest_bench import _measure  # the ingest bench's meter (unobserved time, sampled tree PSS)

WORDS = ("cell", "patient", "dose", "stability", "expression", "pathway", "analysis", "assay", "index", "score")
SHAPES = ("spans", "search-parquet", "deepeval", "canonical")


def _span(kind: str, trace: str, span_id: str, parent: str | None, inputs, outputs) -> dict:
    attrs = {"mlflow.traceRequestId": json.dumps(trace), "mlflow.spanType": json.dumps(kind)}
    attrs |= {"mlflow.spanInputs": json.dumps(inputs), "mlflow.spanOutputs": json.dumps(outputs)}
    ids = {"trace_id": trace, "span_id": span_id, "parent_span_id": parent, "name": kind.lower()}
    return ids | {"start_time_unix_nano": 1, "end_time_unix_nano": 2, "status": {"code": "OK"}, "attributes": attrs}


def _traces(n: int) -> Iterator[tuple[int, str, list[str]]]:
    rng = random.Random(0)
    for i in range(n):
        texts = [" ".join(rng.choice(WORDS) for _ in range(64)).capitalize() + "." for _ in range(10)]
        yield i, f"question {i}", texts


def _spans(i: int, q: str, texts: list[str]) -> list[dict]:
    t = f"tr-{i}"
    docs = [{"page_content": x, "metadata": {}, "id": f"d{i}-{j}"} for j, x in enumerate(texts)]
    chat = {"choices": [{"message": {"content": "draft"}}]}
    return [
        _span("CHAIN", t, "a", None, {"query": q}, {"result": "answer"}),
        _span("RETRIEVER", t, "b", "a", q, docs),
        _span("CHAT_MODEL", t, "c", "a", {"messages": []}, chat),
    ]


def _search_parquet(path: Path, n: int) -> None:
    import pandas as pd

    rows = [
        {"trace_id": f"tr-{i}", "state": "OK", "request": json.dumps({"query": q}), "response": "answer"}
        | {"tags": {"mlflow.traceName": "chain"}, "spans": _spans(i, q, texts)}
        for i, q, texts in _traces(n)
    ]
    pd.DataFrame(rows).to_parquet(path)


def _path(folder: Path, shape: str) -> Path:
    name = {"spans": "flow.jsonl", "search-parquet": "flow.parquet", "deepeval": "cases.json"}
    return folder / name.get(shape, "canon.jsonl")


def write(folder: Path, n: int, shape: str) -> Path:
    """The file of ``shape`` for ``n`` traces (the same questions and passages in every shape)."""
    path = _path(folder, shape)
    if shape == "search-parquet":
        _search_parquet(path, n)
        return path
    with path.open("w") as f:
        if shape == "deepeval":
            f.write('{"testFile": "test_rag.py", "testCases": [')
        for i, q, texts in _traces(n):
            if shape == "spans":
                f.writelines(json.dumps(s) + "\n" for s in _spans(i, q, texts))
            elif shape == "deepeval":
                case = {"input": q, "actualOutput": "answer", "retrievalContext": texts, "success": True}
                f.write(("," if i else "") + json.dumps(case))
            else:
                ev = [{"doc_id": f"d{i}-{j}", "text": x, "rank": j} for j, x in enumerate(texts)]
                rec = {"run_id": "canon", "query_id": str(i), "query": q, "answer": "answer", "evidence": ev}
                f.write(json.dumps(rec) + "\n")
        if shape == "deepeval":
            f.write("]}")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, nargs="+", default=[10_000])
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--write", nargs=3, metavar=("FOLDER", "TRACES", "SHAPE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write:  # (in a process of its own: see below)
        write(Path(args.write[0]), int(args.write[1]), args.write[2])
        return
    exe = str(Path(sys.executable).with_name("ragaudit"))
    for n in args.traces:
        with tempfile.TemporaryDirectory() as d:
            folder = Path(d)
            # written by a child process: a command forked from a bench that had built a large
            # DataFrame would count the bench's pages in its own peak RSS until it executes
            for shape in args.shapes:
                subprocess.run([sys.executable, __file__, "--write", d, str(n), shape], check=True)
            paths = {shape: _path(folder, shape) for shape in args.shapes}
            for r in range(args.rounds):
                for shape, path in paths.items():
                    db = folder / f"{shape}-{r}.duckdb"

                    def fresh(db: Path = db) -> None:
                        db.unlink(missing_ok=True)
                        db.with_name(db.name + ".wal").unlink(missing_ok=True)

                    cmd = [exe, "ingest", str(path), "--db", str(db), "--no-precompute"]
                    wall, tree, largest = _measure(cmd, fresh)
                    print(
                        f"{shape} ({path.stat().st_size / 1e6:.0f} MB): {n * 10:,} entries, {wall:.2f} s, "
                        f"tree peak {tree:.2f} GB, largest process {largest:.2f} GB",
                        flush=True,
                    )


if __name__ == "__main__":
    main()

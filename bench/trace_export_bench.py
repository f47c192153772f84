"""One trace export as one file: its ingest's time and the peak memory of the process tree.

A LangSmith export as LangSmith writes runs, one JSON object per line: for each question a
``retriever`` run with 8 passages of ~470 characters (``outputs.documents[].page_content``, a
``metadata.id``) and its trace's root ``chain`` run holding the answer. Every retriever span
waits until the file is read (its answer may come after it), so this is the case where what
waits decides the memory. ``--passages`` 1,000,000 is a 582 MB file; 4,000,000 is 4× the input.
``--llm-runs`` adds each trace's LLM run, its prompt holding the passages (1.1 GB at 1M).
``--rerankers`` writes an OpenInference export instead, each trace a RETRIEVER span (8 passages),
a RERANKER span keeping 4 of them (ids and texts) and an LLM span with the answer (0.97 GB at 1M):
every trace becomes an evidence record and a provenance graph of 17 nodes.
Its runs are read by the worker pool (each format's own reader, in each worker); the join of
each trace at the file's end, in the ingesting process.

    .venv/bin/python bench/trace_export_bench.py --passages 1000000 4000000
    .venv/bin/python bench/trace_export_bench.py --passages 1000000 --llm-runs
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ingest_bench import OUT, _measure, _passage  # the bench's texts and its meter

PER_RUN = 8


def _write_once(path: Path, passages: int, trace: Callable[[int, list[str]], list[dict]]) -> Path:
    """``path`` holding ``trace(q, pool)``'s objects, one a line, for each of the ``passages //
    PER_RUN`` traces (written once, then reused; the texts from the ingest bench's passages)."""
    if path.exists():
        return path
    rng = random.Random(0)
    pool = [_passage(rng) for _ in range(3000)]
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for q in range(passages // PER_RUN):
            f.writelines(json.dumps(obj) + "\n" for obj in trace(q, pool))
    tmp.rename(path)
    return path


def write_export(passages: int, llm: bool = False) -> Path:
    """The LangSmith export of ``passages`` passages. ``llm``: each trace also has the LLM run a
    RAG chain makes, its prompt holding the passages (as real exports do: such runs are as large
    as the retriever's) and its generation the answer."""

    def runs(q: int, pool: list[str]) -> list[dict]:
        trace = f"00000000-0000-0000-0000-{q:012d}"
        docs = [
            {"page_content": pool[(q * 7 + j * 13) % len(pool)], "metadata": {"id": f"doc{q}-{j}"}}
            for j in range(PER_RUN)
        ]
        retriever = {"id": f"r{q}", "trace_id": trace, "parent_run_id": f"c{q}", "run_type": "retriever"}
        out = [{**retriever, "inputs": {"query": f"question {q}"}, "outputs": {"documents": docs}}]
        if llm:
            prompt = "Answer from the context.\n\n" + "\n\n".join(d["page_content"] for d in docs)
            run = {"id": f"l{q}", "trace_id": trace, "parent_run_id": f"c{q}", "run_type": "llm"}
            messages = [{"role": "system", "content": prompt}, {"role": "user", "content": f"question {q}"}]
            outputs = {"generations": [[{"text": f"generated {q}"}]]}
            out.append({**run, "inputs": {"messages": messages}, "outputs": outputs})
        root = {"id": f"c{q}", "trace_id": trace, "parent_run_id": None, "run_type": "chain"}
        return [*out, {**root, "outputs": {"output": f"answer {q}"}}]

    return _write_once(OUT / f"langsmith{'-llm' if llm else ''}-{passages}.jsonl", passages, runs)


def write_reranked_export(passages: int) -> Path:
    """The OpenInference export with a reranker per trace (see the module)."""

    def spans(q: int, pool: list[str]) -> list[dict]:
        docs = [(f"doc{q}-{j}", pool[(q * 7 + j * 13) % len(pool)]) for j in range(PER_RUN)]
        retrieved: dict = {"openinference.span.kind": "RETRIEVER", "input.value": f"question {q}"}
        for i, (d, t) in enumerate(docs):
            retrieved[f"retrieval.documents.{i}.document.id"] = d
            retrieved[f"retrieval.documents.{i}.document.content"] = t
        reranked: dict = {"openinference.span.kind": "RERANKER", "reranker.query": f"question {q}"}
        for i, (d, t) in enumerate(docs[: PER_RUN // 2]):
            reranked[f"reranker.output_documents.{i}.document.id"] = d
            reranked[f"reranker.output_documents.{i}.document.content"] = t
        llm = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": f"answer {q}"}
        named = (("retrieve", f"r{q}", retrieved), ("rerank", f"k{q}", reranked), ("llm", f"l{q}", llm))
        context = {"trace_id": f"{q:032x}"}
        return [{"name": n, "context": {**context, "span_id": s}, "attributes": a} for n, s, a in named]

    return _write_once(OUT / f"openinference-rerank-{passages}.jsonl", passages, spans)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passages", type=int, nargs="+", default=[1_000_000])
    ap.add_argument(
        "--llm-runs", action="store_true", help="each trace has an LLM run, its prompt holding the passages"
    )
    ap.add_argument("--rerankers", action="store_true", help="an OpenInference export, each trace with a reranker span")
    args = ap.parse_args()
    exe = str(Path(sys.executable).parent / "ragaudit")
    for n in args.passages:
        path = write_reranked_export(n) if args.rerankers else write_export(n, args.llm_runs)
        db = OUT / f"trace-bench-{n}.duckdb"

        def fresh(db: Path = db) -> None:
            for p in (db, Path(str(db) + ".wal")):
                p.unlink(missing_ok=True)

        load = os.getloadavg()[0]
        wall, tree, largest = _measure([exe, "ingest", str(path), "--db", str(db), "--no-precompute"], fresh)
        fresh()
        shape = "openinference +reranker" if args.rerankers else "langsmith +llm" if args.llm_runs else "langsmith"
        print(
            f"{shape} {n:>11,} passages ({path.stat().st_size / 1e9:.2f} GB): {wall:.1f} s, {tree:.2f} GB peak of "
            f"the process tree ({largest:.2f} GB largest process); load {load:.1f} → {os.getloadavg()[0]:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()

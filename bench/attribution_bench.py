"""Benchmark: attribution wall times and peak memory, each beside a naive reference.

    .venv/bin/python bench/attribution_bench.py [--device cpu|cuda] [--repeat 3]

The case (issue #6): the first SciFact query of the bundled sample logs (run
k10-c256-o32) whose 5 top documents all hold at least 200 word pieces, each cut to
exactly --doc-tokens (200) word pieces; the packaged MiniLM and SmolLM2.

Phases, each in its own process (so peak RSS is its own), median of --repeat:

* ``ig``        — IG, L = 100, [UNK] baseline, query side + document side for 5 documents,
                  Captum with internal batches of 16;
* ``ig_naive``  — the same with one Riemann step per forward/backward pass;
* ``exact``     — exact Shapley (32 coalitions) for a 20-token answer: the prompts'
                  token trie walked with one cropped/extended KV cache, answer logits only;
* ``exact_batched`` — the same with length-sorted, left-padded batches of 8 and the
                  batch's shared prefix cached (the earlier design, kept as an option);
* ``exact_naive`` — the same 32 coalitions one at a time, full prompt, no cache;
* ``pmc``       — PMCSHAP, N = 20, M = 200 (batched, cached).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PHASES = ("ig", "ig_naive", "exact", "exact_batched", "exact_naive", "pmc")


def case(doc_tokens: int):
    import gzip

    from ragaudit_core.models import load_embedder

    tok = load_embedder(device="cpu").tokenizer
    path = ROOT / "sample_logs" / "scifact" / "k10-c256-o32.jsonl.gz"
    with gzip.open(path, "rt") as f:
        for line in f:  # the first query whose five top documents all hold at least doc_tokens word pieces
            rec = json.loads(line)
            ids = [tok(e["text"], add_special_tokens=False)["input_ids"] for e in rec["evidence"][:5]]
            if all(len(i) >= doc_tokens for i in ids):
                return rec["query_id"], rec["query"], [tok.decode(i[:doc_tokens]) for i in ids]
    raise SystemExit(f"no query with five documents of {doc_tokens} word pieces")


def run_phase(phase: str, device: str, doc_tokens: int) -> dict:
    import numpy as np
    import torch

    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import RetrieverSaliency
    from ragaudit_core.attribution.shapley import CachedGame, ExactShapley, PMCShap
    from ragaudit_core.models import load_embedder, load_generator

    qid, query, docs = case(doc_tokens)
    out = {"phase": phase, "query_id": qid, "device": device}
    if phase.startswith("ig"):
        sal = RetrieverSaliency(load_embedder(device=device))
        ibs = 1 if phase == "ig_naive" else 16
        sal.attribute(query, docs[0][:200], side="query", steps=5, internal_batch_size=ibs)  # warm-up
        t = time.perf_counter()
        comp = []
        for d in docs:
            comp.append(sal.attribute(query, d, side="query", steps=100, internal_batch_size=ibs).completeness)
            comp.append(sal.attribute(query, d, side="document", steps=100, internal_batch_size=ibs).completeness)
        out.update(
            seconds=time.perf_counter() - t,
            completeness_min=min(comp),
            completeness_max=max(comp),
            doc_tokens=[len(sal.tok(d)["input_ids"]) for d in docs],
        )
    else:
        gen = load_generator(device=device)
        game = GeneratorGame.generate(
            gen,
            query,
            docs,
            max_new_tokens=20,
            batch_size=8,
            strategy="batched" if phase == "exact_batched" else "prefix_tree",
        )
        masks = np.array([[bool(i >> j & 1) for j in range(5)] for i in range(32)])
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        if phase in ("exact", "exact_batched"):
            res = ExactShapley().attribute(CachedGame(5, game.values))
        elif phase == "exact_naive":
            res = ExactShapley().attribute(CachedGame(5, game.naive_values))
        else:
            res = PMCShap(n_samples=20, n_fits=200, seed=0).attribute(CachedGame(5, game.values))
        if device == "cuda":
            torch.cuda.synchronize()
        out.update(
            seconds=time.perf_counter() - t,
            answer_tokens=len(game.answer_ids),
            forward_tokens=game.n_forward_tokens,
            coalitions=res.n_coalitions,
            efficiency_gap=float(abs(res.efficiency_gap()).max()),
        )
        del masks
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if device == "cuda":
        out["peak_cuda_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--doc-tokens", type=int, default=200)
    ap.add_argument("--phase", choices=PHASES)
    ap.add_argument("--phases", default=",".join(PHASES))
    args = ap.parse_args()
    if args.phase:
        print(json.dumps(run_phase(args.phase, args.device, args.doc_tokens)))
        return
    results = {}
    for phase in args.phases.split(","):
        runs = []
        for _ in range(args.repeat):
            p = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--phase",
                    phase,
                    "--device",
                    args.device,
                    "--doc-tokens",
                    str(args.doc_tokens),
                ],
                capture_output=True,
                text=True,
            )
            if p.returncode:
                raise SystemExit(p.stderr[-3000:])
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        runs.sort(key=lambda r: r["seconds"])
        med = dict(runs[len(runs) // 2])
        med["all_seconds"] = [round(r["seconds"], 2) for r in runs]
        med["median_peak_rss_mb"] = statistics.median(r["peak_rss_mb"] for r in runs)
        results[phase] = med
        print(phase, json.dumps(med), file=sys.stderr)
    if "exact" in results and "exact_naive" in results:
        results["exact_vs_naive"] = results["exact"]["seconds"] / results["exact_naive"]["seconds"]
    if "ig" in results and "ig_naive" in results:
        results["ig_vs_naive"] = results["ig"]["seconds"] / results["ig_naive"]["seconds"]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

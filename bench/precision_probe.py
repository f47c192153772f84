"""Benchmark: the packaged generator's passes in fp32 and in bf16 on one device (issue #24 item 6),
to explain why bf16 is not faster for a 135M-parameter model on a GPU.

    python bench/precision_probe.py [--device cuda] [--steps 48]

For the first query of the sample logs' run k10-c256-o32 (its full prompt, five documents), each
precision in turn: the prompt's prefill (median of 5), one greedy decoding step on the prompt's
cache (median of ``--steps`` steps, each synchronised), and, under torch's profiler, one decoding
step's device kernels (count and summed kernel time) against its wall time: when the kernels'
time is a small part of the wall time, the pass is bound by launching kernels, not by arithmetic,
and a precision that launches more kernels (casts) is slower. Prints one JSON line per precision.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _median_s(fn, repeats: int, device: str) -> float:
    import statistics

    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _kernels(fn, device: str) -> tuple[int, float]:
    """Device kernels launched by ``fn`` and their summed time (ms) under torch's profiler."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with profile(activities=acts) as prof:
        fn()
        _sync(device)
    kernels = [e for e in prof.events() if getattr(e.device_type, "name", "") == "CUDA"]
    us = sum(getattr(e, "device_time", getattr(e, "cuda_time", 0.0)) for e in kernels)
    return len(kernels), us / 1000


def probe(gen, ids: list[int], steps: int, device: str) -> dict:
    import torch

    x = torch.tensor([ids], device=device)
    with torch.no_grad():
        gen.model(x, logits_to_keep=1)  # warm-up
        _sync(device)
        prefill = _median_s(lambda: gen.model(x, logits_to_keep=1), 5, device)
        cache = gen.model(x, use_cache=True, logits_to_keep=1).past_key_values
        tok = torch.tensor([[ids[-1]]], device=device)

        def step():
            gen.model(tok, past_key_values=cache, use_cache=True)
            cache.crop(-1)  # drop the step's token: every step runs at the same position

        step()
        per_step = _median_s(step, steps, device)
        count, kernel_ms = _kernels(step, device)
    return {
        "dtype": str(next(gen.model.parameters()).dtype),
        "prompt_tokens": len(ids),
        "prefill_ms": round(prefill * 1000, 2),
        "decode_step_ms": round(per_step * 1000, 2),
        "kernels_per_step": count,
        "kernel_ms_per_step": round(kernel_ms, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--db", default=str(ROOT / "bench" / "out" / "sample.duckdb"))
    args = ap.parse_args()
    import numpy as np
    from _sample import sample_db

    from ragaudit_core import models
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.jobs import plan
    from ragaudit_core.logs import store

    con = store.connect(sample_db(args.db))
    run = "k10-c256-o32"
    (q,) = con.execute("SELECT min(query_id) FROM records WHERE run_id = ?", [run]).fetchone()
    _, inputs = plan(con, run, q, device=args.device)
    texts = [t for _, t in inputs.documents]
    for precision in ("fp32", "bf16"):
        gen = models.load_generator(device=args.device, precision=precision)
        ids = GeneratorGame.prompt_ids_for(gen.tokenizer, inputs.query, texts, np.ones(len(texts), bool))
        print(json.dumps({"device": args.device, "query_id": q, **probe(gen, ids, args.steps, args.device)}))
        del gen


if __name__ == "__main__":
    main()

"""The anytime attribution job's figures for ``bench/attribution_defaults.py --anytime`` (see its
docstring): first estimate and exact beside the compute floor, agreement, efficiency and
completeness, load average."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


def prefill_rate(gen: Any, ids: list[int], repeats: int = 3) -> float:
    """Tokens per second of one forward pass over ``ids`` (median of ``repeats``)."""
    import numpy as np
    import torch

    x = torch.tensor([ids], device=gen.device)
    cuda = x.device.type == "cuda"
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            t = time.perf_counter()
            gen.model(x, logits_to_keep=1)
            if cuda:  # the pass is queued, not done, until the device is synchronised
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
    return len(ids) / float(np.median(times))


def _job(
    spec: Any, inputs: Any, emb: Any, gen: Any, anytime: bool, first_method: str = "marginal", sides: tuple = ("query",)
) -> tuple[dict, dict | None, float, float]:
    """The job as ``jobs.execute`` runs it (``compute_attribution`` on the spec), with the first
    stage's estimator and IG sides chosen (the job's defaults unless the bench says otherwise)."""
    from ragaudit_core.attribution.compute import compute_attribution

    t0 = time.perf_counter()
    first: dict[str, Any] = {}

    def on_partial(results: list) -> None:
        first["at"] = time.perf_counter() - t0
        first["payload"] = results[0].to_json()

    (exact,) = compute_attribution(
        spec.run_id,
        spec.query_id,
        inputs.query,
        inputs.documents,
        embedder=emb,
        generator=gen,
        method=spec.method,
        params=spec.params,
        conditions=spec.conditions,
        on_partial=on_partial if anytime else None,
        first_method=first_method,
        first_ig_sides=sides,
    )
    return exact.to_json(), first.get("payload"), first.get("at", float("nan")), time.perf_counter() - t0


def reduced(gen: Any, dtype: str) -> Any:
    """The generator's model in ``dtype`` (a bench option; fp32 is the reference): ``bf16`` casts the
    weights, ``int8`` is dynamic quantisation of every Linear layer (int8 weights, activations
    quantised per batch at run time; ``torch.ao.quantization.quantize_dynamic``)."""
    import torch

    if dtype == "bf16":
        return gen.model.to(torch.bfloat16)
    if dtype == "int8":
        from torch.ao.quantization import quantize_dynamic

        return quantize_dynamic(gen.model, {torch.nn.Linear}, dtype=torch.qint8)
    return gen.model


def run_anytime(args: Any) -> None:
    import itertools

    import numpy as np
    import torch
    from _sample import sample_db

    from ragaudit_core import models
    from ragaudit_core.attribution.alignment import estimate_agreement
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.result import AttributionResult
    from ragaudit_core.jobs import plan
    from ragaudit_core.logs import store

    load_before = os.getloadavg()
    con = store.connect(sample_db(args.db))
    run = "k10-c256-o32"
    qids = [
        q for (q,) in con.execute("SELECT query_id FROM records WHERE run_id = ? ORDER BY query_id", [run]).fetchall()
    ]
    emb = models.load_embedder(device=args.device)
    # fp32 is the reference on every device (on CUDA the job's ``auto`` would load bf16);
    # ``--dtype bf16`` casts it below
    gen = models.load_generator(device=args.device, precision="fp32")
    ref_model = None
    if args.dtype != "fp32":
        import copy

        ref_model = copy.deepcopy(gen.model) if args.compare else None
        gen.model = reduced(gen, args.dtype)
    sides = ("document", "query") if args.first_ig_sides == "both" else (args.first_ig_sides,)
    rows = []
    for i, q in enumerate(qids[: args.queries]):
        spec, inputs = plan(con, run, q, device=args.device)
        texts = [t for _, t in inputs.documents]
        ids = GeneratorGame.prompt_ids_for(gen.tokenizer, inputs.query, texts, np.ones(len(texts), bool))
        rate = prefill_rate(gen, ids)
        la = os.getloadavg()[0]
        exact_d, first_d, t_first, t_exact = _job(spec, inputs, emb, gen, True, args.first_method, sides)
        rate_after = prefill_rate(gen, ids)
        exact, first = AttributionResult.from_json(exact_d), AttributionResult.from_json(first_d or exact_d)
        tm = exact.timings_s
        m = len(exact.answer_tokens)
        masks = np.array(list(itertools.product([False, True], repeat=len(texts))), bool)
        trie = GeneratorGame.trie_tokens(
            [GeneratorGame.prompt_ids_for(gen.tokenizer, inputs.query, texts, mk) for mk in masks], m
        )
        gen_tokens = len(ids) + len(exact.answer_tokens)  # the generation's prompt and its answer
        floor_exact = (tm["lm_tokens"] + gen_tokens) / rate
        floor_first = (tm["first_lm_tokens"] + gen_tokens) / rate
        agree = estimate_agreement(first.importance, exact.importance)
        row = {
            "query_id": q,
            "dtype": args.dtype,
            "first_method": args.first_method,
            "first_ig_sides": list(sides),
            "load1_at_start": round(la, 2),
            "load1_at_end": round(os.getloadavg()[0], 2),
            "prompt_tokens": len(ids),
            "answer_tokens": len(exact.answer_tokens),
            "prefill_tokens_per_s": round(rate, 1),
            "prefill_tokens_per_s_after": round(rate_after, 1),
            "trie_tokens_exact": trie,
            "shapley_floor_s": round(trie / rate, 2),
            "shapley_over_floor": round(tm["shapley"] / (trie / rate), 2),
            "first_s": round(t_first, 2),
            "first_floor_s": round(floor_first, 2),
            "exact_s": round(t_exact, 2),
            "exact_floor_s": round(floor_exact, 2),
            "exact_over_floor": round(t_exact / floor_exact, 2),
            "lm_tokens": int(tm["lm_tokens"] + gen_tokens),
            "timings_s": tm,
            "efficiency_gap_exact": exact.efficiency_gap(),
            "efficiency_gap_first": first.efficiency_gap(),
            "completeness_dev_exact": round(exact.completeness_max_dev(), 5),
            "completeness_dev_first": round(first.completeness_max_dev(), 5),
            "spearman_first_vs_exact": agree["spearman"],
            "top_doc_agrees": agree["top_agrees"],
            "answer": exact.answer,
            "first_importance": first.importance,
            "exact_importance": exact.importance,
        }
        if args.compare and i == 0:
            if ref_model is not None:  # the reduced precision against the fp32 reference
                low_model, gen.model = gen.model, ref_model
            plain_d, _, _, t_plain = _job(spec, inputs, emb, gen, anytime=False)
            if ref_model is not None:
                gen.model = low_model
            plain = np.asarray(plain_d["values"])
            row["reference_s"] = round(t_plain, 2)
            row["reference"] = (
                "fp32 job without the first stage" if ref_model is not None else "job without the first stage"
            )
            row["max_abs_diff_vs_reference"] = float(np.max(np.abs(np.asarray(exact.values) - plain)))
            row["importance_max_abs_diff_vs_reference"] = float(
                np.max(np.abs(np.asarray(exact.importance) - np.asarray(plain_d["importance"])))
            )
            row["same_answer_as_reference"] = plain_d["answer"] == exact.answer
            row["reference_answer"], row["answer"] = plain_d["answer"], exact.answer
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        "device": args.device,
        "dtype": args.dtype,
        "torch_threads": torch.get_num_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "first_method": args.first_method,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "queries": rows,
        "median_first_s": float(np.median([r["first_s"] for r in rows])),
        "median_exact_s": float(np.median([r["exact_s"] for r in rows])),
        "median_exact_over_floor": float(np.median([r["exact_over_floor"] for r in rows])),
        "median_shapley_over_floor": float(np.median([r["shapley_over_floor"] for r in rows])),
        "median_spearman": float(np.median([r["spearman_first_vs_exact"] or 0 for r in rows])),
        "top_doc_agreement": float(np.mean([r["top_doc_agrees"] for r in rows])),
    }
    print(json.dumps(summary))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))

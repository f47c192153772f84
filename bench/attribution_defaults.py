"""Benchmark: the attribution defaults (issue #16) against exact Shapley and the old IG.

    .venv/bin/python bench/attribution_defaults.py [--queries 5] [--device cpu|cuda] [--out FILE]

For the first ``--queries`` queries of the sample logs' run k10-c256-o32 (five documents
each, full logged texts, SmolLM2 answers of up to 48 tokens), one process, models loaded
once (load time reported apart):

* ``default`` — one query explained with the defaults (``defaults.ATTRIBUTION_DEFAULTS``: IG by
  24-point Gauss–Legendre on both sides of 5 documents, ``auto`` = exact Shapley for 5
  documents): wall time of ``jobs.execute`` and IG completeness (max |Σβ/(s−s⁰) − 1| over the
  10 sides);
* ``pmc``   — the same job with PMCSHAP (N = 20, M = 200) instead of exact Shapley;
* ``exact`` — exact Shapley (2⁵ = 32 coalitions) on the same answer: wall time, and PMCSHAP's
  error against it: MSE over (document, answer token), that MSE relative to the mean square
  of the exact values, Spearman of the per-document importances, top document agreement;
* ``old``   — the previous defaults on the first query (IG L = 100 Riemann + exact Shapley).

    .venv/bin/python bench/attribution_defaults.py --anytime [--queries 3] [--dtype fp32|bf16|int8] [--compare]
        [--first-method marginal|loo] [--first-ig-sides query|document|both]

``--anytime`` (issue #24 item 5) instead runs the anytime job (``jobs.execute`` with
``on_partial``) per query and reports: time to the first estimate and to exact from the job's
start; the language model's compute floor — the distinct prompt tokens it computed (the prompt
trie's, ``timings_s["lm_tokens"]``, plus the generation's prompt and answer) ÷ the prefill
throughput measured in the same process just before (a forward pass over the query's full prompt,
median of 3) — and exact's time over it; the efficiency gap of the exact values and IG's
completeness (both stages); the first estimate's agreement with exact (Spearman of the document
importances, top document); the machine's load average before and after (the machine is shared).
``--compare`` also runs the job without a first stage on the first query (today's exact path) and
reports the largest difference of its Shapley values from the refined ones. ``--dtype bf16`` runs
the generator in bfloat16, ``--dtype int8`` with its Linear layers dynamically quantised to int8
(options of the bench only; fp32 stays the reference) and, with ``--compare``, reports the
difference from the fp32 job. ``--first-method`` / ``--first-ig-sides`` choose the first stage
(the job's defaults: marginal contributions in retriever order, IG on the query side;
``--first-method loo --first-ig-sides both`` is the first stage before issue #24's second pass).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
# before torch loads OpenMP (its import sorts before the core's, which would set it too late):
# spinning threads lose their cores to other processes (measured: a 992-token prefill 10.4 s
# against 3.4 s passive with one other busy process on the 2 cores)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from _sample import sample_db  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--db", default=str(ROOT / "bench" / "out" / "sample.duckdb"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--anytime", action="store_true")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "int8"])
    ap.add_argument("--first-method", default="marginal", choices=["marginal", "loo"])
    ap.add_argument("--first-ig-sides", default="query", choices=["query", "document", "both"])
    args = ap.parse_args()
    if args.anytime:
        from anytime_bench import run_anytime

        run_anytime(args)
        return

    import numpy as np
    from scipy.stats import spearmanr

    from ragaudit_core import models
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import RetrieverSaliency
    from ragaudit_core.attribution.shapley import CachedGame, ExactShapley, PMCShap
    from ragaudit_core.defaults import ATTRIBUTION_DEFAULTS as D
    from ragaudit_core.jobs import execute, plan
    from ragaudit_core.logs import store

    db = sample_db(args.db)
    con = store.connect(db)
    run = "k10-c256-o32"
    qids = [
        q for (q,) in con.execute("SELECT query_id FROM records WHERE run_id = ? ORDER BY query_id", [run]).fetchall()
    ][: args.queries]
    t = time.perf_counter()
    emb = models.load_embedder(device=args.device)
    gen = models.load_generator(device=args.device)
    load_s = time.perf_counter() - t
    rows = []
    for i, q in enumerate(qids):
        spec, inputs = plan(con, run, q, device=args.device)
        t = time.perf_counter()
        (default,) = execute(spec, inputs, embedder=emb, generator=gen)
        default_s = time.perf_counter() - t
        spec, inputs = plan(con, run, q, device=args.device, method="pmc")
        t = time.perf_counter()
        (payload,) = execute(spec, inputs, embedder=emb, generator=gen)
        new_s = time.perf_counter() - t
        dev = max(abs(s["completeness"] - 1) for s in payload["ig_documents"] + payload["ig_query"])
        texts = [t_ for _, t_ in inputs.documents]
        game = GeneratorGame.generate(gen, inputs.query, texts, max_new_tokens=D["max_new_tokens"])
        cg = CachedGame(len(texts), game.values)
        t = time.perf_counter()
        exact = ExactShapley().attribute(cg)
        exact_s = time.perf_counter() - t
        pmc = PMCShap(n_samples=D["n_samples"], n_fits=D["n_fits"], seed=D["seed"]).attribute(cg)
        # the job's own PMC values came from its own walk of the coalitions' token trie; the
        # rerun here shares the exact walk's cache, so values may differ by float rounding
        rerun_diff = float(np.max(np.abs(pmc.values - np.asarray(payload["values"]))))
        mse = float(np.mean((pmc.values - exact.values) ** 2))
        row = {
            "query_id": q,
            "n_tokens": len(game.answer_ids),
            "default_s": round(default_s, 2),
            "default_method": default["method"],
            "pmc_job_s": round(new_s, 2),
            "ig_s": payload["timings_s"]["ig"],
            "pmc_s": payload["timings_s"]["shapley"],
            "pmc_coalitions": payload["n_coalitions"],
            "ig_completeness_max_dev": round(dev, 5),
            "exact_s": round(exact_s, 2),
            "pmc_mse": mse,
            "pmc_rel_mse": mse / float(np.mean(exact.values**2)),
            "importance_spearman": float(spearmanr(pmc.importance, exact.importance)[0]),
            "top_doc_agrees": int(np.argmax(pmc.importance) == np.argmax(exact.importance)),
            "job_vs_rerun_max_abs_diff": rerun_diff,
        }
        if i == 0:
            sal = RetrieverSaliency(emb)
            t = time.perf_counter()
            for text in texts:
                for side in ("query", "document"):
                    sal.attribute(inputs.query, text, side=side, steps=100, method="riemann_right")
            row["old_ig_s"] = round(time.perf_counter() - t, 2)
            row["old_s"] = round(row["old_ig_s"] + exact_s, 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        "device": args.device,
        "model_load_s": round(load_s, 2),
        "queries": rows,
        "median_default_s": float(np.median([r["default_s"] for r in rows])),
        "max_default_s": max(r["default_s"] for r in rows),
        "median_pmc_job_s": float(np.median([r["pmc_job_s"] for r in rows])),
        "median_exact_s": float(np.median([r["exact_s"] for r in rows])),
        "median_rel_mse": float(np.median([r["pmc_rel_mse"] for r in rows])),
    }
    print(json.dumps(summary))
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()

"""Reproduction experiments for seed 001 on the bundled SciFact sample (issue #6).

    .venv/bin/python bench/attribution_repro.py --queries 30 --out bench/out/attribution_repro.json

For the first --queries queries of run k10-c256-o32, with their first 5 documents trimmed
to --doc-tokens word pieces (to keep 2^5 coalitions × 30 queries affordable on a CPU):

1. **Estimator accuracy (Fig. 4 claim)**: exact Shapley (32 coalitions, the model's values
   cached) vs KernelSHAP (N = 20) and PMCSHAP (N = 20, M = 200), each over --seeds seeds;
   MSE of φ (all documents × answer tokens) against exact, per query, then mean.
2. **Alignment on the sample run**: from the exact values, generator rankings, WARG(p) for
   p = 0.5 … 0.9, Spearman, wasted-retrieval and noise-distraction rates, in retriever
   order and shuffled (seeded) order (the shuffled game is evaluated separately).
3. **IG baselines (Table 1)**: for one query–document pair per query (its top document),
   IG (L = 100) with the [UNK], [MASK], [PAD] and zero baselines, scored by the document
   AIPC (deletion, 21 points) — mean and a bootstrap 95 % interval.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _alignment_intervals(rows: list[dict]) -> tuple[list[dict], dict]:
    """Each condition's figures with the product's 95 % intervals (Wilson for the rates, the
    percentile bootstrap for the means: attribution.uncertainty), and the paired change shuffled −
    original over the queries (value, lo, hi, n)."""
    import pandas as pd

    from ragaudit_core.attribution.uncertainty import figure_intervals, paired_change

    def flat(x: dict) -> dict:
        return {
            "wasted_retrieval": x["wasted_retrieval"],
            "noise_distraction": x["noise_distraction"],
            "spearman": x["spearman"],
            **{f"warg_{p}": v for p, v in x["warg"].items()},
        }

    frame = pd.DataFrame([{"condition": c, **flat(r[c])} for r in rows for c in ("original", "shuffled")])
    per = {c: {r["query_id"]: flat(r[c]) for r in rows} for c in ("original", "shuffled")}
    metrics = [m for m in frame.columns if m != "condition"]
    change = paired_change(per["original"], per["shuffled"], metrics)
    return (
        figure_intervals(frame).to_dict(orient="records"),
        {m: [e.value, e.lo, e.hi, e.n] for m, e in change.items()},
    )


def main() -> None:
    from ragaudit_core.attribution import alignment
    from ragaudit_core.attribution.generator_game import GeneratorGame
    from ragaudit_core.attribution.saliency import BASELINES, RetrieverSaliency, perturbation_aipc
    from ragaudit_core.attribution.shapley import CachedGame, ExactShapley, KernelShap, PMCShap
    from ragaudit_core.models import load_embedder, load_generator

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--doc-tokens", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--parts", default="shapley,ig")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "attribution_repro.json")
    args = ap.parse_args()
    parts = set(args.parts.split(","))

    enc = load_embedder(device="cpu")
    tok = enc.tokenizer
    with gzip.open(ROOT / "sample_logs" / "scifact" / "k10-c256-o32.jsonl.gz", "rt") as f:
        recs = [json.loads(line) for line in f][: args.queries]

    def trim(text: str) -> str:
        return tok.decode(tok(text, add_special_tokens=False)["input_ids"][: args.doc_tokens])

    out: dict = {"queries": len(recs), "doc_tokens": args.doc_tokens, "seeds": args.seeds}
    t0 = time.perf_counter()
    if "shapley" in parts:
        gen = load_generator(device="cpu")
        rows = []
        rng = np.random.default_rng(0)
        for qi, r in enumerate(recs):
            docs = [trim(e["text"]) for e in r["evidence"][:5]]
            ids = list(range(len(docs)))  # items by position (a document may give several chunks)
            game = GeneratorGame.generate(gen, r["query"], docs, max_new_tokens=20, batch_size=8)
            cached = CachedGame(5, game.values)
            exact = ExactShapley().attribute(cached)
            mse_k = [
                float(np.mean((KernelShap(n_samples=20, seed=s).attribute(cached).values - exact.values) ** 2))
                for s in range(args.seeds)
            ]
            mse_p = [
                float(np.mean((PMCShap(n_samples=20, n_fits=200, seed=s).attribute(cached).values - exact.values) ** 2))
                for s in range(args.seeds)
            ]
            order = [int(i) for i in rng.permutation(5)]
            shuf = GeneratorGame(gen, r["query"], [docs[i] for i in order], game.answer_ids, batch_size=8)
            sv = ExactShapley().attribute(CachedGame(5, shuf.values)).values
            back = np.zeros_like(sv)
            back[order] = sv
            row = {
                "query_id": r["query_id"],
                "answer_tokens": len(game.answer_ids),
                "mse_kernel": float(np.mean(mse_k)),
                "mse_pmc": float(np.mean(mse_p)),
                "exact_var": float(np.var(exact.values)),
            }
            for cond, vals in (("original", exact.values), ("shuffled", back)):
                imp = vals.mean(axis=1)
                rank = alignment.generator_ranking(ids, imp)
                row[cond] = {
                    "warg": {p: alignment.warg(ids, rank, p) for p in alignment.DEFAULT_P_GRID},
                    "spearman": alignment.rank_spearman(imp),
                    **alignment.failure_modes(ids, rank),
                }
            rows.append(row)
            print(
                f"[{qi + 1}/{len(recs)}] {r['query_id']}: mse kernel {row['mse_kernel']:.4g} pmc {row['mse_pmc']:.4g} "
                f"({time.perf_counter() - t0:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        mk, mp = np.array([x["mse_kernel"] for x in rows]), np.array([x["mse_pmc"] for x in rows])
        from scipy.stats import wilcoxon

        out["estimators"] = {
            "mse_kernel_mean": float(mk.mean()),
            "mse_pmc_mean": float(mp.mean()),
            "mse_kernel_median": float(np.median(mk)),
            "mse_pmc_median": float(np.median(mp)),
            "pmc_better_queries": int((mp < mk).sum()),
            "wilcoxon_p": float(wilcoxon(mk, mp).pvalue) if np.any(mk != mp) else None,
        }
        align = {}
        for cond in ("original", "shuffled"):
            align[cond] = {
                "wasted_retrieval": float(np.mean([x[cond]["wasted_retrieval"] for x in rows])),
                "noise_distraction": float(np.mean([x[cond]["noise_distraction"] for x in rows])),
                "spearman_mean": float(
                    np.nanmean([x[cond]["spearman"] if x[cond]["spearman"] is not None else np.nan for x in rows])
                ),
                "warg": {str(p): float(np.mean([x[cond]["warg"][p] for x in rows])) for p in alignment.DEFAULT_P_GRID},
            }
        out["alignment"] = align
        out["alignment_intervals"], out["shuffled_minus_original"] = _alignment_intervals(rows)
        out["rows"] = rows
        out["shapley_seconds"] = time.perf_counter() - t0
    if "ig" in parts:
        t1 = time.perf_counter()
        sal = RetrieverSaliency(enc)
        scores = {b: [] for b in BASELINES}
        for qi, r in enumerate(recs):
            doc = trim(r["evidence"][0]["text"])
            for b in BASELINES:
                res = sal.attribute(r["query"], doc, side="document", baseline=b, steps=100)
                scores[b].append(perturbation_aipc(sal, r["query"], doc, res.attributions))
            print(
                f"[IG {qi + 1}/{len(recs)}] " + " ".join(f"{b} {scores[b][-1]:.3f}" for b in BASELINES),
                file=sys.stderr,
                flush=True,
            )
        boot = np.random.default_rng(0)
        ig = {}
        for b, v in scores.items():
            v = np.array(v)
            means = [boot.choice(v, len(v)).mean() for _ in range(1000)]
            ig[b] = {
                "aipc_mean": float(v.mean()),
                "ci95": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))],
            }
        out["ig_baselines"] = ig
        out["ig_scores"] = scores  # per pair, for paired tests
        from scipy.stats import wilcoxon

        out["ig_unk_vs"] = {
            b: {
                "unk_better": int(np.sum(np.array(scores["unk"]) > np.array(scores[b]))),
                "wilcoxon_p": float(wilcoxon(scores["unk"], scores[b]).pvalue),
            }
            for b in BASELINES
            if b != "unk"
        }
        out["ig_seconds"] = time.perf_counter() - t1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=2))


if __name__ == "__main__":
    main()

"""Does jitter cost quality on the paper's grid? The twelve SciFact configurations of the sample
logs: nDCG@10 and recall@10 (SciFact's test labels, with 95 % bootstrap intervals) beside the
stability of each configuration against the base run (J_doc, J_span, collapse), the paired change of
nDCG@10 against the base, and, per pair, Spearman's rho between J_span and that change with the
collapsed queries split by what happened to their relevant documents.

    .venv/bin/python bench/quality_repro.py [--base k10-c256-o32] [--markdown docs/results/quality.md]

Prints a Markdown table (the one in docs/reproduction.md) and writes JSON to bench/out/quality.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="k10-c256-o32")
    ap.add_argument("--markdown", default=None, help="also write the table to this file")
    args = ap.parse_args()

    from bench._sample import sample_db
    from ragaudit_core.logs import store
    from ragaudit_core.logs.selection import natural_sorted
    from ragaudit_core.quality.jitter import jitter_cost
    from ragaudit_core.quality.summary import compute_quality
    from ragaudit_core.stability.compare import compare_runs

    t0 = time.perf_counter()
    con = store.connect(sample_db(), read_only=True)
    runs = natural_sorted(r for (r,) in con.execute("SELECT run_id FROM runs").fetchall())
    base = args.base
    q = compute_quality(con, runs, pairs=[(base, r) for r in runs if r != base])
    lines = [
        f"| configuration | nDCG@10 [95 % CI] | recall@10 [95 % CI] | J_doc vs {base} | J_span vs {base} | "
        f"collapse vs {base} | ΔnDCG@10 [95 % CI] (p, Holm) | ρ(J_span, ΔnDCG) [95 % CI] | collapsed: kept / lost / "
        "nothing to lose |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    out = {"base": base, "runs": {}}
    for r in runs:
        rq = q.run(r)
        assert rq is not None
        nd, rc = rq.metrics["ndcg@10"], rq.metrics["recall@10"]
        row = {"ndcg@10": [nd.value, nd.lo, nd.hi], "recall@10": [rc.value, rc.lo, rc.hi], "n": rq.n_queries}
        cells = [f"`{r}`", f"{nd.value:.3f} [{nd.lo:.3f}, {nd.hi:.3f}]", f"{rc.value:.3f} [{rc.lo:.3f}, {rc.hi:.3f}]"]
        if r == base:
            cells += ["—"] * 6
        else:
            cmp = compare_runs(con, base, r)
            cost = jitter_cost(con, cmp, k=10)
            iv = cmp.intervals
            assert iv is not None
            jd, js = iv.pair(base, r, "doc", "j_avg"), iv.pair(base, r, "span", "j_avg")
            col = iv.pair(base, r, "span", "collapse_rate")
            ch = q.pairs[(base, r)]["ndcg@10"]
            rho = cost.rho
            split = cost.collapsed
            assert jd is not None and js is not None and col is not None
            cells += [
                f"{jd.value:.3f} [{jd.lo:.3f}, {jd.hi:.3f}]",
                f"{js.value:.3f} [{js.lo:.3f}, {js.hi:.3f}]",
                f"{col.value:.1%}",
                f"{ch.delta:+.3f} [{ch.lo:+.3f}, {ch.hi:+.3f}] (p {ch.p:.2g}, {ch.p_holm:.2g})",
                "undefined" if rho.value != rho.value else f"{rho.value:+.2f} [{rho.lo:+.2f}, {rho.hi:+.2f}]",
                f"{split['relevant kept']} / {split['relevant lost']} / {split['nothing relevant to lose']}",
            ]
            row |= {
                "j_doc": [jd.value, jd.lo, jd.hi],
                "j_span": [js.value, js.lo, js.hi],
                "collapse_rate": col.value,
                "delta_ndcg@10": [ch.delta, ch.lo, ch.hi, ch.p, ch.p_holm],
                "spearman": [rho.value, rho.lo, rho.hi],
                "collapsed": split,
            }
        out["runs"][r] = row
        lines.append("| " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    print(f"\n{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "out" / "quality.json").write_text(json.dumps(out, indent=2))
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")


if __name__ == "__main__":
    main()

"""How often the gate's stage-survival rule fails a pair whose survival did not change, before and
after it asked for significance, and how often the change's 95 % interval covers the truth.

Synthetic runs: ``n`` queries, each reaching the stage with probability 0.75 in each run, keeping
its source with probability ``p`` (the same in both runs unless a change is given); 400 trials per
row, 1,000 resamples each (``fidelity.survival_change.stage_survival_change``). The old default rule
failed a pair when the point change was below −0.05; the new one fails it when the whole interval
is, passes it when the whole interval is at or above −0.05, and is inconclusive otherwise.

    .venv/bin/python bench/survival_change_coverage.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ragaudit_core.fidelity.survival_change import stage_survival_change

TRIALS = 400
rng = np.random.default_rng(7)


def trial(n: int, p_b: float, p_c: float, reach: float = 0.75):
    ids = [f"q{i}" for i in range(n)]

    def run(p: float) -> pd.DataFrame:
        reached = rng.random(n) < reach
        kept = np.where(reached, (rng.random(n) < p).astype(float), np.nan)
        return pd.DataFrame({"query_id": ids, "survived_generation": kept})

    return stage_survival_change(run(p_b), run(p_c), resamples=1000)["generation"]


def main() -> None:
    print("| queries | p baseline → candidate | coverage | mean width | old rule fails | new rule fails | new passes |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n, p_b, p_c in ((60, 0.15, 0.15), (60, 0.8, 0.8), (300, 0.15, 0.15), (60, 0.15, 0.10), (300, 0.15, 0.05)):
        t = time.perf_counter()
        es = [trial(n, p_b, p_c) for _ in range(TRIALS)]
        cov = np.mean([e.lo <= p_c - p_b <= e.hi for e in es])
        width = np.mean([e.hi - e.lo for e in es])
        old = np.mean([e.value < -0.05 for e in es])
        new = np.mean([e.hi < -0.05 for e in es])
        passes = np.mean([e.lo >= -0.05 for e in es])  # the rest are inconclusive
        print(
            f"| {n} | {p_b} → {p_c} | {cov:.3f} | {width:.3f} | {old:.1%} | {new:.1%} | {passes:.1%} |"
            f"  <!-- {time.perf_counter() - t:.1f} s -->"
        )


if __name__ == "__main__":
    main()

"""Benchmark: the local judge panel on one citation (issue #24 item 5): seconds per citation for
three judges (seeds 0-2), the forward passes after the prompt and the tokens they fed, and the
prompt's prefill alone; with the load average (the machine is shared).

    .venv/bin/python bench/judge_citation_bench.py [--db FILE]

The first record of the first provenance run of the sample logs that carries a citation.
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import torch  # noqa: E402
from _sample import sample_db  # noqa: E402

from ragaudit_core import models  # noqa: E402
from ragaudit_core.fidelity import provenance_runs  # noqa: E402
from ragaudit_core.fidelity.judge import judge_prompt  # noqa: E402
from ragaudit_core.fidelity.judges import LocalJudge  # noqa: E402
from ragaudit_core.jobs import plan_judge  # noqa: E402
from ragaudit_core.logs import store  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default=str(ROOT / "bench" / "out" / "sample.duckdb"))
    args = ap.parse_args()
    con = store.connect(sample_db(args.db))
    gen = models.load_generator(device="cpu")
    run = provenance_runs(con)[0]
    qids = [
        q
        for (q,) in con.execute(
            "SELECT query_id FROM prov_records WHERE run_id = ? ORDER BY query_id", [run]
        ).fetchall()
    ]
    for q in qids:
        spec, inp = plan_judge(con, run, q, seeds=(0, 1, 2), device="cpu")
        if inp.citations:
            break
    judge = LocalJudge(gen, explanation_tokens=spec.params.get("explanation_tokens", 16))
    calls = [0, 0]
    forward = judge.model.forward

    def counting(*a, **k):
        ids = k.get("input_ids", a[0] if a else None)
        calls[0] += 1
        calls[1] += ids.shape[1]
        return forward(*a, **k)

    judge.model.forward = counting
    c = inp.citations[0]
    prompt = judge_prompt(c["citation"], inp.context, inp.query)
    chunk_ids = [x["chunk_id"] for x in inp.context]
    t = time.perf_counter()
    v = judge.verdicts(prompt, chunk_ids, (0, 1, 2))
    dt = time.perf_counter() - t
    print(
        "per citation",
        round(dt, 2),
        "s; load",
        os.getloadavg(),
        "; forward calls, tokens",
        calls,
        [x.verdict if x else None for x in v],
    )
    ids = judge.tok.apply_chat_template(
        [{"role": "system", "content": prompt}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):
        ids = ids["input_ids"]
    t = time.perf_counter()
    with torch.no_grad():
        forward(torch.tensor([list(ids)]), logits_to_keep=1)
    print("prefill of the prompt", len(ids), "tokens", round(time.perf_counter() - t, 2), "s")


if __name__ == "__main__":
    main()

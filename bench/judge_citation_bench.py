"""Benchmark: the local judge panel on one citation (issue #24 item 5): seconds per citation for
three judges (seeds 0-2), the forward passes after the prompt and the tokens they fed, and the
prompt's prefill alone; with the load average (the machine is shared).

    .venv/bin/python bench/judge_citation_bench.py [--db FILE] [--repeat 3] [--mode both|batched|sequential]

``batched`` is the judge's default (a slot's options in one pass, fixed parts fed with the next
slot); ``sequential`` the walk before it (one pass per fixed part and per multi-token option).
``both`` runs them alternately in one process (``--repeat`` times each) and reports whether their
verdicts are identical and the largest difference of their option log-probabilities.

The first record of the first provenance run of the sample logs that carries a citation.
"""

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
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mode", default="both", choices=["both", "batched", "sequential"])
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
    c = inp.citations[0]
    prompt = judge_prompt(c["citation"], inp.context, inp.query)
    chunk_ids = [x["chunk_id"] for x in inp.context]
    modes = ["batched", "sequential"] if args.mode == "both" else [args.mode]
    got: dict[str, dict] = {}
    for rep in range(args.repeat):
        for mode in modes:
            judge = LocalJudge(
                gen, explanation_tokens=spec.params.get("explanation_tokens", 16), batch_options=mode == "batched"
            )
            calls = [0, 0]
            forward = gen.model.forward

            def counting(*a, _f=forward, _calls=calls, **k):
                ids = k.get("input_ids", a[0] if a else None)
                _calls[0] += 1
                _calls[1] += ids.shape[1]
                return _f(*a, **k)

            gen.model.forward = counting
            load = os.getloadavg()[0]
            t = time.perf_counter()
            v = judge.verdicts(prompt, chunk_ids, (0, 1, 2))
            dt = time.perf_counter() - t
            gen.model.forward = forward
            row = {
                "mode": mode,
                "repeat": rep,
                "seconds": round(dt, 2),
                "load1": round(load, 2),
                "forward_calls": calls[0],
                "tokens_fed": calls[1],
                "verdicts": [x.verdict if x else None for x in v],
            }
            print(json.dumps(row), flush=True)
            if mode not in got or dt < got[mode]["seconds"]:
                got[mode] = {**row, "full": [x.model_dump() if x else None for x in v], "scores": judge.scores}
    if len(got) == 2:
        a, b = got["batched"], got["sequential"]
        pairs = [(x, y) for sa, sb in zip(a["scores"], b["scores"], strict=True) for x, y in zip(sa, sb, strict=True)]
        diff = max(abs(x - y) for x, y in pairs)
        rel = max(abs(x - y) / max(1.0, abs(y)) for x, y in pairs)
        logp = max(abs(y) for _, y in pairs)
        out = {"identical_verdicts": a["full"] == b["full"], "max_abs_logp_diff": diff, "max_rel_logp_diff": rel}
        print(json.dumps({**out, "largest_abs_logp": logp, "n_option_scores": len(pairs)}))
    forward = gen.model.forward
    ids = judge.tok.apply_chat_template(
        [{"role": "system", "content": prompt}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):
        ids = ids["input_ids"]
    t = time.perf_counter()
    with torch.no_grad():
        forward(torch.tensor([list(ids)]), logits_to_keep=1)
    print("prefill of the prompt", len(ids), "tokens", round(time.perf_counter() - t, 2), "s; load", os.getloadavg())


if __name__ == "__main__":
    main()

"""Benchmark: the local judge panel on one citation (issue #24 item 5): seconds per citation for
three judges (seeds 0-2), the forward passes after the prompt and the tokens they fed, and the
prompt's prefill alone; with the load average (the machine is shared).

    .venv/bin/python bench/judge_citation_bench.py [--db FILE] [--repeat 3] [--mode both|batched|sequential]
    .venv/bin/python bench/judge_citation_bench.py --mode precision [--citations 12]

``batched`` is the judge's default (a slot's options in one pass, fixed parts fed with the next
slot); ``sequential`` the walk before it (one pass per fixed part and per multi-token option).
``both`` runs them alternately in one process (``--repeat`` times each) and reports whether their
verdicts are identical and the largest difference of their option log-probabilities.

The first record of the first provenance run of the sample logs that carries a citation.

``precision`` judges the first ``--citations`` citations of that run with the packaged model in
fp32 (the reference) and in bf16 (``--precision bf16`` of ``ragaudit judge``), alternately in one
process, and reports the seconds per citation of each, how many verdicts agree and how many votes
agree in all four fields (verdict, confidence, matching chunk, coordinate fidelity).
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
    ap.add_argument("--mode", default="both", choices=["both", "batched", "sequential", "precision"])
    ap.add_argument("--citations", type=int, default=12)
    ap.add_argument("--device", default="cpu", help="cpu or cuda: where the judge's model runs")
    args = ap.parse_args()
    con = store.connect(sample_db(args.db))
    # fp32 is the reference on every device (``auto`` would load bf16 on CUDA)
    gen = models.load_generator(device=args.device, precision="fp32")
    if args.mode == "precision":
        precision_agreement(con, gen, args.citations, args.device)
        return
    run = provenance_runs(con)[0]
    qids = [
        q
        for (q,) in con.execute(
            "SELECT query_id FROM prov_records WHERE run_id = ? ORDER BY query_id", [run]
        ).fetchall()
    ]
    for q in qids:
        spec, inp = plan_judge(con, run, q, seeds=(0, 1, 2), device=args.device)
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
    x = torch.tensor([list(ids)], device=gen.device)
    with torch.no_grad():
        forward(x, logits_to_keep=1)  # a warm-up (on CUDA the first pass loads kernels)
        if x.device.type == "cuda":
            torch.cuda.synchronize()  # the warm-up done before the clock starts
        t = time.perf_counter()
        forward(x, logits_to_keep=1)
        if x.device.type == "cuda":
            torch.cuda.synchronize()
    print("prefill of the prompt", len(ids), "tokens", round(time.perf_counter() - t, 2), "s; load", os.getloadavg())


def precision_agreement(con, gen, n_citations: int, device: str = "cpu") -> None:
    half = models.load_generator(device=device, precision="bf16")
    run = provenance_runs(con)[0]
    qids = [
        q
        for (q,) in con.execute(
            "SELECT query_id FROM prov_records WHERE run_id = ? ORDER BY query_id", [run]
        ).fetchall()
    ]
    seconds = {"fp32": [], "bf16": []}
    agree = votes = same_verdict = 0
    for q in qids:
        spec, inp = plan_judge(con, run, q, seeds=(0, 1, 2), device=device)
        for c in inp.citations[: n_citations - len(seconds["fp32"])]:
            prompt = judge_prompt(c["citation"], inp.context, inp.query)
            chunk_ids = [x["chunk_id"] for x in inp.context]
            got = {}
            for name, g in (("fp32", gen), ("bf16", half)):
                t = time.perf_counter()
                v = LocalJudge(g, explanation_tokens=spec.params["explanation_tokens"]).verdicts(
                    prompt, chunk_ids, (0, 1, 2)
                )
                seconds[name].append(time.perf_counter() - t)
                got[name] = [
                    None if x is None else (x.verdict, x.confidence, x.matching_chunk_id, x.coordinate_fidelity)
                    for x in v
                ]
            agree += sum(a == b for a, b in zip(got["fp32"], got["bf16"], strict=True))
            same_verdict += sum((a and a[0]) == (b and b[0]) for a, b in zip(got["fp32"], got["bf16"], strict=True))
            votes += len(got["fp32"])
            print(json.dumps({"query_id": q, **got, "load1": round(os.getloadavg()[0], 2)}), flush=True)
        if len(seconds["fp32"]) >= n_citations:
            break
    n = len(seconds["fp32"])
    per = {k: round(sum(v) / max(1, n), 2) for k, v in seconds.items()}
    print(
        json.dumps(
            {
                "citations": n,
                "verdicts_agree": f"{same_verdict}/{votes}",
                "votes_agree (all four fields)": f"{agree}/{votes}",
                "seconds_per_citation": per,
            }
        )
    )


if __name__ == "__main__":
    main()

"""Benchmark: the Pattern-4 judge panel on the sample provenance logs (issue #16).

    .venv/bin/python bench/judge_bench.py [--records 15] [--judges 3] [--ray local --workers 2]

For each provenance run of the sample logs, the first ``--records`` records that carry a
citation are judged by ``--judges`` judges (the packaged SmolLM2, seeds 0..n-1, seed 0
greedy) with seed 002's prompt; reports the citations judged, wall time per citation
(the panel), the agreement of the majority with Pattern 3's rule-based verdicts, the
confusion counts, and the judges' disagreement rate (not unanimous; pairwise).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _sample import sample_db  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=15)
    ap.add_argument("--judges", type=int, default=3)
    ap.add_argument("--ray", default=None)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--db", default=str(ROOT / "bench" / "out" / "sample.duckdb"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from ragaudit_core.fidelity import provenance_runs
    from ragaudit_core.fidelity.judging import judge_summary, verdict_table
    from ragaudit_core.jobs import plan_judge, run_batch
    from ragaudit_core.logs import store

    src = sample_db(args.db)
    tmp = Path(tempfile.mkdtemp()) / "judge.duckdb"
    shutil.copy(src, tmp)
    con = store.connect(tmp)
    con.execute("DROP TABLE IF EXISTS judge_verdicts")
    out = {"judges": args.judges, "runner": args.ray or "process", "runs": {}}
    for run in provenance_runs(con):
        qids = [
            q
            for (q,) in con.execute(
                "SELECT query_id FROM prov_records WHERE run_id = ? ORDER BY query_id", [run]
            ).fetchall()
        ]
        jobs = []
        for q in qids:
            spec, inp = plan_judge(con, run, q, seeds=tuple(range(args.judges)), device="cpu")
            if inp.citations:
                jobs.append((spec, inp))
            if len(jobs) == args.records:
                break
        t = time.perf_counter()
        rep = run_batch(con, jobs, ray=args.ray, workers=args.workers)
        wall = time.perf_counter() - t
        s = judge_summary(verdict_table(con, run))
        out["runs"][run] = {
            "records": len(jobs),
            "citations": s["n_citations"],
            "wall_s": round(wall, 1),
            "s_per_citation": round(wall / max(1, s["n_citations"]), 2),
            "failed": rep.failed,
            **s,
        }
        print(json.dumps({run: out["runs"][run]}), flush=True)
    print(json.dumps(out))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Differential check and timing: ``fidelity_runs`` of a base commit against the working tree's.

    .venv/bin/python bench/fidelity_runs_diff.py --base 1b9cb34 --seeds 0 40
    .venv/bin/python bench/fidelity_runs_diff.py --base 1b9cb34 --time 5000

``--seeds A B``: for each seed, a random provenance workspace (1–300 runs of 1–30 records;
citations of every outcome, reranker loss, missing stages and context elements, chunks without
coordinates, stale and mutated chunks, catalogues, dropped chunks, case-sensitive ids one seed
in four) is ingested, and ``fidelity_runs`` is called by the base commit's ``ragaudit_core``
(``git archive``, in its own process) and by the working tree's, on all runs (default rules), on
a subset with a missing and a repeated run (tail percentiles), and on all runs reversed: every
run id, figure (same floats), table (same columns, types, values, index), alert and warning
must be the same, in the same order. ``--time N``: N one-record runs, the wall time of each side.
"""

from __future__ import annotations

import argparse
import math
import pickle
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragaudit_core.logs import store  # noqa: E402
from ragaudit_core.logs.identity import CanonOptions  # noqa: E402
from ragaudit_core.logs.ingest import ingest_paths  # noqa: E402
from ragaudit_core.logs.options import IngestOptions  # noqa: E402
from tests.helpers import node, pipeline, write_jsonl  # noqa: E402

_CHILD = r"""
import pickle, sys, time, warnings
import ragaudit_core.fidelity.score as score
assert score.__file__.startswith(sys.argv[3]), score.__file__
from ragaudit_core.logs import store
con = store.connect(sys.argv[1])
out = []
for rules, runs in pickle.loads(bytes.fromhex(sys.argv[2])):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = time.perf_counter()
        res = score.fidelity_runs(con, runs, score.FidelityRules(**rules))
        dt = time.perf_counter() - t
    out.append(([(k, (v.run_id, v.summary, v.queries, v.citations, v.findings, v.alerts)) for k, v in res.items()],
                [(x.category.__name__, str(x.message)) for x in w], dt))
sys.stdout.buffer.write(pickle.dumps(out))
"""

FRAGMENTS = [
    "[Source: D1, p. 2]", "[Source: D1, p. 3]", "[Source: D1, p. 9]", "[Source: D2, p. 1]", "[Source: D9, p. 1]",
    "[Document 1]", "[Document 2]", "(Document 3)", "[1]", "[2]", "[7]", "[Source: D1]", "[Ref 4]", "[Doc x]",
    "[source: d1, p. 2]", "plain words", "[Source: D3, p. 1]",
]  # fmt: skip


def record(rng: random.Random, run: str, qid: str) -> dict:
    text = " ".join(rng.choice(FRAGMENTS) for _ in range(rng.choice([0, 0, 1, 1, 2, 3, 6])))
    gt = rng.choice([(), ("D1",), ("D2",), ("D1", "D2"), ("D3",), ("d1",)])
    rec = pipeline(run, qid, text=text, strip_rerank=rng.random() < 0.2, gt=gt, mutate=rng.random() < 0.15,
                   stale=rng.random() < 0.2, bad_offsets=rng.random() < 0.1)  # fmt: skip
    if rng.random() < 0.05:
        rec.pop("generated_text")
    nodes = rec["nodes"]
    if rng.random() < 0.2:  # no reranker: the context elements derive from the retrieval results
        nodes = [n for n in nodes if n["stage"] != 3]
        for n in nodes:
            if n["stage"] == 4:
                n["derived_from"] = ["r1" if n["node_id"] == "x1" else "r2"]
    if rng.random() < 0.15:  # a context element is lost
        nodes = [n for n in nodes if n["node_id"] != "x2"]
        for n in nodes:
            n["derived_from"] = [p for p in n["derived_from"] if p != "x2"]
    if rng.random() < 0.1:  # a chunk without origin coordinates
        next(n for n in nodes if n["node_id"] == "c2").pop("coordinates", None)
    if rng.random() < 0.2:
        rec["documents"] = [{"doc_id": "D3", "pages": rng.choice([1, 2])}]
    if rng.random() < 0.1:
        rec["dropped"] = [{"node_id": "r2", "stage": 4, "reason": "budget"}]
    if rng.random() < 0.1:
        nodes.append(node("cite0", 6, "citation", ["g"], doc="D1", page=2))
    rec["nodes"] = nodes
    return rec


def workspace(seed: int) -> list[dict]:
    rng = random.Random(seed)
    n_runs = rng.choice([1, 3, 8, 40, 300])
    recs = []
    for i in range(n_runs):
        run = rng.choice([f"run-{i}", f"Run {i:03d}", f"r{i}é"])
        size = rng.choice([1, 1, 1, 2, 3, 5, 12, 30] if n_runs < 300 else [1, 1, 1, 2])
        recs += [record(rng, run, rng.choice([f"q{j}", f"Q{j:02d}", f"{j}"])) for j in range(size)]
    return recs


def same(a: object, b: object, path: str = "") -> None:
    """Equal values of equal types (NaN equal to NaN); dict keys in the same order; tables with
    the same columns, types, index and values."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return
    if type(a) is not type(b):
        raise AssertionError(f"{path}: {type(a).__name__} {a!r} vs {type(b).__name__} {b!r}")
    if isinstance(a, dict):
        assert isinstance(b, dict)
        if list(a) != list(b):
            raise AssertionError(f"{path}: keys {list(a)} vs {list(b)}")
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        if len(a) != len(b):
            raise AssertionError(f"{path}: length {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif hasattr(a, "columns"):
        same(list(a.columns), list(b.columns), f"{path}.columns")  # type: ignore[attr-defined]
        same([str(t) for t in a.dtypes], [str(t) for t in b.dtypes], f"{path}.dtypes")  # type: ignore[attr-defined]
        same(repr(a.index), repr(b.index), f"{path}.index")  # type: ignore[attr-defined]
        same(str(a.columns.dtype), str(b.columns.dtype), f"{path}.columns.dtype")  # type: ignore[attr-defined]
        for c in a.columns:  # type: ignore[attr-defined]
            same(a[c].tolist(), b[c].tolist(), f"{path}[{c}]")  # type: ignore[index]
    elif a != b:
        raise AssertionError(f"{path}: {a!r} vs {b!r}")


def side(root: Path, db: Path, cases: list) -> list:
    p = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db), pickle.dumps(cases).hex(), str(root)],
        capture_output=True,
        cwd=tempfile.gettempdir(),  # never the checkout: its ragaudit_core would come first
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    if p.returncode:
        raise SystemExit(p.stderr.decode())
    return pickle.loads(p.stdout)


def base_tree(ref: str, where: Path) -> Path:
    archive = where / "base.tar"
    archive.write_bytes(subprocess.run(["git", "archive", ref, "ragaudit_core"], cwd=ROOT, capture_output=True,
                                       check=True).stdout)  # fmt: skip
    with tarfile.open(archive) as tar:
        tar.extractall(where / "base", filter="data")
    return where / "base"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the commit whose fidelity_runs is the reference")
    ap.add_argument("--seeds", nargs=2, type=int, metavar=("FROM", "TO"))
    ap.add_argument("--time", type=int, metavar="N", help="time both sides on N one-record runs")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = base_tree(args.base, work)
        compared = 0
        for seed in range(*(args.seeds or (0, 0))):
            db = work / f"ws{seed}.duckdb"
            con = store.connect(db)
            opts = IngestOptions(canon=CanonOptions(case_sensitive=True)) if seed % 4 == 3 else IngestOptions()
            ingest_paths(con, [write_jsonl(work / f"ws{seed}.jsonl", workspace(seed))], opts)
            runs = [r for (r,) in con.execute("SELECT DISTINCT run_id FROM prov_records").fetchall()]
            con.close()
            sub = [*random.Random(seed).sample(runs, max(1, len(runs) // 2)), "no-such-run", runs[0]]
            cases = [
                ({}, None),
                ({"percentile": "tail", "p95_cfs_min": 0.3}, sub),
                ({"stage_survival_min": 0.5}, runs[::-1]),
            ]
            old, new = side(base, db, cases), side(ROOT, db, cases)
            same([(r, w) for r, w, _t in old], [(r, w) for r, w, _t in new], f"seed {seed}")
            compared += sum(len(r) for r, _w, _t in old)
            print(f"seed {seed}: {len(runs)} runs, the same ({sum(len(w) for _r, w, _t in old)} warnings)", flush=True)
        if args.seeds:
            print(f"all the same: {compared} run results compared")
        if args.time:
            db = work / "time.duckdb"
            con = store.connect(db)
            recs = [
                pipeline(f"req-{i:06d}", "q1", strip_rerank=i % 7 == 0, mutate=i % 11 == 0, stale=i % 5 == 0)
                for i in range(args.time)
            ]
            ingest_paths(con, [write_jsonl(work / "time.jsonl", recs)])
            con.close()
            for name, root in (("base", base), ("tree", ROOT), ("base", base), ("tree", ROOT)):
                ((_res, _w, dt),) = side(root, db, [({}, None)])
                print(f"{name}: fidelity_runs on {args.time:,} one-record runs {dt:.2f} s", flush=True)


if __name__ == "__main__":
    main()

"""CUDA against the CPU on the same weights, through the product's own code path (issue #24 item 6).

    python bench/cuda_check.py folders --configs DIR --out MODELS   # random-weight model folders
    python bench/cuda_check.py compare CPU.json CUDA.json [--out SUMMARY.json]

``folders`` builds two model folders from configurations and tokenizers alone (a few MB, where the
packaged weights are 182 MB): all-MiniLM-L6-v2's architecture and SmolLM2-135M-Instruct's, their
weights drawn at random (seed 0). A lent GPU machine reaches no network and takes 64 MiB of files
per call, so the packaged models cannot travel; the folders go through the same loaders as any
folder a user names (``models.load_embedder`` / ``load_generator``), and random weights exercise
every CUDA path the real ones do (device placement, the precision chosen for the device, the
generation's KV cache, the coalitions' batches, IG's batched path integral).

``python bench/cuda_check.py configs --out DIR`` writes DIR from the packaged models (run where
they are installed). ``compare`` reads two ``ragaudit attribute --json`` outputs of the same
queries and prints the largest differences of the answers, the document values φ and the token
saliencies, with Shapley's efficiency and IG's completeness on each side. ``bench/cuda_check.sh``
runs it all on a GPU machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def configs(out: Path) -> None:
    """The packaged models' configurations and tokenizers, without their weights."""
    from transformers import AutoConfig, AutoTokenizer

    from ragaudit_core.models import packaged_embedder_path, packaged_generator_gguf

    emb = packaged_embedder_path()
    dst = out / "minilm"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(emb, dst, ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "*.onnx", "onnx", "openvino"))
    gguf = packaged_generator_gguf()
    g = out / "smollm2"
    g.mkdir(parents=True, exist_ok=True)
    AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(g)
    AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained(g)
    print(json.dumps({"wrote": str(out), "bytes": sum(p.stat().st_size for p in out.rglob("*") if p.is_file())}))


def folders(cfg: Path, out: Path) -> None:
    """Random-weight (seed 0) model folders of the configurations in ``cfg``."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(cfg, out)
    torch.manual_seed(0)
    AutoModel.from_config(AutoConfig.from_pretrained(out / "minilm")).save_pretrained(out / "minilm")
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(out / "smollm2")).save_pretrained(out / "smollm2")
    print(json.dumps({"models": str(out)}))


def _by_key(path: Path) -> dict:
    rows = json.loads(path.read_text())
    rows = rows.get("results", rows) if isinstance(rows, dict) else rows
    return {(r["query_id"], r.get("condition", "original")): r for r in rows}


def _max_abs(a: object, b: object) -> float:
    import numpy as np

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        return float("inf")
    return float(np.max(np.abs(x - y))) if x.size else 0.0


def _checks(r: dict) -> dict:
    """Shapley's efficiency per answer token (Σ_i φ_i = v(N) − v(∅)) and IG's completeness
    (attributions sum / score gap; 1 is exact) of one result."""
    import numpy as np

    gap = np.asarray(r["v_full"]) - np.asarray(r["v_empty"])
    eff = float(np.max(np.abs(np.asarray(r["values"]).sum(0) - gap)))
    comp = [abs(float(s["completeness"]) - 1) for s in r["ig_documents"] + r["ig_query"]]
    return {"efficiency_error": eff, "ig_completeness_error": max(comp, default=0.0)}


def compare(cpu: Path, cuda: Path) -> dict:
    """The largest differences between two runs of the same queries (CPU first)."""
    a, b = _by_key(cpu), _by_key(cuda)
    out: dict = {"queries": len(a), "same_keys": sorted(a) == sorted(b), "rows": []}
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        row = {"query_id": key[0], "condition": key[1], "same_answer": ra["answer_tokens"] == rb["answer_tokens"]}
        if row["same_answer"]:
            row["max_d_values"] = _max_abs(ra["values"], rb["values"])
            row["max_d_importance"] = _max_abs(ra["importance"], rb["importance"])
            row["same_generator_ranking"] = ra["generator_ranking"] == rb["generator_ranking"]
        row["max_d_ig"] = max(
            _max_abs(x["attributions"], y["attributions"])
            for x, y in zip(ra["ig_documents"] + ra["ig_query"], rb["ig_documents"] + rb["ig_query"], strict=True)
        )
        row["checks"] = [_checks(ra), _checks(rb)]
        row["seconds"] = [ra["timings_s"]["total"], rb["timings_s"]["total"]]
        out["rows"].append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("configs")
    c.add_argument("--out", type=Path, required=True)
    f = sub.add_parser("folders")
    f.add_argument("--configs", type=Path, required=True)
    f.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("compare")
    m.add_argument("cpu", type=Path)
    m.add_argument("cuda", type=Path)
    m.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "configs":
        configs(args.out)
    elif args.cmd == "folders":
        folders(args.configs, args.out)
    else:
        res = compare(args.cpu, args.cuda)
        text = json.dumps(res, indent=1)
        print(text)
        if args.out:
            args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

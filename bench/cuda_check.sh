#!/usr/bin/env bash
# CUDA against the CPU on the same weights, through `ragaudit attribute` and `ragaudit worker`:
#
#   WHEELS=DIR CONFIGS=DIR bash bench/cuda_check.sh OUTDIR
#
# CONFIGS holds the model configurations and tokenizers written by
# `python bench/cuda_check.py configs --out DIR` (4 MB; the weights are drawn at random, seed 0,
# on the machine). WHEELS, if set, holds wheels the machine's Python lacks (installed --no-deps).
# Steps: random-weight folders; the sample logs ingested; queries Q1..Q3 of run k10-c256-o32
# attributed by exact Shapley in the process on the CPU and on CUDA, each into its own copy of the
# database; query Q4 queued for CUDA and run by `ragaudit worker`; then bench/cuda_check.py compare
# (CPU against CUDA, CPU against the worker's CUDA result). DEV2=cpu runs it all without a GPU.
set -u
out=${1:?usage: bash bench/cuda_check.sh OUTDIR}
py=${PY:-python3}
dev2=${DEV2:-cuda}
mkdir -p "$out"
log="$out/log.txt"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TQDM_DISABLE=1
work=${WORK:-/tmp/cuda-check}
rm -rf "$work" && mkdir -p "$work"
{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
    nproc
    if [ -n "${WHEELS:-}" ]; then "$py" -m pip install -q --no-index --no-deps "$WHEELS"/*.whl 2>&1 | tail -3; fi
    "$py" -c 'import sys, torch, transformers, duckdb; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "duckdb", duckdb.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
} >>"$log" 2>&1
run() {  # a step: its command line and exit status in the log
    local t0=$SECONDS
    echo "== $*" >>"$log"
    "$@" >>"$log" 2>&1
    echo "== rc=$? wall=$((SECONDS - t0)) s" >>"$log"
}
rag() { "$py" -m ragaudit_core.cli "$@"; }
run "$py" bench/cuda_check.py folders --configs "${CONFIGS:?set CONFIGS}" --out "$work/models"
run rag ingest sample_logs --db "$work/base.duckdb"
qs=${QUERIES:-1,100,1012}
q4=${Q4:-1014}
A=(--run k10-c256-o32 --method exact --max-docs "${DOCS:-5}" --max-new-tokens "${TOKENS:-16}"
   --retriever "$work/models/minilm" --generator "$work/models/smollm2")
cp "$work/base.duckdb" "$work/cpu.duckdb"
cp "$work/base.duckdb" "$work/gpu.duckdb"
run rag attribute --db "$work/cpu.duckdb" "${A[@]}" --queries "$qs,$q4" --device cpu --json "$out/cpu.json"
run rag attribute --db "$work/gpu.duckdb" "${A[@]}" --queries "$qs" --device "$dev2" --json "$out/gpu.json"
run rag attribute --db "$work/gpu.duckdb" "${A[@]}" --queries "$q4" --device "$dev2" --queue
run rag worker --db "$work/gpu.duckdb" --idle 3
run rag attribute --db "$work/gpu.duckdb" "${A[@]}" --queries "$q4" --device "$dev2" --json "$out/worker.json"
run "$py" bench/cuda_check.py compare "$out/cpu.json" "$out/gpu.json" --out "$out/compare_gpu.json"
run "$py" bench/cuda_check.py compare "$out/cpu.json" "$out/worker.json" --out "$out/compare_worker.json"
grep -E "^== " "$log" | cut -c1-160
"$py" - "$out" <<'PY'
import json, sys
for name in ("compare_gpu", "compare_worker"):
    try:
        d = json.load(open(f"{sys.argv[1]}/{name}.json"))
    except OSError as e:
        print(name, "missing:", e)
        continue
    for r in d["rows"]:
        print(name, r["query_id"], "same answer", r["same_answer"], "dvalues %.2g dphi %.2g dIG %.2g" % (
            r.get("max_d_values", float("nan")), r.get("max_d_importance", float("nan")), r["max_d_ig"]),
            "eff %.1g/%.1g" % tuple(c["efficiency_error"] for c in r["checks"]),
            "IGcompl %.1g/%.1g" % tuple(c["ig_completeness_error"] for c in r["checks"]), "s", r["seconds"])
PY

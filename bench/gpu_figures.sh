#!/usr/bin/env bash
# CUDA figures for docs/benchmarks.md (issue #24 item 6), all benches in one go:
#
#   bash bench/gpu_figures.sh OUTDIR            # on a machine with a CUDA GPU and the packaged models
#
# 1. one query at a time, the anytime job (first estimate, then exact) in fp32 (the reference)
#    and with the generator in bf16, each against a job without the first stage (--compare);
# 2. a 20-query batch in the process, the jobs' own precision (``auto``: fp32 for this model), then bf16;
# 3. the local judge panel (three judges) per citation, and fp32 against bf16 on citations;
# 4. the generator's prefill, decoding step and kernels per step in fp32 and in bf16
#    (bench/precision_probe.py).
#
# Writes OUTDIR/log.txt (every step's output) and one JSON per bench; a failing step is logged
# and the next one still runs. STEPS (e.g. "batch probe") runs only the steps named.
# DEVICE, QUERIES, BATCH, CITATIONS and PY override the defaults
# (DEVICE=cpu QUERIES=1 BATCH=1 CITATIONS=1 runs the same steps on a CPU, as a dry run).
set -u
out=${1:?usage: bash bench/gpu_figures.sh OUTDIR}
dev=${DEVICE:-cuda}
py=${PY:-python3}
mkdir -p "$out"
log="$out/log.txt"
export PYTHONUNBUFFERED=1
export RAGAUDIT_CACHE=${RAGAUDIT_CACHE:-/tmp/ragaudit-cache}  # the GGUF's dequantised copy, made once

step() {
    local name=$1
    shift
    case " ${STEPS:-anytime_fp32 anytime_bf16 batch batch_bf16 judge judge_precision probe} " in
    *" $name "*) ;;
    *) return 0 ;;
    esac
    local t0=$SECONDS
    echo "== $name: $*" | tee -a "$log"
    timeout "${STEP_TIMEOUT:-300}" "$py" "$@" >>"$log" 2>&1
    local rc=$?
    echo "== $name rc=$rc wall=$((SECONDS - t0)) s" | tee -a "$log"
}

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1
    "$py" -c 'import sys, torch, transformers; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
    nproc
} >>"$log" 2>&1
tail -6 "$log"

step anytime_fp32 bench/attribution_defaults.py --anytime --compare --device "$dev" --queries "${QUERIES:-3}" \
    --out "$out/anytime_${dev}_fp32.json"
step anytime_bf16 bench/attribution_defaults.py --anytime --compare --dtype bf16 --device "$dev" \
    --queries "${QUERIES:-3}" --out "$out/anytime_${dev}_bf16.json"
# the models loaded first and timed apart; the jobs' own precision (auto), then bf16 (the old auto)
step batch bench/jobs_bench.py --queries "${BATCH:-20}" --modes process --device "$dev" --precision auto \
    --out "$out/jobs_${dev}.json"
step batch_bf16 bench/jobs_bench.py --queries "${BATCH:-20}" --modes process --device "$dev" --precision bf16 \
    --out "$out/jobs_${dev}_bf16.json"
step judge bench/judge_citation_bench.py --device "$dev" --mode batched --repeat 3
step judge_precision bench/judge_citation_bench.py --device "$dev" --mode precision --citations "${CITATIONS:-6}"
step probe bench/precision_probe.py --device "$dev"
grep -E '^\{"(device|citations|process|identical)|^\{"mode": "process"|prefill of the prompt|rc=' "$log" | cut -c1-400

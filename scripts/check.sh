#!/usr/bin/env bash
# Lint, format and type checks (what .pre-commit-config.yaml runs): ruff on the whole tree, mypy on
# ragaudit_core. Configured in pyproject.toml. Run alone after the set-up: bash scripts/check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

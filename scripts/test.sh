#!/usr/bin/env bash
# Set up (if needed), check lint, format and types, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# lint, format and types first: they fail in seconds, the tests take minutes
bash scripts/check.sh
exec .venv/bin/python -m pytest "$@"

#!/usr/bin/env bash
# Set up (if needed) and open the dashboard on the bundled sample logs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/streamlit run app.py "$@"

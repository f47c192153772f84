#!/usr/bin/env bash
# Set up (if needed) and open the dashboard. When the dashboard's database holds no runs
# yet, the bundled sample logs are loaded first, so a fresh machine opens on real data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python - <<'PY'
from ragaudit_core import workspace
from ragaudit_core.logs import catalog, store

con = store.connect()
if catalog.overview(con)["runs"] == 0 and catalog.sample_logs_dir() is not None:
    print(workspace.load_sample_logs(con).summary(), "(bundled sample logs)")
con.close()
PY
# no file watcher: it watched .venv too and printed thousands of "inotify queue overflowed" lines
exec .venv/bin/streamlit run app.py --server.fileWatcherType none "$@"

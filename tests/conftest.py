"""Shared fixtures: a real in-memory DuckDB store, the hand-worked three-run logs, the sample
database, the dashboard pointed at a database. Builders live in ``tests/helpers.py``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragaudit_core.logs import store
from tests.helpers import ev, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the dashboard's helpers (pages/ui) import as `pages.ui`, as under streamlit run
    sys.path.insert(0, str(ROOT))


UNDER_LOAD = os.environ.get("RAGAUDIT_TEST_UNDER_LOAD") == "1"
LOAD_PROCESSES = 2
# a CPU-bound loop that ends by itself when the test session that started it is gone (its parent changes)
_BUSY = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"


def pytest_report_header(config) -> str | None:
    if UNDER_LOAD:
        return f"RAGAUDIT_TEST_UNDER_LOAD=1: {LOAD_PROCESSES} CPU-bound processes run beside the tests"
    return None


@pytest.fixture(scope="session", autouse=True)
def cpu_load():
    """With ``RAGAUDIT_TEST_UNDER_LOAD=1``, two CPU-bound processes run for the whole session (killed at
    its end), so that a test which waits on time rather than on state fails here rather than on a busy
    machine; without it, nothing."""
    if not UNDER_LOAD:
        yield []
        return
    procs = [subprocess.Popen([sys.executable, "-c", _BUSY]) for _ in range(LOAD_PROCESSES)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


@pytest.fixture
def con():
    c = store.connect(":memory:")
    yield c
    c.close()


@pytest.fixture
def three_runs(tmp_path: Path) -> Path:
    """The hand-worked fixture of test_stability.py (3 runs × 3 queries)."""
    d = tmp_path / "runs"
    write_jsonl(
        d / "A.jsonl",
        [
            {"run_id": "A", "query_id": "q1", "evidence": [ev("d1", "s1"), ev("d2", "s2")]},
            {"run_id": "A", "query_id": "q2", "evidence": []},
            {"run_id": "A", "query_id": "q3", "evidence": [ev("d3", "s3")]},
        ],
    )
    write_jsonl(
        d / "B.jsonl",
        [
            {"run_id": "B", "query_id": "q1", "evidence": [ev("d1", "s1"), ev("d2", "s2b")]},
            {"run_id": "B", "query_id": "q2", "evidence": []},
            {"run_id": "B", "query_id": "q3", "evidence": []},
        ],
    )
    write_jsonl(
        d / "C.jsonl",
        [
            {"run_id": "C", "query_id": "q1", "evidence": [ev("d1", "s1b"), ev("d4", "s4")]},
            {"run_id": "C", "query_id": "q2", "evidence": [ev("d5", "s5")]},
            {"run_id": "C", "query_id": "q3", "evidence": [ev("d3", "s3")]},
        ],
    )
    return d


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory) -> Path:
    """A DuckDB file holding the bundled SciFact sample logs (built once per test session)."""
    from ragaudit_core import workspace

    path = tmp_path_factory.mktemp("sampledb") / "sample.duckdb"
    c = store.connect(path)
    workspace.load_sample_logs(c)
    c.close()
    return path


@pytest.fixture
def app_env(monkeypatch, tmp_path):
    """Point the dashboard at a database: ``app_env(path)``; default a fresh empty one."""

    def use(path: Path | None = None) -> Path:
        path = path or tmp_path / "empty.duckdb"
        monkeypatch.setenv("RAGAUDIT_DB", str(path))
        return path

    return use


@pytest.fixture(scope="session", autouse=True)
def _close_cached_connections():
    """Close the dashboard's cached DuckDB connections when the test session ends."""
    yield
    try:
        import streamlit as st

        st.cache_resource.clear()
    except Exception:  # noqa: BLE001 — streamlit not imported by this session: nothing to close
        pass


@pytest.fixture
def sample_con(sample_db):
    """The sample database (SciFact's labels are loaded with it); tests only read it.

    Opened in the same (read-write) mode as the dashboard tests' connections to the shared file: DuckDB
    refuses one process a second connection to a file in another mode, whatever ran first.
    """
    c = store.connect(sample_db)
    yield c
    c.close()

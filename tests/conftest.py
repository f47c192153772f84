"""Shared fixtures: small logs written as real files, and a real in-memory DuckDB store."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from ragaudit_core.logs import store

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:        # the dashboard's helpers (pages/ui) import as `pages.ui`, as under streamlit run
    sys.path.insert(0, str(ROOT))


def write_jsonl(path: Path, records, *, gz: bool = False) -> Path:
    """Write records (dicts, or raw ``bytes``/``str`` lines written verbatim) as JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = []
    for r in records:
        if isinstance(r, bytes):
            chunks.append(r)
        elif isinstance(r, str):
            chunks.append(r.encode("utf-8"))
        else:
            chunks.append(json.dumps(r, ensure_ascii=False).encode("utf-8"))
    data = b"\n".join(chunks) + b"\n"
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def ev(doc: str, span: str | None = None, **kw) -> dict:
    e = {"doc_id": doc}
    if span is not None:
        e["span_hash"] = span
    e.update(kw)
    return e


@pytest.fixture
def con():
    c = store.connect(":memory:")
    yield c
    c.close()


@pytest.fixture
def three_runs(tmp_path: Path) -> Path:
    """The hand-worked fixture of test_stability.py (3 runs × 3 queries)."""
    d = tmp_path / "runs"
    write_jsonl(d / "A.jsonl", [
        {"run_id": "A", "query_id": "q1", "evidence": [ev("d1", "s1"), ev("d2", "s2")]},
        {"run_id": "A", "query_id": "q2", "evidence": []},
        {"run_id": "A", "query_id": "q3", "evidence": [ev("d3", "s3")]},
    ])
    write_jsonl(d / "B.jsonl", [
        {"run_id": "B", "query_id": "q1", "evidence": [ev("d1", "s1"), ev("d2", "s2b")]},
        {"run_id": "B", "query_id": "q2", "evidence": []},
        {"run_id": "B", "query_id": "q3", "evidence": []},
    ])
    write_jsonl(d / "C.jsonl", [
        {"run_id": "C", "query_id": "q1", "evidence": [ev("d1", "s1b"), ev("d4", "s4")]},
        {"run_id": "C", "query_id": "q2", "evidence": [ev("d5", "s5")]},
        {"run_id": "C", "query_id": "q3", "evidence": [ev("d3", "s3")]},
    ])
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


def app_test(page: str):
    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parent.parent
    return AppTest.from_file(str(root / page), default_timeout=120)


XSS = "<img src=x onerror=alert(1)>"


def xss_logs(d: Path) -> Path:
    """Two runs whose query, chunk texts, ids and answers carry HTML/script payloads."""
    text_a = f"Shared start. {XSS} <script>alert(2)</script> tail of A"
    text_b = f"{XSS} <script>alert(2)</script> tail of A and more of B"
    for run, text, start in (("A", text_a, 0), ("B", text_b, 14)):
        write_jsonl(d / f"{run}.jsonl", [
            {"run_id": run, "query_id": "q<b>1</b>", "query": f"What is {XSS}?", "answer": f"Answer {XSS} {run}",
             "config": {"top_k": 2, "chunk_size": 128 if run == "A" else 256, "chunk_overlap": 0},
             "evidence": [{"doc_id": f"doc{XSS}", "text": text, "char_start": start, "char_end": start + len(text)},
                          {"doc_id": "d2", "text": f"other {run}"}]},
        ])
    return d


@pytest.fixture(scope="session", autouse=True)
def _close_cached_connections():
    """Close the dashboard's cached DuckDB connections when the test session ends."""
    yield
    try:
        import streamlit as st

        st.cache_resource.clear()
    except Exception:  # streamlit not imported by this session: nothing to close
        pass

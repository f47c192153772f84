"""Shared fixtures: small logs written as real files, and a real in-memory DuckDB store."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ragaudit_core import store


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

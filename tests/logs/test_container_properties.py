"""Issue #22: one property per container (JSON Lines, JSON document, CSV, Parquet) with good and
bad rows mixed — records + quarantined (+ refused) == rows read, and the other file of the same
call is unaffected."""

from __future__ import annotations

import csv
import json

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

_kinds = st.lists(st.sampled_from(["good", "no-evidence", "null-run", "nan"]), min_size=1, max_size=10)


def _row(kind, i):
    row = {"run_id": "r", "query_id": f"q{i}", "evidence": [f"d{i}"], "score": 1.0}
    if kind == "no-evidence":
        row["evidence"] = None
    elif kind == "null-run":
        row["run_id"] = None
    elif kind == "nan":
        row["score"] = float("nan")  # never rejects
    return row


def _check(tmp_path, path, kinds, extra_rows=0):
    other = write_jsonl(tmp_path / "other.jsonl", [{"run_id": "o", "query_id": "1", "evidence": ["x"]}])
    con = store.connect(":memory:")
    report = ingest_paths(con, [path, other])
    f, o = report.files
    quarantined = con.execute("SELECT count(*) FROM quarantine WHERE path = ?", [str(path)]).fetchone()[0]
    good = sum(k in ("good", "nan") for k in kinds)
    assert f.n_lines == len(kinds) + extra_rows
    assert f.n_loaded + quarantined == f.n_lines and f.n_loaded == good
    assert o.status == "loaded" and con.execute("SELECT count(*) FROM records WHERE run_id = 'o'").fetchone()[0] == 1
    assert report.n_records == good + 1


_SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_SETTINGS
@given(_kinds)
def test_jsonl(tmp_path, kinds):
    rows = [json.dumps(_row(k, i)) for i, k in enumerate(kinds)]
    _check(tmp_path, write_jsonl(tmp_path / "rows.jsonl", rows), kinds)


@_SETTINGS
@given(_kinds, st.sampled_from(["array", "data", "concatenated"]))
def test_json_document(tmp_path, kinds, shape):
    rows = [_row(k, i) for i, k in enumerate(kinds)]
    path = tmp_path / "rows.json"
    if shape == "array":
        text = json.dumps(rows, indent=2)
    elif shape == "data":
        text = json.dumps({"data": rows}, indent=2)
    else:
        text = "".join(json.dumps(r, indent=2) for r in rows)
    path.write_text(text, encoding="utf-8")
    _check(tmp_path, path, kinds)


@_SETTINGS
@given(_kinds)
def test_csv(tmp_path, kinds):
    # a CSV cell is text, and the native contract wants an evidence list: CSV rows here are Ragas rows
    path = tmp_path / "rows.csv"
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, delimiter=";")
        w.writerow(["user_input", "retrieved_contexts", "response"])
        for i, k in enumerate(kinds):
            ctx = {"good": json.dumps([f"p{i}"]), "nan": repr([f"p; {i}"]), "no-evidence": "not a list"}.get(k, "[3]")
            w.writerow([f"question {i}?", ctx, f"a{i}"])
    _check(tmp_path, path, kinds)


@_SETTINGS
@given(_kinds)
def test_parquet(tmp_path, kinds):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.Table.from_pylist([_row(k, i) for i, k in enumerate(kinds)]), path)
    _check(tmp_path, path, kinds)

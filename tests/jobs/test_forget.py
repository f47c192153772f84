"""Clearing or removing a run reaches the job queue beside the database file."""

from __future__ import annotations

from ragaudit_core import workspace
from ragaudit_core.jobs import plan_judge, queue
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import pipeline, write_jsonl


def _queued(tmp_path):
    db = tmp_path / "q.duckdb"
    con = store.connect(db)
    recs = [pipeline(run, "q1", text="[Source: D1, p. 2]") for run in ("a", "b")]
    ingest_paths(con, [write_jsonl(tmp_path / "p.jsonl", recs)])
    for run in ("a", "b"):
        spec, inputs = plan_judge(con, run, "q1", model="m", endpoint="http://127.0.0.1:9/v1", seeds=(0,))
        queue.enqueue(con, spec, inputs)
    return con


def test_removing_a_run_forgets_its_jobs_and_clearing_forgets_all(tmp_path):
    con = _queued(tmp_path)
    assert sorted(j.spec.run_id for j in queue.jobs(con)) == ["a", "b"]
    workspace.remove_runs(con, ["a"])
    assert [j.spec.run_id for j in queue.jobs(con)] == ["b"]
    workspace.clear(con)
    assert queue.jobs(con) == []
    con.close()

"""Model jobs (issue #16): one description, one stored result, wherever it runs — in the
process, in the background worker, on a real local Ray cluster (packaged MiniLM and SmolLM2;
small settings so the suite stays quick)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from ragaudit_core.attribution.storage import stored_payloads
from ragaudit_core.jobs import JobSpec, plan, queue, result_keys, run_batch
from ragaudit_core.jobs.worker import work
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import write_jsonl

pytestmark = pytest.mark.slow
SMALL = dict(max_docs=2, ig_steps=4, max_new_tokens=6, method="exact")
DOCS = {
    "q1": ("Where was Marie Curie born?", ["Marie Curie was born in Warsaw in 1867.", "Paris is in France."]),
    "q2": ("What is the capital of France?", ["Lyon is a city in France.", "Paris is the capital of France."]),
}


def _db(tmp_path, name="jobs.duckdb"):
    recs = [
        {
            "run_id": "base",
            "query_id": q,
            "query": text,
            "evidence": [{"doc_id": f"{q}-d{i}", "text": t} for i, t in enumerate(docs)],
        }
        for q, (text, docs) in DOCS.items()
    ]
    path = tmp_path / name
    with store.connect(path) as con:
        ingest_paths(con, [write_jsonl(tmp_path / f"{name}.jsonl", recs)])
    return path


def _values(con, jobs) -> dict[str, np.ndarray]:
    out = {}
    for spec, _ in jobs:
        (payload,) = stored_payloads(con, list(result_keys(spec).values())).values()
        out[spec.query_id] = np.asarray(payload["values"])
    return out


def test_a_two_query_batch_on_a_local_ray_cluster_stores_the_in_process_values(tmp_path):
    """Same seeded jobs, two runners: the stored Shapley values agree (Ray's workers run torch
    on one thread each, so sums may round differently: within 1e-5), rankings are identical;
    a second batch finds both stored and skips them; a job whose model cannot load fails with
    its query while the other is kept."""
    local, remote = store.connect(_db(tmp_path, "local.duckdb")), store.connect(_db(tmp_path, "ray.duckdb"))
    jobs_local = [plan(local, "base", q, **SMALL) for q in DOCS]
    jobs_ray = [plan(remote, "base", q, **SMALL) for q in DOCS]
    assert [s for s, _ in jobs_local] == [s for s, _ in jobs_ray]
    rep = run_batch(local, jobs_local)
    assert sorted(rep.done) == ["q1", "q2"] and not rep.failed
    seen = []
    rep = run_batch(remote, jobs_ray, ray="local", workers=2, on_result=lambda s, st: seen.append((s.query_id, st)))
    assert sorted(rep.done) == ["q1", "q2"] and not rep.failed and rep.runner == "ray (local)"
    assert sorted(seen) == [("q1", "done"), ("q2", "done")]
    a, b = _values(local, jobs_local), _values(remote, jobs_ray)
    for q in DOCS:
        np.testing.assert_allclose(a[q], b[q], atol=1e-5)
        assert np.argsort(-a[q].mean(axis=1)).tolist() == np.argsort(-b[q].mean(axis=1)).tolist()
    # resume: both stored, nothing recomputed
    again = run_batch(remote, jobs_ray, ray="local", workers=2)
    assert sorted(again.skipped) == ["q1", "q2"] and not again.done
    # a failing task is reported with its query; the other result lands
    broken = (jobs_ray[0][0].model_copy(update={"generator": str(tmp_path / "no-such-model")}), jobs_ray[0][1])
    fresh = store.connect(_db(tmp_path, "fail.duckdb"))
    rep = run_batch(fresh, [broken, plan(fresh, "base", "q2", **SMALL)], ray="local", workers=2)
    assert rep.done == ["q2"] and [q for q, _ in rep.failed] == ["q1"]
    assert "cannot load generator" in rep.failed[0][1]


def test_the_background_worker_runs_reports_and_cancels(tmp_path):
    """A queued job runs in the worker with progress written to the queue (coalitions done /
    total in the label); a second job cancelled while running ends as cancelled, its result
    not stored; an estimate for the finished settings is its measured time."""
    path = _db(tmp_path)
    with store.connect(path) as con:
        spec, inputs = plan(con, "base", "q1", **SMALL)
        queue.enqueue(con, spec, inputs)
    labels = []

    def watch():
        while True:
            try:
                with store.connect(path, wait_s=5) as c:
                    (j,) = queue.jobs(c, job_ids=[spec.job_id()])
            except store.StoreBusy:
                continue
            labels.append(j.label)
            if j.status in ("done", "failed"):
                return
            time.sleep(0.2)

    t = threading.Thread(target=watch)
    t.start()
    assert work(str(path), idle_s=0, max_jobs=1) == 1
    t.join(timeout=60)
    with store.connect(path) as con:
        (job,) = queue.jobs(con)
        assert job.status == "done" and job.fraction == 1.0
        assert stored_payloads(con, list(result_keys(spec).values()))
        assert queue.estimate_seconds(con, spec) == (pytest.approx(job.elapsed_s), 1)
        # a new job, cancelled as soon as it runs
        slow, inp = plan(con, "base", "q2", **{**SMALL, "ig_steps": 64})
        queue.enqueue(con, slow, inp)

    def cancel_when_running():
        while True:
            with store.connect(path, wait_s=30) as c:
                (j,) = queue.jobs(c, job_ids=[slow.job_id()])
                if j.status == "running":
                    queue.cancel(c, [slow.job_id()])
                    return
            time.sleep(0.1)

    t = threading.Thread(target=cancel_when_running)
    t.start()
    work(str(path), idle_s=0, max_jobs=1)
    t.join(timeout=60)
    with store.connect(path) as con:
        (j,) = queue.jobs(con, job_ids=[slow.job_id()])
        assert j.status == "cancelled"
        assert not stored_payloads(con, list(result_keys(slow).values()))


def test_progress_counts_coalitions_done_of_total(tmp_path):
    """Exact Shapley over 2 documents asks for 2² = 4 coalitions: the labels count up to 4 of 4
    (at most every 0.55 s, each phase's first always) and the fraction never goes back."""
    from ragaudit_core.jobs import execute

    with store.connect(_db(tmp_path)) as con:
        spec, inputs = plan(con, "base", "q1", **SMALL)
    seen = []
    execute(spec, inputs, progress=lambda label, frac: seen.append((label, frac)))
    shap = [lab for lab, _ in seen if lab.startswith("Shapley")]
    counts = [int(lab.split("coalition ")[1].split(" of ")[0]) for lab in shap]
    assert shap and all(lab.endswith(" of 4") for lab in shap) and counts == sorted(set(counts)) and counts[0] >= 1
    fracs = [f for _, f in seen]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0
    assert isinstance(spec, JobSpec) and spec.job_id() == spec.model_copy(update={"device": "cuda"}).job_id()


def test_an_error_over_several_lines_is_kept_as_one(tmp_path):
    """transformers' tokenizer error spans five lines ("(1) a `tokenizers` library serialization
    file, \\n(2) …"): the job keeps it as one line, its words in order, for the page's one paragraph
    and the CLI's one line."""
    bad = tmp_path / "model"
    bad.mkdir()
    (bad / "config.json").write_text('{"model_type": "no-such-arch"}')
    path = _db(tmp_path)
    with store.connect(path) as con:
        spec, inputs = plan(con, "base", "q1", generator=str(bad), **SMALL)
        queue.enqueue(con, spec, inputs)
    assert work(str(path), idle_s=0, max_jobs=1) == 1
    with store.connect(path) as con:
        (job,) = queue.jobs(con)
    assert job.status == "failed" and job.error.startswith("ModelLoadError: cannot load generator")
    assert "\n" not in job.error and "file, (2) a slow tokenizer" in job.error


def test_a_failed_job_keeps_its_message_and_where_its_traceback_is(tmp_path, caplog):
    """The worker logs a failure with its traceback; the job keeps one line: the error and the
    log's location."""
    from ragaudit_core.jobs.worker import log_file

    path = _db(tmp_path)
    with store.connect(path) as con:
        spec, inputs = plan(con, "base", "q1", generator=str(tmp_path / "no-such-model"), **SMALL)
        queue.enqueue(con, spec, inputs)
    with caplog.at_level("ERROR", logger="ragaudit.worker"):
        assert work(str(path), idle_s=0, max_jobs=1) == 1
    with store.connect(path) as con:
        (job,) = queue.jobs(con)
    assert job.status == "failed"
    assert job.error.startswith("ModelLoadError: cannot load generator")
    assert job.error.endswith(f"(traceback in {log_file(str(path))})")
    assert "\n" not in job.error and "  " not in job.error  # one line, as the pages and the CLI show it
    (rec,) = [r for r in caplog.records if r.name == "ragaudit.worker"]
    assert rec.exc_info is not None and "Traceback" in caplog.text and spec.job_id() in rec.getMessage()

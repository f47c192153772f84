"""AppTest: the attributions page, on the real packaged models (a 3-document query)."""

from __future__ import annotations

import time

import pytest

from ragaudit_core.attribution.storage import stored_attribution
from ragaudit_core.jobs import plan, queue
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import XSS, app_test, plain, released_app_test, write_jsonl

pytestmark = pytest.mark.slow
PAGE = "pages/5_Attributions.py"


def test_no_texts_says_what_to_do(app_env, tmp_path):
    path = app_env()
    at = app_test(PAGE).run()
    assert any("No logs are loaded yet" in i.value for i in at.info)
    ingest_paths(
        store.connect(path), [write_jsonl(tmp_path / "d.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d1"]}])]
    )
    at = app_test(PAGE).run()
    assert any("carry no document texts" in i.value for i in at.info)


def _settings(at, **values):
    for label, v in values.items():
        next(n for n in at.number_input if n.label == label).set_value(v)
    return at.run()


def _until(at, done, timeout: float = 240.0):
    """Rerun the page (as the job panel's timer does in a browser) until ``done(at)``."""
    t0 = time.monotonic()
    while not done(at):
        assert time.monotonic() - t0 < timeout, "the queued job did not finish"
        time.sleep(1.0)
        at.run()
    return at


def test_a_queued_job_runs_in_the_background_and_its_result_appears(app_env, tmp_path, monkeypatch):
    """The button queues a job; a real background worker process (real MiniLM and SmolLM2)
    runs it while the page keeps answering; the result appears on a rerun; a second visit
    shows it at once, and the next request has a measured estimate."""
    path = app_env()
    docs = [
        "Marie Curie was born in Warsaw in 1867.",
        f"Paris {XSS} is the capital of France.",
        "Curie won two Nobel prizes.",
    ]
    with store.connect(path) as con:  # closed: the worker is another process
        ingest_paths(
            con,
            [
                write_jsonl(
                    tmp_path / "r.jsonl",
                    [
                        {
                            "run_id": "base",
                            "query_id": "q1",
                            "query": "Where was Marie Curie born?",
                            "evidence": [{"doc_id": f"D{i}", "text": t} for i, t in enumerate(docs)],
                        }
                    ],
                )
            ],
        )
    at = _settings(released_app_test(PAGE, monkeypatch).run(), **{"IG points L": 8, "Answer tokens at most": 12})
    assert any("Not measured yet with these settings" in c.value for c in at.caption)
    assert at.caption[0].value.startswith("Does the generator use what the retriever ranked?")  # what it shows
    next(b for b in at.button if b.label == "Explain this query").click().run()
    assert not at.exception and not at.error
    with store.connect(path) as con:
        (job,) = queue.jobs(con)
    assert job.status in ("queued", "running")
    _until(at, lambda a: any(m.label == "wasted retrieval" for m in a.metric))
    assert not at.exception and not at.error
    con = store.connect(path)  # closed below, before the second visit
    (res,) = stored_attribution(con, "base", "q1")
    (job,) = queue.jobs(con)
    assert job.status == "done" and job.fraction == 1.0 and job.elapsed_s > 0
    shown = {m.label: m.value for m in at.metric}
    assert shown["wasted retrieval"] == ("yes" if res["wasted_retrieval"] else "no")
    assert shown["generator ranking"] == " > ".join(str(i + 1) for i in res["generator_ranking"])
    assert res["method"] == "exact" and res["ig_documents"][0]["steps"] == 8  # auto: 3 documents → exact
    bodies = [h.proto.body for h in at.get("html")]
    assert len(bodies) == 3 * 2 + 2  # query + document per tab, legend, answer
    # the payload is split into words, each escaped: its pieces show as text, no tag is built
    assert any("&lt;" in b and "onerror" in b for b in bodies)
    assert not any("<img" in b or "<script" in b for b in bodies)
    # the estimate for the same settings is now measured: the job's own wall time
    est = queue.estimate_seconds(con, job.spec)
    assert est == (pytest.approx(job.elapsed_s), 1)
    con.close()
    # a second visit shows the stored result without a button press
    at2 = _settings(released_app_test(PAGE, monkeypatch).run(), **{"IG points L": 8, "Answer tokens at most": 12})
    assert {m.label: m.value for m in at2.metric}["wasted retrieval"] == shown["wasted retrieval"]
    # one query explained: its run mean is its own curve, not drawn again under it (the walk saw a legend
    # entry for a line hidden beneath "WARG, original")
    import json

    warg = next(c for c in at2.get("plotly_chart") if "WARG" in c.proto.spec)
    names = [t.get("name") for t in json.loads(warg.proto.spec)["data"]]
    assert "WARG, original" in names and not [n for n in names if n and n.startswith("run mean")]
    # the run's stored results with their intervals: a rate over one query has Wilson's (k of 1),
    # the mean Spearman over one query none
    from ragaudit_core.intervals import wilson

    table = next(df.value for df in at2.dataframe if "wasted_retrieval_ci" in df.value.columns)
    lo, hi = wilson(int(res["wasted_retrieval"]), 1)
    assert table["wasted_retrieval_ci"].iloc[0] == f"[{lo:.1%}, {hi:.1%}]"
    assert table["spearman_ci"].isna().all() and int(table["queries"].iloc[0]) == 1


def test_a_queued_job_can_be_cancelled(app_env, tmp_path):
    """Cancelling a queued job (no worker has taken it yet) ends it at once; the page says so."""
    path = app_env()
    with store.connect(path) as con:
        ingest_paths(
            con,
            [
                write_jsonl(
                    tmp_path / "r.jsonl",
                    [
                        {
                            "run_id": "base",
                            "query_id": "q1",
                            "query": "Where?",
                            "evidence": [{"doc_id": "D0", "text": "Warsaw."}, {"doc_id": "D1", "text": "Paris."}],
                        }
                    ],
                )
            ],
        )
        spec, inputs = plan(con, "base", "q1")
        queue.enqueue(con, spec, inputs)  # queued, no worker started
    at = app_test(PAGE).run()
    assert any("Queued" in (p.proto.text or "") for p in at.get("progress"))
    next(b for b in at.button if b.label == "Cancel").click().run()
    at.run()
    assert any(i.value == "The last attempt was cancelled." for i in at.info)
    with store.connect(path) as con:
        assert [j.status for j in queue.jobs(con)] == ["cancelled"]


def test_the_query_picker_offers_only_the_chosen_runs_queries(app_env, tmp_path):
    """A query remembered from another run (an upload's "0") never opens the page on an error."""
    path = app_env()
    texts = [{"doc_id": f"d{i}", "text": f"passage {i}"} for i in range(2)]
    recs = [{"run_id": "k10-c256-o32", "query_id": "7", "query": "seven?", "evidence": texts}]
    recs += [{"run_id": "upload", "query_id": "0", "query": "zero?", "evidence": texts}]
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "d.jsonl", recs)])
    at = app_test(PAGE)
    at.session_state["ragaudit.query"] = "0"
    at.run()
    assert not at.exception and not at.error
    assert at.selectbox[0].value == "k10-c256-o32"
    assert next(s for s in at.selectbox if s.label == "Query").options == ["7 — seven?"]


def test_explain_all_says_how_many_and_how_long_first(app_env, tmp_path):
    path = app_env()
    texts = [{"doc_id": f"d{i}", "text": f"passage {i}"} for i in range(2)]
    recs = [{"run_id": "r", "query_id": q, "query": f"{q}?", "evidence": texts} for q in ("1", "2", "3")]
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "d.jsonl", recs)])
    at = app_test(PAGE).run()
    next(b for b in at.button if b.label.startswith("Explain all queries of run r")).click().run()
    assert not at.exception
    (ask,) = [plain(w.value) for w in at.warning if "Queue 3 explanations of run r?" in plain(w.value)]
    assert "About 3 ×" in ask and "unit costs measured on 2 CPU cores" in ask
    at.button(key="attr.confirm_all.no").click().run()
    assert not any("Queue 3 explanations" in plain(w.value) for w in at.warning)
    assert queue.jobs(path) == []  # nothing was queued


@pytest.mark.parametrize("hostile", ["too large", "not a first estimate"])
def test_a_running_jobs_partial_that_is_too_large_or_not_one_is_left_out_with_the_reason(app_env, tmp_path, hostile):
    """A file put in place of the first estimate (jobs/partial.py): over partial.MAX_BYTES (sparse, 2 GiB),
    or JSON without the fields the page draws. The page says why it shows none, and the rest of it runs."""
    from ragaudit_core.jobs import heartbeat, partial

    path = app_env()
    docs = [{"doc_id": "D0", "text": "Warsaw."}, {"doc_id": "D1", "text": "Paris."}]
    row = {"run_id": "base", "query_id": "q1", "query": "Where?", "evidence": docs}
    with store.connect(path) as con:
        ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", [row])])
        spec, inputs = plan(con, "base", "q1")
        queue.enqueue(con, spec, inputs)
    beat = heartbeat.Heartbeat(str(path)).start()
    try:
        job_id, _spec, _inputs = queue.claim(str(path), beat.token)
        queue.progress(str(path), job_id, "Shapley (exact), original order: coalition 3 of 4", 0.6, token=beat.token)
        f = partial.partial_file(path, job_id)
        f.parent.mkdir(parents=True, exist_ok=True)
        if hostile == "too large":
            with open(f, "wb") as fh:
                fh.truncate(2 << 30)
        else:
            f.write_text('[{"doc_ids": "D0", "importance": {"x": 1}}]')
        at = app_test(PAGE).run()
        assert not at.exception
        said = " ".join(c.value for c in at.caption)
        assert ("over the 4,194,304" if hostile == "too large" else "does not hold an attribution") in said
        assert "so it is not shown" in said and not at.dataframe
    finally:
        beat.stop()
        partial.clear(path, job_id)


def test_a_running_jobs_first_estimate_shows_under_its_progress(app_env, tmp_path):
    """While an anytime job refines, the page shows its first estimate (kept beside the database
    by the worker, jobs/partial.py): the documents with their importance, named by its estimator."""
    from ragaudit_core.jobs import heartbeat, partial

    path = app_env()
    docs = [{"doc_id": "D0", "text": "Warsaw."}, {"doc_id": "D1", "text": "Paris."}]
    with store.connect(path) as con:
        ingest_paths(
            con,
            [
                write_jsonl(
                    tmp_path / "r.jsonl", [{"run_id": "base", "query_id": "q1", "query": "Where?", "evidence": docs}]
                )
            ],
        )
        spec, inputs = plan(con, "base", "q1")
        queue.enqueue(con, spec, inputs)
    beat = heartbeat.Heartbeat(str(path)).start()  # a live worker by its heartbeat: nothing is restarted
    try:
        job_id, _spec, _inputs = queue.claim(str(path), beat.token)
        queue.progress(str(path), job_id, "Shapley (exact), original order: coalition 3 of 4", 0.6)
        first = {"doc_ids": ["D0", "D1"], "importance": [0.75, -0.25], "estimate_stage": "first", "method": "marginal"}
        partial.write(path, job_id, [first])
        at = app_test(PAGE).run()
        assert any("First estimate (marginal contributions in retriever order)" in c.value for c in at.caption)
        (df,) = at.dataframe
        assert list(df.value["document"]) == ["D0", "D1"] and list(df.value["importance"]) == [0.75, -0.25]
    finally:
        beat.stop()
        partial.clear(path, job_id)

"""Settings for runs whose logs carry none: another tool's export (Ragas, a trace export whose
metadata names none) logs no top-k or chunk size, so every page called what changed between two of
them "unknown (no config)" — and nothing said how to tell it. ``ragaudit ingest --settings`` and the
upload's "Settings of these runs" give them to the runs a load makes that log none."""

from __future__ import annotations

import pytest

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import store
from ragaudit_core.logs.runs import parse_settings
from ragaudit_core.stability.metrics import compute_stability
from ragaudit_core.workspace import load_paths
from tests.helpers import write_jsonl

QS = ["Does aspirin prevent stroke?", "Is coffee harmful?"]


def _ragas(tmp_path, name, passages):
    return write_jsonl(tmp_path / f"{name}.jsonl", [{"user_input": q, "retrieved_contexts": passages} for q in QS])


def test_settings_given_at_load_name_what_changed(tmp_path):
    con = store.connect(":memory:")
    r = load_paths(con, [_ragas(tmp_path, "a", ["x", "y"])], settings=parse_settings("top_k=10, chunk_size=256"))
    assert not [w for w in r.warnings if "settings" in w.message]
    load_paths(con, [_ragas(tmp_path, "b", ["x"])], settings=parse_settings("top_k=5; chunk_size=256; embedder=bge"))
    rows = con.execute("SELECT run_id, top_k, chunk_size, embedder, config FROM runs ORDER BY run_id").fetchall()
    assert rows[0][:4] == ("a", 10, 256, None) and rows[1][:4] == ("b", 5, 256, "bge")
    assert rows[1][4] == '{"chunk_size": 256, "embedder": "bge", "top_k": 5}'
    res = compute_stability(con)
    assert set(res.pairs["changed"]) == {"top_k"}


def test_a_run_that_logs_its_settings_keeps_them(tmp_path):
    con = store.connect(":memory:")
    native = write_jsonl(
        tmp_path / "n.jsonl", [{"run_id": "n", "query_id": "1", "config": {"top_k": 3}, "cited": ["d"]}]
    )
    report = load_paths(con, [native, _ragas(tmp_path, "a", ["x"])], settings={"top_k": 7})
    assert con.execute("SELECT run_id, top_k FROM runs ORDER BY run_id").fetchall() == [("a", 7), ("n", 3)]
    (kept,) = [w for w in report.warnings if "run 'n' logs its own settings" in w.message]
    assert kept.kind == "note"  # the rule applied, as documented: a note, not a warning


@pytest.mark.parametrize("bad", ["top_k", "=5", "top_k=5,,", "top k=5"])
def test_settings_that_do_not_read_are_refused_in_one_sentence(bad):
    with pytest.raises(RagAuditError, match="settings are KEY=VALUE pairs"):
        parse_settings(bad)


def test_a_runs_first_logged_config_is_kept_even_after_records_that_log_none(tmp_path):
    """A run's config is the first one *logged*: a first record (or trace) without one does not
    leave the run without settings; a different one after it is still the mismatch warning."""
    con = store.connect(":memory:")
    log = write_jsonl(
        tmp_path / "n.jsonl",
        [
            {"run_id": "n", "query_id": "1", "cited": ["d"]},
            {"run_id": "n", "query_id": "2", "config": {"top_k": 5, "chunk_size": 128}, "cited": ["d"]},
            {"run_id": "n", "query_id": "3", "config": {"top_k": 9}, "cited": ["d"]},
        ],
    )
    report = load_paths(con, [log])
    assert con.execute("SELECT top_k, chunk_size FROM runs").fetchall() == [(5, 128)]
    (w,) = [w for w in report.warnings if w.code == "config-mismatch"]
    assert w.line_no == 3 and "than at" in w.message and "line 2" in w.message


def test_a_file_rolled_back_gives_back_the_config_it_gave_a_run(tmp_path):
    """a.jsonl holds run n's first record (no config); b.jsonl logs n's config, then passes the
    byte limit (~3.6 MB read in blocks: the records before the limit are noted) and is rolled
    back: n keeps a.jsonl's record and is stored, without b's config."""
    from ragaudit_core.logs.ingest import IngestOptions, ingest_paths

    a = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "n", "query_id": "1", "cited": ["d"]}])
    b_records = [{"run_id": "n", "query_id": str(i), "config": {"top_k": 5}, "cited": ["d"]} for i in range(2, 40_000)]
    b = write_jsonl(tmp_path / "b.jsonl", b_records)
    con = store.connect(":memory:")
    rep = ingest_paths(con, [a, b], IngestOptions(max_file_bytes=2_000_000))
    assert [f.status for f in rep.files] == ["loaded", "unreadable"]
    assert con.execute("SELECT run_id, top_k, config FROM runs").fetchall() == [("n", None, None)]

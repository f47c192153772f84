"""A database opened read-only (a CI artifact, ``ragaudit report --db``) gives the report every
section: what is computed on the way (answer similarities, derived results) is not stored, and the
tables RagAudit makes on first use (attributions, judges' verdicts) read as empty when never made."""

from __future__ import annotations

import numpy as np

from ragaudit_core.attribution.storage import batch_tables, stored_attribution, stored_payloads
from ragaudit_core.fidelity.judging import has_verdicts, verdict_table
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.review.report import ReportOptions, gather
from tests.helpers import ev, pipeline, write_jsonl


class _FakeEncoder:
    def encode(self, texts, **_kw):
        return np.ones((len(texts), 4)) / 2.0


def _db(tmp_path):
    recs = [
        {"run_id": run, "query_id": q, "answer": f"{run} says {q}", "evidence": [ev(d, d + "s") for d in docs]}
        for run, docs in (("A", ["d1", "d2"]), ("B", ["d1", "d3"]))
        for q in ("q1", "q2", "q3")
    ]
    db = tmp_path / "audit.duckdb"
    con = store.connect(db)
    ingest_paths(
        con,
        [
            write_jsonl(tmp_path / "ev.jsonl", recs),
            write_jsonl(tmp_path / "prov.jsonl", [pipeline("base", "q1"), pipeline("cand", "q1")]),
        ],
    )
    con.close()
    return db


def test_the_report_gathers_every_section_from_a_read_only_database(tmp_path):
    db = _db(tmp_path)
    ro = store.connect(db, read_only=True)
    try:
        stored = ro.execute("SELECT count(*) FROM derived_results").fetchall()
        data = gather(ro, ReportOptions(baseline="A", candidate="B", embedder=_FakeEncoder()))
        assert data.failed == []
        assert [(p.run_a, p.run_b, p.summary["n_queries"], p.summary["mean_sim"]) for p in data.probes] == [
            ("A", "B", 3, 1.0)
        ]
        assert ro.execute("SELECT count(*) FROM derived_answer_similarity").fetchall() == [(0,)]
        assert ro.execute("SELECT count(*) FROM derived_results").fetchall() == stored
    finally:
        ro.close()


def test_tables_made_on_first_use_read_as_empty_when_the_database_is_read_only(tmp_path):
    db = _db(tmp_path)
    ro = store.connect(db, read_only=True)
    try:
        assert batch_tables(ro, "A") == {}
        assert stored_payloads(ro, ["k"]) == {}
        assert stored_attribution(ro, "A", "q1") == []
        assert has_verdicts(ro, "k") is False
        table = verdict_table(ro, "base")
        assert table.empty and list(table.columns)[:3] == ["query_id", "citation", "rule"]
        tables = {t for (t,) in ro.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert not tables & {"attributions", "judge_verdicts"}  # nothing made, not even as a temporary table
    finally:
        ro.close()
    rw = store.connect(db)  # a writable database makes them as before
    try:
        assert batch_tables(rw, "A") == {} and has_verdicts(rw, "k") is False
        tables = {t for (t,) in rw.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert {"attributions", "judge_verdicts"} <= tables
    finally:
        rw.close()

"""The registry of tables holding run data: every table a feature creates is registered, and
clearing the data leaves no row in any of them (a verdict, a job or an attribution never outlives
the logs it came from)."""

from __future__ import annotations

from ragaudit_core import workspace
from ragaudit_core.attribution.storage import store_payloads
from ragaudit_core.fidelity.judging import store_verdicts
from ragaudit_core.jobs import plan, queue
from ragaudit_core.logs import store
from ragaudit_core.logs.tables import SETTINGS_TABLES, TABLES
from tests.helpers import ev, pipeline, write_jsonl


def _everything(tmp_path):
    """A database where every feature has written: evidence and provenance logs, a rejected line,
    a warning, relevance labels, the stability cache, answer similarities, an attribution, a
    judge's verdicts and a queued job."""
    d = tmp_path / "logs"
    for run, span in (("A", "s1"), ("B", "s2")):
        write_jsonl(
            d / f"{run}.jsonl",
            [
                {
                    "run_id": run,
                    "query_id": "q1",
                    "query": "what?",
                    "answer": f"answer {run}",
                    "evidence": [ev("d1", span, text=f"text {run}"), ev("d1", span, text=f"text {run}")],
                },
                "not json",
            ],
        )
    write_jsonl(d / "prov.jsonl", [pipeline("P", "q1")])
    (d / "qrels").mkdir()
    (d / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    con = store.connect(tmp_path / "all.duckdb")
    rep = workspace.load_paths(con, [d])  # also stores the stability overview (derived_results)
    assert rep.n_records == 2 and rep.n_provenance == 1 and rep.rejected and rep.warnings and rep.labels
    # a stored answer similarity (the probe writes these; its model is not what this test is about)
    con.execute("INSERT INTO derived_answer_similarity VALUES ('A', 'B', 'q1', 'm', 0.5)")
    spec, inputs = plan(con, "A", "q1", max_docs=1)
    payload = {"wasted_retrieval": False, "noise_distraction": False, "spearman": None}
    store_payloads(con, [("k", {**spec.model_dump(), "condition": "original"}, payload)])
    store_verdicts(
        con,
        "judge-x",
        "P",
        "q1",
        [
            dict.fromkeys(
                (
                    "citation_index",
                    "citation",
                    "rule_score",
                    "judge",
                    "seed",
                    "verdict",
                    "confidence",
                    "matching_chunk_id",
                    "explanation",
                    "coordinate_fidelity",
                ),
                0,
            )
            | {"citation": "c", "judge": "j"}
        ],
    )
    queue.enqueue(con, spec, inputs)
    return con


def test_every_table_of_run_data_is_registered_and_clearing_empties_them(tmp_path):
    con = _everything(tmp_path)
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall()}
    unknown = tables - set(TABLES) - SETTINGS_TABLES
    assert not unknown, f"tables not in ragaudit_core.logs.tables: {sorted(unknown)}"
    filled = {t for t in tables - SETTINGS_TABLES if con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0]}
    assert filled == tables - SETTINGS_TABLES  # the fixture wrote to every one of them
    store.clear_data(con)
    left = {
        t: n for t in tables - SETTINGS_TABLES if (n := con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0])
    }
    assert left == {}
    assert store.get_meta(con, "schema_version") is not None  # settings stay
    con.close()


def test_every_registered_table_names_its_owner_and_run_columns():
    for t in TABLES.values():
        assert t.owner.startswith("ragaudit_core.") and t.holds
        assert all(c.startswith("run") for c in t.run_columns)


def test_the_rows_the_ingest_builds_are_typed_from_the_one_declaration_of_each_table():
    """Each spine table's Arrow schema (the ingest's rows) has the columns DuckDB creates from
    SCHEMA_SQL, in order, each type the one that inserts unchanged; an empty batch of it inserts."""
    import pyarrow as pa

    from ragaudit_core.logs.schema import expected_shape
    from ragaudit_core.logs.writer import EVIDENCE_SCHEMA, QUARANTINE_SCHEMA, arrow_schema

    as_duckdb = {
        pa.string(): "VARCHAR",
        pa.int32(): "INTEGER",
        pa.int64(): "BIGINT",
        pa.float64(): "DOUBLE",
        pa.binary(): "BLOB",
        pa.timestamp("us"): "TIMESTAMP",
        pa.list_(pa.string()): "VARCHAR[]",
    }
    shape = expected_shape()
    con = store.connect(":memory:")
    for table, columns in shape.items():
        schema = arrow_schema(table)
        assert [(f.name, as_duckdb[f.type]) for f in schema] == [(c, t) for c, (t, _) in columns.items()], table
        con.from_arrow(schema.empty_table()).insert_into(table)
    assert (
        EVIDENCE_SCHEMA.names[:3] == ["run_id", "query_id", "position"]
        and EVIDENCE_SCHEMA.field("score").type == pa.float64()
    )
    assert QUARANTINE_SCHEMA.field("raw_bytes").type == pa.binary()

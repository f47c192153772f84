"""Issue #21 item 3 and #22 item 1: log formats are a registry, and each record is read as what it
is — never decided by the first record of its file."""

from __future__ import annotations

import ast
import json
import math

import pytest

from ragaudit_core.logs import formats, store
from ragaudit_core.logs.decode import FastRecord
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.traces import Span, provenance_record
from tests.helpers import ROOT, write_jsonl

RAGAS = {"user_input": "What causes tides?", "retrieved_contexts": ["The Moon pulls."], "response": "The Moon."}
NATIVE = {"run_id": "r", "query_id": "n1", "evidence": [{"doc_id": "d1", "text": "t1"}]}
PHOENIX = {
    "span_kind": "RETRIEVER",
    "context.trace_id": "t1",
    "attributes.input.value": "Who wrote Hamlet?",
    "attributes.retrieval.documents.0.document.id": "hamlet",
    "attributes.retrieval.documents.0.document.content": "Hamlet is a play by Shakespeare.",
}


def _load(path, **opts):
    con = store.connect(":memory:")
    return con, ingest_paths(con, [path], IngestOptions(**opts))


# ---------------------------------------------------------------- the registry


def test_every_format_is_one_registered_module_with_a_detector_and_a_mapper():
    names = ("native", "ragchecker", "ragas", "openinference", "langsmith", "langfuse", "mlflow", "trulens", "deepeval")
    assert names == formats.NAMES
    for f in formats.FORMATS:
        module = (ROOT / "ragaudit_core/logs/formats" / f"{f.name}.py").read_text(encoding="utf-8")
        assert "FORMAT = LogFormat(" in module, f.name
        assert callable(f.detect)
        assert (f.kind == "record") == (f.map_record is not None)
        assert (f.kind == "trace") == (f.read_span is not None)
    assert formats.FOREIGN_FORMATS == ("ragchecker", "ragas", "deepeval")
    assert formats.TRACE_FORMATS == ("openinference", "langsmith", "langfuse", "mlflow", "trulens")
    with pytest.raises(formats.FormatError, match="formats are: native, ragchecker"):
        formats.get("bogus")


def test_no_branch_on_a_format_name_outside_the_formats_package():
    names = {n for f in formats.FORMATS if f.kind != "native" for n in (f.name, f.label)}
    for path in (ROOT / "ragaudit_core").rglob("*.py"):
        if "formats" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                consts = {c.value for c in ast.walk(node) if isinstance(c, ast.Constant)}
                assert not consts & names, f"{path.relative_to(ROOT)}:{node.lineno} compares with a format name"


def test_the_fast_decoder_declines_every_other_formats_marker_key():
    fields = set(FastRecord.__struct_fields__)
    for f in formats.FORMATS:
        assert f.keys <= fields, f"{f.name}: {sorted(f.keys - fields)}"


# ---------------------------------------------------------------- per record, never the first


def test_a_file_may_mix_formats_and_a_cut_first_line_decides_nothing(tmp_path):
    lines = [
        '{"user_input": "cut',
        RAGAS,
        NATIVE,
        PHOENIX,
        {"span_kind": "LLM", "context.trace_id": "t1", "attributes.output.value": "Shakespeare."},
    ]
    con, rep = _load(write_jsonl(tmp_path / "mixed.jsonl", lines))
    assert rep.n_records == 3 and rep.n_rejected == 1 and rep.rejected[0].line_no == 1
    rows = con.execute("SELECT run_id, query_id, answer FROM records ORDER BY line_no").fetchall()
    assert rows == [
        ("mixed", query_id_for(RAGAS["user_input"]), "The Moon."),
        ("r", "n1", None),
        ("mixed", query_id_for(PHOENIX["attributes.input.value"]), "Shakespeare."),
    ]
    assert rep.files[0].n_skipped == 1  # the LLM span: read, no evidence


def test_a_scalar_first_element_of_a_json_array_costs_only_itself(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([3, RAGAS, {**RAGAS, "user_input": "Why is the sky blue?"}], indent=2), encoding="utf-8")
    _con, rep = _load(path)
    assert rep.n_records == 2 and rep.n_rejected == 1
    assert rep.rejected[0].message == "expected a JSON object per line, got integer"


def test_nan_in_an_unused_field_never_rejects_and_in_a_used_one_is_null_with_a_warning(tmp_path):
    # Phoenix's dataframe written by pandas: NaN for a missing document.score (not used by the mapping)
    phoenix = json.dumps({**PHOENIX, "attributes.retrieval.documents.0.document.score": math.nan})
    ragas = json.dumps({**RAGAS, "latency": math.inf})
    native = json.dumps({**NATIVE, "evidence": [{"doc_id": "d1", "score": math.nan}, {"doc_id": "d2", "score": 0.5}]})
    assert "NaN" in phoenix and "Infinity" in ragas  # json.dumps writes the non-JSON tokens
    con, rep = _load(write_jsonl(tmp_path / "nan.jsonl", [phoenix, ragas, native]))
    assert rep.n_records == 3 and rep.n_rejected == 0
    assert con.execute("SELECT doc_id, score FROM evidence WHERE run_id = 'r' ORDER BY position").fetchall() == [
        ("d1", None),
        ("d2", 0.5),
    ]
    [w] = [w for w in rep.warnings if w.code == "non-finite"]
    assert w.line_no == 1 and "3 values were NaN or Infinity" in w.message
    assert "in latency, score: read as null" in w.message


def test_other_formats_keys_never_change_a_native_record(tmp_path):
    recs = [
        {**NATIVE, "user_input": "a question", "response": "an answer"},
        {"run_id": "r", "query_id": "n2", "evidence": ["d2"], "nodes": []},  # not a provenance record
    ]
    con, rep = _load(write_jsonl(tmp_path / "native.jsonl", recs))
    assert rep.n_records == 2 and rep.n_entries == 2 and rep.n_rejected == 0 and rep.n_provenance == 0
    [w] = [w for w in rep.warnings if w.code == "ignored-keys"]
    assert "(response, user_input)" in w.message and "read as native records" in w.message
    assert con.execute("SELECT doc_id FROM evidence ORDER BY query_id").fetchall() == [("d1",), ("d2",)]
    # the warning says how to read them as the format their keys name: a Ragas frame with run_id and
    # query_id columns reads as native, its contexts then document ids
    assert "load the file with --format ragas (or 'Read the files as: Ragas' when uploading)" in w.message


def test_a_ragas_frame_with_run_and_query_id_columns_reads_as_ragas_when_asked(tmp_path):
    row = {"run_id": "r1", "query_id": "q1", "question": "Who won?", "contexts": ["Packers.", "Patriots."]}
    _con, rep = _load(write_jsonl(tmp_path / "v1.jsonl", [row]))
    [w] = [w for w in rep.warnings if w.code == "ignored-keys"]
    assert "--format ragas" in w.message
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "v1.jsonl"], IngestOptions(format="ragas"))
    assert con.execute("SELECT run_id, query_id, doc_id IS NOT NULL, text FROM evidence ORDER BY rank").fetchall() == [
        ("r1", "q1", True, "Packers."),
        ("r1", "q1", True, "Patriots."),
    ]


@pytest.mark.parametrize(
    ("where", "value", "kind"),
    [
        ("context.trace_id", ["t"], "an array"),
        ("context.trace_id", {"a": 1}, "an object"),
        ("context.trace_id", 1.5, "a number"),
        ("context.trace_id", True, "a boolean"),
        ("attributes.retrieval.documents.0.document.id", ["hamlet"], "an array"),
        ("attributes.retrieval.documents.0.document.id", {"id": "hamlet"}, "an object"),
        ("attributes.retrieval.documents.0.document.id", 2.5, "a number"),
        ("attributes.retrieval.documents.0.document.id", False, "a boolean"),
    ],
)
def test_an_id_that_is_no_id_rejects_its_span_with_a_reason(tmp_path, where, value, kind):
    reranker = {
        "span_kind": "RERANKER",
        "context.trace_id": "t1" if where != "context.trace_id" else value,
        "attributes.reranker.output_documents.0.document.id": value if "document.id" in where else "hamlet",
        "attributes.reranker.output_documents.0.document.content": "Hamlet is a play by Shakespeare.",
    }
    good = {**PHOENIX, "context.trace_id": "t2", "attributes.input.value": "Another question?"}
    _con, rep = _load(write_jsonl(tmp_path / "ids.jsonl", [{**PHOENIX, where: value}, reranker, good]))
    assert rep.n_records == 1 and rep.n_rejected == 2  # the good span of another trace still loads
    assert all(f"must be a string or an integer, got {kind}" in r.message for r in rep.rejected)


def test_provenance_of_a_span_with_an_unhashable_id_does_not_crash():
    retriever = Span("t", "retriever", "q", ["a text"], [["not", "an", "id"]], [None])
    reranker = Span("t", "reranker", reranked=[{"id": {"x": 1}, "content": "a text"}])
    prov = provenance_record("r", "q1", retriever, reranker, "answer")
    stage3 = [n for n in prov["nodes"] if n["stage"] == 3]
    assert stage3[0]["derived_from"] == ["r0"]  # linked by its text


def test_openinference_document_indices_written_twice_or_with_gaps(tmp_path):
    twice = {
        **PHOENIX,
        "attributes.retrieval.documents.00.document.id": "other",
        "attributes.retrieval.documents.00.document.content": "x",
    }
    gaps = {"span_kind": "RETRIEVER", "context.trace_id": "t3", "attributes.input.value": "q?"}
    for i, n in ((0, "a"), (2, "b"), (7, "c")):
        gaps |= {
            f"attributes.retrieval.documents.{i}.document.id": n,
            f"attributes.retrieval.documents.{i}.document.content": f"text {n}",
        }
    con, rep = _load(write_jsonl(tmp_path / "idx.jsonl", [twice, gaps]))
    assert rep.n_records == 1 and rep.rejected[0].line_no == 1
    assert "document index 0 is written twice (retrieval.documents.0 and retrieval.documents.00)" in (
        rep.rejected[0].message
    )
    assert con.execute("SELECT doc_id, position FROM evidence ORDER BY position").fetchall() == [
        ("a", 0),
        ("b", 1),
        ("c", 2),
    ]
    [w] = [w for w in rep.warnings if "gaps" in w.message]
    assert w.line_no == 2 and "indices 0, 2, 7 have gaps: read in that order as ranks 0–2" in w.message


def test_forcing_a_format_reads_every_record_as_that_format(tmp_path):
    _con, rep = _load(write_jsonl(tmp_path / "f.jsonl", [RAGAS, NATIVE]), format="ragas")
    assert rep.n_records == 1 and "Ragas row: " in rep.rejected[0].message


def test_a_forced_format_says_so_in_its_rejections_and_a_file_read_once_says_how_to_read_it_again(tmp_path):
    """RAGChecker results uploaded with the picker left on Ragas were rejected as "Ragas record without
    a query", nothing saying the format was asked for; and uploading a file again with another format
    was skipped as already loaded, nothing saying how to read it so."""
    path = write_jsonl(tmp_path / "rc.jsonl", [{"query_id": "q1", "query": "Q?", "retrieved_context": []}])
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions(format="ragas"))
    assert rep.rejected[0].message.endswith("(read as Ragas as asked: --format, or 'Read the files as')")
    native = write_jsonl(
        tmp_path / "v1.jsonl", [{"run_id": "r1", "query_id": "q1", "question": "Q?", "contexts": ["a"]}]
    )
    ingest_paths(con, [native])
    rep = ingest_paths(con, [native], IngestOptions(format="ragas"))
    [note] = [w.message for w in rep.warnings if w.code == "already-loaded"]
    assert "a file is read once — to read it as Ragas, remove it first" in note

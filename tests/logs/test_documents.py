"""Issue #22 item 2: documents of any shape, recognised by content — Langfuse trace exports,
LangSmith post/patch batches and run trees, concatenated pretty JSON, ``{data}``/``{results}``,
arrays (also in a ``.jsonl``) — and a file with no retrieval refused in one sentence."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import documents, store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import ROOT

Q = "What causes tides?"
MOON, CYCLE = "The Moon's gravity pulls the oceans.", "Tides follow the lunar cycle."


def _load(path, **opts):
    con = store.connect(":memory:")
    return con, ingest_paths(con, [path], IngestOptions(**opts))


def _records(con):
    return con.execute("SELECT run_id, query_id, query, answer, n_evidence FROM records ORDER BY line_no").fetchall()


def _langfuse_export(with_retriever=True):
    obs = [
        {"id": "g1", "traceId": "tr1", "type": "GENERATION", "name": "answer", "output": {"content": "The Moon."}},
        {"id": "s1", "traceId": "tr1", "type": "SPAN", "name": "prepare", "output": {"ok": True}},
        {"id": "s2", "type": "SPAN", "name": "format"},  # no traceId: the trace's id is given
    ]
    if with_retriever:
        obs.append(
            {
                "id": "r1",
                "type": "RETRIEVER",
                "input": {"query": Q},
                "output": {"documents": [{"id": "moon", "page_content": MOON}, {"id": "cycle", "page_content": CYCLE}]},
                "parentObservationId": None,
            }
        )
    return {"trace": {"id": "tr1", "name": "rag", "input": Q, "scores": []}, "observations": obs}


def test_a_langfuse_trace_export_loads_as_one_document(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_langfuse_export(), indent=2), encoding="utf-8")
    con, rep = _load(path, format="langfuse")  # forcing the format changes nothing
    assert rep.n_rejected == 0 and rep.files[0].n_lines == 4 and rep.files[0].n_skipped == 3
    assert _records(con) == [("trace", query_id_for(Q), Q, "The Moon.", 2)]
    _con, rep2 = _load(path)
    assert rep2.n_records == 1


def test_a_file_without_retrieval_is_refused_in_one_sentence(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(_langfuse_export(with_retriever=False), indent=2), encoding="utf-8")
    other = tmp_path / "good.jsonl"
    other.write_text(json.dumps({"run_id": "r", "query_id": "1", "evidence": ["d"]}) + "\n", encoding="utf-8")
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path, other])
    [issue] = rep.rejected
    assert (
        issue.message
        == "a Langfuse trace with 3 observations (GENERATION 1, SPAN 2) and no retriever: nothing to audit"
    )
    assert [f.status for f in rep.files] == ["unreadable", "loaded"] and rep.n_records == 1
    # a Ragas test set: questions and references, nothing retrieved
    testset = tmp_path / "testset.jsonl"
    rows = [
        {"user_input": f"q{i}?", "reference_contexts": ["c"], "reference": "r", "synthesizer_name": "s"}
        for i in range(5)
    ]
    testset.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    con, rep = _load(testset)
    assert [i.message for i in rep.rejected] == [
        "5 Ragas rows without retrieved contexts (a test set?): nothing to audit"
    ]
    assert con.execute("SELECT formats FROM files").fetchall() == [("Ragas",)]  # what it was read as
    out = subprocess.run(
        [sys.executable, "-m", "ragaudit_core.cli", "ingest", str(testset), "--db", str(tmp_path / "x.duckdb")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 2 and "nothing to audit" in out.stderr and "Traceback" not in out.stderr
    # refused (not "rejected"), counted apart from lines, and the error says why (not "1 line rejected")
    assert "rejected 0 lines; refused 1 file as a whole" in out.stderr
    assert out.stderr.count("5 Ragas rows") == 1  # said once, in the error that ends the output
    assert "error: testset.jsonl was not loaded: 5 Ragas rows without retrieved contexts (a test set?)" in out.stderr


def test_a_langsmith_batch_and_a_run_tree(tmp_path):
    retriever = {
        "id": "r2",
        "trace_id": "r1",
        "parent_run_id": "r1",
        "run_type": "retriever",
        "name": "Retriever",
        "inputs": {"query": Q},
        "outputs": {"documents": [{"page_content": MOON, "metadata": {"source": "moon.txt"}, "type": "Document"}]},
    }
    batch = {
        "post": [
            {"id": "r1", "trace_id": "r1", "dotted_order": "1", "run_type": "chain", "inputs": {"question": Q}},
            retriever,
        ],
        "patch": [{"id": "r1", "trace_id": "r1", "outputs": {"answer": "The Moon."}, "end_time": "t"}],
    }
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(batch, indent=1), encoding="utf-8")
    con, rep = _load(path, doc_id_key="source")
    assert rep.n_rejected == 0 and _records(con) == [("batch", query_id_for(Q), Q, "The Moon.", 1)]
    assert con.execute("SELECT doc_id FROM evidence").fetchall() == [("moon.txt",)]
    tree = {"id": "root", "run_type": "chain", "inputs": {"question": Q}, "outputs": {"result": "Lunar gravity."}}
    tree["child_runs"] = [{**retriever, "id": "c1", "trace_id": None, "parent_run_id": None, "child_runs": []}]
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(tree), encoding="utf-8")
    con, rep = _load(path, doc_id_key="source")
    assert rep.n_rejected == 0 and _records(con) == [("tree", query_id_for(Q), Q, "Lunar gravity.", 1)]


def test_concatenated_pretty_spans_as_a_console_exporter_prints_them(tmp_path):
    def span(kind, sid, **attrs):
        return {
            "name": kind.lower(),
            "context": {"trace_id": "0xabc", "span_id": sid, "trace_state": "[]"},
            "kind": "SpanKind.INTERNAL",
            "parent_id": None,
            "attributes": {"openinference.span.kind": kind, **attrs},
            "events": [],
            "links": [],
            "resource": {"attributes": {"service.name": "rag"}, "schema_url": ""},
        }

    spans = [
        span("CHAIN", "0x1", **{"input.value": Q}),
        span(
            "RETRIEVER",
            "0x2",
            **{
                "input.value": Q,
                "retrieval.documents.0.document.id": "moon",
                "retrieval.documents.0.document.content": MOON,
            },
        ),
        span("LLM", "0x3", **{"output.value": "The Moon."}),
    ]
    path = tmp_path / "console.log"  # neither JSON Lines nor an array, whatever its name
    path.write_text("".join(json.dumps(s, indent=4) for s in spans), encoding="utf-8")
    con, rep = _load(path)
    assert rep.n_rejected == 0 and rep.files[0].n_lines == 3 and rep.files[0].n_skipped == 2
    assert _records(con) == [("console", query_id_for(Q), Q, "The Moon.", 1)]
    # the file line the retriever span starts on (right after the first span's closing brace)
    assert con.execute("SELECT line_no FROM records").fetchall() == [(json.dumps(spans[0], indent=4).count("\n") + 1,)]


def test_data_and_results_objects_and_an_array_in_a_jsonl(tmp_path):
    rows = [
        {"user_input": Q, "retrieved_contexts": [MOON], "response": "a"},
        {"user_input": "Q2?", "contexts": [CYCLE]},
    ]
    (tmp_path / "data.json").write_text(json.dumps({"data": rows, "version": 2}, indent=2), encoding="utf-8")
    _con, rep = _load(tmp_path / "data.json")
    assert rep.n_records == 2 and rep.n_rejected == 0
    (tmp_path / "arr.jsonl").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    _con, rep = _load(tmp_path / "arr.jsonl")
    assert rep.n_records == 2
    [hint] = [w for w in rep.warnings if w.code == "document"]
    assert "named as JSON Lines but holds a JSON document" in hint.message
    (tmp_path / "one.jsonl").write_text(json.dumps(rows) + "\n", encoding="utf-8")  # an array on one line
    _con, rep = _load(tmp_path / "one.jsonl")
    assert rep.n_records == 2
    [hint] = [w for w in rep.warnings if w.code == "json-array"]
    assert hint.line_no == 1 and "JSON Lines has one object per line" in hint.message


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\,[]{} \n', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='k"\\]}', max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_json, max_size=6), st.sampled_from([None, 2, 0]), st.sampled_from([3, 7, 65536]))
def test_the_streamed_values_are_the_documents_values(values, indent, block):
    """Every element of an array (printed compact or pretty), read in blocks of any size — with
    quotes, escapes and brackets inside strings falling on block edges — is exactly one element."""
    text = json.dumps(values, indent=indent, separators=(",", ":") if indent == 0 else None).encode()
    with mock.patch.object(documents, "_BLOCK", block):
        lines = list(documents.iter_values(io.BytesIO(text), max_value_bytes=1 << 20, max_depth=64))
    assert [ln.error for ln in lines] == [None] * len(values)
    assert [json.loads(ln.data) for ln in lines] == values
    objects = [v for v in values if isinstance(v, dict)]  # objects back to back: each one value
    text = b"".join(json.dumps(v, indent=indent).encode() for v in objects)
    with mock.patch.object(documents, "_BLOCK", block):
        lines = list(documents.iter_values(io.BytesIO(text), max_value_bytes=1 << 20, max_depth=64))
    assert [json.loads(ln.data) for ln in lines] == objects


def test_a_container_is_numbered_by_position_only_when_it_is_the_whole_file(tmp_path):
    """RAGChecker's ``results[i]`` is row i + 1 when the container is the file; a container on the
    first line of JSON Lines that go on keeps its line's number (its records were numbered 1, 2 …
    before, and the next line's record repeated "line 2")."""
    results = {"results": [{"run_id": "r", "query_id": q, "evidence": [f"d{q}"]} for q in ("a", "b")]}
    whole = tmp_path / "whole.jsonl"
    whole.write_text(json.dumps(results) + "\n", encoding="utf-8")
    con, _rep = _load(whole)
    assert con.execute("SELECT query_id, line_no FROM records ORDER BY ALL").fetchall() == [("a", 1), ("b", 2)]
    lines = tmp_path / "lines.jsonl"
    more = {"run_id": "r", "query_id": "c", "evidence": ["dc"]}
    lines.write_text(json.dumps(results) + "\n" + json.dumps(more) + "\n", encoding="utf-8")
    con, _rep = _load(lines)
    assert con.execute("SELECT query_id, line_no FROM records ORDER BY ALL").fetchall() == [
        ("a", 1),
        ("b", 1),
        ("c", 2),
    ]


def _native(i):
    return {"run_id": "A", "query_id": f"q{i}", "evidence": [{"doc_id": f"d{i}", "text": "t"}]}


def test_an_array_written_one_element_per_line_is_a_document(tmp_path):
    """A small JSON array written ``[``, one element per line, ``]`` (valid JSON) lost all but its
    last record: the one element line without a comma made one in ten lines a value on its own, and
    the file was read as JSON Lines (exit 0). A lone bracket first, or a whole file that is one
    value over several lines, makes it a document."""
    elements = ",\n".join(json.dumps(_native(i)) for i in range(5))
    shapes = {
        "array.json": "[\n" + elements + "\n]\n",  # a lone "[" first
        "data.json": '{\n"data": [\n' + elements + "\n]\n}\n",  # a lone "{" first
        "inline.json": '{"data": [\n' + elements + "\n]}\n",  # the whole file is one value
    }
    for name, text in shapes.items():
        assert documents.sniff(text.encode()) == "document", name
        (tmp_path / name).write_text(text, encoding="utf-8")
        con, rep = _load(tmp_path / name)
        assert (rep.n_records, rep.n_rejected) == (5, 0), name
        assert con.execute("SELECT query_id FROM records ORDER BY query_id").fetchall() == [
            (f"q{i}",) for i in range(5)
        ]


def test_json_lines_with_broken_lines_stay_json_lines(tmp_path):
    """The other direction: JSON Lines with many broken lines (cut by a crash, a stray "[") is read
    line by line, and only the broken lines are lost."""
    good = [json.dumps(_native(i)) for i in range(3)]
    lines = [good[0], '{"run_id": "A", "query_id": "x1", "evid', good[1], "[", '{"run_id": ', good[2], "{"]
    text = "\n".join(lines) + "\n"
    assert documents.sniff(text.encode()) == "lines"
    path = tmp_path / "cut.jsonl"
    path.write_text(text, encoding="utf-8")
    con, rep = _load(path)
    assert rep.n_records == 3 and [i.line_no for i in rep.rejected] == [2, 4, 5, 7]
    assert all(i.message.startswith("invalid JSON") for i in rep.rejected)
    assert con.execute("SELECT query_id, line_no FROM records ORDER BY line_no").fetchall() == [
        ("q0", 1),
        ("q1", 3),
        ("q2", 6),
    ]


def test_json_lines_whose_first_record_is_over_a_mib_stay_json_lines(tmp_path):
    """sniff sees the first MiB: a first line longer than that (a record with long passages) was
    cut, did not parse, and the file was read as a document — one broken line then swallowed
    every record after it (4 of 5 lost, a warning calling it "a JSON document"). The whole first
    line decides; a file of that one line stays a document (its records numbered by place)."""
    big = {"run_id": "A", "query_id": "q0", "evidence": [{"doc_id": "d0", "text": "x" * (1 << 20)}]}
    lines = [json.dumps(big), '{"run_id": "A", "query_id": "q1", "evid', *(json.dumps(_native(i)) for i in (2, 3, 4))]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    con, rep = _load(path)
    assert con.execute("SELECT query_id, line_no FROM records ORDER BY line_no").fetchall() == [
        ("q0", 1),
        ("q2", 3),
        ("q3", 4),
        ("q4", 5),
    ]
    assert [(i.line_no, i.message) for i in rep.rejected] == [
        (2, "invalid JSON: unexpected end of data: line 1 column 40 (char 39)")
    ]
    assert rep.warnings == []
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"data": [big, _native(1)]}) + "\n", encoding="utf-8")
    con, rep = _load(one)
    assert con.execute("SELECT query_id, line_no FROM records ORDER BY line_no").fetchall() == [("q0", 1), ("q1", 2)]


def test_a_file_or_container_holding_no_records_is_warned_as_empty(tmp_path):
    """An empty file, ``[]`` and ``{"data": []}`` behaved three ways (a warning; exit 2 "expected a
    JSON object per line, got array"; silence). Each holds no record: nothing is lost and nothing
    is wrong in it, so each loads nothing with the empty file's warning, saying what it held."""
    files = {
        "blank.jsonl": "\n  \n",
        "empty.json": "[]\n",
        "page.json": json.dumps({"data": [], "meta": {"page": 3}}, indent=2),
        "trace.json": json.dumps({"trace": {"id": "t1"}, "observations": []}),
        "otlp.json": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": []}]}]}),
        "lines.jsonl": "[]\n[]\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(_native(1)) + "\n[]\n", encoding="utf-8")  # an empty array among records
    con = store.connect(":memory:")
    rep = ingest_paths(con, [tmp_path / n for n in files] + [good])
    assert [str(w) for w in rep.warnings] == [
        f"{tmp_path / 'blank.jsonl'}: file holds no records (it is empty or blank)",
        f"{tmp_path / 'empty.json'}: file holds no records (an empty JSON array)",
        f"{tmp_path / 'page.json'}: file holds no records (a JSON object with an empty 'data')",
        f"{tmp_path / 'trace.json'}: file holds no records (a Langfuse trace with no observations)",
        f"{tmp_path / 'otlp.json'}: file holds no records (an OTLP trace export with no spans)",
        f"{tmp_path / 'lines.jsonl'}: file holds no records (an empty JSON array)",
    ]
    assert rep.rejected == [] and rep.failed_files == [] and rep.n_records == 1
    assert [(f.status, f.n_lines, f.n_loaded, f.n_skipped) for f in rep.files] == [
        ("loaded", 0, 0, 0),
        ("loaded", 1, 0, 1),
        ("loaded", 1, 0, 1),
        ("loaded", 1, 0, 1),
        ("loaded", 1, 0, 1),
        ("loaded", 2, 0, 2),
        ("loaded", 2, 1, 1),
    ]
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragaudit_core.cli",
            "ingest",
            str(tmp_path / "empty.json"),
            "--db",
            str(tmp_path / "x.duckdb"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "warning: " + str(tmp_path / "empty.json") + ": file holds no records (an empty JSON array)" in out.stderr


def test_a_document_whose_every_record_is_rejected_says_records_not_lines(tmp_path):
    """The records of a JSON document are values, not lines: a document of which nothing loaded
    says how many of its records were rejected (a JSON Lines file still says lines)."""
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps([{"run_id": "r"}, {"run_id": "r", "query_id": "2"}], indent=2), encoding="utf-8")
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"run_id": "r"}\n', encoding="utf-8")
    _con, rep = _load_all([doc, lines])
    assert [rep.failure(f) for f in rep.failed_files] == [
        "no record of bad.json could be loaded: all 2 of its records were rejected",
        "no record of bad.jsonl could be loaded: its only line was rejected",
    ]
    assert [f.read_as() for f in rep.files] == [
        "bad.json read as native: nothing loaded (every record rejected)",
        "bad.jsonl read as native: nothing loaded (every line rejected)",
    ]


def test_a_trace_whose_one_retriever_is_rejected_says_what_its_other_spans_were(tmp_path):
    """A trace export of three spans that are no retrieval and one retriever rejected loaded nothing,
    and said "every record rejected" and "its only record was rejected": three were not."""
    export = _langfuse_export()
    export["observations"][-1]["output"] = {"documents": [{"id": ["not", "an", "id"], "page_content": MOON}]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(export, indent=2), encoding="utf-8")
    _con, rep = _load(path)
    assert [f.read_as() for f in rep.files] == [
        "trace.json read as Langfuse: nothing loaded (1 record rejected; its other 3 spans hold no retrieval)"
    ]
    assert [rep.failure(f) for f in rep.failed_files] == [
        "no record of trace.json could be loaded: 1 record rejected; its other 3 spans hold no retrieval"
    ]


def _load_all(paths):
    con = store.connect(":memory:")
    return con, ingest_paths(con, paths)


def test_a_table_written_column_by_column_loads_its_rows(tmp_path):
    """pandas' ``DataFrame.to_json(path)`` (its default orient, ``{column: {index: value}}``) and
    ``to_dict("list")`` or a Hugging Face ``Dataset.to_dict()`` (``{column: [values]}``) were one
    record "without a query (user_input or question)" — a Ragas result saved the shortest way.
    Each index is a row, in order, as in the records orient."""
    rows = [
        {"user_input": f"question {i}", "retrieved_contexts": [f"ctx {i} a", f"ctx {i} b"], "response": f"a{i}"}
        for i in range(3)
    ]
    by_row = tmp_path / "rows.json"
    by_row.write_text(json.dumps(rows))
    columns = {k: {str(i): r[k] for i, r in enumerate(rows)} for k in rows[0]}
    lists = {k: [r[k] for r in rows] for k in rows[0]}
    want = _records(_load(by_row)[0])
    for name, table in (("columns.json", columns), ("lists.json", lists)):
        f = tmp_path / name
        f.write_text(json.dumps(table))
        con, rep = _load(f, run_id="rows")
        assert not rep.rejected, rep.rejected
        assert _records(con) == want
    # a record whose values are all lists is still a record, not a table
    nested = tmp_path / "record.json"
    nested.write_text(json.dumps({"run_id": ["r"], "query_id": ["q"], "evidence": ["a"]}))
    assert len(_load(nested)[1].rejected) == 1


def test_json_saved_under_a_csv_name_is_read_as_json_saying_so(tmp_path):
    """JSON Lines saved as ``.csv`` (review finding): one line was "file holds no records (it is
    empty or blank)", exit 0, the record lost; three lines were rejected as a table's rows with
    their cells as keys. Now JSON is read as JSON, with a warning naming what the file holds; a
    real table whose header opens with a bracket is still a table."""
    one = tmp_path / "one.csv"
    one.write_text(json.dumps(_native(1)) + "\n")
    three = tmp_path / "three.csv"
    three.write_text("".join(json.dumps(_native(i)) + "\n" for i in range(3)))
    array = tmp_path / "array.tsv"
    array.write_text(json.dumps([_native(7), _native(8)], indent=2))
    for path, n, what in ((one, 1, "JSON Lines"), (three, 3, "JSON Lines"), (array, 2, "a JSON document")):
        _con, rep = _load(path)
        assert (rep.n_records, rep.n_rejected) == (n, 0), path.name
        assert [w.message for w in rep.warnings] == [
            f"named {path.suffix} but holds {what}, not a table: read as {'JSON Lines' if n != 2 else 'a document'}"
        ]
    table = tmp_path / "table.csv"
    table.write_text('[run_id],query_id,evidence\nA,q1,"[""d1""]"\n')
    _con, rep = _load(table)
    assert not any("named .csv" in w.message for w in rep.warnings)

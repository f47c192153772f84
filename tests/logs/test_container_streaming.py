"""A container past ``--max-line-bytes`` is read record by record: the limit applies to each record,
as it does to the elements of a top-level array. ``{"results": [...]}`` of 11.7 MB (RAGChecker),
``{"data": [...]}`` (a Langfuse API page), ``{"trace", "observations"}`` and ``{"post", "patch"}``
were refused whole ("JSON value is longer than the 8,388,608-byte limit; split the record …")."""

from __future__ import annotations

import gzip
import io
import json
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import documents, store
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.shapes import EMPTY
from tests.helpers import write_jsonl

Q = "What causes tides?"
PASSAGE = "The Moon's gravity pulls the oceans. " * 8


def _load(paths, **opts):
    con = store.connect(":memory:")
    rep = ingest_paths(con, paths, IngestOptions(**opts))
    return con, rep


def _state(path, **opts):
    """Everything one file's ingest leaves: records, evidence, quarantine, counts, warnings."""
    con, rep = _load([path], **opts)
    return (
        con.execute("SELECT run_id, query_id, line_no, query, answer, n_evidence FROM records ORDER BY ALL").fetchall(),
        con.execute("SELECT query_id, position, doc_id, text FROM evidence ORDER BY ALL").fetchall(),
        con.execute("SELECT line_no, reason FROM quarantine ORDER BY ALL").fetchall(),
        [(f.status, f.n_lines, f.n_loaded, f.n_rejected, f.n_skipped) for f in rep.files],
        [(w.code, w.line_no, w.message) for w in rep.warnings],
    )


def _langfuse(trace_first=True):
    obs = []
    for i in range(30):
        o = {"id": f"o{i}", "type": "RETRIEVER" if i % 2 == 0 else "GENERATION", "name": "step"}
        if i % 2 == 0:
            o["input"] = {"query": f"{Q} {i}"}
            o["output"] = {"documents": [{"id": f"d{i}", "page_content": PASSAGE}]}
        else:
            o["output"] = {"content": f"The Moon ({i})."}
        if i < 27:  # the last ones carry no traceId: they get the trace's
            o["traceId"] = "tr1"
        obs.append(o)
    trace = {"id": "tr1", "name": "rag"}
    return {"trace": trace, "observations": obs} if trace_first else {"observations": obs, "trace": trace}


def _batch(patch_first=False):
    post, patch = [], []
    for i in range(12):
        post.append({"id": f"root{i}", "trace_id": f"t{i}", "run_type": "chain", "inputs": {"question": f"{Q} {i}"}})
        post.append(
            {"id": f"ret{i}", "trace_id": f"t{i}", "parent_run_id": f"root{i}", "run_type": "retriever", "inputs": {}}
        )
        docs = [{"page_content": PASSAGE, "metadata": {"source": f"m{i}.txt"}}]
        patch.append({"id": f"ret{i}", "inputs": {"query": f"{Q} {i}"}, "outputs": {"documents": docs}})
        patch.append({"id": f"root{i}", "outputs": {"answer": f"The Moon ({i})."}, "end_time": None})
    tree = {"id": "tree", "run_type": "chain", "inputs": {"question": "tree?"}, "outputs": {"result": "A tree."}}
    tree["child_runs"] = [
        {"id": "c1", "run_type": "retriever", "inputs": {"query": "tree?"}, "outputs": {"documents": docs}}
    ]
    post += [tree, 7]  # a run tree posted in the batch, and an element that is no run
    return {"patch": patch, "post": post} if patch_first else {"post": post, "patch": patch}


def _rows(n=40):
    return [{"user_input": f"{Q} {i}", "retrieved_contexts": [PASSAGE], "response": f"a{i}"} for i in range(n)]


SHAPES = {
    "trace_first": _langfuse(),
    "trace_after": _langfuse(trace_first=False),
    "batch": _batch(),
    "patch_first": _batch(patch_first=True),
    "data": {"meta": {"page": 1}, "data": _rows()},
    "results": {"results": _rows(), "metrics": {"overall": 0.5}},
}


def test_each_container_shape_loads_the_same_past_the_limit(tmp_path):
    """With a limit below the container's size but above each record's, every shape loads exactly
    what it loads read whole: the same records, numbers, evidence, warnings — Langfuse observations
    without a traceId get the trace's (the trace before or after them), LangSmith patches complete
    the runs posted with their ids (the patches before or after the posts), run trees flattened."""
    for name, doc in SHAPES.items():
        for indent in (2, 1):
            path = tmp_path / f"{name}.json"
            text = json.dumps(doc, indent=indent)
            path.write_text(text, encoding="utf-8")
            whole = _state(path, doc_id_key="source")
            streamed = _state(path, doc_id_key="source", max_line_bytes=3000)
            assert len(text) > 3 * 3000 and whole[3][0][0] == "loaded" and whole[0], name
            assert streamed == whole, name
    # gzip-compressed, and read in blocks that split every token
    path = tmp_path / "batch.json.gz"
    path.write_bytes(gzip.compress(json.dumps(SHAPES["batch"], indent=1).encode()))
    whole = _state(path, doc_id_key="source")
    with mock.patch.object(documents, "_BLOCK", 7):
        assert _state(path, doc_id_key="source", max_line_bytes=3000) == whole


def test_a_ragchecker_file_past_the_limit_is_numbered_by_position(tmp_path):
    results = [
        {
            "query_id": str(i),
            "query": f"{Q} {i}",
            "response": "r",
            "retrieved_context": [{"doc_id": f"d{i}", "text": t}],
        }
        for i, t in enumerate([PASSAGE] * 3 + ["x" * 5000] + [PASSAGE] * 2)
    ]
    path = tmp_path / "ragchecker.json"
    path.write_text(json.dumps({"results": results, "metrics": {}}, indent=2), encoding="utf-8")
    other = write_jsonl(tmp_path / "other.jsonl", [{"run_id": "o", "query_id": "1", "evidence": ["x"]}])
    con, rep = _load([path, other], max_line_bytes=2000)
    assert con.execute("SELECT query_id, line_no FROM records WHERE run_id = 'ragchecker' ORDER BY 2").fetchall() == [
        ("0", 1),
        ("1", 2),
        ("2", 3),
        ("4", 5),
        ("5", 6),
    ]
    [issue] = rep.rejected  # the one result past the limit costs only itself
    assert (issue.line_no, issue.message) == (
        4,
        "JSON value is longer than the 2,000-byte limit; split the record or raise --max-line-bytes",
    )
    assert [(f.status, f.n_lines, f.n_loaded) for f in rep.files] == [("loaded", 6, 5), ("loaded", 1, 1)]


def test_what_is_not_read_record_by_record_says_why(tmp_path):
    """A record past the limit keeps its message; a run tree (read whole) and a container on a line
    of JSON Lines say what they are instead of "split the record"; Langfuse observations waiting
    for a trace that comes after them past the limit refuse the file, and only it."""
    native = {"run_id": "r", "query_id": "1", "evidence": [f"d{i}" for i in range(600)], "data": [{"x": 1}]}
    tree = {"id": "root", "run_type": "chain", "child_runs": [{"id": f"c{i}", "run_type": "llm"} for i in range(200)]}
    late = _langfuse(trace_first=False)
    for o in late["observations"]:
        o.pop("traceId", None)
    line = json.dumps({"data": _rows(10)})
    files = {
        "native.json": json.dumps(native, indent=1),
        "tree.json": json.dumps(tree, indent=1),
        "lines.jsonl": line + "\n" + json.dumps({"run_id": "r", "query_id": "2", "evidence": ["d"]}),
        "late.json": json.dumps(late, indent=1),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    _con, rep = _load([tmp_path / n for n in files], max_line_bytes=2000)
    assert [(i.path.rsplit("/", 1)[1], i.line_no, i.message) for i in rep.rejected] == [
        (
            "native.json",
            1,
            "JSON value is longer than the 2,000-byte limit; split the record or raise --max-line-bytes",
        ),
        ("tree.json", 1, "a LangSmith run tree longer than the 2,000-byte limit is read whole; raise --max-line-bytes"),
        (
            "lines.jsonl",
            1,
            f"line is longer than the 2,000-byte limit (at least {len(line) + 1:,} bytes); it holds records: write "
            "them one per line (JSON Lines), or raise --max-line-bytes",
        ),
        (
            "late.json",
            None,
            "a Langfuse trace export longer than the 2,000-byte limit lists more than 2,000 bytes of observations "
            "before its trace, some without a traceId; raise --max-line-bytes to read it whole",
        ),
    ]
    assert [f.status for f in rep.files] == ["rejected", "rejected", "loaded", "unreadable"] and rep.n_records == 1


def test_an_empty_record_array_past_the_limit_is_an_empty_container(tmp_path):
    path = tmp_path / "page.json"
    path.write_text(json.dumps({"data": [], "meta": {"note": "x" * 5000}}, indent=1), encoding="utf-8")
    _con, rep = _load([path], max_line_bytes=2000)
    assert [str(w) for w in rep.warnings] == [f"{path}: file holds no records (a JSON object with an empty 'data')"]
    assert rep.rejected == [] and [(f.status, f.n_lines, f.n_skipped) for f in rep.files] == [("loaded", 1, 1)]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\,[]{}: \n', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(alphabet='k"\\]}:', max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_json, min_size=1, max_size=8),
    st.dictionaries(st.sampled_from(["meta", "page", "x:y"]), _json, max_size=2),
    st.sampled_from([None, 2]),
    st.sampled_from([3, 11, 65536]),
)
def test_the_streamed_records_are_the_containers_elements(values, others, indent, block):
    """Every element of a ``data`` array past the limit, with other members before and after it,
    read in blocks of any size (quotes, escapes, colons and brackets in strings and keys on block
    edges), comes out as exactly that element, in order."""
    doc = {**others, "data": values, "tail": others}
    text = json.dumps(doc, indent=indent).encode()
    pretty = [json.dumps(v, indent=indent) for v in values]
    limit = max(len(p) + 2 * (indent or 0) * p.count("\n") for p in pretty)  # each element just fits (indented)
    if len(text) <= limit:
        return
    with mock.patch.object(documents, "_BLOCK", block):
        lines = list(documents.iter_values(io.BytesIO(text), max_value_bytes=limit, max_depth=64))
    assert [ln.error for ln in lines] == [None] * len(values)
    assert [json.loads(ln.data) for ln in lines] == values
    assert [ln.line_no for ln in lines] == list(range(1, len(values) + 1))  # the file's only value: by position
    assert not any(ln.note.startswith(EMPTY) for ln in lines if ln.note)


def test_a_trace_member_past_the_limit_is_a_langfuse_error_only_in_a_langfuse_trace(tmp_path):
    """A 'trace' member past the limit matters to a Langfuse trace (its observations without a
    traceId get none); in a ``{"data": [...]}`` container it is nothing, but it rejected a record
    there too, with words about Langfuse observations the file does not have."""
    big = {"id": "tr1", "name": "rag", "metadata": {"notes": "x" * 3000}}
    page = {"trace": big, "data": _rows(10)}
    export = {**_langfuse(), "trace": big}
    files = {"page.json": page, "langfuse.json": export}
    for name, value in files.items():
        (tmp_path / name).write_text(json.dumps(value, indent=1), encoding="utf-8")
    _con, rep = _load([tmp_path / n for n in files], max_line_bytes=2000)
    no_trace = "the only id key is 'id', which could be the run or the query; name them 'run_id' and 'query_id'"
    assert sorted((i.path.rsplit("/", 1)[1], i.line_no, i.message) for i in rep.rejected) == [
        (
            "langfuse.json",
            1,
            "the Langfuse trace's 'trace' member is longer than the 2,000-byte limit, so its observations without a "
            "traceId have none; raise --max-line-bytes",
        ),
        *(("langfuse.json", n, no_trace) for n in (28, 29, 30)),
    ]
    assert (rep.files[0].n_lines, rep.files[0].n_loaded) == (10, 10)

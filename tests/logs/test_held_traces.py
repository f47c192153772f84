"""Issue #22 item 5: the retriever spans of LangSmith and Langfuse exports, and of OpenInference
spans the fast reader leaves, wait in bounded memory too. Past ``PREMAP_BYTES`` of a file's span
bytes each is mapped as it is read and held by its rows and its own bytes (a container's record —
an observation of a Langfuse trace export, a run in a JSON array — by its JSON written again), not
as a span with its texts; the database and the report are those of holding every span until the
file ends."""

from __future__ import annotations

import json
from pathlib import Path

from ragaudit_core.logs import held as held_rows
from ragaudit_core.logs import parallel, store
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.records import json_bytes, read_span_again
from tests.helpers import spy
from tests.logs.test_fast_dialects import TEXTS, _oi
from tests.logs.test_streaming import _everything

BIG = 12345678901234567890123  # beyond 64 bits: orjson does not write it, json does


def _docs(i: int) -> list[dict]:
    return [{"page_content": TEXTS[(i + j) % 4], "metadata": {"id": f"d{(i + j) % 5}"}} for j in range(2)]


def _run(trace: str, i: int, **extra) -> dict:
    return {
        "id": f"r{i}",
        "trace_id": trace,
        "parent_run_id": "c",
        "run_type": "retriever",
        "inputs": {"query": f"question {i % 7}"},
        "outputs": {"documents": _docs(i)},
        **extra,
    }


def _lines() -> list:
    lines: list = []
    for i in range(30):
        t = f"t{i}"
        if i % 3 == 0:  # the root run's answer before its retriever run
            root = {"id": "c", "trace_id": t, "parent_run_id": None, "run_type": "chain"}
            lines.append({**root, "outputs": {"output": f"a{i}"}})
        lines.append(_run(t, i, big=BIG) if i == 4 else _run(t, i))
    lines.append([_run("a1", 40), _run("a2", 41)])  # a JSON array of runs on one line
    observations = [
        {"type": "RETRIEVER", "input": {"query": "question 3"}, "output": {"documents": _docs(50)}},
        {"type": "GENERATION", "output": {"content": "from the generation"}},
    ]
    lines.append({"trace": {"id": "lf1"}, "observations": observations})  # a Langfuse trace export
    lines.append({**_oi("o1", "question 5", [("d1", TEXTS[0]), ("d2", TEXTS[1])]), "events": [{"name": "e"}]})
    lines.append(
        {
            "name": "rerank",
            "context": {"trace_id": "o1", "span_id": "r"},
            "attributes": {"openinference.span.kind": "RERANKER", "reranker.output_documents.0.document.id": "d2"},
        }
    )
    return lines


def test_trace_exports_mapped_as_they_are_read_store_what_the_file_end_stores(tmp_path, monkeypatch):
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in _lines()), encoding="utf-8")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")

    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, [path], IngestOptions(doc_id_key="id")))
        prov = con.execute("SELECT run_id, query_id, generated_text FROM prov_records ORDER BY ALL").fetchall()
        answers = con.execute("SELECT answer FROM records WHERE answer IS NOT NULL ORDER BY line_no").fetchall()
        return got, prov, [a for (a,) in answers]

    expected = ingest()
    monkeypatch.setattr(held_rows, "PREMAP_BYTES", 0)
    monkeypatch.setattr(held_rows, "SPILL_BYTES", 1000)
    kept: list = []  # (temporary file, the bytes a span is held by)
    spy(monkeypatch, held_rows.HeldRows, "hold_line", lambda _s, args, got: kept.append((got[1], args[1])))
    assert ingest() == expected
    monkeypatch.setattr(held_rows, "HELD_SPANS", 3)  # the mapped spans past 3 wait in a temporary file
    spilled: list = []
    spy(monkeypatch, held_rows.SpillQueue, "__iter__", lambda self, _a, _r: spilled.append(self.spilled))
    assert ingest() == expected
    assert spilled == [31]
    # every retriever span was held by its bytes: 30 runs, 2 in the array, 1 observation, 1 span
    assert len(kept) == 68 and not Path(kept[0][0]).exists()  # 34 spans, held twice
    own = [json.loads(d) for _, d in kept]
    observation = {"type": "RETRIEVER", "input": {"query": "question 3"}, "output": {"documents": _docs(50)}}
    assert {**observation, "traceId": "lf1"} in own  # the trace export's id given to its observation
    assert any(o.get("big") == BIG for o in own)
    # the reranker's trace: its general-shape span read again (question 5, its sixth time)
    assert expected[1] == [("runs", "q:98d16e5990c208e1#6", None)]
    # the root runs' answers (before their retriever run) and the trace export's generation
    assert expected[2] == [f"a{i}" for i in range(0, 30, 3)] + ["from the generation"]
    assert expected[0][5:] == (34, 68) and not expected[0][1]  # every span loaded, none rejected


def test_a_span_is_read_again_by_the_general_reader_where_the_fast_one_declines():
    from ragaudit_core.logs.formats import get

    oi = get("openinference")
    general = {**_oi("o1", "question 5", [("d1", TEXTS[0])]), "events": [{"name": "e"}]}
    span = read_span_again(oi, json_bytes(general))
    assert span is not None and span.kind == "retriever" and span.ids == ["d1"] and span.texts == [TEXTS[0]]
    assert read_span_again(get("langsmith"), json_bytes(_run("t", 1))).query == "question 1"
    assert read_span_again(get("langsmith"), b"{not json") is None
    assert json.loads(json_bytes({"n": BIG})) == {"n": BIG}


def test_spans_mapped_here_and_by_the_workers_in_one_range_keep_their_own_rows(tmp_path, monkeypatch):
    """A range the workers decode holds their spans (OpenInference, fast or not) and leaves others
    (a NaN in a field: the general path, which warns naming it) that are mapped here as they are
    read: each span's rows are its own — they were another span's, or lost, when both took the
    same slot of the held rows."""
    from tests.logs.test_streaming import force_pool

    def general(trace: str, query: str, doc: str) -> dict:
        return {**_oi(trace, query, [(doc, f"text of {doc}")]), "events": [{"name": "e"}], "score": float("nan")}

    path = tmp_path / "mixed.jsonl"
    lines = [
        _oi("t0", "question A", [("FA", "text of FA")]),
        general("u0", "question B", "SB"),
        _oi("t1", "question A", [("FA2", "text of FA2")]),  # asked again: numbered #2
        general("u1", "question C", "SC"),
        general("u2", "question D", "SD"),
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    monkeypatch.setattr(held_rows, "PREMAP_BYTES", 0)

    def stored() -> list:
        con = store.connect(":memory:")
        ingest_paths(con, [path], IngestOptions())
        return con.execute(
            """SELECT r.query, r.query_id LIKE '%#2', list(e.doc_id_raw ORDER BY e.position)
               FROM records r LEFT JOIN evidence e USING (run_id, query_id) GROUP BY ALL ORDER BY ALL"""
        ).fetchall()

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = [
        ("question A", False, ["FA"]),
        ("question A", True, ["FA2"]),
        ("question B", False, ["SB"]),
        ("question C", False, ["SC"]),
        ("question D", False, ["SD"]),
    ]
    assert stored() == expected
    held = force_pool(monkeypatch, 1 << 20, lambda it: it.held)  # one range: all five lines
    assert stored() == expected
    assert held == [2]


def test_a_record_too_deep_to_write_again_waits_as_it_was_and_loads(tmp_path, monkeypatch):
    """A Langfuse trace export whose retriever observation carries a field nested 1,000 deep:
    its JSON cannot be written again to be held by its bytes, so it waits as a span — the file
    loads (it was refused with a RecursionError when its bytes were made for every record)."""
    observation = {"type": "RETRIEVER", "input": {"query": "q?"}, "output": {"documents": _docs(1)}, "extra": "X"}
    text = json.dumps({"trace": {"id": "lf"}, "observations": [observation]})
    path = tmp_path / "deep.jsonl"  # (json.dumps itself cannot write that depth)
    path.write_text(text.replace('"X"', "[" * 1000 + '"x"' + "]" * 1000) + "\n", encoding="utf-8")
    deep: object = "x"
    for _ in range(1000):
        deep = [deep]
    assert json_bytes({**observation, "extra": deep}) is None
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    for premap_bytes in (held_rows.PREMAP_BYTES, 0):
        monkeypatch.setattr(held_rows, "PREMAP_BYTES", premap_bytes)
        report = ingest_paths(store.connect(":memory:"), [path], IngestOptions(max_depth=2000))
        assert (report.n_records, report.n_entries, report.rejected) == (1, 2, [])


def _observation(trace: str, i: int, kind: str = "RETRIEVER") -> dict:
    return {"id": f"o{i}", "traceId": trace, "type": kind, "input": {"query": f"question {i % 5}"}, "output": _docs(i)}


def test_langsmith_runs_and_langfuse_observations_mapped_by_the_workers_store_what_the_process_stores(
    tmp_path, monkeypatch
):
    """A JSON Lines export of LangSmith runs or Langfuse observations goes to the worker pool:
    their retriever spans are read there by the format's own reader (no fast layout), mapped and
    held; answers, other spans, containers (a JSON array of runs, a Langfuse trace export), a span
    with NaN, a run the reader rejects and a native record come back and are read here. The same
    database and report as reading every line in the process (where they were all read before)."""
    from tests.logs.test_streaming import force_pool

    lines = _lines()
    for i in range(12):  # Langfuse observations, one per line; a generation answers every other trace
        lines.append(_observation(f"lf{i}", i, "SPAN" if i % 4 == 3 else "RETRIEVER"))
        if i % 2 == 0:
            lines.append({"id": f"g{i}", "traceId": f"lf{i}", "type": "GENERATION", "output": {"content": f"g{i}"}})
    nan_line = json.dumps(_run("nan2", 61)).replace('"retriever"', '"retriever", "s": NaN')
    lines.append({**_run("bad", 62), "outputs": {"documents": [{"metadata": {}}]}})  # no page content: rejected
    tool_run = {"id": "x", "trace_id": "t1", "parent_run_id": "c", "run_type": "tool", "inputs": {"x": 1}}
    lines.append(tool_run)
    lines.append({"run_id": "r1", "query_id": "q1", "query": "Native?", "evidence": [{"doc_id": "n1"}]})
    path = tmp_path / "runs.jsonl"
    text = "".join(json.dumps(x) + "\n" for x in lines)
    path.write_text(text + nan_line + "\n", encoding="utf-8")

    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, [path], IngestOptions(doc_id_key="id")))
        prov = con.execute("SELECT run_id, query_id, generated_text FROM prov_records ORDER BY ALL").fetchall()
        answers = con.execute("SELECT query_id, answer FROM records ORDER BY ALL").fetchall()
        formats = con.execute("SELECT formats FROM files").fetchall()
        return got, prov, answers, formats

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = ingest()
    labels: list = []
    held = force_pool(monkeypatch, 700, lambda it: it.held and not labels.append(it.label))
    others: list = []  # the answers and other spans the workers read
    decode = parallel.LinePool.decode

    def counted(self, path, mapping=None, then=None):
        for got in decode(self, path, mapping, then):
            others.extend((it.label, it.kind) for it in got[1] if isinstance(it, parallel.SpanLine))
            yield got

    monkeypatch.setattr(parallel.LinePool, "decode", counted)
    assert ingest() == expected
    assert {"LangSmith", "Langfuse", "OpenInference"} <= set(labels) and sum(held) >= 40
    assert {("LangSmith", "answer"), ("LangSmith", "other"), ("Langfuse", "answer")} <= set(others)
    from ragaudit_core.logs.formats import MapContext

    tool = parallel._general_span(json.dumps(tool_run).encode(), MapContext("runs", None))
    assert isinstance(tool, parallel._OtherSpan) and tool.kind_of == "tool"  # as the format words it
    assert expected[0][1]  # the rejected run, on either path
    assert ("lf1", "g0") not in expected[2] and any(a == "g0" for _, a in expected[2])


def _reranker(trace: str, doc_ids: list[str], texts: tuple[str, ...] = ()) -> dict:
    a: dict = {"openinference.span.kind": "RERANKER", "reranker.query": "q"}
    for i, d in enumerate(doc_ids):
        a[f"reranker.output_documents.{i}.document.id"] = d
    for i, t in enumerate(texts):
        a[f"reranker.output_documents.{i}.document.content"] = t
    return {"name": "rerank", "context": {"trace_id": trace, "span_id": "k"}, "attributes": a}


def _answer(trace: str, text: str) -> dict:
    return _oi(trace, "", [], **{"openinference.span.kind": "LLM", "output.value": text})


def _reranked_traces(path: Path) -> Path:
    """Rerankers before and after their retriever, one matching a document by its text (its id
    unknown), a second reranker of a trace (ignored), one whose trace retrieved nothing."""
    lines: list = []
    for i in range(9):
        t = f"t{i}"
        retriever = _oi(t, f"question {i}", [(f"d{i}", TEXTS[i % 4]), (f"e{i}", TEXTS[(i + 1) % 4])])
        trace = [retriever, _answer(t, f"answer {i}")]
        if i % 3:
            texts = (TEXTS[i % 4],) if i == 5 else ()
            trace.insert(i % 2 * 2, _reranker(t, ["x" if texts else f"e{i}"], texts))  # before or after
        lines += trace[::-1] if i % 4 == 0 else trace
    lines += [_reranker("t1", ["d1"]), _reranker("orphan", ["d9"])]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _graphs(path: Path):
    def ingest() -> tuple:
        con = store.connect(":memory:")
        got = _everything(con, ingest_paths(con, [path]))
        prov = con.execute("SELECT * EXCLUDE (file_id) FROM prov_records ORDER BY ALL").fetchall()
        nodes = con.execute("SELECT * FROM prov_nodes ORDER BY ALL").fetchall()
        return got, prov, nodes

    return ingest


def test_rerankers_read_by_the_workers_store_the_graphs_the_process_stores(tmp_path, monkeypatch):
    """Reranker spans go to the workers (ranges of ~700 bytes, 2 workers), which hand their
    output documents back for the trace's provenance graph: the same database and report as
    reading every span in the process."""
    from tests.logs.test_streaming import force_pool

    path = _reranked_traces(tmp_path / "spans.jsonl")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    ingest = _graphs(path)
    expected = ingest()
    force_pool(monkeypatch, 700)
    rerankers: list = []
    decode = parallel.LinePool.decode

    def noted(self, path, mapping=None, then=None):
        for n_lines, items, table in decode(self, path, mapping, then):
            rerankers.extend(it for it in items if isinstance(it, parallel.SpanLine) and it.reranked is not None)
            yield n_lines, items, table

    monkeypatch.setattr(parallel.LinePool, "decode", noted)
    assert ingest() == expected
    assert len(rerankers) == 8  # every reranker span was read by a worker
    reranked = {(n[1], n[3]): n[13] for n in expected[2] if n[3] == "k0"}
    assert len(expected[1]) == 6 and len(reranked) == 6
    assert sorted(map(tuple, reranked.values())) == [("r0",)] + [("r1",)] * 5  # t5 matched by its text


def test_rerankers_and_answers_past_the_limit_wait_in_a_temporary_file_and_store_the_same(tmp_path, monkeypatch):
    """Each trace's first reranker and its answer wait in a :class:`~held.SpillMap`: past its limit
    in a temporary file, read back when the file ends. Rerankers before and after their retriever,
    a second reranker of a trace (ignored), one whose trace retrieved nothing (counted, not loaded),
    answers before and after: the database and the report are those of holding everything."""
    path = _reranked_traces(tmp_path / "spans.jsonl")
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    ingest = _graphs(path)
    expected = ingest()
    waiting: list = []  # values in the temporary file after each one is set
    spy(monkeypatch, held_rows.SpillMap, "__setitem__", lambda self, _a, _r: waiting.append(len(self._at)))
    monkeypatch.setattr(held_rows, "HELD_SPANS", 2)
    assert ingest() == expected
    assert max(waiting) >= 4  # rerankers and answers of the later traces waited in the file
    assert sorted(p[4] for p in expected[1]) == [f"answer {i}" for i in range(9) if i % 3]  # 6 graphs
    assert expected[0][5] == 9  # every retriever span loaded


def test_spill_map_keeps_every_value_across_its_limit():
    m = held_rows.SpillMap(limit=2)
    for i in range(6):
        m[("f", str(i))] = (i, "text " * i)
    assert len(m) == 6 and ("f", "5") in m and ("f", "6") not in m
    assert m._file is not None and sorted(m._at) == [("f", "2"), ("f", "3"), ("f", "4"), ("f", "5")]
    m[("f", "4")] = (40, "again")  # a spilled key set again: the new value
    m[("f", "0")] = (0, "again")  # a kept key set again stays in memory
    assert m.get(("f", "4")) == (40, "again") and m.get(("f", "0")) == (0, "again")
    assert m.get(("f", "9"), "none") == "none" and m.pop(("f", "9")) is None
    assert m.pop(("f", "3")) == (3, "text " * 3) and ("f", "3") not in m and len(m) == 5
    assert m.pop(("f", "1")) == (1, "text ") and len(m) == 4
    m.close()
    assert len(m) == 0 and m._file is None


def test_one_retrieval_reported_twice_in_a_trace_loads_once_on_every_path(tmp_path, monkeypatch):
    """A LangChain retrieval chain traced to Langfuse reports its retriever's documents on the
    chain's SPAN and on the RETRIEVER under it; an OpenInference retriever may wrap another. Each
    was a record, the question a second sample of itself (q:…#2) with the same evidence. Now the
    later span is skipped with a warning naming the first — read here, mapped as read, or by the
    workers alike; the same question with other documents in the same trace, or in another
    trace, is still a record of its own."""
    from tests.logs.test_streaming import force_pool

    lines: list = []
    for i in range(6):
        t = f"lf{i}"
        chain = {"id": f"c{i}", "traceId": t, "type": "SPAN", "input": {"input": f"question {i}"}, "output": _docs(i)}
        lines += [chain, {**chain, "id": f"r{i}", "type": "RETRIEVER", "input": f"question {i}"}]
    lines.append(_oi("o1", "question 9", [("d1", TEXTS[0])]))
    lines.append({**_oi("o1", "question 9", [("d1", TEXTS[0])]), "name": "inner"})  # a retriever wrapping another
    lines.append(_oi("o1", "question 9", [("d2", TEXTS[1])]))  # asked again in the trace, other documents: a sample
    lines.append(_oi("o2", "question 9", [("d1", TEXTS[0])]))  # another trace: a record of its own
    chain = {"id": "cx", "type": "SPAN", "input": {"input": "question 20"}, "output": _docs(20)}
    nested = [chain, {**chain, "id": "rx", "type": "RETRIEVER", "input": "question 20"}]
    lines.append({"trace": {"id": "lfx"}, "observations": nested})  # a trace export: both spans on one line
    path = tmp_path / "chains.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")

    def ingest() -> tuple:
        con = store.connect(":memory:")
        rep = ingest_paths(con, [path], IngestOptions(doc_id_key="id"))
        return _everything(con, rep), rep.files[0].n_skipped

    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")
    expected = ingest()
    (_dump, _q, warnings, _runs, rejected, n_records, _entries), skipped = expected
    assert n_records == 6 + 3 + 1 and skipped == 6 + 1 + 1 and not rejected
    said = [(n, m) for n, code, m in warnings if "reports the retrieval of" in m]
    assert said[0] == (
        2,
        "a Langfuse span reports the retrieval of line 1 again (the same question and documents in the same "
        "trace: a chain span carrying its retriever's output, or a retriever wrapping another): loaded once",
    )
    assert [n for n, _m in said] == [2, 4, 6, 8, 10, 12, 14, 17]
    assert said[-1][1].startswith("a Langfuse span reports the retrieval of an earlier span of this line again")
    # o1's other documents and o2's trace: samples 2 and 3 of the question, as before
    assert [n for n, _c, m in warnings if "asks the same question again" in m] == [15, 16]
    monkeypatch.setattr(held_rows, "PREMAP_BYTES", 0)  # mapped as they are read, held by their rows
    assert ingest() == expected
    held = force_pool(monkeypatch, 700, lambda it: it.held)  # by the workers
    assert ingest() == expected
    assert sum(held) >= 12  # (the workers mapped the spans: the duplicates were theirs to skip)

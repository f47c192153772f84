"""Lists written as text in a table's cells: a native CSV or Parquet row's ``evidence`` and
``config`` (JSON, or the Python literal pandas writes) are read as data — only in rows: in JSON
Lines a string there stays a type error — and the bounded parser (:mod:`.formats.lists`) reads
data, never code, and refuses a numpy-printed array instead of misreading it."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats.base import FormatError
from ragaudit_core.logs.formats.lists import data_string, text_list
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from tests.helpers import write_jsonl


def _ingest(path):
    con = store.connect(":memory:")
    rep = ingest_paths(con, [path], IngestOptions())
    ev = con.execute("SELECT query_id, doc_id, score FROM evidence ORDER BY query_id, position").fetchall()
    runs = con.execute("SELECT run_id, top_k FROM runs").fetchall()
    return rep, ev, runs


def test_a_native_csv_reads_its_evidence_and_config_cells_as_lists_and_objects(tmp_path):
    path = tmp_path / "native.csv"
    path.write_text(
        "run_id,query_id,query,evidence,config\n"
        'A,q1,hello,"[""d1"",""d2""]","{""top_k"": 2}"\n'
        "A,q2,bye,\"[{'doc_id': 'd3', 'score': 0.5}, {'doc_id': 'd4', 'score': nan}]\",\n"
        "A,q3,x,d1,\n"  # not a list: rejected, the others load
        'A,q4,y,"[""d5""",\n',
        encoding="utf-8",
    )
    rep, ev, runs = _ingest(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (2, 4, 2)
    assert ev == [("q1", "d1", None), ("q1", "d2", None), ("q2", "d3", 0.5), ("q2", "d4", None)]
    assert runs == [("A", 2)]
    assert [(i.line_no, i.message) for i in rep.rejected] == [
        (4, "'evidence' is text that is neither JSON nor a Python literal ('d1'): write it as a JSON list or object"),
        (
            5,
            "'evidence' is text that is neither JSON nor a Python literal ('[\"d5\"'): "
            "write it as a JSON list or object",
        ),
    ]


def test_a_native_parquet_text_column_of_lists_loads_and_an_alias_too(tmp_path):
    rows = [
        {"run_id": "A", "query_id": "q1", "docs": json.dumps(["d1", "d2"])},
        {"run_id": "A", "query_id": "q2", "docs": str([{"doc_id": "d3", "score": 0.25}])},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "native.parquet")
    rep, ev, _runs = _ingest(tmp_path / "native.parquet")
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (2, 3, 0)
    assert ev == [("q1", "d1", None), ("q1", "d2", None), ("q2", "d3", 0.25)]


def test_in_json_lines_an_evidence_string_is_still_the_wrong_type(tmp_path):
    path = write_jsonl(tmp_path / "native.jsonl", [{"run_id": "A", "query_id": "q1", "evidence": '["d1"]'}])
    rep, _ev, _runs = _ingest(path)
    assert (rep.n_records, rep.n_rejected) == (0, 1)
    assert rep.rejected[0].message == "'evidence' must be a list of evidence entries, got string"


def test_a_ragas_csv_whose_contexts_numpy_printed_is_refused_not_read_as_one_text(tmp_path):
    """``['a' 'b']`` is what numpy prints for two texts; Python reads it as the one text 'ab'."""
    path = tmp_path / "ragas.csv"
    path.write_text(
        "user_input,retrieved_contexts\nWhy?,\"['The Moon.' 'Tides.']\"\nHow?,\"['The Moon.', 'Tides.']\"\n",
        encoding="utf-8",
    )
    rep, _ev, _runs = _ingest(path)
    assert (rep.n_records, rep.n_entries, rep.n_rejected) == (1, 2, 1)
    assert rep.rejected[0].message == (
        "Ragas row: retrieved_contexts is a numpy array printed without commas between its elements, not "
        "a list: save the dataframe with to_json or to_parquet, or turn its arrays into lists before to_csv"
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('[{"a": NaN, "b": [1, -2.5]}]', [{"a": None, "b": [1, -2.5]}]),
        (
            "[{'a': nan, 'b': -inf, 'c': np.float64(0.5), 'd': None, 'e': (1, True)}]",
            [{"a": None, "b": None, "c": 0.5, "d": None, "e": [1, True]}],
        ),
        ("{1: 'x'}", {"1": "x"}),
        ("  ", None),
        ("'it''s'", "its"),  # one Python text written in two pieces (no list): as Python reads it
    ],
)
def test_data_strings_are_read_as_data(text, value):
    assert data_string(text, "x") == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("__import__('os').system('true')", "is text that is neither JSON nor a Python literal"),
        ("[x for x in y]", "is text that is neither JSON nor a Python literal"),
        ("{**a}", "is text that is neither JSON nor a Python literal"),
        ("[b'bytes']", "is text that is neither JSON nor a Python literal"),
        ("[{'a': 1} {'b': 2}]", "is a numpy array printed without commas"),
        ("['a' 'b']", "is a numpy array printed without commas"),
        ("[" * 33 + "]" * 33, "is nested more than 32 levels deep"),
        ("['" + "a" * 1_000_001 + "']", "is not JSON and too long to read as a Python literal"),
        ("[" + "1," * 5_000_001 + "1]", "is too long to read as a list"),
    ],
)
def test_other_texts_are_refused_with_the_reason(text, reason):
    with pytest.raises(FormatError) as e:
        data_string(text, "'evidence'")
    assert str(e.value).startswith(f"'evidence' {reason}")


def test_text_lists_refuse_numpy_printed_texts_and_keep_a_quote_inside_a_text():
    assert text_list("['it s' , \"a' 'b\"]", "c") == ["it s", "a' 'b"]
    with pytest.raises(FormatError, match="numpy array printed"):
        text_list("['a'\n 'b']", "c")


def test_a_cell_whose_text_writes_half_a_character_rejects_its_row_and_the_others_load(tmp_path):
    path = tmp_path / "native.csv"
    path.write_text(
        'run_id,query_id,evidence\nA,q1,"[""d1\\ud83d""]"\nA,q2,"[\'d2\\udc00\']"\nA,q3,"[""d3""]"\n',
        encoding="utf-8",
    )
    rep, ev, _runs = _ingest(path)
    assert (rep.n_records, rep.n_rejected) == (1, 2) and ev == [("q3", "d3", None)]
    half = ", half of a character written as a UTF-16 surrogate pair (the text was cut inside the character)"
    assert [(i.line_no, i.message) for i in rep.rejected] == [
        (2, "'evidence' holds \\ud83d" + half + ": write the text with its characters whole"),
        (3, "'evidence' holds \\udc00" + half + ": write the text with its characters whole"),
    ]

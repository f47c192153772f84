"""A load whose passages get ``text:`` document ids (a Ragas export without retrieved_context_ids, a
trace export without a document-id key) takes the document ids the stored runs log for the same
passages word for word (ragaudit_core.logs.stored_passages), by the rules of the stored questions
(tests/logs/test_stored_questions.py): only made ids change, a passage two ids share keeps its hash,
only loads before serve, each run is counted in one sentence."""

from __future__ import annotations

import csv

import pytest

from ragaudit_core import workspace
from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.formats.base import ALL_HASHED
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import IngestOptions, ingest_paths
from ragaudit_core.logs.stored_passages import PARTLY_HASHED
from ragaudit_core.stability import StabilityOptions, compute_stability
from tests.helpers import write_jsonl

Q = {
    "1": "0-dimensional biomaterials show inductive properties.",
    "3": "1,000 genomes project enables mapping of genetic sequence variation.",
    "5": "1/2000 in UK have abnormal PrP positivity.",
}
P = {  # passages: A, C, E stored under one id each, S under two (d4 and d6), B only native, X only Ragas
    "A": "Biomaterials with zero dimensions induce bone.",
    "B": "Nanoparticles were tested in mice.",
    "C": "The 1000 Genomes Project maps variation.",
    "S": "Prion positivity was measured in appendix samples.",
    "E": "One in 2000 people carry abnormal PrP.",
    "X": "A passage no stored run retrieved.",
}
NATIVE = {"1": [("d1", "A"), ("d2", "B")], "3": [("d3", "C"), ("d4", "S")], "5": [("d5", "E"), ("d6", "S")]}
# the Ragas rows: the same claims (other spacing and case: the question hash normalises both)
RAGAS = [(Q["1"].upper(), ["A", "X"]), (Q["3"], ["C", "S"]), ("  " + Q["5"], ["E"])]


def text_id(key: str) -> str:
    return "text:" + span_hash(P[key])[:16]


def _native(tmp_path, run="native"):
    return write_jsonl(
        tmp_path / f"{run}.jsonl",
        [
            {
                "run_id": run,
                "query_id": qid,
                "query": Q[qid],
                "evidence": [{"doc_id": d, "text": P[k]} for d, k in NATIVE[qid]],
            }
            for qid in NATIVE
        ],
    )


def _ragas_csv(tmp_path, rows=RAGAS, name="ragas", refs=None):
    """A Ragas dataset as pandas writes it, without retrieved_context_ids (``refs``: reference
    contexts per row, by passage key)."""
    path = tmp_path / f"{name}.csv"
    fields = ["user_input", "retrieved_contexts", "response"] + (["reference_contexts"] if refs else [])
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for i, (question, keys) in enumerate(rows):
            row = {"user_input": question, "retrieved_contexts": repr([P[k] for k in keys]), "response": "an answer"}
            if refs:
                row["reference_contexts"] = repr([P[k] for k in refs[i]])
            w.writerow(row)
    return path


def _docs(con, run):
    """(query id, document id) per entry of ``run``, in line and rank order (entries whose raw id
    disagrees with the stored one left out: there is none)."""
    rows = con.execute(
        "SELECT query_id, doc_id, doc_id_raw FROM evidence JOIN records USING (run_id, query_id) WHERE run_id = ? "
        "ORDER BY line_no, position",
        [run],
    ).fetchall()
    return [(q, d) for q, d, raw in rows if d == raw.lower()]


def _doc_ids(con, run):
    return [d for _q, d in _docs(con, run)]


def _said(report, code="doc-ids"):
    return [w.message for w in report.warnings if w.code == code]


RENAMED = [("1", "d1"), ("1", text_id("X")), ("3", "d3"), ("3", text_id("S")), ("5", "d5")]
HASHED = [("1", text_id("A")), ("1", text_id("X")), ("3", text_id("C")), ("3", text_id("S")), ("5", text_id("E"))]
TOOK = (
    "3 passages of run 'ragas' took their document ids from the stored runs' passages (as run 'native' holds them); "
    "1 matched "
    "no stored passage word for word and keeps its text hash (text:…): at the document level it meets no other "
    "run's documents (a different chunking?); 1 matched a passage stored under several document ids and keeps its "
    "text hash (which one cannot be told)"
)


def _pair(con, level):
    res = compute_stability(con, StabilityOptions(resamples=0))
    rows = res.pairs[res.pairs["level"] == level]
    assert len(rows) == 1
    return rows.iloc[0], res


def test_a_ragas_run_loaded_after_the_native_run_takes_its_document_ids(tmp_path):
    """By hand, per claim (native vs Ragas, documents; spans are (document, passage) and agree):
    1: {d1, d2} vs {d1, text:X} = 1/3; 3: {d3, d4} vs {d3, text:S} = 1/3; 5: {d5, d6} vs {d5} = 1/2;
    J_avg = (1/3 + 1/3 + 1/2) / 3 = 7/18 at both levels (it was 0: no id in common)."""
    con = store.connect(":memory:")
    assert _said(ingest_paths(con, [_native(tmp_path)])) == []
    rep = ingest_paths(con, [_ragas_csv(tmp_path)])
    assert _docs(con, "ragas") == RENAMED
    assert _said(rep) == [TOOK]
    assert catalog.text_id_runs(con) == []  # no longer a run without document ids: the pair is not mixed
    for level in ("doc", "span"):
        pair, res = _pair(con, level)
        assert pair["n_queries"] == 3
        assert pair["j_avg"] == pytest.approx(7 / 18)
    assert not any("logged no document ids" in w for w in res.summary.warnings)


def _no_ids_warnings(con, rep):
    said = [w.message for w in rep.warnings if "records carry no document ids" in w.message]
    kept = con.execute("SELECT message FROM ingest_warnings WHERE message LIKE '%records carry no document ids%'")
    return said, [m for (m,) in kept.fetchall()]


def test_the_no_document_ids_warning_goes_when_every_passage_took_a_stored_id(tmp_path):
    """Every passage of the file took an id (A, C, E: one stored id each): the file's 'carry no
    document ids' warning would contradict the run's sentence, so it is dropped, said and stored;
    a file some of whose passages keep their hash (X) keeps it."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [(Q["1"], ["A"]), (Q["3"], ["C"])], name="ragas_all")])
    assert _docs(con, "ragas_all") == [("1", "d1"), ("3", "d3")]
    assert _no_ids_warnings(con, rep) == ([], [])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [(Q["1"], ["A", "X"])], name="ragas_some")])
    said, kept = _no_ids_warnings(con, rep)
    assert len(said) == 1 and len(kept) == 1
    # ... without saying that each passage's id is its text's hash (A took one): only the others' is
    assert said == kept and ALL_HASHED not in said[0] and PARTLY_HASHED in said[0], said


def test_no_stored_passages_keeps_the_text_ids_and_the_pair_stays_mixed(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    rep = ingest_paths(con, [_ragas_csv(tmp_path)], IngestOptions(stored_passages=False))
    assert _docs(con, "ragas") == HASHED
    assert _said(rep) == []
    assert catalog.text_id_runs(con) == ["ragas"]


def test_an_empty_database_or_one_without_ids_says_nothing(tmp_path):
    con = store.connect(":memory:")
    assert _said(ingest_paths(con, [_ragas_csv(tmp_path)])) == []
    assert _said(ingest_paths(con, [_ragas_csv(tmp_path, RAGAS[:1], name="ragas_k10")])) == []
    assert _doc_ids(con, "ragas_k10") == [d for _q, d in HASHED[:2]]


def test_passages_no_stored_run_holds_are_counted_and_named_by_run(tmp_path):
    """A second Ragas run loaded later takes its ids from the native run and from the renamed Ragas run
    (both store d1 for passage A); one of its passages meets none (another chunking)."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    ingest_paths(con, [_ragas_csv(tmp_path)])
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [(Q["1"], ["A"]), (Q["5"], ["X"])], name="ragas_k10")])
    assert _docs(con, "ragas_k10") == [("1", "d1"), ("5", text_id("X"))]
    assert _said(rep) == [
        "1 passage of run 'ragas_k10' took its document id from the stored runs' passages (as runs 'native', "
        "'ragas' hold them); 1 matched no stored passage word for word and keeps its text hash (text:…): at the "
        "document "
        "level it meets no other run's documents (a different chunking?)"
    ]
    rep = ingest_paths(con, [_ragas_csv(tmp_path, [(Q["1"], ["X"])], name="ragas_k20")])
    assert _said(rep) == [
        "0 passages of run 'ragas_k20' took their document ids from the stored runs' passages; 1 matched no stored "
        "passage word for word and keeps its text hash (text:…): at the document level it meets no other run's "
        "documents (a different chunking?)"
    ]


def test_a_run_loaded_before_the_native_run_is_not_renamed_and_the_load_says_how_to_pair(tmp_path):
    """The order rule: the Ragas run loaded first keeps its hashes; loading the native run says so
    (3 passages: A, C, E — S is under two ids, so loading it again would not pair it); removed and
    loaded again, it takes the native run's ids."""
    con = store.connect(":memory:")
    workspace.load_paths(con, [_ragas_csv(tmp_path)], precompute_overview=False)
    rep = workspace.load_paths(con, [_native(tmp_path)], precompute_overview=False)
    assert _doc_ids(con, "ragas") == [d for _q, d in HASHED]
    assert _said(rep) == [
        "run 'ragas', loaded before, holds 3 distinct passages of run 'native' word for word under hashed document ids "
        "(text:…), so they share no document: stored runs are not renamed; to pair them, remove its file (on the "
        "home page: “Remove a file or a run…”) and load it again: its passages then take the stored runs' "
        "document ids"
    ]
    (file_id,) = con.execute("SELECT file_id FROM files WHERE path LIKE '%.csv'").fetchone()
    workspace.remove_file(con, file_id)
    rep = workspace.load_paths(con, [_ragas_csv(tmp_path)], precompute_overview=False)
    assert _docs(con, "ragas") == RENAMED
    assert _said(rep) == [TOOK]


def test_passages_of_the_same_load_do_not_serve_and_the_load_says_how_to_pair(tmp_path):
    con = store.connect(":memory:")
    rep = workspace.load_paths(con, [_native(tmp_path), _ragas_csv(tmp_path)], precompute_overview=False)
    assert _doc_ids(con, "ragas") == [d for _q, d in HASHED]
    assert _said(rep) == [
        "run 'ragas' holds 3 distinct passages of run 'native', loaded with it, word for word under hashed document "
        "ids (text:…), so they share no document: the stored runs' passages give document ids to later loads only; "
        "to pair them, remove its file (on the home page: “Remove a file or a run…”) and load it again"
    ]


def test_a_native_load_reads_nothing(tmp_path, monkeypatch):
    """Neither the stored passages (no text: id made) nor the check after the load (no run holds one)."""
    from ragaudit_core.logs import stored_passages

    con = store.connect(":memory:")
    workspace.load_paths(con, [_native(tmp_path)], precompute_overview=False)
    read = []
    monkeypatch.setattr(stored_passages.StoredPassages, "_read", lambda self: read.append(1))
    rep = workspace.load_paths(con, [_native(tmp_path, run="native2")], precompute_overview=False)
    assert read == [] and _said(rep) == []


def test_an_id_a_record_logs_is_never_renamed(tmp_path):
    """A native record logging a text: id itself (even its own passage's) keeps it; so does a Ragas
    row that gives its contexts ids."""
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    own = write_jsonl(
        tmp_path / "own.jsonl",
        [{"run_id": "own", "query_id": "1", "query": Q["1"], "evidence": [{"doc_id": text_id("A"), "text": P["A"]}]}],
    )
    ragas_ids = write_jsonl(
        tmp_path / "ids.jsonl",
        [{"user_input": Q["1"], "retrieved_contexts": [P["A"]], "retrieved_context_ids": [text_id("A")]}],
    )
    rep = ingest_paths(con, [own, ragas_ids])
    assert _docs(con, "own") == [("1", text_id("A"))]
    assert _docs(con, "ids") == [("1", text_id("A"))]
    assert _said(rep) == []


def test_reference_passages_label_the_document_ids_the_passages_took(tmp_path):
    """Ragas reference contexts label the documents their query's entries store for the passage (both
    runs' entries: A is d1 in each now, S is d4 and text:S), and a passage no entry of its query holds
    takes the stored id by the same rules (B: d2) — else its text hash (X); with the option off, B keeps
    its hash and A labels the Ragas run's text:A too."""
    refs = [["A", "X"], ["S"], ["B", "E"]]
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    ingest_paths(con, [_ragas_csv(tmp_path, refs=refs)])
    labels = con.execute("SELECT query_id, doc_id FROM qrels ORDER BY ALL").fetchall()
    on = [("1", "d1"), ("1", text_id("X")), ("3", "d4"), ("3", text_id("S")), ("5", "d2"), ("5", "d5")]
    assert labels == sorted(on)
    off = store.connect(":memory:")
    ingest_paths(off, [_native(tmp_path)])
    ingest_paths(off, [_ragas_csv(tmp_path, refs=refs)], IngestOptions(stored_passages=False))
    labels = off.execute("SELECT query_id, doc_id FROM qrels ORDER BY ALL").fetchall()
    hashed = [("1", text_id("A")), ("5", text_id("B")), ("5", text_id("E"))]
    assert labels == sorted([*on[:2], *on[2:4], ("5", "d5"), *hashed])


def test_removing_the_renamed_run_forgets_its_sentence(tmp_path):
    con = store.connect(":memory:")
    ingest_paths(con, [_native(tmp_path)])
    ingest_paths(con, [_ragas_csv(tmp_path)])
    said = lambda: [m for (m,) in con.execute("SELECT message FROM ingest_warnings WHERE code = 'doc-ids'").fetchall()]  # noqa: E731
    assert said() == [TOOK]
    workspace.remove_runs(con, ["ragas"])
    assert said() == []


@pytest.mark.parametrize("kind", ["ragas", "openinference"])
def test_worker_processes_give_the_ids_the_process_gives(tmp_path, monkeypatch, kind):
    """The fixtures of tests/logs/test_fast_dialects.py (Ragas rows and OpenInference retriever spans,
    some without document ids) after a native run storing their passages 0 and 1 under one id each, 3
    under two, 2 not at all: the same rows, warnings and counts whether the workers map the lines (and
    hold the spans) or the process does."""
    from tests.logs.test_fast_dialects import TEXTS, _oi_file, _ragas_file
    from tests.logs.test_streaming import after_stored_run

    stored = [("n0", 0), ("n1", 1), ("n3", 3), ("n3b", 3)]
    native = write_jsonl(
        tmp_path / "native.jsonl",
        [
            {"run_id": "native", "query_id": d, "query": f"claim {d}", "evidence": [{"doc_id": d, "text": TEXTS[i]}]}
            for d, i in stored
        ],
    )
    path = tmp_path / "log.jsonl"
    (_ragas_file if kind == "ragas" else _oi_file)(path)
    serial, expected, got, worked = after_stored_run(monkeypatch, native, path, 300 if kind == "ragas" else 600)
    docs = {d for (d,) in serial.execute("SELECT doc_id FROM evidence WHERE run_id = 'log'").fetchall()}
    assert "n0" in docs and "text:" + span_hash(TEXTS[0])[:16] not in docs  # (passage 0 took its id)
    assert worked >= 30
    assert got == expected
    said = [m for _line, code, m in expected[2] if code == "doc-ids"]
    assert len(said) == 1
    assert "of run 'log' took their document ids from the stored runs' passages (as run 'native' holds them)" in said[0]


def test_spans_mapped_as_they_are_read_give_the_same_ids(tmp_path, monkeypatch):
    """Past the premap threshold the process maps each retriever span as it reads it and holds its rows
    (logs.held): the same rows and sentence as spans read when the file ends."""
    from ragaudit_core.logs import held
    from tests.logs.test_fast_dialects import TEXTS, _oi_file
    from tests.logs.test_streaming import _everything

    native = write_jsonl(
        tmp_path / "native.jsonl",
        [{"run_id": "native", "query_id": "n0", "query": "claim", "evidence": [{"doc_id": "n0", "text": TEXTS[0]}]}],
    )
    path = tmp_path / "log.jsonl"
    _oi_file(path)
    monkeypatch.setenv("RAGAUDIT_INGEST_WORKERS", "0")

    def ingest():
        con = store.connect(":memory:")
        ingest_paths(con, [native])
        return _everything(con, ingest_paths(con, [path]))

    expected = ingest()
    monkeypatch.setattr(held, "PREMAP_BYTES", 0)
    assert ingest() == expected
    said = [m for _line, code, m in expected[2] if code == "doc-ids"]
    assert said == [
        "9 passages of run 'log' took their document ids from the stored runs' passages (as run 'native' holds them)"
    ]


def test_with_case_folded_spans_passages_match_in_any_case(tmp_path):
    """With --casefold-spans the span hash folds case, so a passage in capitals is the stored one; its
    text: id is made from the hash without folding (as the ingest makes it), and is still recognised."""
    con = store.connect(":memory:")
    opts = IngestOptions(casefold_spans=True)
    ingest_paths(con, [_native(tmp_path)], opts)
    P["A_UPPER"] = P["A"].upper()
    try:
        ingest_paths(con, [_ragas_csv(tmp_path, [(Q["1"], ["A_UPPER", "X"])])], opts)
    finally:
        del P["A_UPPER"]
    assert _doc_ids(con, "ragas") == ["d1", text_id("X")]

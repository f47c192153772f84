"""A log that names a run per record (a request id as the run id): as many runs as queries. Every
step of a load must grow with the records, not with runs × queries — the coverage check built
every missing (run, query) pair (6,000 records: 36M pairs, DuckDB out of memory, the ingest rolled
back) and the default selection held a mask of every query per run."""

from __future__ import annotations

from ragaudit_core import workspace
from ragaudit_core.logs import catalog, sanity, store
from ragaudit_core.logs.selection import comparable_runs
from tests.helpers import write_jsonl
from tests.logs.test_sanity import P1, P2

N = 6_000


def test_a_log_with_a_run_per_record_loads_and_says_so_in_a_few_sentences(tmp_path):
    records = [
        {"run_id": f"req-{i}", "query_id": f"q{i}", "query": f"question {i}", "evidence": [{"doc_id": f"d{i % 50}"}]}
        for i in range(N)
    ]
    # three runs that do share their queries: the default selection keeps them together
    records += [
        {"run_id": f"sweep-{k}", "query_id": f"q{i}", "evidence": [{"doc_id": f"d{i}"}]}
        for k in range(3)
        for i in range(4)
    ]
    con = store.connect(":memory:")
    report = workspace.load_paths(con, [write_jsonl(tmp_path / "requests.jsonl", records)])
    assert report.n_records == N + 12 and len(report.runs) == N + 3
    (coverage,) = [str(w) for w in report.warnings if "query coverage differs" in str(w)]
    # the sweep's runs lack the same N - 4 queries; 'req-0' … each lack all but their own
    assert (
        f"3 runs ('sweep-0', 'sweep-1', 'sweep-2') each lack the same {N - 4:,} queries: 'q10', 'q100', 'q1000'"
        in coverage
    )
    assert f"run 'req-3' lacks {N - 1:,} queries: 'q0', 'q1', 'q10', 'q100', 'q1000' …" in coverage
    assert f"; {N - 4:,} more runs lack other queries" in coverage
    sel = comparable_runs(con)
    # the sweep's 4 shared queries × 3 pairs; a request run would narrow them to its one query
    assert sel.runs == ["sweep-0", "sweep-1", "sweep-2"] and sel.n_shared == 4
    assert sel.narrowing == ["req-0", "req-1", "req-2", "req-3"] and len(sel.left_out) == N - 4


def test_many_runs_with_passage_ids_are_named_in_eleven_sentences(tmp_path):
    records = [{"run_id": f"r{i:02d}", "query_id": "q", "contexts": [P1, P2]} for i in range(14)]
    con = store.connect(":memory:")
    workspace.load_paths(con, [write_jsonl(tmp_path / "p.jsonl", records)], precompute_overview=False)
    warnings = sanity.identity_warnings(con, [f"r{i:02d}" for i in range(14)])
    assert len(warnings) == sanity.PASSAGE_MESSAGES + 1
    assert warnings[0].startswith("run 'r00': 100% of its 2 document ids look like passage texts")
    assert warnings[-1] == "4 more runs' document ids look like passage texts too ('r10', 'r11', 'r12', 'r13')"
    assert catalog.coverage_gaps(con) is None  # one query, every run has it

"""The ``ragaudit`` console script, run as a real subprocess."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragaudit_core.logs import store
from tests.helpers import write_jsonl

EXE = shutil.which("ragaudit") or str(Path(sys.executable).parent / "ragaudit")


def run(*args, cwd=None):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_stability_json_shape_and_numbers(three_runs, tmp_path):
    out = tmp_path / "m.json"
    p = run("stability", three_runs, "--json", out, "--csv-dir", tmp_path / "csv")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert set(data) == {"runs", "pairs", "queries", "effects", "summary", "intervals"}  # no labels: no "quality"
    assert data["intervals"]["resamples"] == 1000 and set(data["intervals"]["summary"]) >= {
        "mean_j_doc",
        "collapse_rate",
    }
    assert set(data["runs"][0]) >= {
        "run_id",
        "citation_rate",
        "null_rate",
        "mean_evidence",
        "median_evidence",
        "p95_evidence",
    }
    assert set(data["pairs"][0]) >= {
        "run_a",
        "run_b",
        "level",
        "j_avg",
        "flip_rate",
        "null_rate_a",
        "null_rate_b",
        "null_loss",
        "null_gain",
        "collapse_rate",
    }
    assert set(data["queries"][0]) == {
        *("query_id", "level", "j_min", "worst_pair", "run_a", "run_b", "collapsed", "flipped")
    }
    assert all(q["worst_pair"] == f"{q['run_a']} vs {q['run_b']}" for q in data["queries"])
    assert all(p["run_a"] < p["run_b"] for p in data["pairs"])
    assert data["summary"]["gap_ratio"] == pytest.approx(11 / 7)
    assert data["summary"]["collapse_rate"] == pytest.approx(1 / 3)
    ab_doc = next(p for p in data["pairs"] if (p["run_a"], p["run_b"], p["level"]) == ("A", "B", "doc"))
    assert ab_doc["j_avg"] == pytest.approx(2 / 3)
    # effects by what changed (no configs here: "unknown", 3 pairs a level), each with its interval
    assert [(e["changed"], e["level"], e["n_pairs"]) for e in data["effects"]] == [
        ("unknown", "doc", 3),
        ("unknown", "span", 3),
    ]
    assert data["effects"][0]["j_avg"] == pytest.approx((2 / 3 + 4 / 9 + 1 / 9) / 3)  # A–B, A–C, B–C
    j = next(e for e in data["intervals"]["effects"] if (e["level"], e["metric"]) == ("doc", "j_avg"))
    assert j["value"] == pytest.approx(data["effects"][0]["j_avg"]) and j["n_pairs"] == 3
    assert j["ci"][0] <= j["value"] <= j["ci"][1]
    rows = list(csv.DictReader(open(tmp_path / "csv" / "pairs.csv")))
    assert len(rows) == 6  # 3 pairs × 2 levels
    assert "gap ratio = 1.571" in p.stdout


def test_stability_prints_the_effects_with_their_intervals(tmp_path):
    """The table by what changed writes each figure with its 95 % interval beside it, the interval
    the JSON holds (one pair in the group: that pair's); --resamples 0 says there are none."""
    lists = {"k1": (["x"], ["x"], ["x"]), "k2": (["x", "y"], ["x"], ["z"])}  # J_doc 1/2, 1, 0
    for run_id, per_query in lists.items():
        write_jsonl(
            tmp_path / "logs" / f"{run_id}.jsonl",
            [
                {"run_id": run_id, "query_id": q, "config": {"top_k": int(run_id[1])}, "cited": cited}
                for q, cited in zip(("q1", "q2", "q3"), per_query)
            ],
        )
    out = tmp_path / "m.json"
    p = run("stability", tmp_path / "logs", "--json", out)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    j = next(e for e in data["intervals"]["effects"] if e["metric"] == "j_avg")
    pair = next(e for e in data["intervals"]["pairs"] if e["metric"] == "j_avg")
    assert (j["changed"], j["value"], j["ci"]) == ("top_k", 0.5, pair["ci"]) and j["ci"][0] < 0.5 < j["ci"][1]
    assert "(mean over the pairs, pairs weigh equally; [95 % interval over queries]):" in p.stdout
    line = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("top_k"))
    assert line.split()[:3] == ["top_k", "doc", "1"]
    assert f"0.500 [{j['ci'][0]:.3f}, {j['ci'][1]:.3f}]" in line
    bare = run("stability", tmp_path / "logs", "--resamples", "0")
    assert "pairs weigh equally; no intervals without resamples):" in bare.stdout
    line = next(ln for ln in bare.stdout.splitlines() if ln.strip().startswith("top_k"))
    assert line.split() == ["top_k", "doc", "1", "0.500", "0.333", "0.333"]  # flip and collapse: q3 alone


def test_stability_json_to_stdout_is_pure_json(three_runs):
    p = run("stability", three_runs, "--json", "-", "--baseline", "A", "--flip-threshold", "0.4", "--topk", "5")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert {(x["run_a"], x["run_b"]) for x in data["pairs"]} == {("A", "B"), ("A", "C")}
    assert data["summary"]["flip_threshold"] == 0.4


def test_ingest_then_stability_from_db(three_runs, tmp_path):
    db = tmp_path / "a.duckdb"
    p = run("ingest", three_runs, "--db", db)
    assert p.returncode == 0, p.stderr
    assert "loaded 9 records (9 evidence entries) from 3 files into 3 runs; rejected 0 lines" in p.stderr
    p = run("stability", "--db", db, "--json", "-")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["summary"]["n_queries"] == 3
    table = run("stability", "--db", db).stdout.splitlines()
    doc_rows = [line for line in table if " doc " in line]
    assert doc_rows and all(line.rstrip().endswith("—") for line in doc_rows), table  # span-only count: a dash
    assert "<NA>" not in "\n".join(table)


def test_docid_map_and_case_sensitive(tmp_path):
    write_jsonl(tmp_path / "r1.jsonl", [{"run_id": "r1", "query_id": "q", "cited": ["DocM", "docX"]}])
    write_jsonl(tmp_path / "r2.jsonl", [{"run_id": "r2", "query_id": "q", "cited": ["docm", "docZ"]}])
    m = tmp_path / "map.csv"
    m.write_text("raw,canonical\ndocX,docZ\n")
    p = run("stability", tmp_path / "r1.jsonl", tmp_path / "r2.jsonl", "--docid-map", m, "--json", "-")
    assert json.loads(p.stdout)["pairs"][0]["j_avg"] == 1.0
    p = run("stability", tmp_path / "r1.jsonl", tmp_path / "r2.jsonl", "--case-sensitive", "--json", "-")
    assert json.loads(p.stdout)["pairs"][0]["j_avg"] == 0.0
    # a database loaded case-sensitively: the map meets its ids as they were stored, whatever the
    # stability command's own flags (it was normalised with them, and silently mapped nothing)
    db = tmp_path / "cs.duckdb"
    write_jsonl(tmp_path / "r3.jsonl", [{"run_id": "r3", "query_id": "q", "cited": ["DocA", "x1"]}])
    write_jsonl(tmp_path / "r4.jsonl", [{"run_id": "r4", "query_id": "q", "cited": ["DocB", "x1"]}])
    assert run("ingest", tmp_path / "r3.jsonl", tmp_path / "r4.jsonl", "--db", db, "--case-sensitive").returncode == 0
    m.write_text("raw,canonical\nDocB,DocA\n")
    p = run("stability", "--db", db, "--docid-map", m, "--json", "-")
    assert json.loads(p.stdout)["pairs"][0]["j_avg"] == 1.0


def test_quality_and_gate_apply_the_docid_map_as_stability_does(tmp_path):
    """The alias map was an option of ``stability`` alone: ``quality`` and ``gate`` on the same
    database gave other nDCG figures (a review found 0.4747 against stability's 0.4998). r1 logs
    DocM for q1's relevant document d6 (mapped DocM → d6): nDCG@10 of r1 is 1 with the map, 0
    without; J between r1 and r2 (which logs d6) is 1 with it. The gate decides on the mapped figures."""
    write_jsonl(tmp_path / "r1.jsonl", [{"run_id": "r1", "query_id": "q1", "cited": ["DocM", "x"]}])
    write_jsonl(tmp_path / "r2.jsonl", [{"run_id": "r2", "query_id": "q1", "cited": ["d6", "x"]}])
    (tmp_path / "q.tsv").write_text("q1\td6\t1\n")
    m = tmp_path / "map.csv"
    m.write_text("raw,canonical\nDocM,d6\n")
    db = tmp_path / "m.duckdb"
    assert (
        run(
            "ingest", tmp_path / "r1.jsonl", tmp_path / "r2.jsonl", "--db", db, "--qrels", tmp_path / "q.tsv"
        ).returncode
        == 0
    )

    def ndcg(*extra):
        p = run("quality", "--db", db, "--runs", "r1", "--json", "-", *extra)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["runs"][0]["metrics"]["ndcg@10"]

    assert (ndcg(), ndcg("--docid-map", m)) == (0.0, 1.0)
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'preset = "none"\n[[rule]]\nmetric = "ndcg@10"\nop = ">="\nthreshold = 0.5\n'
        '[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = ">="\nthreshold = 1.0\n'
    )
    gate = ["gate", "--db", db, "--baseline", "r2", "--candidate", "r1", "--rules", rules, "--json", "-"]
    assert run(*gate).returncode == 1
    p = run(*gate, "--docid-map", m)
    assert p.returncode == 0, p.stdout + p.stderr
    assert [r["status"] for r in json.loads(p.stdout)["results"]] == ["pass", "pass"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["stability"], "error: give log files or folders, or --db with an ingested database"),
        (["stability", "NOPE.jsonl"], "error: NOPE.jsonl: no such file or folder"),
        (
            ["stability", "{three}", "--baseline", "Z"],
            "error: baseline run 'Z' is not among the runs compared ('A', 'B', 'C'): name one of them, or add it",
        ),
        (["stability", "{three}", "--topk", "0"], "error: --topk must be at least 1"),
        (["stability", "{three}", "--docid-map", "{missing}"], "alias map not found"),
        (["stability", "{three}", "--flip-threshold", "abc"], "Invalid value"),
    ],
)
def test_bad_usage_exits_2_with_a_message(three_runs, tmp_path, args, message):
    args = [a.format(three=three_runs, missing=tmp_path / "none.csv") for a in args]
    p = run(*args, cwd=tmp_path)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert message in p.stderr
    assert "Traceback" not in p.stderr


def test_coverage_mismatch_exit_code_and_allow_missing(tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": q, "cited": ["x"]} for q in ("q1", "q2")])
    write_jsonl(tmp_path / "b.jsonl", [{"run_id": "b", "query_id": "q1", "cited": ["x"]}])
    p = run("stability", tmp_path)
    assert p.returncode == 2
    assert "run 'b' lacks 1 query: 'q2'" in p.stderr
    p = run("stability", tmp_path, "--allow-missing", "--json", "-")
    assert p.returncode == 0
    assert json.loads(p.stdout)["summary"]["n_queries"] == 1


def test_ingest_strict_exits_2_on_rejected_lines(tmp_path):
    f = write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": "q", "cited": []}, "oops"])
    p = run("ingest", f, "--db", tmp_path / "x.duckdb", "--strict")
    assert p.returncode == 2
    assert f"rejected: {f} line 2: invalid JSON" in p.stderr


def test_a_file_that_loaded_nothing_does_not_read_as_one_read_normally(tmp_path):
    """A file whose every line is rejected beside one that loads: the summary says nothing of it
    loaded, and the file ledger's kind says so (it was 'evidence', as for a file that loaded)."""
    import duckdb

    good = write_jsonl(tmp_path / "good.jsonl", [{"run_id": "a", "query_id": "q", "cited": ["x"]}])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"run_id": "b", "query_id": "q", "evidence": 5}])
    wide = tmp_path / "wide.jsonl"  # refused whole: UTF-16
    wide.write_bytes('{"run_id": "c", "query_id": "q", "evidence": ["d"]}'.encode("utf-16"))
    db = tmp_path / "x.duckdb"
    p = run("ingest", good, bad, wide, "--db", db)
    assert "good.jsonl read as native\n" in p.stderr
    assert "bad.jsonl read as native: nothing loaded (every line rejected)" in p.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        kinds = con.execute("SELECT regexp_extract(path, '[a-z]+[.]jsonl'), kind FROM files ORDER BY 1").fetchall()
    assert kinds == [("bad.jsonl", "nothing loaded"), ("good.jsonl", "evidence"), ("wide.jsonl", "refused")]


@pytest.mark.slow
def test_fidelity_cli_summaries_alerts_canary_and_exit_codes(tmp_path):
    from tests.helpers import pipeline

    logs = tmp_path / "prov"
    write_jsonl(
        logs / "base.jsonl",
        [
            pipeline("base", "q1", text="[Source: D1, p. 2]"),
            pipeline("base", "q2", strip_rerank=True, text="[Document 2] [Source: D1]"),
        ],
    )
    write_jsonl(
        logs / "cand.jsonl",
        [pipeline("cand", "q1", text="[Source: D9, p. 1]"), pipeline("cand", "q2", text="[Source: D1, p. 3]")],
    )
    out = tmp_path / "f.json"
    p = run("fidelity", logs, "--json", out, "--canary", "base,cand")
    assert p.returncode == 0, p.stderr
    assert (
        "ALERT reranking survival: 50.0% of the queries that reached reranking with a ground-truth source keep "
        "one through it (conditional survival" in p.stdout
    )
    assert "canary base → cand: Mann-Whitney U = 4.000" in p.stdout
    data = json.loads(out.read_text())
    base = data["runs"]["base"]
    assert base["summary"]["stage_survival"]["reranking"] == 0.5
    assert [q["query_id"] for q in base["queries"]] == ["q1", "q2"]
    assert data["runs"]["cand"]["summary"]["cfs_mean"] == pytest.approx((0.0 + 0.3) / 2)
    assert data["canary"]["u"] == 4.0  # base {1, 1} beats cand {0, 0.3} in all 4 pairs

    rules = tmp_path / "r.toml"
    rules.write_text("[fidelity]\nstage_survival_min = 0.4\nparse_failure_max = 0.5\n")
    p = run("fidelity", logs, "--rules", rules)
    assert p.returncode == 0 and "ALERT" not in p.stdout.split("run cand")[0]

    rules.write_text("[fidelity]\nstage_survival_min = 4\n")
    p = run("fidelity", logs, "--rules", rules)
    assert p.returncode == 2 and "stage_survival_min" in p.stderr
    evidence_only = write_jsonl(tmp_path / "ev.jsonl", [{"run_id": "r", "query_id": "q", "evidence": ["d"]}])
    p = run("fidelity", evidence_only)
    assert p.returncode == 2 and "no provenance records are loaded" in p.stderr


@pytest.mark.slow
def test_gate_exit_codes_and_json(three_runs, tmp_path):
    db = tmp_path / "g.duckdb"
    assert run("ingest", three_runs, "--db", db).returncode == 0
    p = run("gate", "--db", db, "--baseline", "A", "--candidate", "A")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("gate: A against baseline A: PASS")

    out = tmp_path / "v.json"
    p = run("gate", "--db", db, "--baseline", "A", "--candidate", "B")
    assert p.returncode == 3, p.stderr  # three shared queries: below the default preset's floor of 30
    assert "it rests on 3 queries; the rule asks for at least 30" in p.stdout
    from ragaudit_core.review.gate import DEFAULT_RULES, dump_rules

    no_floor = tmp_path / "no-floor.toml"  # the default rules' arithmetic on three queries
    no_floor.write_text(dump_rules([r.model_copy(update={"min_queries": None}) for r in DEFAULT_RULES]))
    p = run("gate", "--db", db, "--baseline", "A", "--candidate", "B", "--rules", no_floor, "--json", out)
    assert p.returncode == 1, p.stderr
    # A → B: q3 loses its only evidence, so null loss = 1/3 > 0.01, listed first
    lines = p.stdout.splitlines()
    assert lines[0].startswith("gate: B against baseline A: FAIL")
    assert lines[3].startswith("FAIL") and "null loss, doc ≤ 0.01" in lines[3] and "0.333" in lines[3]
    data = json.loads(out.read_text())
    assert data["status"] == "fail"
    by = {r["rule"]["name"]: r for r in data["results"]}
    assert by["j_avg,doc >= 0.5"]["value"] == pytest.approx(2 / 3) and by["j_avg,doc >= 0.5"]["status"] == "pass"
    assert by["Δ cfs_p95_tail >= -0.15"]["status"] == "not applicable"
    assert data["headline"].startswith("FAIL: of 10 rules, ")

    rules = tmp_path / "r.toml"
    rules.write_text('preset = "none"\n[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = ">="\nthreshold = 0.6\n')
    p = run("gate", three_runs, "--baseline", "A", "--candidate", "B", "--rules", rules, "--json", "-")
    assert p.returncode == 0, p.stderr  # from log files, one rule: 2/3 ≥ 0.6
    assert json.loads(p.stdout)["status"] == "pass"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--baseline", "A", "--candidate", "Z"], "run 'Z' not found"),
        (["--baseline", "A", "--candidate", "B", "--rules", "missing.toml"], "no such rules file"),
        (["--baseline", "A", "--candidate", "B", "--preset", "lax"], "--preset must be one of"),
        (["--candidate", "B"], "--baseline"),
    ],
)
def test_gate_bad_input_exits_2(three_runs, args, message):
    p = run("gate", three_runs, *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr


@pytest.mark.slow
def test_gate_bad_rules_file_exits_2(three_runs, tmp_path):
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nmetric = "collapse_rate"\nlevel = "page"\nop = "<="\nthreshold = 0.2\n')
    p = run("gate", three_runs, "--baseline", "A", "--candidate", "B", "--rules", rules)
    assert p.returncode == 2 and "[[rule]] number 1: collapse_rate needs level 'doc' or 'span'" in p.stderr
    rules.write_text("preset = \n")
    p = run("gate", three_runs, "--baseline", "A", "--candidate", "B", "--rules", rules)
    assert p.returncode == 2 and str(rules) in p.stderr
    p = run("gate", "--db", tmp_path / "none.duckdb", "--baseline", "A", "--candidate", "B")
    assert p.returncode == 2 and "no such database file" in p.stderr


@pytest.mark.slow
def test_report_writes_a_pdf_and_refuses_bad_input(three_runs, tmp_path):
    out = tmp_path / "audit.pdf"
    p = run("report", three_runs, "--baseline", "A", "--candidate", "B", "--out", out)
    assert p.returncode == 0, p.stderr
    # A → B loses q3's evidence, but three shared queries are below the default preset's floor of 30
    assert out.read_bytes().startswith(b"%PDF-") and "verdict INCONCLUSIVE" in p.stdout
    p = run("report", three_runs, "--baseline", "A", "--candidate", "Z", "--out", out)
    assert p.returncode == 2 and "run 'Z' not found" in p.stderr
    p = run("report", three_runs, "--out", tmp_path / "no" / "such" / "dir" / "a.pdf")
    assert p.returncode == 2 and "a.pdf" in p.stderr


def test_csv_exports_neutralise_cells_a_spreadsheet_would_run(tmp_path):
    """OWASP's rule: a text cell starting with = + - @ tab or CR gets a leading quote; numbers stay."""
    recs = [
        {"run_id": rid, "query_id": qid, "evidence": [{"doc_id": "d1", "text": "t"}]}
        for rid in ('=HYPERLINK("http://x.example","a")', "@SUM(A1)")
        for qid in ("+1+1", "-2", "plain")
    ]
    logs = tmp_path / "hostile.jsonl"
    logs.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    p = run("stability", logs, "--json", tmp_path / "m.json", "--csv-dir", tmp_path / "csv")
    assert p.returncode == 0, p.stderr
    runs = {r["run_id"] for r in csv.DictReader(open(tmp_path / "csv" / "runs.csv"))}
    assert runs == {'\'=HYPERLINK("http://x.example","a")', "'@SUM(A1)"}
    queries = list(csv.DictReader(open(tmp_path / "csv" / "queries.csv")))
    assert {q["query_id"] for q in queries} == {"'+1+1", "'-2", "plain"}
    pairs = list(csv.DictReader(open(tmp_path / "csv" / "pairs.csv")))
    assert all(not v.startswith(("=", "+", "-", "@")) for row in pairs for v in row.values())
    assert float(pairs[0]["j_avg"]) == 1.0  # numbers are numbers


@pytest.mark.parametrize(
    "text, says",
    [
        ("a = " + "[" * 10_000 + "]" * 10_000 + "\n", "nested too deeply"),
        ("".join(f"[{'.'.join(['t'] * n)}]\n" for n in (1, 2, 3, 4, 5, 6)), "t.t.t.t.t: nested too deeply"),
        ('[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = ">="\nthreshold = inf\n', "[[rule]] number 1: threshold:"),
        ('[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = ">="\nthreshold = nan\n', "finite number"),
        ('[[rule]]\nmetric = "warg"\np = nan\nop = ">="\nthreshold = 0.5\n', "[[rule]] number 1: p:"),
        ('[[rule]]\nmetric = "jaccard"\nlevel = "doc"\nop = ">="\nthreshold = 0.5\n', "[[rule]] number 1: metric:"),
        ('[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = "=="\nthreshold = 0.5\n', "[[rule]] number 1: op:"),
        ('[[rule]]\nmetric = "j_avg"\nlevel = "doc"\nop = ">="\nthreshold = 0.5\ncolour = "red"\n', "colour:"),
        ("rule = 3\n", "rule: must be an array of tables"),
        ("preset = 7\n", "preset: must be one of default, strict, review, none"),
        ("# " + "x" * (1 << 20) + "\n", "at most 1,048,576 bytes"),
    ],
)
def test_gate_rules_files_are_bad_input_too(three_runs, tmp_path, text, says):
    """Depth, size, non-finite numbers, unknown metrics, operators and keys: exit 2 naming the
    file and the key, never a traceback."""
    rules = tmp_path / "r.toml"
    rules.write_text(text)
    p = run("gate", three_runs, "--baseline", "A", "--candidate", "B", "--rules", rules)
    assert p.returncode == 2, p.stderr
    assert str(rules) in p.stderr and says in p.stderr and "Traceback" not in p.stderr


def test_stability_leaves_out_a_run_sharing_no_query_and_says_so(tmp_path):
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}"]} for r in ("k5", "k10") for i in range(3)]
    recs.append({"run_id": "stray", "query_id": "elsewhere", "evidence": ["x"]})
    logs = tmp_path / "r.jsonl"
    logs.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    p = run("stability", logs, "--json", tmp_path / "m.json")
    assert p.returncode == 0, p.stderr
    assert "Left out 1 run that shares no query with the 2 compared (which share 3): 'stray'; use --runs" in p.stderr
    assert json.loads((tmp_path / "m.json").read_text())["summary"]["runs"] == ["k10", "k5"]


def test_stability_names_a_narrowing_run_with_the_cli_option(tmp_path):
    """A run left out for narrowing the shared queries is told apart in the CLI's words (--runs),
    not the pages' ('pick it')."""
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}"]} for r in ("k5", "k10") for i in range(10)]
    recs += [{"run_id": "few", "query_id": f"q{i}", "evidence": ["x"]} for i in range(3)]
    logs = tmp_path / "r.jsonl"
    logs.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    p = run("stability", logs, "--json", tmp_path / "m.json")
    assert p.returncode == 0, p.stderr
    assert "'few'; name it with --runs to compare the queries they share" in p.stderr and "pick" not in p.stderr


def test_gate_on_noise_is_inconclusive_and_exits_3(tmp_path):
    """Two labelled queries: the candidate finds q2's relevant document and loses q1's, so the
    nDCG@10 change is 0 with a bootstrap interval of [-1, 1]. Two queries are too few for the
    default preset's stability and quality rules (at least 30 each): every applicable rule is
    inconclusive, exit 3, the headline says why, the JSON carries it; with the floor lowered the
    significant quality rule still cannot decide (its interval straddles the threshold)."""
    d = tmp_path / "logs"
    write_jsonl(
        d / "a.jsonl",
        [
            {"run_id": "a", "query_id": "q1", "cited": ["r1", "x", "y", "z"]},
            {"run_id": "a", "query_id": "q2", "cited": ["x2", "y2", "z2", "w2"]},
        ],
    )
    write_jsonl(
        d / "b.jsonl",
        [
            {"run_id": "b", "query_id": "q1", "cited": ["x", "y", "z", "w"]},
            {"run_id": "b", "query_id": "q2", "cited": ["r2", "x2", "y2", "z2"]},
        ],
    )
    (d / "qrels").mkdir()
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tr1\t1\nq2\tr2\t1\n")
    out = tmp_path / "v.json"
    p = run("gate", d, "--baseline", "a", "--candidate", "b", "--json", out)
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stdout.startswith(
        "gate: b against baseline a: INCONCLUSIVE: of 10 rules, 4 inconclusive (interval across the "
        "threshold, or too few queries)"
    )
    v = json.loads(out.read_text())
    (r,) = [r for r in v["results"] if r["rule"]["metric"] == "ndcg@10"]
    assert r["status"] == "inconclusive" and r["value"] == 0 and r["ci"] == [-1.0, 1.0] and r["n_queries"] == 2
    assert r["message"].endswith("it rests on 2 queries; the rule asks for at least 30")
    assert v["status"] == "inconclusive" and v["headline"].startswith("INCONCLUSIVE: of 10 rules, 4 inconclusive")
    rules = tmp_path / "rules.toml"
    rules.write_text(
        'preset = "none"\n[[rule]]\nmetric = "ndcg@10"\nop = ">="\nthreshold = -0.02\nrelative = true\n'
        "significant = true\nmin_queries = 2\n"
    )
    p = run("gate", d, "--baseline", "a", "--candidate", "b", "--rules", rules, "--json", out)
    assert p.returncode == 3, p.stdout + p.stderr
    (r,) = json.loads(out.read_text())["results"]
    # min_queries = 2 is met, but two queries' interval is no significance test (MIN_SIGNIFICANCE_QUERIES)
    assert r["status"] == "inconclusive" and "but its interval rests on 2 queries" in r["message"]


def test_quality_from_qrels_files_end_to_end(tmp_path):
    """`ingest --qrels` loads TREC labels beside the logs; `quality --json` writes every run's
    metrics with intervals and the pair's change with its test; bad labels are bad input."""
    d = tmp_path / "logs"
    write_jsonl(d / "a.jsonl", [{"run_id": "a", "query_id": "q1", "cited": ["r1", "x"]},
                                {"run_id": "a", "query_id": "q2", "cited": ["y", "r2"]}])  # fmt: skip
    write_jsonl(d / "b.jsonl", [{"run_id": "b", "query_id": "q1", "cited": ["x", "r1"]},
                                {"run_id": "b", "query_id": "q2", "cited": ["r2"]},
                                {"run_id": "b", "query_id": "q3", "cited": ["z"]}])  # fmt: skip
    q = tmp_path / "labels.qrels"
    q.write_text("q1 0 r1 1\nq2 0 r2 2\nq2 0 y 0\n")
    db = tmp_path / "q.duckdb"
    p = run("ingest", d, "--qrels", q, "--db", db)
    assert p.returncode == 0, p.stderr
    assert "loaded 3 relevance labels for 2 queries (2 relevant) from 1 file" in p.stderr
    out = tmp_path / "q.json"
    p = run("quality", "--db", db, "--k", "1,2", "--json", out)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    runs = {r["run_id"]: r for r in data["runs"]}
    # a: q1 r1 at rank 1 (nDCG@1 = 1), q2 r2 at rank 2 (nDCG@1 = 0) → 0.5; b: q1 rank 2, q2 rank 1 → 0.5
    assert runs["a"]["metrics"]["ndcg@1"] == 0.5 and runs["b"]["metrics"]["ndcg@1"] == 0.5
    assert runs["a"]["metrics"]["mrr"] == 0.75 and runs["b"]["metrics"]["mrr"] == 0.75
    assert runs["b"]["n_queries"] == 2 and runs["b"]["n_unlabelled"] == 1  # q3: no label, left out
    (pair,) = data["pairs"]
    assert (pair["run_a"], pair["run_b"]) == ("a", "b") and pair["metrics"]["ndcg@1"]["delta"] == 0
    assert set(pair["metrics"]["mrr"]) == {"delta", "ci", "p", "p_holm", "n"}
    q.write_text("q1 0 r1\n")
    p = run("quality", "--db", db, "--qrels", q)
    assert p.returncode == 2 and "no line is a relevance judgement" in p.stderr and "is not an integer" in p.stderr


def test_labels_keyed_by_other_query_ids_say_why_they_score_nothing(tmp_path):
    """SciFact's qrels (query ids '1', '3') beside Ragas exports (no query ids: each is its question's
    hash): the ingest said "loaded 2 relevance labels" and nothing more, `quality` printed "no labelled
    query" per run and `stability` the same — never why."""
    qs = ["0-dimensional biomaterials show inductive properties.", "1,000 genomes project enables mapping."]
    for name in ("ragas_k5", "ragas_k10"):
        write_jsonl(tmp_path / f"{name}.jsonl", [{"user_input": q, "retrieved_contexts": [q, name]} for q in qs])
    q = tmp_path / "test.tsv"
    q.write_text("query-id\tcorpus-id\tscore\n1\t31715818\t1\n3\t14717500\t1\n")
    db = tmp_path / "q.duckdb"
    p = run("ingest", tmp_path / "ragas_k5.jsonl", tmp_path / "ragas_k10.jsonl", "--qrels", q, "--db", db)
    why = "warning: relevance labels are loaded for 2 queries ('1', '3') but label no query of runs 'ragas_k5', "
    assert p.returncode == 0 and why in p.stderr and "hashes of the question texts" in p.stderr, p.stderr
    for cmd in ("quality", "stability"):
        p = run(cmd, "--db", db)
        assert p.returncode == 0, p.stderr
        assert "but label no query of runs 'ragas_k5', 'ragas_k10'" in p.stdout, (cmd, p.stdout)


def test_ingest_settings_for_runs_that_log_none(tmp_path):
    """`--settings` gives another tool's runs their top-k and chunk size (a bad one: exit 2, one line)."""
    rows = [{"user_input": "Why?", "retrieved_contexts": ["a passage"]}]
    db = tmp_path / "s.duckdb"
    p = run("ingest", write_jsonl(tmp_path / "k5.jsonl", rows), "--settings", "top_k=5,chunk_size=256", "--db", db)
    assert p.returncode == 0, p.stderr
    con = store.connect(db, read_only=True)
    assert con.execute("SELECT run_id, top_k, chunk_size FROM runs").fetchall() == [("k5", 5, 256)]
    con.close()
    p = run("ingest", write_jsonl(tmp_path / "k6.jsonl", rows), "--settings", "top_k", "--db", db)
    assert p.returncode == 2 and p.stderr.strip().endswith("chunk_size=256), not 'top_k'"), p.stderr


def test_ingest_progress_in_a_log_shows_each_files_total(capsys):
    """Not on a terminal (a CI log): a file's first count, each 100,000 crossed, and its total."""
    from ragaudit_core.cli.common import progress

    lines = progress()
    calls = [("a", 10_000), ("a", 20_000), ("a", 25_000), ("a", 25_000), ("b", 5), ("b", 100_000), ("b", 100_000)]
    for path, n in [*calls, ("b", 150_000), ("c", 7), ("c", 7)]:
        lines(path, n)
    lines.finish()
    assert capsys.readouterr().err.splitlines() == [
        f"ingest: {p}: {n} lines read"
        for p, n in [("a", "10,000"), ("a", "25,000"), ("b", "5"), ("b", "100,000"), ("b", "150,000"), ("c", "7")]
    ]


def test_ingest_progress_counts_a_documents_records_as_records(capsys, tmp_path):
    """A JSON document's elements are not its lines: its progress says records; a JSONL file's, lines."""
    from ragaudit_core.cli.common import progress
    from ragaudit_core.logs.ingest import ingest_paths

    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps([{"run_id": "r", "query_id": f"q{i}", "evidence": ["d"]} for i in range(3)], indent=1))
    log = write_jsonl(tmp_path / "b.jsonl", [{"run_id": "r2", "query_id": "q", "evidence": ["d"]}])
    lines = progress()
    ingest_paths(store.connect(":memory:"), [doc, log], progress=lines)
    lines.finish()
    err = capsys.readouterr().err
    assert "doc.json: 3 records read" in err and "b.jsonl: 1 line read" in err


def test_more_pairs_than_stability_holds_are_refused_in_one_sentence_and_the_ingest_ends(tmp_path):
    """A 700 KB log naming a run per record (10,000 runs, one query) made the ingest's stability
    precompute grow past 10 GB, and ``stability`` end in DuckDB's out-of-memory traceback after 4
    minutes (300 runs: 7.5 GB): every pair's intervals are held at once. Past
    ``MAX_PAIRS`` the comparison is refused before a pair is made, naming what to do."""
    from ragaudit_core.stability.metrics import MAX_PAIRS

    n = next(n for n in range(2, 1000) if n * (n - 1) // 2 > MAX_PAIRS)
    log = write_jsonl(
        tmp_path / "many.jsonl",
        [{"run_id": f"run{i}", "query_id": "q1", "query": "same", "evidence": [f"d{i % 7}", "x"]} for i in range(n)],
    )
    db = tmp_path / "x.duckdb"
    p = run("ingest", log, "--db", db)
    assert p.returncode == 0, p.stderr
    p = run("stability", "--db", db)
    assert p.returncode == 2
    pairs = f"{n * (n - 1) // 2:,}"
    assert p.stderr.strip().splitlines()[-1] == (
        f"error: {n} runs make {pairs} pairs to compare, more than the {MAX_PAIRS:,} stability compares at once "
        "(each pair's intervals are held in memory): pick the runs to compare (--runs; on the stability page, "
        "'Runs compared' in the sidebar), or compare each run with one (--baseline)"
    )
    p = run("stability", "--db", db, "--baseline", "run0", "--json", tmp_path / "b.json")
    assert p.returncode == 0, p.stderr


def test_an_ingest_with_nothing_to_read_makes_no_database(tmp_path):
    """A mistyped path made an empty RagAudit database (0.8 MB) though the call failed as a whole:
    the next ``stability --db`` then said "need at least two runs" instead of "ingest first"."""
    db = tmp_path / "new.duckdb"
    p = run("ingest", tmp_path / "nope.jsonl", "--db", db)
    assert p.returncode == 2 and "nope.jsonl: no such file or folder" in p.stderr
    assert not db.exists() and list(tmp_path.iterdir()) == []


def test_stability_leaves_out_pairs_whose_ids_cannot_meet(tmp_path):
    """'ids' logged document ids, the Ragas exports 'ragas' and 'ragas2' did not (passage hashes):
    only (ragas, ragas2) is compared — Q1 {A, B} vs {A, C} → 1/3, Q2 → 1, mean 2/3 — and stderr
    names the two pairs left out; with one run of each kind, one sentence and exit 2."""
    contexts = {"ids": (["A", "B"], ["D"]), "ragas": (["A", "B"], ["D"]), "ragas2": (["A", "C"], ["D"])}
    for name, per_q in contexts.items():
        rows = [{"user_input": q, "retrieved_contexts": [f"{p} passage." for p in ps]} for q, ps in
                zip(("Q1?", "Q2?"), per_q)]  # fmt: skip
        if name == "ids":
            rows = [r | {"retrieved_context_ids": [p[0] for p in r["retrieved_contexts"]]} for r in rows]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    files = [tmp_path / f"{n}.jsonl" for n in contexts]
    p = run("stability", *files, "--json", "-", "--resamples", "0")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert {(r["run_a"], r["run_b"]) for r in data["pairs"]} == {("ragas", "ragas2")}
    assert data["summary"]["doc"]["mean_j"] == pytest.approx(2 / 3) and data["summary"]["n_pairs"] == 1
    assert "warning: Left out 2 pairs between runs 'ragas', 'ragas2', which logged no document ids" in p.stderr
    p = run("stability", *files[:2], "--resamples", "0")
    assert p.returncode == 2 and not p.stdout, p.stdout
    said = p.stderr.strip().splitlines()[-1]  # after the ingest's lines
    assert said.startswith("error: no pair of the compared runs can be compared: each sets run 'ragas'"), said
    assert said.endswith("or compare runs that logged their ids the same way (--runs)"), said


def test_probe_leaves_out_pairs_whose_ids_cannot_meet(tmp_path):
    """Two answered runs, one with document ids and one with passage hashes: the only default pair
    would show J_span 0 beside its answers by how the two were logged — refused in one sentence that
    says how to probe it anyway (--pair), before any model is loaded."""
    qs = ["Question 0?", "Question 1?"]
    for name in ("ids", "ragas"):
        rows = [{"user_input": q, "retrieved_contexts": [q + " passage"], "response": "yes"} for q in qs]
        if name == "ids":
            rows = [r | {"retrieved_context_ids": ["d"]} for r in rows]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    p = run("probe", tmp_path / "ids.jsonl", tmp_path / "ragas.jsonl")
    assert p.returncode == 2, p.stderr
    said = " ".join(p.stderr.split())
    assert "no pair of the compared runs can be compared" in said and "(--pair A:B probes a pair as named)" in said


def test_grid_aliases_name_runs_in_stability_and_quality_as_in_gate(tmp_path):
    """The README writes `stability --db audit.duckdb --baseline base …`, but only gate, report and
    probe took the grid's aliases (base: k10-c256-o32, c128: k10-c128-o32): stability and quality
    exited 2 ("not among the runs compared", "unknown run")."""
    recs = [
        {"run_id": r, "query_id": f"q{i}", "cited": [f"d{i}", "x" if r.startswith("k10-c256") else "y"]}
        for r in ("k10-c256-o32", "k10-c128-o32")
        for i in range(3)
    ]
    log = write_jsonl(tmp_path / "runs.jsonl", recs)
    (tmp_path / "q.tsv").write_text("".join(f"q{i}\td{i}\t1\n" for i in range(3)))
    p = run("stability", log, "--baseline", "base", "--runs", "base,c128", "--json", "-")
    assert p.returncode == 0, p.stderr
    (pair,) = {(r["run_a"], r["run_b"]) for r in json.loads(p.stdout)["pairs"]}
    assert pair == ("k10-c256-o32", "k10-c128-o32")
    p = run("quality", log, "--qrels", tmp_path / "q.tsv", "--runs", "base,c128", "--baseline", "base", "--json", "-")
    assert p.returncode == 0, p.stderr
    assert [r["run_id"] for r in json.loads(p.stdout)["runs"]] == ["k10-c256-o32", "k10-c128-o32"]
    assert run("stability", log, "--runs", "base,nope").returncode == 2  # a name that is neither: said as before

"""The PDF audit report: built from the sample logs (real MiniLM for the probe, real Chromium
for the charts), parsed back with pypdf, every page rendered by pdftoppm; and a log in
accented, CJK and other scripts rendered without missing glyphs."""

from __future__ import annotations

import logging
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from ragaudit_core.fidelity.score import fidelity_runs
from ragaudit_core.fidelity.survival_change import stage_survival_intervals
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.review.gate import DEFAULT_RULES, review
from ragaudit_core.review.labels import rule_label
from ragaudit_core.review.report import ReportError, ReportOptions, build_report
from ragaudit_core.stability.compare import compare_runs
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from tests.helpers import write_jsonl

pytestmark = pytest.mark.slow
BASE, CAND = "k10-c256-o32", "k10-c128-o32"


def _text(pdf_path) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() for p in PdfReader(str(pdf_path)).pages]


def _flat(s: str) -> str:
    return " ".join(s.split())


def _page_pngs(pdf_path, tmp_path, dpi=40) -> list[np.ndarray]:
    assert shutil.which("pdftoppm"), "poppler-utils (pdftoppm) is installed by scripts/setup.sh"
    subprocess.run(["pdftoppm", "-r", str(dpi), "-png", str(pdf_path), str(tmp_path / "pg")], check=True)
    return [np.asarray(Image.open(p).convert("L")) for p in sorted(tmp_path.glob("pg-*.png"))]


@pytest.fixture(scope="module")
def sample_report(sample_db, tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    out = d / "audit.pdf"
    db = shutil.copy(sample_db, d / "sample.duckdb")  # the probe stores similarities: keep the shared DB as built
    con = store.connect(db)
    _blob, data = build_report(con, out, ReportOptions(baseline=BASE, candidate=CAND, db_label=str(db)))
    yield out, data, con
    con.close()


def test_sample_report_parses_and_holds_the_key_figures_and_verdict(sample_report):
    out, data, con = sample_report
    pages = _text(out)
    assert len(pages) == data.timings["pages"] >= 10
    text = _flat("\n".join(pages))
    # the verdict, from the same rules evaluated by the core
    v = review(con, DEFAULT_RULES, BASE, CAND)
    assert v.status == "fail"
    assert _flat(v.headline()) in text
    assert f"FAIL: {CAND} should not replace {BASE}." in text
    for r in v.failed:
        assert _flat(r.message) in text
    # stability headline figures, as the stability module computes them
    s = compute_stability(con, StabilityOptions(allow_missing=True)).summary
    for figure in (s.mean_j_doc, s.mean_j_span, s.gap_ratio):
        assert f"{figure:.3f}" in text
    assert f"{s.collapse_rate:.1%}" in text
    # the reviewed pair's row of the per-pair table
    pair = compare_runs(con, BASE, CAND).pair.set_index("metric")
    # each figure with its interval under it in the same cell, written to fit the table (two decimals)
    e = data.stability.intervals.pair(BASE, CAND, "doc", "j_avg")
    assert f"{pair.loc['j_avg', 'doc']:.3f} {e.lo:.2f}–{e.hi:.2f} {pair.loc['j_avg', 'span']:.3f}" in text
    assert "Under each figure: the 95 % bootstrap interval" in text
    # what changed between two runs in words, as the scatter's legend says it (not the config keys)
    assert not {"top_k", "chunk_size", "chunk_overlap"} & set(text.replace(",", " ").split())
    assert "k5-c128-o0 k5-c128-o32 overlap " in text and "k5-c128-o0 k5-c256-o0 chunk size " in text  # pair rows
    assert "top-k doc 12 " in text and "overlap span 6 " in text  # effects by what changed
    # each with its 95 % interval beside it (the table used to say it had none)
    cs = data.effects.set_index(["changed", "level"]).loc[("chunk_size", "span")]
    assert (
        f"chunk size span 6 {cs.j_avg:.3f} [{cs.j_avg_lo:.3f}, {cs.j_avg_hi:.3f}] "
        f"{cs.flip_rate:.1%} [{cs.flip_rate_lo:.1%}, {cs.flip_rate_hi:.1%}] "
        f"{cs.collapse_rate:.1%} [{cs.collapse_rate_lo:.1%}, {cs.collapse_rate_hi:.1%}]"
    ) in text
    assert f"{cs.j_avg:.3f} [{cs.j_avg_lo:.3f}, {cs.j_avg_hi:.3f}]" == "0.049 [0.045, 0.053]"
    assert "printed without intervals" not in text
    assert "In brackets: the 95 % bootstrap interval over the 300 queries (1,000 resamples, seed 0), the per" in text
    # citation fidelity: CFS mean and generation survival of both runs
    for f in fidelity_runs(con, [BASE, CAND]).values():
        assert f"{f.summary['cfs_mean']:.3f}" in text
        assert f"{f.summary['stage_survival']['generation']:.1%}" in text
        # each with its interval in the row under it (a PDF review found them printed bare)
        lo, hi = f.summary["intervals"]["cfs_mean"]
        assert f"[{lo:.3f}, {hi:.3f}]" in text
        g = stage_survival_intervals(f.queries)["generation"]
        assert f"[{g.lo:.1%}, {g.hi:.1%}]" in text
    assert "Second rows: the 95 % bootstrap interval over the run's queries" in text
    # the probe: 60 answered queries per pair
    assert data.probes and all(p.summary["n_queries"] == 60 for p in data.probes)
    assert f"{data.probes[0].summary['mean_sim']:.3f}" in text
    # cover: every input file with its SHA-256, the tool version; contents; methods with sources
    files = data.files
    assert len(files) == 14
    lines = [line for p in pages for line in p.splitlines()]
    for sha in files["sha256"]:
        assert any(sha in line for line in lines), f"SHA-256 {sha} broken across lines"  # never mid-token
    words = {w for line in lines for w in line.split()}
    for heading_word in ("SHA-256", "rejected", "ground", "truth", "collapse", "compression", "(conditional)"):
        assert heading_word in words  # table headings are not split inside a word
    from ragaudit_core import __version__

    assert f"RagAudit {__version__}" in text
    contents = _flat(next(p for p in pages if p.startswith("Contents")))
    for section in (
        "Verdict",
        "Evidence stability",
        "Per-pair table",
        "Worst queries",
        "Evidence–answer probe",
        "Citation fidelity",
        "Alerts and failure modes",
        "Methods",
        "Sources",
    ):
        assert section in contents
    assert "arXiv:2601.21803" in text and "Document Overlap Is Not Evidence Continuity" in text
    assert "attributions (none stored" in text  # the sample database holds no attributions
    assert f"page 1 of {len(pages)}" in pages[0] and f"page {len(pages)} of {len(pages)}" in pages[-1]


def test_pages_in_order_and_none_holding_only_a_line_or_two(sample_report):
    """Cover, executive summary, contents, then the numbered sections; every page carries at
    least five lines of text (the footer is one), so no table row or heading is left alone."""
    out, _data, _con = sample_report
    pages = _text(out)
    assert [_flat(p).split()[0] for p in pages[:3]] == ["RagAudit", "Executive", "Contents"]
    assert _flat(pages[3]).startswith("1. Verdict")
    for i, p in enumerate(pages, start=1):
        lines = [x for x in p.splitlines() if x.strip()]
        assert len(lines) >= 5, f"page {i} holds {len(lines)} line(s): {lines}"


def test_every_page_renders_non_blank_with_the_charts_drawn(sample_report, tmp_path):
    out, data, _ = sample_report
    assert set(data.figures) >= {
        "stability_scatter",
        "jmin_histogram",
        "probe_scatter",
        "survival_funnel",
        "cfs_histogram",
    }
    imgs = _page_pngs(out, tmp_path)
    assert len(imgs) == data.timings["pages"]
    for i, im in enumerate(imgs, start=1):
        ink = float((im < 200).mean())
        assert ink > 0.01, f"page {i} is (nearly) blank: {ink:.4f} of its pixels are dark"
    from pypdf import PdfReader

    n_images = sum(len(p.images) for p in PdfReader(str(out)).pages)
    assert n_images == len(data.figures)  # every chart exported and placed


def test_accented_and_cjk_logs_render_without_missing_glyphs(tmp_path, caplog):
    rows = {
        "a": [
            (
                "q1",
                "Qu'est-ce que la santé publique ? 公共卫生是什么？",
                [
                    ("doc-é", "Café naïve façade — Ünïcödé résumé"),
                    ("文档二", "東京の研究者は日本語で書いた。한국어 문장."),
                ],
            ),
            ("q2", "Ελληνικά и кириллица", [("d3", "नमस्ते दुनिया"), ("d4", "<b>not bold</b> \x07 bell")]),
        ],
        "b": [
            (
                "q1",
                "Qu'est-ce que la santé publique ? 公共卫生是什么？",
                [("doc-é", "Café naïve façade — Ünïcödé résumé")],
            ),
            ("q2", "Ελληνικά и кириллица", [("d5", "ภาษาไทย")]),
        ],
    }
    for run, recs in rows.items():
        write_jsonl(
            tmp_path / "logs" / f"{run}.jsonl",
            [
                {"run_id": run, "query_id": q, "query": qt, "evidence": [{"doc_id": d, "text": t} for d, t in ev]}
                for q, qt, ev in recs
            ],
        )
    con = store.connect(tmp_path / "u.duckdb")
    ingest_paths(con, [tmp_path / "logs"])
    out = tmp_path / "u.pdf"
    with caplog.at_level(logging.WARNING, logger="fpdf"):
        _blob, data = build_report(con, out, ReportOptions(baseline="a", candidate="b"))
    assert not [r for r in caplog.records if "missing the following glyphs" in r.getMessage()]
    assert len(_text(out)) == data.timings["pages"]  # pypdf parses it
    # the text layer as poppler reads it (pypdf mis-decodes CID strings of CFF-based CJK fonts)
    text = _flat(
        subprocess.run(["pdftotext", "-enc", "UTF-8", str(out), "-"], capture_output=True, text=True, check=True).stdout
    )
    for s in (
        "公共卫生是什么",
        "Café naïve façade — Ünïcödé résumé",
        "東京の研究者は日本語で書いた",
        "한국어",
        "Ελληνικά и кириллица",
        "<b>not bold</b> \ufffd bell",
    ):
        assert s in text, s
    assert "no glyph in any installed font" not in text
    assert re.search(r"with (1 fallback font|\d+ fallback fonts) for characters it lacks", text)
    assert "font(s)" not in text and "NotoSansCJK" in text
    assert "\x07" not in text
    assert all(float((im < 200).mean()) > 0.005 for im in _page_pngs(out, tmp_path))


def test_sections_without_data_are_named_and_bad_pairs_refused(tmp_path):
    write_jsonl(tmp_path / "logs" / "a.jsonl", [{"run_id": "a", "query_id": "q1", "cited": ["x", "y"]}])
    write_jsonl(tmp_path / "logs" / "b.jsonl", [{"run_id": "b", "query_id": "q1", "cited": ["x"]}])
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "logs"])
    _blob, data = build_report(con, tmp_path / "d.pdf", ReportOptions())
    assert data.verdict is None and data.stability is not None
    omitted = " ".join(data.omitted)
    for what in ("verdict", "answer probe", "citation fidelity", "attributions"):
        assert what in omitted
    assert "Sections left out" in _flat("\n".join(_text(tmp_path / "d.pdf")))
    with pytest.raises(ReportError, match="run 'z' not found"):
        build_report(con, None, ReportOptions(baseline="a", candidate="z"))
    with pytest.raises(ReportError, match="both a baseline and a candidate"):
        build_report(con, None, ReportOptions(baseline="a"))


def test_the_cover_counts_rejected_lines_and_refused_files_apart(tmp_path):
    """One bad line and one file refused as a whole (a Ragas test set): the home page says "Rejected
    lines 1" and "refused files (1)"; the cover said "rejected lines 2" (the walk: 4 against 3 + 1)."""
    logs = tmp_path / "logs"
    write_jsonl(logs / "a.jsonl", [{"run_id": "a", "query_id": "q1", "cited": ["x"]}, {"run_id": "a"}])
    write_jsonl(logs / "b.jsonl", [{"run_id": "b", "query_id": "q1", "cited": ["x"]}])
    write_jsonl(logs / "testset.jsonl", [{"user_input": "q?", "reference_contexts": ["c"], "reference": "r"}])
    con = store.connect(":memory:")
    ingest_paths(con, [logs])
    _blob, data = build_report(con, tmp_path / "d.pdf", ReportOptions(probe=False))
    assert (data.n_rejected, data.n_refused) == (1, 1)
    text = _flat("\n".join(_text(tmp_path / "d.pdf")))
    assert "rejected lines 1" in text and "refused files 1" in text


def test_provenance_only_logs_get_a_report_with_the_fidelity_section(tmp_path):
    from tests.helpers import pipeline

    write_jsonl(
        tmp_path / "logs" / "p.jsonl",
        [pipeline("base", "q1", text="[Source: D1, p. 2]"), pipeline("cand", "q1", text="[Source: D9, p. 1]")],
    )
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "logs"])
    _blob, data = build_report(con, tmp_path / "p.pdf", ReportOptions(baseline="base", candidate="cand"))
    assert set(data.fidelity) == {"base", "cand"} and data.verdict.status == "fail"
    text = _flat("\n".join(_text(tmp_path / "p.pdf")))
    assert "Provenance runs (citation pipelines)" in text and "0 with evidence logs, 2 with provenance logs" in text
    assert "Citation fidelity" in text and "evidence stability (it compares the evidence logs" in text


def test_no_probe_leaves_out_pairs_without_stored_similarities(sample_db, tmp_path):
    db = shutil.copy(sample_db, tmp_path / "s.duckdb")
    con = store.connect(db)
    # the session's sample database may hold similarities stored by an earlier test (a page test
    # that ran the probe); this test is about pairs without them
    con.execute("DELETE FROM derived_answer_similarity")

    def no_model():
        raise AssertionError("--no-probe must not load a model")

    _blob, data = build_report(con, None, ReportOptions(baseline=BASE, candidate=CAND, probe=False, embedder=no_model))
    assert not data.probes and "probe_scatter" not in data.figures
    assert any(o.startswith("answer probe for ") and "not to compute them: --no-probe" in o for o in data.omitted)


def test_the_report_opens_with_the_cover_then_a_one_page_executive_summary(sample_db, tmp_path):
    """Page 1: the cover; page 2: the verdict, what changed between the two runs, the rules that
    decided it (failed first, at most four), headline figures labelled as the pair's or all runs',
    with the CFS tail beside its p95, where to look, and a plain-language conclusion ending in a
    recommendation that points at numbered sections; the contents come after it."""
    con = store.connect(shutil.copy(sample_db, tmp_path / "s.duckdb"))
    out = tmp_path / "r.pdf"
    _blob, data = build_report(con, out, ReportOptions(baseline=BASE, candidate=CAND, probe=False))
    pages = _text(out)
    assert _flat(pages[0]).startswith("RagAudit audit report")
    first = _flat(pages[1])
    assert first.startswith("Executive summary")
    v = data.verdict
    assert f"{CAND} should not replace {BASE}" in first and v.status == "fail"
    assert _flat(v.headline()) in first and "FAIL: of 10 rules," in first  # labels loaded: nDCG applies
    assert "What changed: chunk size 256 → 128." in first  # k10-c256-o32 → k10-c128-o32
    decided = [r for r in v.sorted_results() if r.status != "not applicable"][:4]
    for r in decided:
        assert rule_label(r.rule) in first
    s, iv = data.stability.summary, data.stability.intervals.summary
    doc, span = iv["mean_j_doc"], iv["mean_j_span"]  # each all-runs figure with its 95 % interval over queries
    assert doc.lo <= s.mean_j_doc <= doc.hi and doc.lo < doc.hi
    assert (
        f"mean J_doc / mean J_span, all 12 compared runs (66 pairs) {s.mean_j_doc:.3f} [{doc.lo:.3f}, {doc.hi:.3f}] "
        f"/ {s.mean_j_span:.3f} [{span.lo:.3f}, {span.hi:.3f}]" in first
    )
    c = iv["collapse_rate"]
    assert f"{s.collapse_rate:.1%} [{c.lo:.1%}, {c.hi:.1%}]" in first
    assert "In brackets: the 95 % bootstrap interval over the 300 queries (1,000 resamples, seed 0)." in first
    assert f"{s.gap_ratio:.3f}" in first
    # the pair's own figures, labelled as the pair's (J_span 0.006 for the pair, 0.146 over all runs)
    pair = compare_runs(con, BASE, CAND).pair.set_index("metric")
    assert (
        f"J_doc / J_span, the reviewed pair ({BASE} → {CAND}), over its 300 queries {pair.loc['j_avg', 'doc']:.3f} ["
        in (first)
    )
    assert f"] / {pair.loc['j_avg', 'span']:.3f} [" in first  # each pair figure with its interval
    f = data.fidelity[CAND].summary
    assert (
        f"CFS of {CAND} (candidate): 95th percentile / median / 5th percentile (the tail reading of p95), over "
        f"the {f['n_with_citations']} of {f['n_queries']} queries with citations "
        f"{f['cfs_p95']:.3f} / {f['cfs_p50']:.3f} / {f['cfs_p95_other']:.3f}" in first
    )
    assert "the median is far lower" in first  # p95 1.0 with a median of 0
    # the conclusion: collapse first (91.0 % of the pair's queries), pointing at §1 Verdict, §2 stability
    collapse = pair.loc["collapse_rate", "span"]
    assert (
        f"Recommendation: Do not deploy {CAND}: span-level evidence collapsed (no cited span kept) on "
        f"{collapse:.1%} of queries" in first
    )
    # the recommendation points at the sections of the failed rules by their numbers in the contents: the
    # verdict and stability. Stage survival's drop (−0.053 over the ~45 queries reaching generation) is
    # inconclusive — its interval straddles −0.05 — so citation fidelity is not named as a reason
    assert re.search(r"(\d+)\. Citation fidelity", _flat(pages[2])) is not None
    assert "see §1, §2." in first
    assert next(r for r in v.results if r.rule.metric == "stage_survival").status == "inconclusive"
    contents = next(i for i, p in enumerate(pages) if p.startswith("Contents"))
    assert contents == 2  # after the cover and the summary
    assert "1. Verdict" in pages[contents] and "2. Evidence stability" in pages[contents]


def test_the_stability_section_compares_the_selected_runs(tmp_path):
    """k5 and k10 log q1, q2; 'upload' logs only q9. By default the section compares k5 and k10 and
    names 'upload'; runs named by the reviewer are compared as named; an unknown run is refused."""
    from ragaudit_core.review.report.gather import gather

    recs = [
        {"run_id": r, "query_id": q, "cited": ["x", "y"] if r == "k5" else ["x"]}
        for r in ("k10", "k5")
        for q in ("q1", "q2")
    ]
    recs.append({"run_id": "upload", "query_id": "q9", "cited": ["x"]})
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "r.jsonl", recs)])
    data = gather(con, ReportOptions(probe=False))
    assert data.stability.summary.runs == ["k10", "k5"] and data.stability.summary.n_queries == 2
    assert data.stability_scope == (
        "Left out 1 run that shares no query with the 2 compared (which share 2): "
        "'upload'; name runs to compare it instead (--runs)."
    )
    assert data.stability.summary.mean_j_doc == pytest.approx(0.5)  # {x} vs {x, y} in both queries
    data = gather(con, ReportOptions(probe=False, runs=["k10", "k5"]))
    assert data.stability_scope == "Runs compared (chosen by the reviewer): k5, k10."
    assert data.stability.intervals is not None and data.stability.intervals.resamples == 1000  # as by default
    assert data.effects.j_avg_lo.notna().all()  # the effects' intervals too
    # 'few' would narrow k5 and k10 from five queries to one: left out, named in the report's words (--runs)
    recs = [{"run_id": r, "query_id": f"q{i}", "cited": ["x"]} for r in ("k10", "k5") for i in range(5)]
    con = store.connect(":memory:")
    ingest_paths(
        con, [write_jsonl(tmp_path / "few.jsonl", [*recs, {"run_id": "few", "query_id": "q1", "cited": ["x"]}])]
    )
    scope = gather(con, ReportOptions(probe=False)).stability_scope
    assert "'few'; name it with --runs to compare the queries they share." in scope and "pick" not in scope
    with pytest.raises(ReportError, match=r"^run 'nope' has no evidence logs"):
        gather(con, ReportOptions(probe=False, runs=["k5", "nope"]))
    with pytest.raises(ReportError, match=r"^runs 'nope', 'nah' have no evidence logs"):
        gather(con, ReportOptions(probe=False, runs=["k5", "nope", "nah"]))

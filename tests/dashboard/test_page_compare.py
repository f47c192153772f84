"""AppTest: the compare page (deltas, flipped queries, the answer probe on the real MiniLM)."""

from __future__ import annotations

import pytest

from ragaudit_core import models
from ragaudit_core.logs import store
from ragaudit_core.review.labels import rule_label
from ragaudit_core.stability.compare import compare_runs
from ragaudit_core.stability.probe import probe_pair
from ragaudit_core.wording import counted
from tests.helpers import app_test, plain

pytestmark = pytest.mark.slow
PAGE = "pages/3_Compare.py"


def test_needs_two_runs(app_env, tmp_path):
    app_env()
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("No logs are loaded yet" in i.value for i in at.info)


def test_deltas_and_probe_match_the_core(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("k10-c256-o32").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("k10-c256-o0").run()
    assert not at.exception and not [e for e in at.error if "should not replace" not in e.value]  # only the verdict
    con = store.connect(sample_db)
    cmp = compare_runs(con, "k10-c256-o32", "k10-c256-o0")
    shown = {m.label: m.value for m in at.metric}
    pair = cmp.pair.set_index("metric")
    assert shown["J_avg, doc"] == f"{pair.loc['j_avg', 'doc']:.3f}"
    assert shown["J_avg, span"] == f"{pair.loc['j_avg', 'span']:.3f}"
    assert shown["queries flipped"] == f"{cmp.summary.n_flipped} / 300"
    runs = next(df.value for df in at.dataframe if "delta" in df.value.columns).set_index("metric")
    assert runs.loc["mean distinct documents", "delta"] == pytest.approx(
        cmp.runs.set_index("metric").loc["mean_docs", "delta"]
    )  # the page draws the key's label
    flipped = next(df.value for df in at.dataframe if "collapsed" in df.value.columns)
    assert len(flipped) == int((cmp.queries.flipped | cmp.queries.collapsed | (cmp.queries.null_change != "")).sum())

    # the probe: 60 answered queries, similarity by the real packaged MiniLM
    next(b for b in at.button if b.label.startswith("Compute answer similarity")).click().run()
    assert not at.exception
    ps = probe_pair(con, "k10-c256-o32", "k10-c256-o0", models.load_embedder).summary
    shown = {m.label: m.value for m in at.metric}
    assert shown["answered queries"] == "60" == str(ps["n_queries"])
    assert shown["mean answer similarity"] == f"{ps['mean_sim']:.3f}"
    assert shown["Spearman ρ"] == f"{ps['spearman_rho']:.3f}"
    assert shown["drift < 0.9"] == f"{ps['drift_0.9']} ({ps['drift_rate_0.9']:.0%})"
    lo, hi = ps["intervals"]["mean_sim"]  # every figure of the probe with its interval, in the caption under it
    assert any(f"mean answer similarity [{lo:.3f}, {hi:.3f}]" in c.value for c in at.caption)


def _pick(at, a, b):
    next(s for s in at.selectbox if s.label == "Baseline run").select(a).run()
    next(s for s in at.selectbox if s.label == "Candidate run").select(b).run()
    return at


def test_gate_verdict_failed_rules_first_and_rules_saved(app_env, sample_db, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGAUDIT_WORKSPACE", str(tmp_path / "work"))  # files are saved only inside it
    from ragaudit_core.review.gate import DEFAULT_RULES, STRICT_RULES, load_rules, review

    app_env(sample_db)
    at = _pick(app_test(PAGE).run(), "k10-c256-o32", "k10-c128-o32")
    assert not at.exception
    v = review(store.connect(sample_db), DEFAULT_RULES, "k10-c256-o32", "k10-c128-o32")
    assert v.status == "fail"
    assert any(plain(e.value) == f"k10-c128-o32 should not replace k10-c256-o32 — {v.headline()}." for e in at.error)
    passed = sum(r.status == "pass" for r in v.results)
    unsure = sum(r.status == "inconclusive" for r in v.results)  # stage survival's straddling interval
    assert (
        passed
        and unsure
        and v.headline().startswith(  # every rule counted by outcome: "FAIL" never reads as a count
            f"FAIL: of 10 rules, {passed} passed, {len(v.failed)} failed, {unsure} inconclusive"
        )
    )
    assert v.headline().endswith("1 not applicable (no stored attributions)")
    shown = next(df.value for df in at.dataframe if "why" in df.value.columns)
    assert list(shown["status"]) == [r.status for r in v.sorted_results()]
    assert shown["status"].iloc[0] == "fail" and shown["status"].iloc[-1] == "not applicable"  # no attributions
    assert list(shown["why"]) == [r.message for r in v.sorted_results()]
    # the column cuts a long reason: the failed and inconclusive rules' reasons in full below it
    (full,) = [e for e in at.expander if e.label.startswith("Why each failed or inconclusive rule")]
    lines = [plain(m.value) for m in full.markdown]
    unsettled = [r for r in v.sorted_results() if r.status in ("fail", "inconclusive")]
    assert lines == [f"**{r.status}** · {rule_label(r.rule)} — {r.message}" for r in unsettled]

    # the strict preset: seed 002's absolute thresholds fail on the sample's low generation survival
    next(s for s in at.selectbox if s.label == "Start from a preset").select("strict").run()
    assert any(c.value.startswith("Picked, not yet used: the button replaces the rules") for c in at.caption)
    next(b for b in at.button if b.label == "Use the strict preset").click().run()
    assert not at.exception
    strict = review(store.connect(sample_db), STRICT_RULES, "k10-c256-o32", "k10-c128-o32")
    shown = next(df.value for df in at.dataframe if "why" in df.value.columns)
    assert list(shown["rule"]) == [rule_label(r.rule) for r in strict.sorted_results()]  # labels, not keys
    assert "J_avg, doc ≥ 0.5" in list(shown["rule"])

    target = tmp_path / "work" / "ci" / "gate.toml"
    next(t for t in at.text_input if t.label == "Save the rules to").input(str(target)).run()
    next(b for b in at.button if b.label == "Save rules").click().run()
    assert not at.exception and any(str(target) in plain(s.value) for s in at.success), [e.value for e in at.error]
    assert load_rules(target) == STRICT_RULES
    # a text box must not make the server write wherever it may: inside the workspace, a .toml file
    outside, odd = tmp_path / "bashrc.toml", tmp_path / "work" / "rules.sh"
    for raw, why in (
        (outside, f"{outside} is outside the workspace folder {tmp_path / 'work'}: the dashboard saves files only"),
        (odd, f"{odd}: a rules file name ends in .toml."),
    ):
        next(t for t in at.text_input if t.label == "Save the rules to").input(str(raw)).run()
        next(b for b in at.button if b.label == "Save rules").click().run()
        assert not at.exception and any(plain(e.value).startswith(why[:60]) for e in at.error), (raw, at.error)
        assert not raw.exists()


def test_a_pair_that_passes_shows_pass(app_env, sample_db):
    app_env(sample_db)
    at = _pick(app_test(PAGE).run(), "k10-c256-o32", "k20-c256-o32")
    assert not at.exception
    v = review_pair(sample_db, "k10-c256-o32", "k20-c256-o32")
    assert v.status == "pass"
    assert any(
        plain(s.value).startswith("k20-c256-o32 may replace k10-c256-o32 — PASS: of 10 rules, ") for s in at.success
    )


def review_pair(db, a, b):
    from ragaudit_core.review.gate import DEFAULT_RULES, review

    return review(store.connect(db), DEFAULT_RULES, a, b)


def test_pdf_report_built_and_offered_for_download(app_env, sample_db, tmp_path):
    import io
    import shutil

    from pypdf import PdfReader

    app_env(shutil.copy(sample_db, tmp_path / "s.duckdb"))  # the report's probe stores similarities
    at = _pick(app_test(PAGE).run(), "k10-c256-o32", "k10-c128-o32")
    next(b for b in at.button if b.label == "Build the PDF report").click().run()
    assert not at.exception
    dl = [
        b
        for b in at.get("download_button")
        if plain(b.proto.label).startswith("Download audit-k10-c128-o32-vs-k10-c256-o32")
    ]
    assert len(dl) == 1
    from pages.ui.session import KEYS

    blob = at.session_state[KEYS.report][1]
    pages = PdfReader(io.BytesIO(blob)).pages
    assert len(pages) >= 10
    text = " ".join(" ".join(p.extract_text().split()) for p in pages)
    assert "FAIL: k10-c128-o32 should not replace k10-c256-o32." in text and "rules of the compare page" in text


def test_a_report_that_fails_is_named_and_the_page_is_drawn_on(app_env, sample_db, tmp_path, monkeypatch):
    """Whatever the report raises, the page says so in an error box and draws the rest (the
    queries table after the button); no exception escapes to Streamlit."""
    import shutil

    import ragaudit_core.review.report as report

    def broken(*_a, **_k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(report, "build_report", broken)
    app_env(shutil.copy(sample_db, tmp_path / "s.duckdb"))
    at = _pick(app_test(PAGE).run(), "k10-c256-o32", "k10-c128-o32")
    next(b for b in at.button if b.label == "Build the PDF report").click().run()
    assert not at.exception
    assert any("The report could not be built (RuntimeError: disk full)" in plain(e.value) for e in at.error)
    assert any(plain(h.value) == "Queries" for h in at.subheader)


def test_the_pair_defaults_to_runs_that_share_queries(app_env, tmp_path):
    """'upload' (alphabetically and by size first or not) shares no query: the page opens on two runs
    of the default selection, the report's scope names it, and picking it says what to do."""
    from tests.helpers import records_db

    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 4}"]}
        for k, r in ((1, "k10"), (2, "k5"))
        for i in range(3)
    ]
    recs += [{"run_id": "upload", "query_id": f"e{i}", "evidence": ["x"]} for i in range(5)]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception
    picked = [s.value for s in at.selectbox if s.label in ("Baseline run", "Candidate run")]
    assert sorted(picked) == ["k10", "k5"]
    assert any(
        "default selection (2 runs that share queries)" in plain(c.value) and "'upload'" in plain(c.value)
        for c in at.caption
    )
    next(s for s in at.selectbox if s.label == "Candidate run").select("upload").run()
    assert not at.exception and not at.error
    assert any(
        plain(i.value).startswith("k5 and upload share no query")
        or plain(i.value).startswith("k10 and upload share no query")
        for i in at.info
    )
    # runs picked on the stability page are the report's scope
    at.session_state["ragaudit.runs"] = ["k5", "k10"]
    at.run()  # the picker's index follows the remembered pair: its widget is redrawn once (as in a browser)
    next(s for s in at.selectbox if s.label == "Candidate run").select("k10" if picked[0] == "k5" else "k5").run()
    assert any("the runs picked on the stability page: k5, k10" in plain(c.value) for c in at.caption)


def test_runs_asking_the_same_questions_under_other_ids_are_told_why_they_share_nothing(app_env, tmp_path):
    """A Ragas export of the native run's questions (ids: hashes of the texts) shares no query id
    with it: the page says they ask the same questions, with an example pair, and what to do
    (the walk: 'share no query' for a Langfuse export of the sample's own questions)."""
    from ragaudit_core.logs.formats import query_id_for
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    qs = ["What causes tides?", "Why is the sky blue?", "Who wrote Hamlet?"]
    native = [{"run_id": r, "query_id": str(i), "query": q, "evidence": ["d"]} for r in ("k5", "k10") for i, q in
              enumerate(qs)]  # fmt: skip
    ragas = [{"user_input": q, "retrieved_contexts": ["p"], "response": "a"} for q in qs]
    path = app_env()
    ingest_paths(
        store.connect(path), [write_jsonl(tmp_path / "n.jsonl", native), write_jsonl(tmp_path / "rag.jsonl", ragas)]
    )
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("rag").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("k5").run()
    assert not at.exception and not at.error
    (note,) = [plain(i.value) for i in at.info if "share no query" in plain(i.value)]
    first = min((query_id_for(q), str(i)) for i, q in enumerate(qs))
    assert (
        "rag and k5 share no query id, but ask 3 of the same questions under other ids "
        f"(e.g. {first[0]} in rag is {first[1]} in k5)" in note
    )
    assert "query_id" in note
    assert "remove the file of rag on the home page and upload it again: loaded after k5, its questions take" in note


def test_does_jitter_cost_quality(app_env, sample_db):
    """Chunk size 256 → 128: the quality changes with their intervals, and the collapsed queries
    split by what happened to their relevant documents, as the core computes them."""
    from ragaudit_core.quality.jitter import jitter_cost

    app_env(sample_db)
    at = _pick(app_test(PAGE).run(), "k10-c256-o32", "k10-c128-o32")
    assert not at.exception and "Does jitter cost quality?" in [s.value for s in at.subheader]
    con = store.connect(sample_db)
    cost = jitter_cost(con, compare_runs(con, "k10-c256-o32", "k10-c128-o32"))
    con.close()
    split = cost.collapsed
    text = " ".join(plain(m.value) for m in at.markdown)
    assert f"**{counted(sum(split.values()), 'collapsed query')}** (J_span = 0" in text
    assert f"relevant documents kept {split['relevant kept']:,} · lost {split['relevant lost']:,}" in text
    table = next(df.value for df in at.dataframe if "change" in df.value.columns)
    assert list(table["metric"])[:2] == ["ndcg@10", "recall@10"] and (table["queries"] == 300).all()


def test_two_runs_that_share_nothing_are_told_which_runs_share_queries_with_each(app_env, tmp_path):
    """Seen in a browser walk: with the sample logs loaded, picking the uploaded 'ragas_eval' as the
    baseline said "ragas_eval and k10-c128-o32 share no query … Pick two of the runs that share
    queries: k5-c128-o0, …" — the sample's runs, none of which shares a query with ragas_eval,
    and not 'ragas_eval_v2', the one that does. The note now names, for each picked run, the runs
    that share queries with it."""
    from tests.helpers import records_db

    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}"]} for r in ("k5", "k10") for i in range(3)]
    recs += [{"run_id": r, "query_id": f"e{i}", "evidence": ["x"]} for r in ("up", "up2") for i in range(5)]
    recs += [{"run_id": "lone", "query_id": "z", "evidence": ["x"]}]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("up").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("k5").run()
    assert not at.exception and not at.error
    (note,) = [plain(i.value) for i in at.info if "share no query" in plain(i.value)]
    assert note == (
        "up and k5 share no query, so there is nothing to compare. Runs that share queries with up: up2. "
        "Runs that share queries with k5: k10."
    )
    at.run()  # the picker's index follows the remembered pair: its widget is redrawn once (as in a browser)
    next(s for s in at.selectbox if s.label == "Candidate run").select("lone").run()
    (note,) = [plain(i.value) for i in at.info if "share no query" in plain(i.value)]
    assert note == (
        "up and lone share no query, so there is nothing to compare. Runs that share queries with up: up2. "
        "lone shares no query with any other run."
    )


def test_runs_sharing_questions_but_no_labelled_one_are_told_so_not_shown_an_empty_cost(app_env, tmp_path):
    """Seen in a browser walk: two runs sharing 100 unlabelled questions, each with labelled ones of its
    own, drew an empty change table, a chart without points titled "ρ undefined (a constant side)",
    and the gate advised "Give both runs the same questions" — which they did. Now one sentence says
    they share no labelled query, and the advice is about labels."""
    from ragaudit_core.logs.qrels import load_qrels
    from tests.helpers import records_db

    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", "x"]} for r in ("a", "b") for i in range(6)]
    recs += [{"run_id": "a", "query_id": f"la{i}", "evidence": [f"r{i}"]} for i in range(3)]
    recs += [{"run_id": "b", "query_id": f"lb{i}", "evidence": [f"r{i}"]} for i in range(3)]
    db = records_db(tmp_path, recs)
    (tmp_path / "q.tsv").write_text("".join(f"l{r}{i}\tr{i}\t1\n" for r in "ab" for i in range(3)))
    con = store.connect(db)
    load_qrels(con, [tmp_path / "q.tsv"])
    con.close()
    app_env(db)
    at = _pick(app_test(PAGE).run(), "a", "b")
    assert not at.exception and not at.error
    (note,) = [plain(i.value) for i in at.info if "share no labelled query" in plain(i.value)]
    assert note.startswith("a and b share no labelled query: no change of quality, and no cost of jitter")
    assert not any("change" in df.value.columns for df in at.dataframe)
    (gate,) = [plain(x.value) for x in at.warning if "INCONCLUSIVE" in plain(x.value)]
    assert "the runs share none of the labelled queries behind a figure" in gate, gate
    assert "Load labels for queries both runs answered" in gate and "Give both runs the same questions" not in gate


def test_labels_that_label_neither_runs_queries_say_why(app_env, tmp_path):
    """The compare page drew no quality section and its gate said "no relevance labels" right after
    the labels had loaded: both say that the labels name none of the pair's queries, and why."""
    from tests.dashboard.test_page_stability import _ragas_db_with_benchmark_labels

    app_env(_ragas_db_with_benchmark_labels(tmp_path))
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("label no query of runs 'ragas_a', 'ragas_b'" in plain(i.value) for i in at.info)
    assert not any("no relevance labels" in plain(e.value) for e in [*at.error, *at.success, *at.warning])


def test_long_run_ids_read_apart_in_the_pair_picker(app_env, tmp_path):
    """Two runs differing only at the end of a long id: the pickers' labels keep the end (and
    runs differing in the middle are shown wider, until they read apart); the chosen runs in full."""
    from tests.helpers import records_db

    a = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-20.csv"
    b = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-21.csv"
    c = "ragas_scifact_bm25_top10_chunk256_overlap32_2026-11-20.csv"
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 4}"]}
        for k, r in ((1, a), (2, b), (3, c))
        for i in range(3)
    ]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    box = next(s for s in at.selectbox if s.label == "Baseline run")
    assert len(set(box.options)) == 3
    # 44 characters, the end kept; then the whole id, which the picker's type-to-search matches
    assert box.options[1] == f"ragas_scifact_bm2…6_overlap32_2026-11-21.csv ({b})"
    assert box.options[::2] == [a, c]  # alike when cut (top5 / top10 in the middle): shown whole
    box.select(b).run()
    next(s for s in at.selectbox if s.label == "Candidate run").select(c).run()
    assert not at.exception
    (full,) = [plain(x.value) for x in at.caption if x.value.startswith("In full")]
    assert full == f"In full: {b}"  # the candidate is shown whole already


def test_a_pair_whose_ids_cannot_meet_shows_no_overlap_figures(app_env, tmp_path):
    """'ids' logged document ids, 'ragas' did not: picked by hand, the pair's J is 0 and every query
    'flipped' and 'collapsed' by how the two were logged. The tiles read n/a, the overlap rows of the
    pair table are blank, no query is listed as flipped or collapsed, the gate is inconclusive — and
    null loss (which needs no ids) is still shown, at 0."""
    from tests.dashboard.test_page_stability import _mixed_ids_db

    app_env(_mixed_ids_db(tmp_path, ("ids", "ragas", "ragas2")))
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("ids").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("ragas").run()
    assert not at.exception and not at.error
    tiles = {m.label: m.value for m in at.metric}
    for label in ("J_avg, doc", "J_avg, span", "queries flipped", "queries collapsed"):
        assert tiles[label] == "n/a", (label, tiles)
    assert tiles["null transitions"] == "0"
    pair = at.dataframe[0].value
    if hasattr(pair, "data"):
        pair = pair.data
    by = pair.set_index("metric")
    for row in ("J_avg", "flip rate (J < τ)", "collapse rate"):
        assert by.loc[row, ["doc", "span"]].isna().all(), by
    assert by.filter(like="null loss", axis=0)["doc"].tolist() == [0.0]
    assert any("0 queries" in plain(c.value) for c in at.caption), [c.value for c in at.caption]
    assert any("INCONCLUSIVE" in plain(x.value) for x in [*at.warning, *at.info, *at.success, *at.error])


def test_a_gate_left_inconclusive_only_by_ids_that_cannot_meet_does_not_ask_for_more_queries(app_env, tmp_path):
    """Over 40 queries (enough for every rule), the gate between a run with document ids and one
    without is inconclusive only because their ids cannot meet: the verdict says to load the run with
    its ids, not 'Gather more queries, or loosen the rule' (neither would make the ids meet)."""
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    rows = [{"user_input": f"Q{i}?", "retrieved_contexts": [f"P{i} passage.", f"R{i} passage."]} for i in range(40)]
    write_jsonl(tmp_path / "ids.jsonl", [r | {"retrieved_context_ids": [f"p{i}", f"r{i}"]} for i, r in enumerate(rows)])
    write_jsonl(tmp_path / "ragas.jsonl", rows)
    db = tmp_path / "mixed40.duckdb"
    con = store.connect(db)
    ingest_paths(con, [tmp_path / "ids.jsonl", tmp_path / "ragas.jsonl"])
    con.close()
    app_env(db)
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select("ids").run()
    next(s for s in at.selectbox if s.label == "Candidate run").select("ragas").run()
    assert not at.exception and not at.error
    (gate,) = [plain(x.value) for x in at.warning if "INCONCLUSIVE" in plain(x.value)]
    assert "0 inconclusive" not in gate and " inconclusive (" not in gate, gate  # no rule itself inconclusive
    assert "with its document ids" in gate, gate
    assert "Gather more queries" not in gate, gate


def test_the_gate_command_names_runs_with_control_characters_as_the_shell_reads_them(app_env, tmp_path):
    """A run id from a log may hold a line break or an escape sequence: the command offered to copy
    holds none of them raw, and bash reads the very ids back from it."""
    import subprocess

    from tests.helpers import records_db

    a, b = "run\x1b[31m a", "run\nb's"
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + 1) % 4}"]} for r in (a, b) for i in range(3)
    ]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    next(s for s in at.selectbox if s.label == "Baseline run").select(a).run()
    next(s for s in at.selectbox if s.label == "Candidate run").select(b).run()
    assert not at.exception
    (command,) = [c.value for c in at.code if c.value.startswith("ragaudit gate")]
    assert not any(ord(ch) < 0x20 for ch in command)
    argv = subprocess.run(
        ["bash", "-c", f'set -- {command.removeprefix("ragaudit gate ")}; printf "%s\\0" "$@"'],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")[:-1]
    assert argv[2:] == [b"--baseline", a.encode(), b"--candidate", b.encode()]

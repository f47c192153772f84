"""AppTest: the stability page shows the core's numbers, and picking a pair shows its queries."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from ragaudit_core.stability.compare import compare_runs
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability
from tests.helpers import app_test, plain, records_db

pytestmark = pytest.mark.slow
PAGE = "pages/1_Stability.py"


def test_no_data_says_what_to_do(app_env):
    app_env()
    at = app_test(PAGE).run()
    assert not at.exception
    assert any("No logs are loaded yet" in i.value for i in at.info)
    assert not at.metric  # st.stop() before any figure


def test_headline_figures_match_the_core(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    s = compute_stability(store.connect(sample_db), StabilityOptions(allow_missing=True)).summary
    shown = {m.label: m.value for m in at.metric}
    assert shown["mean J_doc"] == f"{s.mean_j_doc:.3f}" == "0.435"
    assert shown["mean J_span"] == f"{s.mean_j_span:.3f}" == "0.146"
    assert shown["gap ratio"] == f"{s.gap_ratio:.3f}" == "2.973"
    assert shown["collapse rate"] == f"{s.collapse_rate:.1%}" == "95.0%"
    assert shown["flip rate (span)"] == f"{s.flip_rate['span']:.1%}"
    assert shown["null transitions"] == "0"
    pairs = next(df.value for df in at.dataframe if "j_avg_span" in df.value.columns)
    assert len(pairs) == 66
    assert list(pairs["j_avg_span"]) == sorted(pairs["j_avg_span"])  # worst pair first
    # each pair's J_avg with its 95 % interval beside it, the core's resampled interval
    res = compute_stability(store.connect(sample_db), StabilityOptions(allow_missing=True, resamples=1000))
    worst = pairs.iloc[0]
    e = res.intervals.pair(worst.run_a, worst.run_b, "span", "j_avg")
    assert e.lo <= worst.j_avg_span <= e.hi and worst.j_avg_span_ci == f"[{e.lo:.3f}, {e.hi:.3f}]"
    assert list(pairs.columns[pairs.columns.get_loc("j_avg_doc") :][:2]) == ["j_avg_doc", "j_avg_doc_ci"]


def test_picking_a_pair_shows_its_queries(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    box = next(s for s in at.selectbox if s.label.startswith("Run pair"))
    # it opens on the compare page's default pair (stored at ingest), baseline first
    assert box.options[box.index] == "k10-c256-o32 vs k10-c128-o32"
    box.set_value(box.options.index("k10-c128-o32 vs k20-c128-o32")).run()
    assert not at.exception
    cmp = compare_runs(store.connect(sample_db), "k10-c128-o32", "k20-c128-o32")
    # run ids from logs reach markdown escaped (render.md)
    line = next(m.value for m in at.markdown if "**k10\\-c128\\-o32** vs **k20\\-c128\\-o32**" in m.value)
    assert f"{cmp.summary.n_flipped:,} flipped" in line
    assert f"{cmp.summary.n_collapsed:,} collapsed" in line
    queries = next(df.value for df in at.dataframe if "collapsed" in df.value.columns)
    assert len(queries) == 300
    assert queries["j_span"].iloc[0] == pytest.approx(cmp.queries["j_span"].iloc[0])


def test_flip_threshold_changes_the_flip_rate(app_env, sample_db):
    app_env(sample_db)
    at = app_test(PAGE).run()
    before = {m.label: m.value for m in at.metric}["flip rate (span)"]
    at.sidebar.slider[0].set_value(0.1).run()
    assert not at.exception
    con = store.connect(sample_db)
    s_05 = compute_stability(con, StabilityOptions(allow_missing=True, flip_threshold=0.5)).summary
    s_01 = compute_stability(con, StabilityOptions(allow_missing=True, flip_threshold=0.1)).summary
    after = {m.label: m.value for m in at.metric}["flip rate (span)"]
    assert before == f"{s_05.flip_rate['span']:.1%}"
    assert after == f"{s_01.flip_rate['span']:.1%}"
    assert s_01.flip_rate["span"] < s_05.flip_rate["span"] and after != before  # fewer cells below τ = 0.1


def test_a_run_sharing_no_query_is_left_out_by_default_and_named(app_env, tmp_path):
    """Before: one small upload sharing no query made the page say 'nothing to compare'."""
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 4}"]}
        for k, r in ((1, "k10"), (2, "k5"), (3, "k20"))
        for i in range(3)
    ]
    recs.append({"run_id": "upload", "query_id": "elsewhere", "evidence": ["x"]})
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    assert at.sidebar.multiselect[0].value == ["k5", "k10", "k20"]  # natural order, upload left out
    assert any(
        "Left out 1 run that shares no query with the 3 compared \\(which share 3\\)" in i.value and "upload" in i.value
        for i in at.info
    )  # the note as md() escapes it
    assert {m.label for m in at.metric} >= {"mean J_doc", "gap ratio"}
    at.sidebar.multiselect[0].set_value(["k5", "upload"]).run()
    assert not at.exception
    # a choice of runs, not a failure: said as the compare page says it, with what to pick instead
    assert not at.error
    (note,) = [i.value for i in at.info if "no query in common" in i.value]
    assert note.startswith("These 2 runs have no query in common") and "Runs compared" in note
    assert "3 runs sharing 3 queries \\(k5, k10, k20\\)" in note  # escaped by md()


def test_clearing_the_runs_compared_leaves_it_empty(app_env, tmp_path):
    """Before: "Clear all" (or taking out the last run) filled the box again with the default runs,
    so picking two other runs meant taking out every default run but one, one by one."""
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 4}"]}
        for k, r in ((1, "k10"), (2, "k5"), (3, "k20"))
        for i in range(3)
    ]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert at.sidebar.multiselect[0].value == ["k5", "k10", "k20"]
    at.sidebar.multiselect[0].set_value([]).run()
    assert not at.exception
    assert at.sidebar.multiselect[0].value == []
    assert [i.value for i in at.info] == ["Pick at least two runs to compare under “Runs compared” in the sidebar."]
    assert not at.metric
    at.sidebar.multiselect[0].set_value(["k20", "k10"]).run()  # then two runs of one's own
    assert not at.exception
    assert at.sidebar.multiselect[0].value == ["k20", "k10"]
    assert any(c.value.startswith("3 queries × 1 run pair") for c in at.caption)


def test_what_changed_and_list_sizes_read_in_words(app_env, sample_db):
    """Before: the tables said top_k / chunk_size / chunk_overlap where the scatter's legend says
    top-k / chunk size / overlap, and the pair's query table headed its list sizes "n a" / "n b"."""
    import json

    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception
    effects = next(df.value for df in at.dataframe if "n_pairs" in df.value.columns)
    assert list(effects["changed"].drop_duplicates()) == ["overlap", "chunk size", "several", "top-k"]
    assert effects.groupby("changed")["n_pairs"].first().to_dict() == {
        "overlap": 6,  # 12 runs: 6 pairs differ in overlap only, 6 in chunk size only,
        "chunk size": 6,
        "several": 42,  # 42 in two settings or more,
        "top-k": 12,  # and 12 in top-k only (3 top-k values × 4 grids: 3 pairs each)
    }
    pairs = next(df.value for df in at.dataframe if "j_avg_span" in df.value.columns)
    assert set(pairs["changed"]) == {"overlap", "chunk size", "several", "top-k"}
    assert (pairs["changed"] == "several").sum() == 42
    queries = next(df for df in at.dataframe if "collapsed" in df.value.columns)
    cols = json.loads(queries.proto.columns)
    assert (cols["n_a"]["label"], cols["n_b"]["label"]) == ("entries, A", "entries, B")
    assert list(queries.value[["n_a", "n_b"]].iloc[0]) == [10, 10]  # k10 against k10: ten entries each


def test_effects_by_what_changed_show_their_intervals(app_env, sample_db):
    """Before: the table by what changed was the one figure the page showed without its 95 % interval."""
    import json

    from ragaudit_core.stability.effects import effects_by_change
    from ragaudit_core.wording import bracket

    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception
    table = next(df for df in at.dataframe if "n_pairs" in df.value.columns)
    shown = table.value.set_index(["changed", "level"])
    res = compute_stability(store.connect(sample_db), StabilityOptions(allow_missing=True, resamples=1000))
    core = effects_by_change(res.pairs, res.intervals).set_index(["changed", "level"])
    cs = core.loc[("chunk_size", "span")]
    assert shown.loc[("chunk size", "span"), "j_avg_ci"] == bracket(cs.j_avg_lo, cs.j_avg_hi) == "[0.045, 0.053]"
    assert shown.loc[("chunk size", "span"), "collapse_rate_ci"] == bracket(
        cs.collapse_rate_lo, cs.collapse_rate_hi, ".1%"
    )
    assert shown["j_avg_ci"].notna().all() and shown["flip_rate_ci"].notna().all()
    assert json.loads(table.proto.columns)["j_avg_ci"]["label"] == "J_avg, 95 % interval"
    assert any(c.value.startswith("Means over each group's pairs, pairs weighing equally. 95 %") for c in at.caption)


def test_ranking_quality_beside_stability(app_env, sample_db):
    """The sample opens with SciFact's labels: each run's nDCG@10 with its interval, as the core
    computes it."""
    from ragaudit_core.quality.summary import compute_quality

    app_env(sample_db)
    at = app_test(PAGE).run()
    assert not at.exception and "Ranking quality (relevance labels)" in [s.value for s in at.subheader]
    table = next(df.value for df in at.dataframe if "ndcg@10" in df.value.columns)
    con = store.connect(sample_db)
    q = compute_quality(con, list(table["run"]))
    con.close()
    for row in table.itertuples():
        e = q.run(row.run).metrics["ndcg@10"]
        assert row._4 == pytest.approx(e.value) and row._5 == f"[{e.lo:.3f}, {e.hi:.3f}]"
        assert row._2 == 300 and row._3 == 0  # every sample query has a relevant label
    assert any("95 % bootstrap intervals over the 300 queries" in c.value for c in at.caption)


def test_warnings_read_as_sentences(app_env, tmp_path):
    """The core words a warning to follow a colon ("query coverage differs; …"); the page shows it
    as a sentence."""
    recs = [{"run_id": "a", "query_id": f"q{i}", "evidence": [f"d{i}"]} for i in range(3)]
    recs += [{"run_id": "b", "query_id": f"q{i}", "evidence": [f"d{i}"]} for i in range(2)]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception
    (w,) = [w.value for w in at.warning if "overage differs" in w.value]
    assert w.startswith("Query coverage differs")


def test_a_file_that_is_not_a_database_is_said_in_one_sentence(app_env, tmp_path):
    notes = tmp_path / "notes.duckdb"
    notes.write_text("hello\n")
    app_env(notes)
    at = app_test("pages/1_Stability.py").run()
    assert not at.exception
    assert [plain(e.value) for e in at.error] == [
        f"{notes} is not a DuckDB database file (RagAudit keeps its data in DuckDB files): choose a RagAudit "
        "database, or a new file name to start one. Pick another file under “Database” on the home page."
    ]
    assert notes.read_text() == "hello\n"


def _ragas_db_with_benchmark_labels(tmp_path):
    """Two Ragas exports (no query ids: each is the hash of its question) and qrels keyed by the
    benchmark's own query ids, as an auditor brings SciFact's beside them."""
    from ragaudit_core.workspace import load_paths
    from tests.helpers import write_jsonl

    qs = ["Does aspirin prevent stroke?", "Is coffee harmful?", "Do statins lower LDL?"]
    for run in ("ragas_a", "ragas_b"):
        write_jsonl(tmp_path / f"{run}.jsonl", [{"user_input": q, "retrieved_contexts": [q, run]} for q in qs])
    (tmp_path / "test.tsv").write_text("1\tD1\t1\n2\tD2\t1\n3\tD3\t1\n")
    db = tmp_path / "ragas.duckdb"
    con = store.connect(db)
    load_paths(con, [tmp_path / "ragas_a.jsonl", tmp_path / "ragas_b.jsonl"], qrels=[tmp_path / "test.tsv"])
    con.close()
    return db


def test_labels_that_label_no_compared_query_say_why(app_env, tmp_path):
    """The ranking-quality section vanished without a word when the loaded labels named none of the
    compared runs' queries; it says so, and why."""
    app_env(_ragas_db_with_benchmark_labels(tmp_path))
    at = app_test(PAGE).run()
    assert not at.exception
    said = [plain(i.value) for i in at.info if "label no query of" in plain(i.value)]
    assert len(said) == 1 and said[0].startswith("Relevance labels are loaded for 3 queries ('1', '2', '3')")
    assert "hashes of the question texts" in said[0]


def test_long_run_ids_read_apart_in_the_runs_compared(app_env, tmp_path):
    """Before: two runs differing only at the end of a long id showed alike in the sidebar's chips
    (cut at their end); now each reads as its beginning, "…" and its end, named in full below."""
    a = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-20.csv"
    b = "ragas_scifact_bm25_top5_chunk256_overlap32_2026-11-21.csv"
    recs = [
        {"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", f"d{(i + k) % 4}"]}
        for k, r in ((1, a), (2, b), (3, "k5"))
        for i in range(3)
    ]
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    box = at.sidebar.multiselect[0]
    assert box.value == ["k5", a, b]  # the values stay the run ids
    # each cut label, then the whole id: the picker's type-to-search matches the label only, and found
    # no word of the cut middle ("chunk256") while the label was the cut alone
    assert box.options == ["k5", f"ragas_…6-11-20.csv ({a})", f"ragas_…6-11-21.csv ({b})"]
    (full,) = [plain(c.value) for c in at.sidebar.caption if c.value.startswith("In full")]
    assert full == f"In full: {a} · {b}"
    pair = next(s for s in at.selectbox if s.label.startswith("Run pair"))
    assert len(pair.options) == 3 and all("ragas" in o and "chunk256" in o for o in pair.options)  # its search too
    assert any(o.endswith((f"({a} vs {b})", f"({b} vs {a})")) for o in pair.options)


def _mixed_ids_db(tmp_path, names: tuple[str, ...]):
    """Runs over two questions as Ragas rows: 'ids' with document ids, 'ragas'/'ragas2' without
    (their ids are passage hashes). Q1: ids/ragas {A, B}, ragas2 {A, C}; Q2: every run {D}."""
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    contexts = {"ids": (["A", "B"], ["D"]), "ragas": (["A", "B"], ["D"]), "ragas2": (["A", "C"], ["D"])}
    for name in names:
        rows = [{"user_input": q, "retrieved_contexts": [f"{p} passage." for p in ps]} for q, ps in
                zip(("Q1?", "Q2?"), contexts[name])]  # fmt: skip
        if name == "ids":
            rows = [r | {"retrieved_context_ids": [p[0] for p in r["retrieved_contexts"]]} for r in rows]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    db = tmp_path / "mixed.duckdb"
    con = store.connect(db)
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in names])
    con.close()
    return db


def test_pairs_mixing_document_ids_with_passage_hashes_are_left_out_and_named(app_env, tmp_path):
    """'ids' logged document ids, 'ragas' and 'ragas2' did not: the headline is (ragas, ragas2)'s
    alone — Q1 1/3, Q2 1, mean 2/3 (with the mixed pairs at J 0 by construction it read 2/9) — and
    one warning names the two pairs left out."""
    app_env(_mixed_ids_db(tmp_path, ("ids", "ragas", "ragas2")))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error
    shown = {m.label: m.value for m in at.metric}
    assert shown["mean J_doc"] == "0.667" and shown["mean J_span"] == "0.667" and shown["collapse rate"] == "0.0%"
    said = [plain(w.value) for w in at.warning if "logged no document ids" in plain(w.value)]
    assert len(said) == 1 and said[0].startswith("Left out 2 pairs between runs 'ragas', 'ragas2', which logged no")
    pairs = next(df.value for df in at.dataframe if "j_avg_span" in df.value.columns)
    assert len(pairs) == 1


def test_runs_whose_every_pair_mixes_the_two_kinds_of_ids_are_told_so(app_env, tmp_path):
    """One run with document ids and one without: nothing to compare, said in one sentence (not an
    error, not J 0)."""
    app_env(_mixed_ids_db(tmp_path, ("ids", "ragas")))
    at = app_test(PAGE).run()
    assert not at.exception and not at.error and not at.metric
    said = [plain(i.value) for i in at.info if "can be compared" in plain(i.value)]
    assert len(said) == 1 and said[0].startswith("No pair of the compared runs can be compared: each sets run 'ragas'")


def test_a_pair_over_more_queries_than_the_headline_says_so(app_env, tmp_path):
    """Runs a and b ask q1–q3, run c only q1, all three picked: the headline is over the 1 query every
    run has, while the pair (a, b) is over its 3 — the pair's line says both counts, so '3 queries'
    beside a headline of 1 does not read as a contradiction."""
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [f"d{i}", r]} for r in ("a", "b") for i in (1, 2, 3)]
    recs.append({"run_id": "c", "query_id": "q1", "evidence": ["d1"]})
    app_env(records_db(tmp_path, recs))
    at = app_test(PAGE)
    at.session_state["ragaudit.runs"] = ["a", "b", "c"]
    at.run()
    assert not at.exception
    box = next(s for s in at.selectbox if s.label.startswith("Run pair"))
    box.set_value(box.options.index("a vs b")).run()
    line = plain(next(m.value for m in at.markdown if "**a** vs **b**" in m.value))
    assert line.startswith("**a** vs **b**: 3 queries,"), line
    assert line.endswith(
        "Over the queries both runs have; the figures above are over the 1 query every compared run has."
    )
    box.set_value(box.options.index("a vs c")).run()
    line = plain(next(m.value for m in at.markdown if "**a** vs **c**" in m.value))
    assert "figures above" not in line

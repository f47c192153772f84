"""Stability metrics on hand-worked fixtures (numbers written as arithmetic), plus
invariants against the pure-Python reference on random logs."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability.metrics import NoComparablePairs, StabilityError, StabilityOptions, compute_stability
from ragaudit_core.stability.reference import reference_stability
from tests.helpers import ev, write_jsonl

# Fixture (conftest.three_runs), evidence identities per query:
#        q1                        q2      q3
#   A    d1:s1  d2:s2              —       d3:s3
#   B    d1:s1  d2:s2b             —       —
#   C    d1:s1b d4:s4              d5:s5   d3:s3


def _pair(res, a, b, level):
    row = res.pairs[(res.pairs.run_a == a) & (res.pairs.run_b == b) & (res.pairs.level == level)]
    assert len(row) == 1
    return row.iloc[0]


def _query(res, q, level):
    row = res.queries[(res.queries.query_id == q) & (res.queries.level == level)]
    assert len(row) == 1
    return row.iloc[0]


def test_pairwise_doc_level_by_hand(con, three_runs):
    ingest_paths(con, [three_runs])
    res = compute_stability(con)
    ab = _pair(res, "A", "B", "doc")
    # q1 {d1,d2}={d1,d2} → 1; q2 both empty → 1; q3 {d3} vs {} → 0
    assert ab.j_avg == pytest.approx((1 + 1 + 0) / 3)
    assert ab.flip_rate == pytest.approx(1 / 3)
    assert ab.null_rate_a == pytest.approx(1 / 3)
    assert ab.null_rate_b == pytest.approx(2 / 3)
    assert ab.null_loss == pytest.approx(1 / 3)
    assert ab.null_gain == 0
    assert ab.collapse_rate == 0
    ac = _pair(res, "A", "C", "doc")
    # q1 |{d1}| / |{d1,d2,d4}| = 1/3; q2 {} vs {d5} → 0; q3 → 1
    assert ac.j_avg == pytest.approx((1 / 3 + 0 + 1) / 3)
    assert ac.flip_rate == pytest.approx(2 / 3)
    assert ac.null_gain == pytest.approx(1 / 3)
    bc = _pair(res, "B", "C", "doc")
    assert bc.j_avg == pytest.approx((1 / 3 + 0 + 0) / 3)
    assert bc.flip_rate == 1
    assert bc.null_gain == pytest.approx(2 / 3)


def test_pairwise_span_level_by_hand(con, three_runs):
    ingest_paths(con, [three_runs])
    res = compute_stability(con)
    ab = _pair(res, "A", "B", "span")
    # q1 {s1,s2} vs {s1,s2b}: 1/3; q2 → 1; q3 → 0
    assert ab.j_avg == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert ab.flip_rate == pytest.approx(2 / 3)
    assert ab.collapse_rate == 0  # q3: B is empty, so not a collapse
    assert ab.same_docs_diff_spans == 1  # q1: same documents, one span differs
    ac = _pair(res, "A", "C", "span")
    # q1 {s1,s2} vs {s1b,s4}: 0 with both non-empty → collapse; q2 0; q3 1
    assert ac.j_avg == pytest.approx((0 + 0 + 1) / 3)
    assert ac.collapse_rate == pytest.approx(1 / 3)
    assert ac.same_docs_diff_spans == 0
    bc = _pair(res, "B", "C", "span")
    assert bc.j_avg == 0
    assert bc.collapse_rate == pytest.approx(1 / 3)


def test_per_query_worst_pair_and_summary(con, three_runs):
    ingest_paths(con, [three_runs])
    res = compute_stability(con)
    # q1 doc: AB 1, AC 1/3, BC 1/3 → tie broken by pair order → "A vs C"
    assert _query(res, "q1", "doc").j_min == pytest.approx(1 / 3)
    assert _query(res, "q1", "doc").worst_pair == "A vs C"
    assert _query(res, "q3", "doc").worst_pair == "A vs B"
    assert _query(res, "q1", "span").j_min == 0
    s = res.summary
    mean_doc = ((2 / 3) + (4 / 9) + (1 / 9)) / 3  # = 11/27
    mean_span = ((4 / 9) + (3 / 9) + 0) / 3  # = 7/27
    assert s.mean_j_doc == pytest.approx(11 / 27) == pytest.approx(mean_doc)
    assert s.mean_j_span == pytest.approx(7 / 27) == pytest.approx(mean_span)
    assert s.gap_ratio == pytest.approx(11 / 7)
    assert s.collapse_rate == pytest.approx(1 / 3)  # only q1 has a pair at J_span = 0, both non-empty
    assert s.doc.collapse_rate == 0
    assert s.null_transitions == 4  # AB q3, AC q2, BC q2, BC q3
    assert s.same_docs_diff_spans == 1
    assert s.span.median_j_min == 0


def test_run_statistics(con, three_runs):
    ingest_paths(con, [three_runs])
    runs = compute_stability(con).runs.set_index("run_id")
    # A: list sizes 2, 0, 1
    assert runs.loc["A", "citation_rate"] == pytest.approx(2 / 3)
    assert runs.loc["A", "null_rate"] == pytest.approx(1 / 3)
    assert runs.loc["A", "mean_evidence"] == pytest.approx(1.0)
    assert runs.loc["A", "median_evidence"] == 1.0
    assert runs.loc["A", "p95_evidence"] == pytest.approx(1 + 0.9 * (2 - 1))  # linear: index 0.95·2 = 1.9
    assert runs.loc["B", "citation_rate"] == pytest.approx(1 / 3)


def test_baseline_mode_compares_only_with_baseline(con, three_runs):
    ingest_paths(con, [three_runs])
    res = compute_stability(con, StabilityOptions(baseline="B"))
    got = sorted({(r.run_a, r.run_b) for r in res.pairs.itertuples()})
    assert got == [("B", "A"), ("B", "C")]  # oriented from the baseline
    # q3 doc: BA 0, BC 0 → worst "B vs A" (first in order)
    assert _query(res, "q3", "doc").worst_pair == "B vs A"
    assert res.summary.mean_j_doc == pytest.approx(((2 / 3) + (1 / 9)) / 2)
    with pytest.raises(StabilityError, match="baseline run 'Z' is not among the runs compared"):
        compute_stability(con, StabilityOptions(baseline="Z"))
    with pytest.raises(StabilityError, match=r"^unknown run 'Z'; runs are: 'A', 'B', 'C'$"):
        compute_stability(con, StabilityOptions(runs=["A", "Z"]))
    with pytest.raises(StabilityError, match=r"^unknown runs 'Y', 'Z'; runs are: 'A', 'B', 'C'$"):
        compute_stability(con, StabilityOptions(runs=["A", "Y", "Z"]))
    from ragaudit_core.stability.metrics import _resolve_pairs

    with pytest.raises(StabilityError, match=r"^unknown run 'Z' in pairs$"):
        _resolve_pairs(["A", "B"], StabilityOptions(pairs=[("A", "Z")]))
    with pytest.raises(StabilityError, match=r"^unknown runs 'Y', 'Z' in pairs$"):
        _resolve_pairs(["A", "B"], StabilityOptions(pairs=[("A", "Z"), ("Y", "B")]))


def test_topk_truncates_the_logged_list(con, three_runs):
    ingest_paths(con, [three_runs])
    res = compute_stability(con, StabilityOptions(topk=1))
    # with k = 1, q1 keeps d1 in every run: doc J = 1 for all pairs; spans s1, s1, s1b
    assert _pair(res, "A", "B", "doc").j_avg == pytest.approx((1 + 1 + 0) / 3)
    assert _pair(res, "A", "C", "span").j_avg == pytest.approx((0 + 0 + 1) / 3)
    assert _pair(res, "A", "B", "span").j_avg == pytest.approx((1 + 1 + 0) / 3)


def test_duplicates_are_dropped_with_a_warning_and_topk_counts_logged_positions(con, tmp_path):
    # RagCiteCheck semantics: top-k cuts the raw list, then duplicates collapse.
    write_jsonl(tmp_path / "r1.jsonl", [{"run_id": "r1", "query_id": "q", "cited": ["docF", "docF", "docG"]}])
    write_jsonl(tmp_path / "r2.jsonl", [{"run_id": "r2", "query_id": "q", "cited": ["docF", "docG"]}])
    rep = ingest_paths(con, [tmp_path])
    assert [w.message for w in rep.warnings if w.code == "duplicate-evidence"] == [
        "run 'r1', query 'q': evidence[1] repeats evidence[0] (same document and span); duplicates were dropped"
    ]
    assert compute_stability(con).pairs.iloc[0].j_avg == 1.0
    # top-2 of r1 is {docF}; of r2 {docF, docG} → 1/2
    assert compute_stability(con, StabilityOptions(topk=2)).pairs.iloc[0].j_avg == pytest.approx(0.5)


def test_doc_only_runs_have_no_span_metrics_not_zero(con, tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": "q", "cited": ["x", "y"]}])
    write_jsonl(tmp_path / "b.jsonl", [{"run_id": "b", "query_id": "q", "evidence": [ev("x", "h1")]}])
    ingest_paths(con, [tmp_path])
    res = compute_stability(con)
    assert set(res.pairs.level) == {"doc"}
    assert res.summary.mean_j_span is None
    assert res.summary.gap_ratio is None
    assert res.summary.collapse_rate is None
    assert "span metrics unavailable for the run without span information" in res.summary.warnings[0]
    assert "'a'" in res.summary.warnings[0]
    js = res.to_json()
    assert all(p["level"] == "doc" for p in js["pairs"])


def _mixed_ids(con, tmp_path):
    """Three runs over two questions: 'ids' logged document ids, 'ragas' and 'ragas2' (Ragas rows)
    none, so theirs are their passages' hashes (text:…).
        Q1: ids {d0: Alpha, d1: Beta}   ragas {Alpha, Beta}   ragas2 {Alpha, Gamma}
        Q2: ids {d2: Delta}             ragas {Delta}         ragas2 {Delta}"""
    from ragaudit_core.logs.formats import query_id_for

    alpha, beta, gamma, delta = (f"{w} passage text." for w in ("Alpha", "Beta", "Gamma", "Delta"))
    ids = [
        {"run_id": "ids", "query_id": query_id_for("Q1?"), "evidence": [ev("d0", text=alpha), ev("d1", text=beta)]},
        {"run_id": "ids", "query_id": query_id_for("Q2?"), "evidence": [ev("d2", text=delta)]},
    ]
    write_jsonl(tmp_path / "ids.jsonl", ids)
    write_jsonl(
        tmp_path / "ragas.jsonl",
        [
            {"user_input": "Q1?", "retrieved_contexts": [alpha, beta]},
            {"user_input": "Q2?", "retrieved_contexts": [delta]},
        ],
    )
    write_jsonl(
        tmp_path / "ragas2.jsonl",
        [
            {"user_input": "Q1?", "retrieved_contexts": [alpha, gamma]},
            {"user_input": "Q2?", "retrieved_contexts": [delta]},
        ],
    )
    ingest_paths(con, [tmp_path / f"{n}.jsonl" for n in ("ids", "ragas", "ragas2")])


def test_pairs_between_runs_that_logged_no_document_ids_and_runs_that_did_are_left_out(con, tmp_path):
    """A Ragas row names no document: its ids are its passages' hashes (text:…). Beside a run with
    real ids over the same passages J is 0 at both levels by how they were logged (a span is a
    document's passage), not by what they retrieved: such pairs are left out of every pair formed by
    default, and one sentence names them. Runs that both logged none compare as they are."""
    _mixed_ids(con, tmp_path)
    res = compute_stability(con)
    # only (ragas, ragas2): Q1 |{Alpha}| / |{Alpha, Beta, Gamma}| = 1/3, Q2 1 → mean (1/3 + 1) / 2 = 2/3
    # (with the two mixed pairs at J 0 by construction it read (0 + 0 + 1/3 + 0 + 0 + 1) / 6 = 2/9)
    assert res.summary.n_pairs == 1 and res.summary.runs == ["ragas", "ragas2"]
    assert set(res.pairs.run_a + "/" + res.pairs.run_b) == {"ragas/ragas2"}
    assert res.summary.mean_j_doc == pytest.approx(2 / 3) and res.summary.mean_j_span == pytest.approx(2 / 3)
    assert res.summary.flip_rate["doc"] == pytest.approx(1 / 2)  # Q1's 1/3 < 0.5
    assert res.summary.collapse_rate == 0.0  # was 1.0: both queries had a mixed pair at J_span 0
    assert _query(res, query_id_for("Q1?"), "span").j_min == pytest.approx(1 / 3)
    assert _query(res, query_id_for("Q1?"), "span").worst_pair == "ragas vs ragas2"
    # the doc level is the span level among runs without ids: the gap ratio says so
    assert res.summary.gap_ratio == 1.0 and res.summary.gap_ratio_note.startswith("gap ratio 1 by construction")
    [said] = [w for w in res.summary.warnings if "logged no document ids" in w]
    assert said.startswith(
        "Left out 2 pairs between runs 'ragas', 'ragas2', which logged no document ids (their document ids are "
        "their passages' text hashes, text:…), and run 'ids', which did:"
    )
    assert "J would be 0 at both levels" in said and "--doc-id-key" in said
    assert "a Ragas export's retrieved_context_ids column" in said  # a Ragas row has no metadata key to name
    # a baseline that logged no ids: compared with 'ragas2'; (ids, ragas) left out and named
    res = compute_stability(con, StabilityOptions(baseline="ragas"))
    assert res.summary.n_pairs == 1 and res.summary.mean_j_doc == pytest.approx(2 / 3)
    [said] = [w for w in res.summary.warnings if "logged no document ids" in w]
    assert said.startswith("Left out 1 pair between run 'ragas', which logged no document ids (its document ids")
    # among runs that logged none: nothing left out, nothing said
    res = compute_stability(con, StabilityOptions(runs=["ragas", "ragas2"]))
    assert not [w for w in res.summary.warnings if "logged no document ids" in w]
    assert res.summary.mean_j_doc == pytest.approx(2 / 3)


def test_when_every_pair_mixes_the_two_kinds_of_ids_nothing_is_compared_and_it_is_said(con, tmp_path):
    """A baseline with ids against runs without, or one run of each kind: no pair is left to compare,
    and the error says so in one sentence (the pages and the CLI show it; the overview is not stored)."""
    _mixed_ids(con, tmp_path)
    for opts in (StabilityOptions(baseline="ids"), StabilityOptions(runs=["ids", "ragas"])):
        with pytest.raises(NoComparablePairs) as e:
            compute_stability(con, opts)
        msg = str(e.value)
        assert msg.startswith("no pair of the compared runs can be compared: ") and msg.count(". ") == 0, msg
        assert "logged no document ids" in msg and "--doc-id-key" in msg
    assert issubclass(NoComparablePairs, StabilityError)


def test_a_pair_asked_for_by_name_is_compared_whatever_its_ids(con, tmp_path):
    """An explicit pair (the compare page's, the gate's, the probe's) is the user's choice: it is
    computed — its null loss and gain, and each run's figures, hold whatever the ids — and the
    sentence says its J is 0 by how the runs were logged (the gate reads its Jaccard rules as not
    applicable)."""
    _mixed_ids(con, tmp_path)
    res = compute_stability(con, StabilityOptions(pairs=[("ids", "ragas")]))
    assert _pair(res, "ids", "ragas", "doc").j_avg == 0.0 and _pair(res, "ids", "ragas", "span").j_avg == 0.0
    assert _pair(res, "ids", "ragas", "doc").null_loss == 0.0
    [said] = [w for w in res.summary.warnings if "logged no document ids" in w]
    assert said.startswith("run 'ragas' logged no document ids: its document ids") and "--doc-id-key" in said
    assert "J 0 between them at both levels" in said
    res = compute_stability(con, StabilityOptions(pairs=[("ragas", "ragas2")], runs=["ids", "ragas", "ragas2"]))
    assert not [w for w in res.summary.warnings if "logged no document ids" in w]


def test_span_identity_from_text_is_normalised(con, tmp_path):
    write_jsonl(
        tmp_path / "a.jsonl",
        [{"run_id": "a", "query_id": "q", "evidence": [{"doc_id": "d", "text": "Ｆｉｎｅ  ﬁsh\n"}]}],
    )
    write_jsonl(
        tmp_path / "b.jsonl", [{"run_id": "b", "query_id": "q", "evidence": [{"doc_id": "D", "text": " Fine fish"}]}]
    )
    ingest_paths(con, [tmp_path])
    res = compute_stability(con)
    assert _pair(res, "a", "b", "span").j_avg == 1.0  # NFKC + whitespace collapse, doc ids case-folded


def test_alias_map_and_collisions(con, tmp_path):
    write_jsonl(tmp_path / "r1.jsonl", [{"run_id": "r1", "query_id": "q", "cited": ["DocM", "docX"]}])
    write_jsonl(tmp_path / "r2.jsonl", [{"run_id": "r2", "query_id": "q", "cited": ["docm", "docZ"]}])
    ingest_paths(con, [tmp_path])
    # without a map: DocM ≡ docm (case-insensitive), docX ≠ docz → 1/3
    assert compute_stability(con).pairs.iloc[0].j_avg == pytest.approx(1 / 3)
    res = compute_stability(con, StabilityOptions(docid_map={"docx": "docz"}))
    assert res.pairs.iloc[0].j_avg == 1.0
    assert any(w == "canonical-id collision: 2 raw ids map to 'docm': 'DocM', 'docm'" for w in res.summary.warnings)
    assert any("raw ids map to 'docz'" in w for w in res.summary.warnings)


def test_query_coverage_mismatch_is_an_error_unless_allowed(con, tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": q, "cited": ["x"]} for q in ("q1", "q2", "q3")])
    write_jsonl(tmp_path / "b.jsonl", [{"run_id": "b", "query_id": q, "cited": ["x"]} for q in ("q1", "q2")])
    ingest_paths(con, [tmp_path])
    with pytest.raises(StabilityError) as e:
        compute_stability(con)
    assert str(e.value) == (
        "query coverage differs between runs: run 'b' lacks 1 query: 'q3'. Re-run the missing queries, "
        "or pass --allow-missing to evaluate only the queries every run has"
    )
    res = compute_stability(con, StabilityOptions(allow_missing=True))
    assert res.summary.n_queries == 2


def test_one_run_is_not_enough(con, tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"run_id": "a", "query_id": "q", "cited": ["x"]}])
    ingest_paths(con, [tmp_path])
    with pytest.raises(StabilityError, match=r"need at least two runs to compare; found 1: 'a'"):
        compute_stability(con)


def test_a_run_compared_with_itself_is_perfectly_stable(con, three_runs, tmp_path):
    ingest_paths(con, [three_runs])
    rows = con.execute("SELECT * FROM records WHERE run_id = 'A'").fetchall()
    assert rows
    # copy run A under another name: every Jaccard must be 1
    import json

    recs = [
        {"run_id": "A2", "query_id": "q1", "evidence": [ev("d1", "s1"), ev("d2", "s2")]},
        {"run_id": "A2", "query_id": "q2", "evidence": []},
        {"run_id": "A2", "query_id": "q3", "evidence": [ev("d3", "s3")]},
    ]
    write_jsonl(tmp_path / "A2.jsonl", recs)
    ingest_paths(con, [tmp_path / "A2.jsonl"])
    res = compute_stability(con, StabilityOptions(runs=["A", "A2"]))
    assert (res.pairs.j_avg == 1.0).all()
    assert (res.pairs.flip_rate == 0).all()
    assert json.loads(json.dumps(res.to_json()))["summary"]["gap_ratio"] == 1.0


# ---------------------------------------------------------------- invariants vs the reference
@st.composite
def random_logs(draw):
    n_runs = draw(st.integers(2, 4))
    n_q = draw(st.integers(1, 5))
    docs = ["d1", "d2", "d3", "d4"]
    spans = ["a", "b", "c"]
    recs = []
    for r in range(n_runs):
        for q in range(n_q):
            k = draw(st.integers(0, 4))
            entries = []
            for _ in range(k):
                e = (draw(st.sampled_from(docs)), draw(st.sampled_from(spans)))
                if e not in entries:
                    entries.append(e)
            recs.append((f"r{r}", f"q{q}", entries))
    return recs


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(random_logs(), st.sampled_from([0.25, 0.5, 0.75]))
def test_sql_matches_pure_python_reference(tmp_path_factory, recs, tau):
    d = tmp_path_factory.mktemp("logs")
    write_jsonl(
        d / "all.jsonl", [{"run_id": r, "query_id": q, "evidence": [ev(x, s) for x, s in e]} for r, q, e in recs]
    )
    con = store.connect(":memory:")
    ingest_paths(con, [d])
    res = compute_stability(con, StabilityOptions(flip_threshold=tau))
    ref = reference_stability(recs, tau=tau)
    for row in res.pairs.itertuples():
        want = ref["pairs"][(row.run_a, row.run_b, row.level)]
        for k, v in want.items():
            assert getattr(row, k) == pytest.approx(v), (k, row)
        # symmetry: J(A,B) = J(B,A)
    swapped = compute_stability(
        con, StabilityOptions(pairs=[(b, a) for a, b in zip(res.pairs.run_a, res.pairs.run_b)], flip_threshold=tau)
    )
    for row in swapped.pairs.itertuples():
        assert row.j_avg == pytest.approx(ref["pairs"][(row.run_b, row.run_a, row.level)]["j_avg"])
        assert row.null_loss == pytest.approx(ref["pairs"][(row.run_b, row.run_a, row.level)]["null_gain"])
    for row in res.queries.itertuples():
        j, pair = ref["queries"][(row.query_id, row.level)]
        assert row.j_min == pytest.approx(j)
        assert row.worst_pair == pair
    assert res.summary.collapse_rate == pytest.approx(ref["collapse_rate"]["span"])
    if ref["gap_ratio"] is None:
        assert res.summary.gap_ratio is None
    else:
        assert res.summary.gap_ratio == pytest.approx(ref["gap_ratio"])
    con.close()


def test_bounds_on_random_data(con, tmp_path):
    rng = random.Random(7)
    recs = []
    for r in range(5):
        for q in range(30):
            recs.append(
                {
                    "run_id": f"r{r}",
                    "query_id": f"q{q}",
                    "evidence": [ev(f"d{rng.randrange(8)}", f"s{rng.randrange(3)}") for _ in range(rng.randrange(6))],
                }
            )
    write_jsonl(tmp_path / "x.jsonl", recs)
    ingest_paths(con, [tmp_path])
    res = compute_stability(con)
    for col in ("j_avg", "flip_rate", "null_rate_a", "null_rate_b", "null_loss", "null_gain", "collapse_rate"):
        assert res.pairs[col].between(0, 1).all()
    # span identity is finer than document identity: collapse can only be more frequent at span level
    assert res.summary.collapse_rate >= res.summary.doc.collapse_rate


def test_change_label_names_what_differs():
    from ragaudit_core.stability.metrics import change_label

    base = {"top_k": 10, "chunk_size": 256, "chunk_overlap": 32}
    assert change_label(base, dict(base, top_k=5)) == "top_k"
    assert change_label(base, dict(base, chunk_overlap=0)) == "chunk_overlap"
    assert change_label(base, dict(base, chunk_size=128, chunk_overlap=0)) == "several"
    assert change_label(base, dict(base)) == "none"
    assert change_label(base, {"top_k": 10}) == "unknown"  # one side does not log chunking
    assert change_label({}, {}) == "unknown"  # doc-only logs without configs


def test_effects_by_change_by_hand(con, tmp_path):
    from ragaudit_core.stability.effects import effects_by_change

    # three runs: B differs from A in top_k, C differs from A in chunk_size, B/C in both.
    # one query; A {d1:s1,d2:s2}, B {d1:s1}, C {d1:s9,d2:s8}
    recs = {
        "A": ({"top_k": 2, "chunk_size": 256}, [ev("d1", "s1"), ev("d2", "s2")]),
        "B": ({"top_k": 1, "chunk_size": 256}, [ev("d1", "s1")]),
        "C": ({"top_k": 2, "chunk_size": 128}, [ev("d1", "s9"), ev("d2", "s8")]),
    }
    for run, (cfg, evidence) in recs.items():
        write_jsonl(tmp_path / f"{run}.jsonl", [{"run_id": run, "query_id": "q", "config": cfg, "evidence": evidence}])
    ingest_paths(con, [tmp_path])
    res = compute_stability(con)
    assert dict(zip(zip(res.pairs.run_a, res.pairs.run_b), res.pairs.changed)) == {
        ("A", "B"): "top_k",
        ("A", "C"): "chunk_size",
        ("B", "C"): "several",
    }
    eff = effects_by_change(res.pairs).set_index(["changed", "level"])
    assert eff.loc[("top_k", "doc"), "j_avg"] == pytest.approx(1 / 2)  # {d1} / {d1,d2}
    assert eff.loc[("top_k", "span"), "j_avg"] == pytest.approx(1 / 2)  # {s1} / {s1,s2}
    assert eff.loc[("chunk_size", "doc"), "j_avg"] == pytest.approx(1.0)  # same documents
    assert eff.loc[("chunk_size", "span"), "j_avg"] == 0  # no shared span
    assert eff.loc[("chunk_size", "span"), "collapse_rate"] == 1
    assert eff.loc[("several", "span"), "n_pairs"] == 1


def test_the_summary_is_typed_and_its_json_contract_unchanged(con, three_runs):
    import json

    from ragaudit_core.stability.summary import StabilitySummary

    ingest_paths(con, [three_runs])
    res = compute_stability(con, StabilityOptions())
    js = json.loads(json.dumps(res.to_json()))["summary"]
    assert list(js) == [
        "n_queries", "n_pairs", "doc", "span", "mean_j_doc", "mean_j_span", "gap_ratio", "gap_ratio_note",
        "collapse_rate", "doc_collapse_rate", "flip_rate", "null_transitions", "same_docs_diff_spans",
        "warnings", "span_unavailable_runs", "runs", "flip_threshold", "topk", "baseline",
    ]  # fmt: skip
    assert set(js["doc"]) == {"available", "mean_j", "flip_rate", "null_transitions", "n_cells", "collapse_rate",
                              "median_j_min", "n_pairs"}  # fmt: skip
    assert js["flip_rate"] == {"doc": res.summary.doc.flip_rate, "span": res.summary.span.flip_rate}
    assert StabilitySummary.from_json(js) == res.summary


def test_intervals_bracket_the_figures_and_are_reproducible(con, three_runs):
    """Every headline and pair figure gets a bootstrap interval over queries that contains it; the
    same seed gives the same intervals; with one query resampled three times the interval of a
    constant figure is that constant."""
    ingest_paths(con, [three_runs])
    res = compute_stability(con, StabilityOptions(resamples=300))
    iv = res.intervals
    assert iv is not None and iv.n_queries == 3
    s = res.summary
    for key, value in (
        ("mean_j_doc", s.mean_j_doc),
        ("mean_j_span", s.mean_j_span),
        ("collapse_rate", s.collapse_rate),
        ("flip_rate_doc", s.flip_rate["doc"]),
        ("flip_rate_span", s.flip_rate["span"]),
    ):
        e = iv.summary[key]
        assert e.value == pytest.approx(value) and e.lo <= value <= e.hi, key
    for p in res.pairs.itertuples():
        e = iv.pair(p.run_a, p.run_b, p.level, "j_avg")
        assert e is not None and e.value == pytest.approx(p.j_avg) and e.lo <= p.j_avg <= e.hi
    again = compute_stability(con, StabilityOptions(resamples=300)).intervals
    assert again is not None and again.summary == iv.summary
    # null transitions per cell: AB q3, AC q2, BC q2, BC q3 → 4 of 9 doc cells
    assert iv.summary["null_transition_rate"].value == pytest.approx(4 / 9)
    # the gap ratio: the two means' ratio, and in each resample the ratio of that resample's means
    g, d, sp = iv.summary["gap_ratio"], iv.summary["mean_j_doc"], iv.summary["mean_j_span"]
    assert g.value == pytest.approx(d.value / sp.value) == pytest.approx(s.gap_ratio)
    assert g.lo <= g.value <= g.hi and g.n == sp.n
    js = json.loads(json.dumps(res.to_json()))["intervals"]
    assert js["summary"]["mean_j_doc"]["ci"] == [iv.summary["mean_j_doc"].lo, iv.summary["mean_j_doc"].hi]
    assert compute_stability(con, StabilityOptions()).intervals is None  # resamples=0: none


def test_a_pairs_interval_is_found_in_either_orientation_and_follows_its_frame():
    import pandas as pd

    from ragaudit_core.stability.uncertainty import StabilityIntervals

    rows = {"level": ["doc", "doc"], "run_a": ["a", "a"], "run_b": ["b", "b"], "metric": ["j_avg", "j_avg"]}
    iv = StabilityIntervals(pairs=pd.DataFrame({**rows, "value": [0.5, 0.9], "lo": [0.25, 0.8], "hi": [0.75, 1.0]}))
    iv.n_queries = 8
    assert iv.pair("b", "a", "doc", "j_avg") == iv.pair("a", "b", "doc", "j_avg")  # the first row: 0.5
    assert (iv.pair("a", "b", "doc", "j_avg").lo, iv.pair("a", "b", "doc", "j_avg").n) == (0.25, 8)
    assert iv.pair("a", "b", "span", "j_avg") is None and iv.pair("a", "c", "doc", "j_avg") is None
    iv.pairs = pd.DataFrame({k: v[:1] for k, v in rows.items()} | {"value": [0.1], "lo": [0.0], "hi": [0.2]})
    assert iv.pair("a", "b", "doc", "j_avg").value == 0.1  # a new frame is indexed again
    assert StabilityIntervals().pair("a", "b", "doc", "j_avg") is None


def test_a_baseline_orients_null_loss_whatever_the_run_names(con, tmp_path):
    """The baseline found d1 for q2 and the candidate nothing: null loss, from the baseline's side —
    also when the candidate's name sorts first ('a_cand' < 'base'), which made it a null gain."""
    write_jsonl(
        tmp_path / "r.jsonl",
        [
            {"run_id": "base", "query_id": "q1", "evidence": ["d1"]},
            {"run_id": "base", "query_id": "q2", "evidence": ["d1"]},
            {"run_id": "a_cand", "query_id": "q1", "evidence": ["d1"]},
            {"run_id": "a_cand", "query_id": "q2", "evidence": []},
        ],
    )
    ingest_paths(con, [tmp_path / "r.jsonl"])
    res = compute_stability(con, StabilityOptions(baseline="base"))
    (row,) = [r for r in res.pairs.itertuples() if r.level == "doc"]
    assert (row.run_a, row.run_b) == ("base", "a_cand")
    assert (row.null_loss, row.null_gain) == (pytest.approx(0.5), 0.0)


def test_the_gap_ratios_interval_is_of_the_gap_ratio_itself(con, tmp_path):
    """A and B carry texts, C bare ids: the gap ratio takes J_doc over the pair compared at span level
    (A–B: 3/3 = 1) over J_span (0 + 1 + 1)/3 = 2/3 → 1.5; its interval took J_doc over every doc pair
    (3·1 + 6·0)/9 and was [0.333, 1.000], not containing 1.5."""
    a = [ev("d1", "s1")], [ev("d1", "s1"), ev("d2", "s2")], [ev("d3", "s3")]
    b = [ev("d1", "s1x")], [ev("d1", "s1"), ev("d2", "s2")], [ev("d3", "s3")]
    c = ["d5"], ["d6"], ["d7"]
    recs = [
        {"run_id": run, "query_id": f"q{i + 1}", "evidence": list(evidence[i])}
        for run, evidence in (("A", a), ("B", b), ("C", c))
        for i in range(3)
    ]
    write_jsonl(tmp_path / "r.jsonl", recs)
    ingest_paths(con, [tmp_path / "r.jsonl"])
    res = compute_stability(con, StabilityOptions(resamples=200))
    gap = res.intervals.summary["gap_ratio"]
    assert res.summary.gap_ratio == pytest.approx(1.5) and gap.value == pytest.approx(1.5)
    assert gap.lo <= 1.5 <= gap.hi
    assert "mean_j_doc (pairs compared at span level)" not in res.intervals.summary

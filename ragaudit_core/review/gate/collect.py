"""The gate's inputs computed from an ingested database: pair metrics with their intervals,
citation fidelity, attribution means and ranking quality of the baseline and the candidate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from ragaudit_core.attribution.uncertainty import figure_intervals, paired_change
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.intervals import Estimate
from ragaudit_core.review.gate.evaluate import GateInputs, Verdict, evaluate
from ragaudit_core.review.gate.rules import OVERLAP_METRICS, GatePolicy, Rule, quality_cutoffs
from ragaudit_core.stability.compare import PAIR_METRIC_LABELS, CompareResult

__all__ = ["collect", "review"]


def collect(
    con: duckdb.DuckDBPyConnection,
    baseline: str,
    candidate: str,
    *,
    tau: float = FLIP_THRESHOLD,
    comparison: CompareResult | None = None,
    cutoffs: Sequence[int] = (),
    docid_map: dict[str, str] | None = None,
) -> GateInputs:
    """The metric values :func:`evaluate` needs, computed from an ingested database.

    Pair metrics come from :func:`compare.compare_runs` (the compare page's numbers,
    over the queries both runs logged, with their bootstrap intervals); run metrics from
    :func:`fidelity.fidelity_runs` (runs with provenance logs), from stored attributions
    (condition ``original``, mean over the queries explained in *both* runs when both have any, so
    a relative rule compares like with like; over all of a run's explained queries otherwise) and
    from relevance labels (ranking quality, with intervals and the paired change's interval, at the
    default cut-offs and at ``cutoffs``: those the rules name, :func:`~.rules.quality_cutoffs`).
    ``docid_map`` (raw → canonical document ids) applies to the pair's evidence and the labels.
    """
    from ragaudit_core.fidelity.score import provenance_runs
    from ragaudit_core.stability.compare import compare_runs
    from ragaudit_core.stability.metrics import NoSharedQueries, StabilityError, list_runs, span_capable_runs

    evidence_runs = set(list_runs(con))
    have_prov = set(provenance_runs(con))
    known = sorted(evidence_runs | have_prov)
    for r in (baseline, candidate):
        if r not in known:
            raise StabilityError(f"run {r!r} not found; runs are: {', '.join(map(repr, known))}")
    pair: dict[tuple[str, str], float] = {}
    cmp = None
    if not {baseline, candidate} <= evidence_runs:
        pass  # provenance-only run(s): no evidence lists to compare, pair rules are not applicable
    elif baseline == candidate:
        # A run against itself: every J is 1 (both-empty counts as 1 too), so nothing flips,
        # collapses, or changes null state; span level where the run carries spans.
        levels = ["doc"] + (["span"] if span_capable_runs(con, [baseline]) else [])
        for level in levels:
            pair |= {
                ("j_avg", level): 1.0,
                ("flip_rate", level): float(tau > 1.0),
                ("null_loss", level): 0.0,
                ("null_gain", level): 0.0,
            }
        if "span" in levels:
            pair[("collapse_rate", "span")] = 0.0
    else:
        try:
            cmp = (
                comparison
                if comparison is not None
                else compare_runs(con, baseline, candidate, tau=tau, docid_map=docid_map)
            )
        except NoSharedQueries:  # nothing to compare: the pair rules are not applicable, the verdict says why
            cmp = None
    pair_ci: dict[tuple[str, str], Estimate] = {}
    if cmp is not None:
        for metric in PAIR_METRIC_LABELS:
            if metric == "collapse_rate" and cmp.summary.n_collapsed is None:
                continue  # collapse is defined on spans only
            for level in ("doc", "span"):
                v = cmp.pair_value(metric, level)
                if v is not None:
                    pair[(metric, level)] = v
                    e = cmp.intervals.pair(baseline, candidate, level, metric) if cmp.intervals else None
                    if e is not None:
                        pair_ci[(metric, level)] = e
    inputs = GateInputs(baseline, candidate, pair, {baseline: {}, candidate: {}}, pair_ci=pair_ci)
    if cmp is not None:
        _passage_hash_ids(con, inputs)
    if not {baseline, candidate} <= evidence_runs:
        inputs.pair_note = (
            f"no evidence logs for {' and '.join(sorted({baseline, candidate} - evidence_runs))} (provenance only)"
        )
    elif cmp is None and baseline != candidate:
        inputs.pair_note = "the runs share no query"
    _fidelity(con, inputs, [r for r in (baseline, candidate) if r in have_prov])
    for run, vals in _attribution_means(con, baseline, candidate).items():
        counts = vals.pop("n_counts")  # the explained queries behind each attribution figure
        inputs.run_ci.setdefault(run, {}).update(vals.pop("ci"))
        inputs.delta_ci.update(vals.pop("delta", {}))
        inputs.runs[run].update(vals)
        inputs.run_n.setdefault(run, {}).update(counts)
    _quality(con, inputs, [r for r in (baseline, candidate) if r in evidence_runs], cutoffs, docid_map)
    return inputs


def _passage_hash_ids(con: duckdb.DuckDBPyConnection, inputs: GateInputs) -> None:
    """Leave out the figures that read Jaccard where document ids are passage hashes (a run that logged
    none: :func:`catalog.text_id_runs`): between two such runs the document level is the span level
    again; beside a run with ids, J is 0 at both levels by how they were logged."""
    from ragaudit_core.logs.catalog import text_id_runs

    b, c = inputs.baseline, inputs.candidate
    hashed = sorted({b, c} & set(text_id_runs(con)))
    if not hashed:
        return
    if len(hashed) == 2:
        levels = ["doc"]
        note = (
            f"{hashed[0]!r} and {hashed[1]!r} logged no document ids (theirs are their passages' text hashes), so "
            "the document level is the span level again: the span rules judge it"
        )
    else:
        other = c if hashed[0] == b else b
        levels = ["doc", "span"]
        note = (
            f"{hashed[0]!r} logged no document ids and {other!r} did: they share no document and no span by how "
            f"they were logged, not by what they retrieved (load {hashed[0]!r} with its document ids)"
        )
    for key in [k for k in inputs.pair if k[0] in OVERLAP_METRICS and k[1] in levels]:
        inputs.pair.pop(key)
        inputs.pair_ci.pop(key, None)
    inputs.level_notes = dict.fromkeys(levels, note)


def _fidelity(con: duckdb.DuckDBPyConnection, inputs: GateInputs, runs: list[str]) -> None:
    """CFS figures (mean, median, p95 as the fidelity rules read it, and the tail reading the
    fidelity page recommends: the score 95 % of queries reach) with their intervals; stage survival,
    and its change with the change's paired interval when both runs have provenance; parse failures."""
    from ragaudit_core.fidelity.score import fidelity_runs
    from ragaudit_core.fidelity.survival_change import stage_survival_change

    fids = fidelity_runs(con, runs)
    inputs.have["fidelity"] = set(fids)
    b, c = inputs.baseline, inputs.candidate
    if b != c and b in fids and c in fids:
        for stage, e in stage_survival_change(fids[b].queries, fids[c].queries).items():
            inputs.delta_ci[("stage_survival", stage)] = e
    for run, fid in fids.items():
        s = fid.summary
        m, ci = inputs.runs[run], inputs.run_ci.setdefault(run, {})
        tail_key = "cfs_p95" if s.get("percentile_convention") == "tail" else "cfs_p95_other"
        for key, src in (
            ("cfs_p95", "cfs_p95"),
            ("cfs_p95_tail", tail_key),
            ("cfs_median", "cfs_p50"),
            ("cfs_mean", "cfs_mean"),
        ):
            value = s.get(src)
            m[key] = value
            lo_hi = s.get("intervals", {}).get(src)
            if value is not None and lo_hi and lo_hi[0] is not None:
                ci[key] = Estimate(float(value), lo_hi[0], lo_hi[1], int(s.get("n_with_citations", 0)))
        m["parse_failure_rate"] = s["parse_failure_rate"]
        for stage, v in s["stage_survival"].items():
            m[("stage_survival", stage)] = v
        counts = inputs.run_n.setdefault(run, {})  # the queries behind each figure, for min_queries
        counts.update(dict.fromkeys(("cfs_p95", "cfs_p95_tail", "cfs_median", "cfs_mean"), int(s["n_with_citations"])))
        counts["parse_failure_rate"] = int(s["n_with_citation_strings"])  # records with citation-like strings
        # survival is conditional: a stage's rate rests on the queries that reached it with a source
        counts.update({("stage_survival", stage): int(n) for stage, n in s["stage_reached"].items()})


def _quality(
    con: duckdb.DuckDBPyConnection,
    inputs: GateInputs,
    runs: list[str],
    cutoffs: Sequence[int],
    docid_map: dict[str, str] | None = None,
) -> None:
    """Ranking quality of each run (mean over its labelled queries, with intervals, and the queries
    behind it for ``min_queries``) and the paired change candidate − baseline over the labelled
    queries both runs have — kept with 0 queries when they share none, so that a relative rule is
    not decided on two means over different queries."""
    from ragaudit_core.logs.qrels import unlabelled_runs_note
    from ragaudit_core.quality import DEFAULT_CUTOFFS
    from ragaudit_core.quality.summary import compute_quality

    if not runs or not con.execute("SELECT count(*) FROM qrels").fetchall()[0][0]:
        return
    b, c = inputs.baseline, inputs.candidate
    runs = list(dict.fromkeys(runs))  # a run against itself: once
    pairs = [(b, c)] if b != c and {b, c} <= set(runs) else []
    q = compute_quality(con, runs, pairs=pairs, cutoffs=sorted({*DEFAULT_CUTOFFS, *cutoffs}), docid_map=docid_map)
    if not all(rq.n_queries for rq in q.runs):
        inputs.quality_note = unlabelled_runs_note(con, runs)
    for rq in q.runs:
        if not rq.n_queries:
            continue
        for metric, e in rq.metrics.items():
            if e.n:
                inputs.runs[rq.run_id][metric] = e.value
                inputs.run_ci.setdefault(rq.run_id, {})[metric] = e
                inputs.run_n.setdefault(rq.run_id, {})[metric] = e.n
    for metric, ch in q.pairs.get((b, c), {}).items():
        nan = float("nan")
        inputs.delta_ci[metric] = Estimate(ch.delta, ch.lo, ch.hi, ch.n) if ch.n else Estimate(nan, nan, nan, 0)


def _attribution_means(con: duckdb.DuckDBPyConnection, baseline: str, candidate: str) -> dict[str, dict]:
    """Each run's attribution figures over the queries both runs explained (or each run's own, when
    they share none): the failure rates and WARG(p) means, ``n_counts`` (the queries behind each),
    ``ci`` (each figure's 95 % interval, :func:`.attribution.uncertainty.figure_intervals`) and, on
    the candidate, ``delta`` (the paired change over the shared queries,
    :func:`.attribution.uncertainty.paired_change`)."""
    import json

    cur = con.cursor()
    try:
        if not cur.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'attributions'"
        ).fetchall()[0][0]:
            return {}
        rows = cur.execute(
            """SELECT run_id, query_id, wasted_retrieval, noise_distraction, payload FROM attributions
               WHERE condition = 'original' AND list_contains(?, run_id) ORDER BY created_at, rowid""",
            [[baseline, candidate]],
        ).fetchall()
    finally:
        cur.close()
    by_run: dict[str, dict[str, dict]] = {}
    for run, qid, wr, nd, payload in rows:  # the latest result per query wins
        warg = {f"warg_{float(p)}": v for p, v in json.loads(payload)["warg"].items()}
        by_run.setdefault(run, {})[qid] = {"wasted_retrieval": bool(wr), "noise_distraction": bool(nd), **warg}
    if baseline in by_run and candidate in by_run:
        shared = set(by_run[baseline]) & set(by_run[candidate])
        if shared:
            by_run = {r: {q: v for q, v in d.items() if q in shared} for r, d in by_run.items()}
    out = {}
    for run, d in by_run.items():
        frame = pd.DataFrame([{"condition": "original", **v} for v in d.values()])
        m: dict[str | tuple[str, float], Any] = {"n_explained": len(d)}
        counts: dict[str | tuple[str, float], int] = {}
        ci: dict[str | tuple[str, float], Estimate] = {}
        for r in figure_intervals(frame).itertuples():
            key = ("warg", float(r.metric[5:])) if r.metric.startswith("warg_") else r.metric
            m[key], counts[key] = r.value, int(r.n)  # the payloads that carry the figure
            ci[key] = Estimate(r.value, r.lo, r.hi, int(r.n))
        m["n_counts"], m["ci"] = counts, ci
        out[run] = m
    if baseline != candidate and baseline in by_run and candidate in by_run:
        metrics = sorted({k for d in by_run.values() for v in d.values() for k in v})
        out[candidate]["delta"] = {
            (("warg", float(k[5:])) if k.startswith("warg_") else k): e
            for k, e in paired_change(by_run[baseline], by_run[candidate], metrics).items()
        }
    return out


def review(
    con: duckdb.DuckDBPyConnection,
    rules: GatePolicy | list[Rule],
    baseline: str,
    candidate: str,
    *,
    tau: float = FLIP_THRESHOLD,
    docid_map: dict[str, str] | None = None,
) -> Verdict:
    """:func:`collect` then :func:`evaluate`: the verdict for a pair of ingested runs (document ids
    through ``docid_map`` when given)."""
    inputs = collect(con, baseline, candidate, tau=tau, cutoffs=quality_cutoffs(rules), docid_map=docid_map)
    return evaluate(rules, inputs)

"""Every number and figure the report shows, gathered from an ingested database.

The report asks the same functions the dashboard pages and the CLI call — stability,
compare, probe, fidelity, attributions, gate — and builds the same Plotly figures as the
dashboard (:mod:`ragaudit_core.review.charts`). One function per step; a step whose data
is absent records why in :attr:`ReportData.omitted` (the cover lists it).

Every step runs on its own: a step that raises is recorded in :attr:`ReportData.failed` with
its reason (the cover names it) and the other steps still run — nothing a log holds stops the
report. Only the reviewer's own mistakes (a run that does not exist, half a pair) raise
:class:`ReportError`. A pair that shares no query is skipped with a sentence, not an error.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd
import plotly.graph_objects as go

from ragaudit_core import __version__
from ragaudit_core.attribution.storage import batch_tables
from ragaudit_core.defaults import FLIP_THRESHOLD
from ragaudit_core.errors import RagAuditError
from ragaudit_core.fidelity import canary, fidelity_runs, provenance_runs
from ragaudit_core.fidelity.judging import judge_summary, verdict_table
from ragaudit_core.fidelity.survival_change import stage_survival_intervals
from ragaudit_core.intervals import DEFAULT_RESAMPLES
from ragaudit_core.logs import catalog, store
from ragaudit_core.logs.selection import comparable_runs, natural_key, natural_sorted, runs_sharing_queries
from ragaudit_core.review import charts
from ragaudit_core.review.gate import DEFAULT_RULES, GatePolicy, Rule, Verdict, collect, evaluate, quality_cutoffs
from ragaudit_core.review.logtext import excerpt
from ragaudit_core.review.report.quality_section import gather_quality
from ragaudit_core.stability.cache import default_options, stability_cached
from ragaudit_core.stability.compare import CompareResult, compare_runs
from ragaudit_core.stability.drilldown import evidence_side_by_side
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.metrics import (
    NoSharedQueries,
    StabilityError,
    StabilityOptions,
    list_runs,
)
from ragaudit_core.stability.mixed_ids import split_mixed
from ragaudit_core.stability.probe import DEFAULT_SIMILARITY_MODEL, has_answers, lookup_similarities, probe_pair
from ragaudit_core.wording import counted

__all__ = ["ReportData", "ReportError", "ReportOptions", "gather"]


class ReportError(RagAuditError, ValueError):
    """The report cannot be built (message says why)."""


@dataclass
class ReportOptions:
    baseline: str | None = None
    candidate: str | None = None
    rules: GatePolicy | list[Rule] | None = None  # None: the default preset
    rules_source: str = "default preset"
    tau: float = FLIP_THRESHOLD
    worst_queries: int = 5
    entries_per_side: int = 5
    excerpt_chars: int = 240
    probe: bool = True  # compute answer similarity (SBERT) when it is not stored
    embedder: Any = None  # loaded model or zero-argument loader; default packaged MiniLM
    db_label: str = ""
    runs: list[str] | None = None  # runs the stability section compares; None: the default selection
    docid_map: dict[str, str] = field(default_factory=dict)  # raw → canonical document ids, every figure

    @property
    def pair(self) -> tuple[str, str] | None:
        if self.baseline is None or self.candidate is None:
            return None
        return (self.baseline, self.candidate)


@dataclass
class WorstQuery:
    """One of the least stable queries, with both runs' first evidence entries."""

    query_id: str
    query: str | None
    run_a: str
    run_b: str
    j_doc: float
    j_span: float | None
    a: list[dict]  # rank, doc_id, status, same_doc_other_span, same_text_other_id, text (an excerpt)
    b: list[dict]
    n_a: int
    n_b: int


@dataclass
class ReportData:
    generated_at: str
    version: str
    db_label: str
    data_version: str
    runs: pd.DataFrame
    prov_runs: pd.DataFrame
    files: pd.DataFrame
    n_queries: int
    n_rejected: int  # lines (the home page's "Rejected lines")
    n_refused: int = 0  # files refused as a whole (a quarantine row without line), counted apart as there
    tau: float = FLIP_THRESHOLD
    omitted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # parts that raised: "what (Error: message)"
    verdict: Verdict | None = None
    rules_source: str = ""
    stability: Any = None  # StabilityResult
    stability_scope: str = ""  # which runs the stability section compares, and what it left out
    effects: pd.DataFrame | None = None
    worst: list[WorstQuery] = field(default_factory=list)
    worst_scope: str = ""
    worst_ties: str = ""  # how many queries tie with the shown ones, and how those were picked
    probes: list = field(default_factory=list)  # ProbeResult
    fidelity: dict = field(default_factory=dict)  # run → RunFidelity
    stage_intervals: dict = field(default_factory=dict)  # run → stage → Estimate (conditional survival)
    canary: dict | None = None
    judge: dict = field(default_factory=dict)  # run → judge_summary (Pattern 4), runs judged only
    attributions: dict = field(default_factory=dict)  # run → {"failure": df, "warg": df}
    quality: Any = None  # QualityResult of the compared runs (and the reviewed pair), with labels
    jitter: Any = None  # JitterCost of the reviewed pair
    labels: str = ""  # the relevance labels behind ranking quality, by source file
    figures: dict[str, go.Figure] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


class _Clock:
    """Seconds per step, into ``ReportData.timings``."""

    def __init__(self, timings: dict[str, float]) -> None:
        self.timings, self.t = timings, time.perf_counter()

    def tick(self, key: str) -> None:
        t = time.perf_counter()
        self.timings[key] = round(t - self.t, 3)
        self.t = t


def gather(
    con: duckdb.DuckDBPyConnection, opts: ReportOptions = ReportOptions(), progress: Callable[[str], None] | None = None
) -> ReportData:
    """Every number and figure the report shows, from an ingested database."""
    say = progress or (lambda _m: None)
    timings: dict[str, float] = {}
    clock = _Clock(timings)
    data = _catalog(con, opts, timings)
    clock.tick("catalog")
    evidence_runs = list_runs(con)
    cmp = None
    if opts.pair:
        say("verdict")
        cmp = _isolated(data, "verdict", lambda: _verdict(con, data, opts, evidence_runs))
        clock.tick("verdict")
    else:
        data.omitted.append("verdict (no baseline and candidate were chosen)")
    for name, key, step in (
        ("stability", "stability", lambda: _stability(con, data, opts, evidence_runs)),
        ("worst queries", "worst_queries", lambda: _worst_queries(con, data, opts, cmp)),
        ("answer probe", "probe", lambda: _probes(con, data, opts)),
        ("citation fidelity", "fidelity", lambda: _fidelity(con, data, opts)),
        ("attributions", "attributions", lambda: _attributions(con, data, evidence_runs)),
        ("ranking quality", "quality", lambda: gather_quality(con, data, cmp, opts.docid_map)),
    ):
        say(name)
        _isolated(data, name, step)
        clock.tick(key)
    return data


def _isolated(data: ReportData, name: str, step: Callable[[], Any]) -> Any:
    """Run one step; if it raises, name it in ``data.failed`` with its reason and go on.

    A :class:`ReportError` (the reviewer asked for something that does not exist) still raises."""
    try:
        return step()
    except ReportError:
        raise
    except Exception as e:  # noqa: BLE001 - one failing part must not stop the others
        data.failed.append(f"{name} ({failure_reason(e)})")
        return None


def failure_reason(e: BaseException, limit: int = 300) -> str:
    """``Type: message`` on one line, cut to ``limit`` characters (for the cover)."""
    msg = " ".join(str(e).split())
    text = f"{type(e).__name__}: {msg}" if msg else type(e).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _catalog(con: duckdb.DuckDBPyConnection, opts: ReportOptions, timings: dict[str, float]) -> ReportData:
    runs = catalog.runs_table(con)
    runs = runs.sort_values("run_id", key=lambda ids: ids.map(natural_key), kind="stable", ignore_index=True)
    prov_table = catalog.provenance_runs_table(con)
    if runs.empty and prov_table.empty:
        raise ReportError("the database holds no runs; ingest logs first")
    known = catalog.all_run_ids(con)
    for r in (opts.baseline, opts.candidate):
        if r is not None and r not in known:
            raise ReportError(f"run {r!r} not found; runs are: {', '.join(map(repr, known))}")
    if (opts.baseline is None) != (opts.candidate is None):
        raise ReportError("give both a baseline and a candidate run, or neither")
    return ReportData(
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        version=__version__,
        db_label=opts.db_label,
        data_version=store.data_version(con),
        runs=runs,
        prov_runs=prov_table,
        files=catalog.files_table(con),
        n_queries=catalog.distinct_query_count(con),
        n_rejected=(info := catalog.overview(con))["rejected"] - info["refused"],
        n_refused=info["refused"],
        tau=opts.tau,
        timings=timings,
    )


def _verdict(
    con: duckdb.DuckDBPyConnection, data: ReportData, opts: ReportOptions, evidence_runs: list[str]
) -> CompareResult | None:
    """The gate's verdict on the pair; returns the pair's comparison (reused by the worst queries)."""
    pair = opts.pair
    if pair is None:
        return None
    rules = opts.rules if opts.rules is not None else DEFAULT_RULES
    try:
        same = pair[0] == pair[1] or not set(pair) <= set(evidence_runs)
        cmp = None if same else compare_runs(con, *pair, tau=opts.tau, docid_map=opts.docid_map)
    except NoSharedQueries:
        data.omitted.append(
            f"verdict ({pair[0]} and {pair[1]} share no query, so their evidence cannot be compared; "
            "choose a pair that answered the same queries)"
        )
        return None
    inputs = collect(con, *pair, tau=opts.tau, comparison=cmp, cutoffs=quality_cutoffs(rules), docid_map=opts.docid_map)
    data.verdict = evaluate(rules, inputs)
    data.rules_source = opts.rules_source
    return cmp


def _stability(con: duckdb.DuckDBPyConnection, data: ReportData, opts: ReportOptions, evidence_runs: list[str]) -> None:
    if len(evidence_runs) < 2:
        data.omitted.append(
            f"evidence stability (it compares the evidence logs of two or more runs; {len(evidence_runs)} loaded)"
        )
        return
    if opts.runs is not None:
        unknown = [r for r in opts.runs if r not in evidence_runs]
        if unknown:
            which = f"run {unknown[0]!r} has" if len(unknown) == 1 else f"runs {', '.join(map(repr, unknown))} have"
            raise ReportError(
                f"{which} no evidence logs; runs with evidence: " + ", ".join(map(repr, natural_sorted(evidence_runs)))
            )
        sopts = StabilityOptions(  # with intervals, as the default selection and the page's picked runs
            runs=natural_sorted(opts.runs), flip_threshold=opts.tau, allow_missing=True, resamples=DEFAULT_RESAMPLES
        )
        data.stability_scope = f"Runs compared (chosen by the reviewer): {', '.join(natural_sorted(opts.runs))}."
    else:
        sel = comparable_runs(con)
        sopts = default_options(con, opts.tau)
        # the note's "pick" in the report's words (runs left out as sharing no query, narrowing, or disagreeing)
        note = sel.note or ""
        note = re.sub(r"; pick runs to compare (it|them) instead", r"; name runs to compare \1 instead (--runs)", note)
        note = re.sub(r"; pick (it|them)\b", r"; name \1 with --runs", note)
        data.stability_scope = f"Runs compared: all {len(sel.runs)} with evidence logs." if not sel.partial else note
    if opts.docid_map:
        sopts = dataclasses.replace(sopts, docid_map=opts.docid_map)
    try:
        res = stability_cached(con, sopts)
    except StabilityError as e:
        data.omitted.append(f"evidence stability ({e})")
        return
    data.stability = res
    data.effects = effects_by_change(res.pairs, res.intervals)
    if res.summary.span.available:  # without spans it would be an empty plot with a legend
        data.figures["stability_scatter"] = _scatter(
            res.pairs, res.summary.gap_ratio, (min(opts.pair), max(opts.pair)) if opts.pair else None
        )
    data.figures["jmin_histogram"] = charts.jmin_histogram(res.queries)


def _scatter(pairs: pd.DataFrame, gap_ratio: float | None, pair: tuple[str, str] | None) -> go.Figure:
    """The dashboard's stability scatter, its ring around the pair named as the report's reader knows
    it: the reviewed pair (on the page it is the pair the user selected)."""
    fig = charts.stability_scatter(pairs, gap_ratio=gap_ratio, highlight=pair)
    return fig.update_traces(name="reviewed pair", selector=dict(name="selected"))


def _ties(j: pd.Series, shown: int, name: str, order: str) -> str:
    """When more queries share the last shown one's Jaccard (sorted ascending) than are shown, the
    sentence saying how many and how the shown ones among them were picked; else ""."""
    j = j.dropna().reset_index(drop=True)
    if shown <= 0 or len(j) <= shown:
        return ""
    last = float(j.iloc[shown - 1])
    tied = int(((j - last).abs() <= 1e-12).sum())
    shown_tied = int(((j.iloc[:shown] - last).abs() <= 1e-12).sum())
    if tied <= shown_tied:
        return ""
    name = name if name.startswith("J_") else name.replace("j_", "J_")
    are = "is" if shown_tied == 1 else "are"
    return f"{tied} queries are at {name} = {last:.3f}, of which {shown_tied} {are} shown: the first by {order}."


def _worst_queries(
    con: duckdb.DuckDBPyConnection, data: ReportData, opts: ReportOptions, cmp: CompareResult | None
) -> None:
    """The reviewed pair's least stable queries, else each query's worst pair (J_min). A reviewed
    pair whose runs' ids cannot be compared (one logged document ids, the other passage hashes) is
    at J = 0 on every query by how it was logged: its 'least stable' queries would be any five, so
    the worst pairs over every run are shown instead, saying why — among the pairs the stability
    section compares, which leave out every such pair (:mod:`ragaudit_core.stability.mixed_ids`)."""
    hashed = set(catalog.text_id_runs(con)) if cmp is not None else set()
    unlike = cmp is not None and len({cmp.baseline, cmp.candidate} & hashed) == 1
    if unlike:
        cmp = None
    if cmp is not None:
        a, b = cmp.baseline, cmp.candidate
        data.worst_scope = f"the reviewed pair, {a} (A) vs {b} (B)"
        picks = [
            (r.query_id, a, b, r.j_doc, None if pd.isna(r.j_span) else r.j_span)
            for r in cmp.queries.head(opts.worst_queries).itertuples()
        ]
        col = "j_span" if cmp.queries["j_span"].notna().any() else "j_doc"
        data.worst_ties = _ties(cmp.queries[col], len(picks), col, "J_doc, then by query id")
    elif data.stability is not None:
        q = data.stability.queries
        level = "span" if (q["level"] == "span").any() else "doc"
        q = q[q["level"] == level].sort_values(["j_min", "query_id"])
        data.worst_scope = f"every compared run pair: each query's worst pair at {level} level (J_min)"
        if unlike:
            data.worst_scope += (
                " — not the reviewed pair, whose runs share no document and no span by how they were logged "
                "(one logged document ids, the other its passages' text hashes)"
            )
        data.worst_ties = _ties(q["j_min"], opts.worst_queries, f"J_{level}", "query id")
        picks = [(r.query_id, r.run_a, r.run_b, None, None) for r in q.head(opts.worst_queries).itertuples()]
    else:
        picks = []
    pair_cells: dict[tuple[str, str], pd.DataFrame] = {}
    for qid, a, b, jd, js in picks:
        ea, eb = evidence_side_by_side(con, qid, a, b)
        if jd is None:  # J_min mode: this query's worst pair, computed once per pair
            if (a, b) not in pair_cells:
                pair_cells[(a, b)] = compare_runs(con, a, b, tau=opts.tau, docid_map=opts.docid_map).queries.set_index(
                    "query_id"
                )
            cells = pair_cells[(a, b)]
            jd = float(cells.loc[qid, "j_doc"])
            js = None if pd.isna(cells.loc[qid, "j_span"]) else float(cells.loc[qid, "j_span"])
        data.worst.append(
            WorstQuery(
                qid,
                _query_texts(con, qid, a, b, opts),
                a,
                b,
                jd,
                js,
                _entries(ea, opts),
                _entries(eb, opts),
                len(ea),
                len(eb),
            )
        )


def _query_texts(con: duckdb.DuckDBPyConnection, qid: str, a: str, b: str, opts: ReportOptions) -> str | None:
    """The query's text; when the two runs logged different texts under its id (ids that collide
    across logs), both, and a sentence saying so, rather than either one."""
    ta, tb = (_query_excerpt(catalog.query_text(con, qid, [r]), opts) for r in (a, b))
    if ta is None or tb is None or ta == tb:
        return ta or tb
    return f"The two runs logged different texts under this query id. A: {ta} B: {tb}"


def _query_excerpt(text: str | None, opts: ReportOptions) -> str | None:
    return None if text is None else excerpt(" ".join(text.split()), 3 * opts.excerpt_chars)


def _entries(frame: pd.DataFrame, opts: ReportOptions) -> list[dict]:
    out = []
    for r in frame.head(opts.entries_per_side).itertuples():
        text = r.text if isinstance(r.text, str) else ""
        text = excerpt(" ".join(text.split()), opts.excerpt_chars)  # a long text: its start and full length
        out.append(
            {
                "rank": int(r.position) + 1,
                "doc_id": r.doc_id,
                "status": r.status,
                "same_doc_other_span": bool(r.same_doc_other_span),
                "same_text_other_id": bool(r.same_text_other_id),
                "text": text,
            }
        )
    return out


def _probe_pairs(
    con: duckdb.DuckDBPyConnection, opts: ReportOptions
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
    """Every answered run that shares a query with one anchor (the reviewed baseline, else the
    sample's base run), against it; the reviewed pair first, shared queries or not (it is the one
    the report is about: when it shares none, the cover says so). A run sharing no query with the
    anchor is not a pair the report was asked about, so it is neither probed nor listed as left
    out. A pair whose ids cannot meet (one run logged document ids, the other passage hashes) is
    left out, and returned second to be named, unless it is the reviewed pair. None when fewer
    than two runs carry answers."""
    answered = catalog.answered_runs(con)
    if len(answered) < 2:
        return None
    pair = opts.pair
    anchor = pair[0] if pair and pair[0] in answered else catalog.preferred_run(answered)
    sharing = set(runs_sharing_queries(con, anchor))
    pairs = [(anchor, r) for r in answered if r != anchor and r in sharing]
    # a pair whose ids cannot meet has J_span 0 by how it was logged: not probed unless it is the reviewed one
    pairs, mixed = split_mixed(pairs, set(catalog.text_id_runs(con)))
    if pair and pair[0] != pair[1] and all(r in answered for r in pair):
        pairs = [pair, *(p for p in pairs if p != pair)]  # first, where the anchor's pairs listed it later
    return pairs, [p for p in mixed if p != pair]


def _probes(con: duckdb.DuckDBPyConnection, data: ReportData, opts: ReportOptions) -> None:
    probed = _probe_pairs(con, opts)
    if probed is None:
        data.omitted.append("answer probe (fewer than two runs carry answers)")
        return
    pairs, mixed = probed
    if mixed:
        data.omitted.append(
            "answer probe for " + _first_of([f"{a} vs {b}" for a, b in mixed]) + " (one run logged document ids, the "
            "other only passage hashes: their J_span would be 0 by how they were logged)"
        )
    loaded: list = []

    def encoder():
        if not loaded:
            e = opts.embedder
            if e is None:
                from ragaudit_core.models import load_embedder

                e = load_embedder
            loaded.append(e() if callable(e) and not hasattr(e, "encode") else e)
        return loaded[0]

    skipped: list[str] = []
    unshared: list[str] = []
    for a, b in pairs:
        # without the probe model: only pairs whose every similarity is stored
        if not opts.probe and (
            len(lookup_similarities(con, a, b, model=DEFAULT_SIMILARITY_MODEL)) < has_answers(con, a, b)
        ):
            skipped.append(f"{a} vs {b}")
            continue
        try:
            data.probes.append(probe_pair(con, a, b, encoder, tau=opts.tau))
        except NoSharedQueries:
            unshared.append(f"{a} vs {b}")
    if skipped:
        data.omitted.append(
            "answer probe for "
            + _first_of(skipped)
            + " (its answer similarities are not stored, and the report was asked not to compute them: --no-probe; "
            "run ragaudit probe, or the report without --no-probe)"
        )
    if unshared:
        data.omitted.append("answer probe for " + _first_of(unshared) + " (the runs share no query)")
    if data.probes:
        p0 = next((p for p in data.probes if (p.run_a, p.run_b) == opts.pair), data.probes[0])
        whose = "the reviewed pair" if opts.pair == (p0.run_a, p0.run_b) else "the first answered pair"
        data.figures["probe_scatter"] = charts.probe_scatter(
            p0.rows, tau=opts.tau, title=f"Answer similarity vs J_span, {whose}: {p0.run_a} vs {p0.run_b}"
        )


def _first_of(pairs: list[str], shown: int = 4) -> str:
    """``a vs b, c vs d`` — at most ``shown`` pairs, then how many more (a workspace of other
    tools' uploads leaves out a pair per upload)."""
    more = f" and {counted(len(pairs) - shown, 'more pair')}" if len(pairs) > shown else ""
    return ", ".join(pairs[:shown]) + more


def _fidelity(con: duckdb.DuckDBPyConnection, data: ReportData, opts: ReportOptions) -> None:
    prov = provenance_runs(con)
    if not prov:
        data.omitted.append("citation fidelity (no provenance logs)")
        return
    data.fidelity = fidelity_runs(con, prov)
    data.stage_intervals = {r: stage_survival_intervals(f.queries) for r, f in data.fidelity.items()}
    data.judge = {r: js for r in prov if (js := judge_summary(verdict_table(con, r)))["n_citations"]}
    summaries = {r: f.summary for r, f in data.fidelity.items()}
    data.figures["survival_funnel"] = charts.survival_funnel(summaries)
    data.figures["cfs_histogram"] = charts.cfs_histogram(
        {r: f.queries["cfs"].dropna().tolist() for r, f in data.fidelity.items()}, summaries=summaries, threshold=0.85
    )
    pair = opts.pair
    if pair and all(r in data.fidelity for r in pair) and pair[0] != pair[1]:
        data.canary = {
            "baseline": pair[0],
            "candidate": pair[1],
            **canary(data.fidelity[pair[0]].queries["cfs"].dropna(), data.fidelity[pair[1]].queries["cfs"].dropna()),
        }


def _attributions(con: duckdb.DuckDBPyConnection, data: ReportData, evidence_runs: list[str]) -> None:
    for run in evidence_runs:
        tables = batch_tables(con, run)
        if tables:
            data.attributions[run] = tables
    if not data.attributions:
        data.omitted.append("attributions (none stored; run `ragaudit attribute` or the Attributions page)")
        return
    means = {}
    for run, tables in data.attributions.items():
        for _, row in tables["warg"].iterrows():
            means[f"{run}, {row['condition']}"] = {
                c[5:]: row[c] for c in tables["warg"].columns if c.startswith("warg_") and pd.notna(row[c])
            }
    data.figures["warg_curves"] = charts.warg_curves(
        {}, run_means=means, title="Mean WARG(p) over each run's explained queries (seed 001, Table 3)"
    )

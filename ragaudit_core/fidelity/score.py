"""Citation fidelity (seed 002): extraction, verification, CFS, stage survival, alerts.

Definitions, as the seed gives them and as read here:

**Extraction** (Pattern 3). Citation strings are found in the generated text with
configurable regular expressions; defaults: ``[Source: <doc_id>, p. <n>]``,
``[Document <n>]`` / ``(Document <n>)`` and ``[<n>]`` (the last two name the n-th
context element, counted from 1). A *parse failure* is a bracketed fragment that looks
like a citation (``[Source …]``, ``[Document …]``, ``[Doc …]``, ``[Ref …]``) but matches
no pattern; the parse-failure rate is failures / (citations + failures).

**Verification** (Pattern 3, ``verify_citation``), one score and one label per citation:

* 1.0 ``exact_context_match`` — the cited (document, page) is a context element (a
  context element without a page matches on the document);
* 0.3 ``valid_doc_invalid_page_or_unretrieved`` — the document exists, the page is within
  it, but it is not in the context;
* 0.0 ``hallucinated_page_exceeds_document_bounds`` — the page is beyond the document;
* 0.0 ``hallucinated_document_id`` — no such document;
* 0.0 ``context_index_out_of_range`` / ``context_element_without_coordinates`` — an index
  citation naming no context element, or one whose coordinates were lost upstream.

**CFS**, per query: the mean verification score of its citations (Pattern 3,
``compute_query_cfs``); undefined (None, "no_citations_found") without citations.

**Stage survival and the product form** (seed equation
``CFS = ∏ P(coordinate_correct_stage | coordinate_correct_stage−1)``), per query with
ground truth, for the seed's five factors:

* chunking — every chunk node carries origin coordinates (document and offsets or page);
* retrieval — a retrieved node (stage 2) resolves to a ground-truth document;
* reranking — a reranked node (stage 3) still resolves to one (its own coordinates or
  a ``derived_from`` chain to a node that has them);
* compression — a context element (stage 4) resolves to one;
* generation — an emitted citation resolves to one.

A stage the record has no node for is skipped (a pipeline without a reranker is not
penalised). After the first failing stage the later ones are not evaluated; the
product is 1 when every evaluated stage survives, else 0, and the first failing stage
localises the loss. A run's survival rate of stage s is the conditional rate
``#(survived s) / #(survived s−1)`` over queries with ground truth; the funnel's share after
stage s is the share of those queries not lost at s or before (a stage a query's pipeline skips
loses nothing), which the rates multiply to when every query reaches the same stages. Generation
survives when an emitted citation resolves to the ground-truth origin: verified against the
context (score 1) and naming a ground-truth document.
Stage 6 (post-processing) is judged
by the parse-failure rate.

**Percentiles**: p50/p95/p99 are the 50th/95th/99th percentiles of per-query CFS
(linear interpolation), read literally as the seed writes them. ``percentile="tail"``
reads "p95" as the value 95 % of queries reach or exceed (the 5th percentile) instead: the largest
score that at least 95 % of the queries reach, a value of the data (19 × 1.0 and 1 × 0.0 read 1.0;
9 × 1.0 and 1 × 0.0 read 0.0, where linear interpolation read 0.45, which only 90 % reach). The
median is the median in both readings.

**Alerts** (seed's checklist): p95 CFS < 0.85; any stage survival < 0.90; parse-failure
rate > 0.5 % — thresholds configurable (:class:`FidelityRules`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ragaudit_core.fidelity.citations import DEFAULT_PATTERNS, CitationPattern, extract_citations, verify_citation
from ragaudit_core.fidelity.frames import frames_by_key
from ragaudit_core.fidelity.graph import (
    FIDELITY_STAGES,
    QueryGraph,
    failure_modes,
    has_origin,
    iter_graph_chunks,
    provenance_runs,
)
from ragaudit_core.fidelity.graph import load_graphs as load_graphs  # re-exported: callers import it from here
from ragaudit_core.intervals import Estimate
from ragaudit_core.logs.identity import CanonOptions

__all__ = [
    "SURVIVAL_LABELS",
    "FidelityRules",
    "QueryFidelity",
    "RunFidelity",
    "canary",
    "compute_query",
    "fidelity_runs",
    "summarise_run",
    "summarise_runs",
    "survival_table",
    "tail_comment",
]


@dataclass
class QueryFidelity:
    run_id: str
    query_id: str
    cfs: float | None
    diagnostic: str | None
    citations: list[dict]
    parse_failures: list[str]
    survival: dict[int, int | None]  # stage -> 1 / 0 / None (not evaluated)
    cfs_product: int | None
    first_failed_stage: int | None
    findings: list[dict]


def _resolves(row: dict, ground_truth: list[dict]) -> bool:
    """Seed 002's generation survival for one emitted citation: it "resolves to the correct
    origin" — verified against the context (score 1: not a made-up page, not a page that was never
    retrieved, not an index past the context) and naming a ground-truth document. The page is
    judged where the earlier stages judge it: a retrieved chunk of the right document on another
    page than the ground truth's is retrieval's miss, not the citation's."""
    return row["score"] >= 1.0 and any(t["doc_id"] == row["doc_id"] for t in ground_truth)


def compute_query(
    g: QueryGraph, patterns: Sequence[CitationPattern] = DEFAULT_PATTERNS, canon: CanonOptions = CanonOptions()
) -> QueryFidelity:
    """Extraction, verification, CFS, stage survival and failure modes for one record."""
    cits, failures = extract_citations(g.generated_text, patterns)
    rows = []
    for c in cits:
        score, diag, doc, page = verify_citation(c, g, canon)
        rows.append(
            {
                "citation": c.string,
                "pattern": c.pattern,
                "score": score,
                "diagnostic": diag,
                "doc_id": doc,
                "page": page,
                "start": c.start,
                "end": c.end,
            }
        )
    cfs = float(np.mean([r["score"] for r in rows])) if rows else None
    diagnostic = None if rows else "no_citations_found"

    gt = {t["doc_id"] for t in g.ground_truth}
    survival: dict[int, int | None] = dict.fromkeys(FIDELITY_STAGES)
    product = first_failed = None
    if gt:
        present = {n.stage for n in g.nodes.values()}
        checks = {
            1: lambda: all(has_origin(n) for n in g.nodes.values() if n.artifact_type == "chunk"),
            2: lambda: any(g.resolve(n.node_id)[0] in gt for n in g.nodes.values() if n.stage == 2),
            3: lambda: any(g.resolve(n.node_id)[0] in gt for n in g.nodes.values() if n.stage == 3),
            4: lambda: any(g.resolve(n.node_id)[0] in gt for n in g.nodes.values() if n.stage == 4),
            5: lambda: any(_resolves(r, g.ground_truth) for r in rows),
        }
        product = 1
        for s in FIDELITY_STAGES:
            if s != 5 and s not in present:
                continue  # the pipeline has no such stage: nothing to lose there
            ok = int(bool(checks[s]()))
            survival[s] = ok
            if not ok:
                product, first_failed = 0, s
                break
    return QueryFidelity(
        g.run_id, g.query_id, cfs, diagnostic, rows, failures, survival, product, first_failed, failure_modes(g)
    )


# --------------------------------------------------------------------------- per run


GATE_KEYS = frozenset({"preset", "rule", "min_applicable", "require"})
"""A gate rules file's top-level keys (``ragaudit gate --rules``): one file may hold both, the gate's
keys and a ``[fidelity]`` table; without the table, the fidelity rules are its other top-level keys."""


class FidelityRules(BaseModel):
    """Alert thresholds of seed 002's checklist (loadable from TOML, ``[fidelity]`` table)."""

    model_config = ConfigDict(extra="forbid")
    p95_cfs_min: float = Field(0.85, ge=0, le=1)
    stage_survival_min: float = Field(0.90, ge=0, le=1)
    parse_failure_max: float = Field(0.005, ge=0, le=1)
    percentile: str = Field("upper", pattern="^(upper|tail)$")
    canary_alpha: float = Field(0.01, gt=0, lt=1)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> FidelityRules:
        from ragaudit_core.tomlfile import load_toml_file

        data = load_toml_file(path)  # ValueError for a file too large, too deep, not TOML
        table = data.get("fidelity")
        if table is None:  # the keys at the top of the file, a gate rules file's own keys left to the gate
            table = {k: v for k, v in data.items() if k not in GATE_KEYS}
        return cls.model_validate(table)


@dataclass
class RunFidelity:
    run_id: str
    summary: dict
    queries: pd.DataFrame  # one row per query
    citations: pd.DataFrame  # one row per citation
    findings: pd.DataFrame  # failure-mode findings
    alerts: list[dict]


def _pct(values: np.ndarray, q: float, convention: str) -> float | None:
    """The ``q``-th percentile (linear interpolation) as the seed writes it (``upper``), or in the
    tail reading the largest score that at least ``q`` % of the queries reach: a value of the data
    (linear interpolation read 0.45 for 9 × 1.0 and 1 × 0.0, which only 90 % reach; 19 × 1.0 and
    1 × 0.0 read 1.0, which 95 % reach). The median (q = 50) is the median in both readings."""
    if not len(values):
        return None
    if convention == "upper" or q == 50:
        return float(np.percentile(values, q))
    return -float(np.percentile(-values, q, method="inverted_cdf"))


def _cfs_intervals(cfs: np.ndarray, conv: str) -> dict[str, list[float | None]]:
    """95 % bootstrap intervals over queries (:mod:`ragaudit_core.intervals`) of the CFS figures:
    the mean, and the median and p95 under both percentile readings."""
    from ragaudit_core.intervals import bootstrap_means, bootstrap_quantiles

    def pair(e: Estimate) -> list[float | None]:
        return [None if e.lo != e.lo else e.lo, None if e.hi != e.hi else e.hi]

    if not len(cfs):
        return {}
    p50, upper = bootstrap_quantiles(cfs, [0.5, 0.95])  # the same resamples for both calls (one seed)
    (reached,) = bootstrap_quantiles(-cfs, [0.95], method="inverted_cdf")  # the tail reading, negated
    tail = Estimate(-reached.value, -reached.hi, -reached.lo, reached.n, reached.level)
    p95, other = (upper, tail) if conv == "upper" else (tail, upper)
    return {
        "cfs_mean": pair(bootstrap_means(cfs)[0]),
        "cfs_p50": pair(p50),
        "cfs_p95": pair(p95),
        "cfs_p95_other": pair(other),
    }


def _stage_shares(with_gt: list[QueryFidelity]) -> dict[str, float | None]:
    """Per stage, the share of the queries with a ground-truth source that still hold it after
    that stage: a query is lost at the first stage it fails and kept through the stages its
    pipeline skips (no reranker). The product of the conditional rates equals it only when every
    query reaches the same stages (q1 lost at a reranker q2 does not have: 1/2, not 0). None for a
    stage no query reached."""
    alive = [True] * len(with_gt)
    out: dict[str, float | None] = {}
    for s, name in FIDELITY_STAGES.items():
        reached = False
        for i, r in enumerate(with_gt):
            v = r.survival.get(s)
            if v is not None:
                reached = True
                alive[i] = alive[i] and bool(v)
        out[name] = sum(alive) / len(alive) if reached and alive else None
    return out


MEMO_MAX = 64
"""Longest sequence of values whose figures :func:`fidelity_runs` keeps to reuse for a later run."""


def _cfs_figures(cfs: np.ndarray, conv: str) -> dict[str, Any]:
    """The figures of a run that depend only on its per-query CFS values and the percentile
    reading: mean, percentiles and their bootstrap intervals."""
    return {
        "cfs_mean": float(cfs.mean()) if len(cfs) else None,
        "cfs_p50": _pct(cfs, 50, conv),
        "cfs_p95": _pct(cfs, 95, conv),
        "cfs_p99": _pct(cfs, 99, conv),
        "cfs_p95_other": _pct(cfs, 95, "tail" if conv == "upper" else "upper"),
        "intervals": _cfs_intervals(cfs, conv),
    }


def _counts(column: pd.Series) -> dict[str, int]:
    return {k: int(v) for k, v in column.value_counts().items()}


def _memo_get(memo: dict | None, key: tuple, n: int, compute: Any) -> Any:
    """``compute()``, or its value for an earlier run with the same ``key`` (a pure function of
    the key, so the same value) when ``memo`` is kept and the key rests on at most
    :data:`MEMO_MAX` values. Callers copy what they hand out."""
    if memo is None or n > MEMO_MAX:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


CITATION_COLUMNS = ["query_id", "citation", "pattern", "score", "diagnostic", "doc_id", "page", "start", "end"]
FINDING_COLUMNS = ["query_id", "node_id", "check", "detail", "staleness_s"]


def _rows(results: Sequence[QueryFidelity]) -> tuple[list[dict], list[dict], list[dict]]:
    """The rows of a run's three tables: queries, citations (:data:`CITATION_COLUMNS`) and
    failure-mode findings (:data:`FINDING_COLUMNS`)."""
    queries = [
        {
            "query_id": r.query_id,
            "cfs": r.cfs,
            "n_citations": len(r.citations),
            "n_parse_failures": len(r.parse_failures),
            "cfs_product": r.cfs_product,
            "first_failed_stage": FIDELITY_STAGES.get(r.first_failed_stage) if r.first_failed_stage else None,
            "diagnostic": r.diagnostic or ("; ".join(sorted({c["diagnostic"] for c in r.citations}))),
            **{f"survived_{name}": r.survival.get(s) for s, name in FIDELITY_STAGES.items()},
            "n_findings": len(r.findings),
        }
        for r in results
    ]
    cits = [{"query_id": r.query_id, **c} for r in results for c in r.citations]
    finds = [{"query_id": r.query_id, **f} for r in results for f in r.findings]
    return queries, cits, finds


def summarise_run(
    run_id: str,
    results: Sequence[QueryFidelity],
    rules: FidelityRules = FidelityRules(),
    *,
    memo: dict | None = None,
    tables: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None = None,
) -> RunFidelity:
    """Run-level figures and the alerts that fire.

    ``memo`` (a dict kept across the runs of one call, as :func:`summarise_runs` does): the CFS
    mean, percentiles and bootstrap intervals and the outcome and failure-mode counts of a run
    whose CFS values (or labels) equal an earlier run's, value for value, are that run's,
    not computed again — many one-record runs share a handful of value sets. The figures are
    the same either way (each a pure function of those values). ``tables``: the run's queries,
    citations and findings tables when built already (by :func:`summarise_runs`)."""
    if tables is None:
        rows_q, rows_c, rows_f = _rows(results)
        tables = (
            pd.DataFrame(rows_q),
            pd.DataFrame(rows_c, columns=CITATION_COLUMNS),
            pd.DataFrame(rows_f, columns=FINDING_COLUMNS),
        )
    q, cits, finds = tables
    cfs = np.array([r.cfs for r in results if r.cfs is not None], dtype=float)
    n_cit = int(sum(len(r.citations) for r in results))
    n_fail = int(sum(len(r.parse_failures) for r in results))
    parse_rate = n_fail / (n_cit + n_fail) if n_cit + n_fail else None
    with_gt = [r for r in results if r.cfs_product is not None]
    survival, reached = {}, {}
    for s, name in FIDELITY_STAGES.items():
        evaluated = [r for r in with_gt if r.survival.get(s) is not None]
        survival[name] = (sum(bool(r.survival[s]) for r in evaluated) / len(evaluated)) if evaluated else None
        reached[name] = len(evaluated)  # the queries a conditional survival rate rests on
    conv = rules.percentile
    fig = _memo_get(memo, ("cfs", conv, cfs.tobytes()), len(cfs), lambda: _cfs_figures(cfs, conv))
    diags = tuple(c["diagnostic"] for r in results for c in r.citations)
    checks = tuple(f["check"] for r in results for f in r.findings)
    outcomes = _memo_get(memo, ("outcomes", diags), len(diags), lambda: _counts(cits["diagnostic"]))
    modes = _memo_get(memo, ("modes", checks), len(checks), lambda: _counts(finds["check"]))
    cumulative = _stage_shares(with_gt)
    summary = {
        "run_id": run_id,
        "n_queries": len(results),
        "n_with_citations": len(cfs),
        "n_citations": n_cit,
        "n_parse_failures": n_fail,
        "parse_failure_rate": parse_rate,
        "n_with_citation_strings": sum(1 for r in results if r.citations or r.parse_failures),
        "cfs_mean": fig["cfs_mean"],
        "cfs_p50": fig["cfs_p50"],
        "cfs_p95": fig["cfs_p95"],
        "cfs_p99": fig["cfs_p99"],
        "percentile_convention": conv,
        "cfs_p95_other": fig["cfs_p95_other"],
        "n_with_ground_truth": len(with_gt),
        "cfs_product_mean": float(np.mean([r.cfs_product for r in with_gt])) if with_gt else None,
        "stage_survival": survival,
        "stage_reached": reached,
        "stage_share": cumulative,
        "outcomes": dict(outcomes),
        "failure_modes": dict(modes),
        "intervals": {k: list(v) for k, v in fig["intervals"].items()},
    }
    alerts: list[dict[str, Any]] = []

    def rule(name: str, value: float | None, threshold: float, fires: bool | None, sentence: str) -> None:
        status = "not applicable" if fires is None else ("alert" if fires else "ok")
        alerts.append({"rule": name, "value": value, "threshold": threshold, "status": status, "message": sentence})

    p95 = fig["cfs_p95"]
    rule(
        "p95 CFS",
        p95,
        rules.p95_cfs_min,
        None if p95 is None else p95 < rules.p95_cfs_min,
        "no query has a citation, so there is no CFS distribution"
        if p95 is None
        else f"p95 CFS is {p95:.3f}, {'below' if p95 < rules.p95_cfs_min else 'at or above'} the threshold "
        f"{rules.p95_cfs_min}",
    )
    for name, rate in survival.items():
        rule(
            f"{name} survival",
            rate,
            rules.stage_survival_min,
            None if rate is None else rate < rules.stage_survival_min,
            f"no query with ground truth reached the {name} stage"
            if rate is None
            else f"{rate:.1%} of the queries that reached {name} with a ground-truth source keep one through it "
            f"(conditional survival; {'below' if rate < rules.stage_survival_min else 'at or above'} "
            f"{rules.stage_survival_min:.0%})",
        )
    rule(
        "parse-failure rate",
        parse_rate,
        rules.parse_failure_max,
        None if parse_rate is None else parse_rate > rules.parse_failure_max,
        "the generated texts hold no citation-like strings"
        if parse_rate is None
        else f"{n_fail} of {n_cit + n_fail} citation-like strings could not be parsed ({parse_rate:.2%}; "
        f"threshold {rules.parse_failure_max:.2%})",
    )
    summary["n_alerts"] = sum(a["status"] == "alert" for a in alerts)
    return RunFidelity(run_id, summary, q, cits, finds, alerts)


SURVIVAL_LABELS = {
    "conditional": "survival (of queries reaching the stage)",
    "share": "share of all queries with ground truth",
}
"""Display labels of the two readings of stage survival: the conditional rate
``#(survived s) / #(survived s−1)`` (the alert's, seed 002's product factors) and the running
product, the share of all queries with ground truth still holding a source (the funnel's)."""


def survival_table(summary: dict) -> pd.DataFrame:
    """One row per evaluated stage: the conditional survival rate and the cumulative share
    (keys ``conditional`` and ``share``; labels in :data:`SURVIVAL_LABELS`). A stage no query
    reached is left out."""
    rows = [
        {"stage": name, "conditional": rate, "share": summary["stage_share"][name]}
        for name, rate in summary["stage_survival"].items()
        if rate is not None
    ]
    return pd.DataFrame(rows, columns=["stage", "conditional", "share"])


def tail_comment(summary: dict, threshold: float | None = None) -> str | None:
    """A sentence when the run's p95 CFS reads well but its tail does not, else None.

    Seed 002's "p95 CFS" read literally (the 95th percentile, ``upper``) is high as soon as
    5 % of queries cite perfectly; the tail reading (the 5th percentile: the score 95 % of
    queries reach) and the median say how the rest fare. Fires when the two readings differ
    by 0.5 or more, or when the upper reading clears ``threshold`` and the tail does not."""
    conv = summary.get("percentile_convention", "upper")
    upper, tail = (
        (summary.get("cfs_p95"), summary.get("cfs_p95_other"))
        if conv == "upper"
        else (summary.get("cfs_p95_other"), summary.get("cfs_p95"))
    )
    median = summary.get("cfs_p50")
    if upper is None or tail is None:
        return None
    clears = threshold is not None and upper >= threshold > tail
    if upper - tail < 0.5 and not clears:
        return None
    if median is not None and median <= tail:  # "5 % score 0.00 or less" would understate half of them
        low = f": half of the queries with citations score {median:.2f} or less (the tail reading too)"
    else:
        low = f" and at least 5 % of the queries with citations score {tail:.2f} or less (the tail reading)"
    return (
        f"p95 CFS read as the 95th percentile is {upper:.2f}, but the median is {_2f(median)}{low}; "
        "the upper reading says only that the best-cited queries are faithful."
    )


def _2f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def canary(cfs_a: Sequence[float], cfs_b: Sequence[float], *, alpha: float = 0.01) -> dict:
    """Seed 002's canary check: Mann–Whitney U (two-sided) between two runs' per-query CFS."""
    a = np.asarray([x for x in cfs_a if x is not None], dtype=float)
    b = np.asarray([x for x in cfs_b if x is not None], dtype=float)
    out = {
        "n_a": len(a),
        "n_b": len(b),
        "median_a": float(np.median(a)) if len(a) else None,
        "median_b": float(np.median(b)) if len(b) else None,
        "alpha": alpha,
    }
    if len(a) < 2 or len(b) < 2:
        return out | {
            "u": None,
            "p_value": None,
            "significant": None,
            "note": "at least two queries with citations are needed on each side",
        }
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        return out | {"u": float(len(a) * len(b) / 2), "p_value": 1.0, "significant": False}
    from scipy.stats import mannwhitneyu

    res = mannwhitneyu(a, b, alternative="two-sided")
    return out | {"u": float(res.statistic), "p_value": float(res.pvalue), "significant": bool(res.pvalue < alpha)}


def fidelity_runs(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[str] | None = None,
    rules: FidelityRules = FidelityRules(),
    patterns: Sequence[CitationPattern] = DEFAULT_PATTERNS,
) -> dict[str, RunFidelity]:
    """Citation fidelity of each provenance run in the database (``runs``: those, in that order).

    Cost model: the graphs are read a chunk of runs at a time (:func:`graph.iter_graph_chunks`:
    two queries per ~20,000 records, where it was two scans of the provenance tables per run);
    a chunk's tables are built per group of small runs alike and cut per run
    (:func:`summarise_runs`), and a run's CFS figures, bootstrap intervals and outcome counts
    are reused from an earlier run with the same values. What stays per run is a slice of
    each table and its alerts; per record, its verification. 5,000 one-record runs: 39–49 s
    before, 2.7–3.4 s after (2 cores; the audit had 31 s); 20,000: 14 s (the audit: 168 s).
    One run of 100,000 records is read and summarised as before. Every figure, table and
    alert is the same as one run at a time gives (tests/fidelity/test_fidelity_many_runs.py)."""
    from ragaudit_core.logs import store

    opts = store.get_json_meta(con.cursor(), "ingest_options")
    opts = opts if isinstance(opts, dict) else {}
    canon = CanonOptions(
        case_sensitive=bool(opts.get("case_sensitive", False)),
        collapse_internal_whitespace=bool(opts.get("collapse_internal_whitespace", False)),
    )
    out: dict[str, RunFidelity] = {}
    memo: dict = {}
    for chunk in iter_graph_chunks(con, runs if runs is not None else provenance_runs(con)):
        results = {run: [compute_query(g, patterns, canon) for g in graphs] for run, graphs in chunk.items()}
        del chunk
        out.update(summarise_runs(results, rules, memo=memo))
    return out


def summarise_runs(
    results: Mapping[str, Sequence[QueryFidelity]], rules: FidelityRules = FidelityRules(), *, memo: dict | None = None
) -> dict[str, RunFidelity]:
    """:func:`summarise_run` of each run, the same figures and tables; the tables of the runs
    are built together (:func:`frames.frames_by_key`: one table per group of small runs with the
    same kinds of values, cut per run) and figures shared through ``memo`` (one is made when
    not given)."""
    memo = {} if memo is None else memo
    rows = {run: _rows(res) for run, res in results.items()}
    q = frames_by_key({run: r[0] for run, r in rows.items()})
    c = frames_by_key({run: r[1] for run, r in rows.items()}, CITATION_COLUMNS)
    f = frames_by_key({run: r[2] for run, r in rows.items()}, FINDING_COLUMNS)
    del rows
    return {
        run: summarise_run(run, res, rules, memo=memo, tables=(q[run], c[run], f[run])) for run, res in results.items()
    }

"""Evidence-stability metrics (seed 000, §3 "Stability metrics"), as SQL over the store.

For a query *q* and two runs *A*, *B*, let ``E_A(q)`` be the set of evidence identities
of A for q — document ids at the **doc** level, ``(doc_id, span_hash)`` pairs at the
**span** level. Then

* Jaccard ``J(q; A, B) = |E_A ∩ E_B| / |E_A ∪ E_B|``, with **both empty → 1.0**
  (a stable "no evidence" state, as RagCiteCheck) and one empty → 0.0;
* per pair: ``J_avg`` = mean of J over the evaluated queries; flip rate = share of
  queries with ``J < τ`` (strict, τ = 0.5 by default); null rate of each side = share
  of queries with an empty set; null loss = share with A non-empty and B empty; null
  gain = A empty and B non-empty; pair collapse rate = share of queries with
  ``J = 0`` while both sides are non-empty;
* per query: ``J_min`` = the worst pair's J, and that pair (ties: the first pair in
  ``run_a, run_b`` order);
* collapse rate (per level) = share of queries with **some** pair at ``J = 0`` while both
  sides are non-empty (seed 000: 94.0 % at span level on SciFact);
* gap ratio = mean ``J_doc`` / mean ``J_span`` over the (query, pair) cells where both
  levels exist (seed 000: 0.520 / 0.224 = 2.321 on SciFact); undefined when mean
  ``J_span`` is 0;
* "same documents, different spans" = (query, pair) cells whose document sets are equal
  while their span sets differ;
* per run: citation rate (share of queries with a non-empty list), null rate, and
  mean / median / p95 evidence-list size (entries after de-duplication and top-k;
  median and p95 by linear interpolation, ``quantile_cont``), and mean distinct documents.

A run has span information when every entry it logged carries a span hash (given, or
computed from its text). Span metrics of a pair are computed only when both runs have
span information; otherwise they are reported as unavailable — never as 0.

A pair setting a run that logged no document ids (its ids are passage hashes) beside one that did
is at J = 0 by how they were logged: left out of the pairs formed by default, named in a sentence
(:mod:`.mixed_ids`); a pair the caller names is compared as asked.

The metric SQL uses only plain SQL (joins, GROUP BY, window functions, CASE); the
optional alias map is applied as a LEFT JOIN, top-k as a filter on the logged list
position (before de-duplication, as RagCiteCheck truncates the raw list).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from ragaudit_core.defaults import FLIP_THRESHOLD, INT32_MAX
from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs import catalog
from ragaudit_core.stability.cells import build_cells
from ragaudit_core.stability.effects import effects_by_change
from ragaudit_core.stability.mixed_ids import pairs_to_compare
from ragaudit_core.stability.sql import PAIRS_SQL, QUERIES_SQL, RUNS_SQL
from ragaudit_core.stability.summary import LevelStats, StabilitySummary
from ragaudit_core.stability.uncertainty import EFFECT_INTERVAL_METRICS, StabilityIntervals, intervals_from_batches
from ragaudit_core.wording import listed

__all__ = [
    "CONFIG_PARAMETERS",
    "MAX_PAIRS",
    "NoComparablePairs",
    "NoSharedQueries",
    "StabilityError",
    "StabilityOptions",
    "StabilityResult",
    "change_label",
    "compute_stability",
    "evaluation_queries",
    "list_runs",
    "span_capable_runs",
]


class StabilityError(RagAuditError, ValueError):
    """The requested comparison is impossible with the data at hand (message says why)."""


class NoSharedQueries(StabilityError):
    """The selected runs logged no query in common."""


class NoComparablePairs(StabilityError):
    """Every pair formed by default sets a run that logged no document ids beside one that did
    (:mod:`.mixed_ids`): nothing is left to compare; the message says so in one sentence."""


@dataclass(frozen=True)
class StabilityOptions:
    """What to compare and how.

    ``runs`` — the runs to include (default: every run in the store).
    ``baseline`` — compare every other run with this one instead of all pairs, each pair oriented
    (baseline, run): null loss is a query the other run found nothing for where the baseline did.
    ``pairs`` — explicit, oriented (run_a, run_b) pairs; overrides ``baseline``. Compared as asked,
    even a pair mixing document ids with passage hashes, which the pairs formed by default (all
    pairs, ``baseline``) leave out (:mod:`.mixed_ids`).
    ``flip_threshold`` — τ of the flip rate (``J < τ``).
    ``topk`` — keep only the first k entries of each logged list.
    ``allow_missing`` — evaluate the intersection of the runs' query sets instead of
    failing when they differ.
    ``docid_map`` — raw → canonical alias map (already normalised), applied at query time.
    ``queries`` — evaluate only these query ids (e.g. one query's drill-down); ids the runs
    do not all share are ignored under ``allow_missing`` and an error otherwise.
    ``resamples`` — bootstrap resamples of the queries for 95 % intervals of the headline and
    pair figures (:mod:`.uncertainty`); 0 computes none.
    """

    runs: Sequence[str] | None = None
    baseline: str | None = None
    pairs: Sequence[tuple[str, str]] | None = None
    flip_threshold: float = FLIP_THRESHOLD
    topk: int | None = None
    allow_missing: bool = False
    docid_map: dict[str, str] = field(default_factory=dict)
    queries: Sequence[str] | None = None
    resamples: int = 0


@dataclass
class StabilityResult:
    runs: pd.DataFrame
    pairs: pd.DataFrame
    queries: pd.DataFrame
    summary: StabilitySummary
    cells: pd.DataFrame | None = None
    density: pd.DataFrame | None = None
    intervals: StabilityIntervals | None = None

    def to_json(self) -> dict:
        """The CLI's JSON: ``runs``, ``pairs``, ``queries``, ``effects`` (by what changed) lists, a
        ``summary`` object, and ``intervals`` when computed."""
        run_cols = [
            "run_id",
            *CONFIG_PARAMETERS,
            "citation_rate",
            "null_rate",
            "mean_evidence",
            "median_evidence",
            "p95_evidence",
            "mean_docs",
            "n_queries",
            "has_spans",
        ]
        pair_cols = [
            "run_a",
            "run_b",
            "changed",
            "level",
            "j_avg",
            "flip_rate",
            "null_rate_a",
            "null_rate_b",
            "null_loss",
            "null_gain",
            "collapse_rate",
            "n_queries",
            "same_docs_diff_spans",
        ]
        # the worst pair as its two runs too: "a vs b" joined cannot be split when a run id holds " vs "
        q_cols = ["query_id", "level", "j_min", "worst_pair", "run_a", "run_b", "collapsed", "flipped"]
        q_cols = [c for c in q_cols if c in self.queries.columns]
        return {
            "runs": _records(self.runs[run_cols]),
            "pairs": _records(self.pairs[pair_cols]),
            "queries": _records(self.queries[q_cols]),
            "effects": _records(
                effects_by_change(self.pairs)[["changed", "level", "n_pairs", *EFFECT_INTERVAL_METRICS]]
            ),
            "summary": self.summary.to_json(),
            "intervals": self.intervals.to_json() if self.intervals is not None else None,  # one shape either way
        }


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for row in df.to_dict(orient="records"):
        clean = {}
        for k, v in row.items():
            if isinstance(v, float) and math.isnan(v):
                v = None
            elif hasattr(v, "item"):
                v = v.item()
            clean[k] = v
        out.append(clean)
    return out


def list_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


def span_capable_runs(con: duckdb.DuckDBPyConnection, runs: Sequence[str]) -> set[str]:
    """Runs whose every logged entry has a span hash (:func:`catalog.span_capable_runs`, stored
    per data version)."""
    return set(catalog.span_capable_runs(con)) & set(runs)


def evaluation_queries(
    con: duckdb.DuckDBPyConnection, runs: Sequence[str], allow_missing: bool
) -> tuple[list[str], list[str]]:
    """The query ids to evaluate and the warnings; raises when coverage differs and
    ``allow_missing`` is false (the message names the missing queries)."""
    detail = catalog.coverage_gaps(con, list(runs))
    warnings = []
    if detail:
        if not allow_missing:
            raise StabilityError(
                "query coverage differs between runs: "
                + detail
                + ". Re-run the missing queries, or pass --allow-missing to evaluate only the queries every run has"
            )
        warnings.append("query coverage differs; evaluating the queries every run has: " + detail)
    qs = [
        q
        for (q,) in con.execute(
            """
        SELECT query_id FROM records WHERE list_contains(?, run_id)
        GROUP BY query_id HAVING count(DISTINCT run_id) = ? ORDER BY query_id
        """,
            [list(runs), len(runs)],
        ).fetchall()
    ]
    if not qs:
        raise NoSharedQueries("the runs have no query in common; nothing to compare")
    return qs, warnings


CONFIG_PARAMETERS = ("top_k", "chunk_size", "chunk_overlap")


def change_label(config_a: dict, config_b: dict, parameters: Sequence[str] = CONFIG_PARAMETERS) -> str:
    """What differs between two run configurations.

    Returns the one parameter name that differs (``"top_k"``, ``"chunk_size"``,
    ``"chunk_overlap"``), ``"several"`` when more than one differs, ``"none"`` when all
    are equal, and ``"unknown"`` when either run does not log one of the parameters
    (a parameter absent on both sides is ignored, so doc-only logs without configs
    read ``"unknown"``).
    """
    diff = []
    for p in parameters:
        a, b = config_a.get(p), config_b.get(p)
        if a is None and b is None:
            continue
        if a is None or b is None:
            return "unknown"
        if a != b:
            diff.append(p)
    if not diff:
        return "none" if any(config_a.get(p) is not None for p in parameters) else "unknown"
    return diff[0] if len(diff) == 1 else "several"


MAX_PAIRS = 5_000
"""Pairs of runs one comparison makes, at most: each pair's intervals (5 figures × 1,000 resamples)
are held at once — 100 runs (4,950 pairs) peak at 1.0 GB, 300 runs at 7.5 GB; a log naming a run
per record (10,000 runs) made 50M pairs and ran out of memory."""


def _check_pair_count(n_runs: int, n_pairs: int) -> None:
    if n_pairs > MAX_PAIRS:
        raise StabilityError(
            f"{n_runs:,} runs make {n_pairs:,} pairs to compare, more than the {MAX_PAIRS:,} stability compares at "
            "once (each pair's intervals are held in memory): pick the runs to compare (--runs; on the stability "
            "page, 'Runs compared' in the sidebar), or compare each run with one (--baseline)"
        )


def _resolve_pairs(runs: list[str], opts: StabilityOptions) -> list[tuple[str, str]]:
    if opts.pairs is not None:
        pairs = list(dict.fromkeys((a, b) for a, b in opts.pairs))  # de-duplicated, order kept
        unknown = sorted({r for p in pairs for r in p} - set(runs))
        if unknown:
            raise StabilityError(f"{listed('unknown run', list(map(repr, unknown)))} in pairs")
        if any(a == b for a, b in pairs):
            raise StabilityError("a pair must name two different runs")
        _check_pair_count(len({r for p in pairs for r in p}), len(pairs))
        return pairs
    if opts.baseline is not None:
        if opts.baseline not in runs:
            raise StabilityError(
                f"baseline run {opts.baseline!r} is not among the runs compared ({', '.join(map(repr, runs))}): "
                "name one of them, or add it to the runs (--runs)"
            )
        return [(opts.baseline, r) for r in runs if r != opts.baseline]  # oriented: null loss is what r lost
    _check_pair_count(len(runs), len(runs) * (len(runs) - 1) // 2)  # before a pair is made
    return list(itertools.combinations(runs, 2))


def compute_stability(
    con: duckdb.DuckDBPyConnection,
    opts: StabilityOptions = StabilityOptions(),
    *,
    keep_cells: bool = False,
    density_bins: int | None = None,
) -> StabilityResult:
    """All stability metrics for the selected runs, at document and span level.

    ``keep_cells`` returns every (level, pair, query) Jaccard value in ``cells``.
    ``density_bins`` returns, in ``density``, the per-(query, pair) points
    (``J_doc``, ``J_span``) counted on a ``bins × bins`` grid over [0, 1]² (bin ``i``
    holds ``i/bins ≤ J < (i+1)/bins``; ``J = 1`` falls in the last bin) — the scatter's
    density view without moving every cell out of the database.
    """
    cur = con.cursor()
    try:
        return _compute(cur, opts, keep_cells, density_bins)
    finally:
        cur.close()


def _compute(
    cur: duckdb.DuckDBPyConnection, opts: StabilityOptions, keep_cells: bool, density_bins: int | None
) -> StabilityResult:
    runs = _selected_runs(cur, opts)
    if opts.topk is not None and opts.topk < 1:
        raise StabilityError("--topk must be at least 1")
    if not (0.0 <= opts.flip_threshold <= 1.0):
        raise StabilityError("the flip threshold must be between 0 and 1")
    hashed = set(catalog.text_id_runs(cur))  # once per computation (stored per data version)
    pairs, id_warnings, nothing_left = pairs_to_compare(_resolve_pairs(runs, opts), hashed, opts.pairs is not None)
    if nothing_left:
        raise NoComparablePairs(nothing_left)
    pair_runs = sorted({r for p in pairs for r in p})
    queries, warnings = evaluation_queries(cur, pair_runs, opts.allow_missing)
    if opts.queries is not None:
        wanted = set(opts.queries)
        missing = sorted(wanted - set(queries))
        if missing and not opts.allow_missing:
            raise StabilityError(
                f"quer{'y' if len(missing) == 1 else 'ies'} not shared by every selected run: "
                + ", ".join(map(repr, missing[:10]))
                + (" …" if len(missing) > 10 else "")
            )
        queries = [q for q in queries if q in wanted]
        if not queries:
            raise StabilityError("none of the requested queries is shared by the selected runs")
    span_runs = span_capable_runs(cur, pair_runs)
    no_span = [r for r in pair_runs if r not in span_runs]
    if no_span:
        warnings.append(
            f"span metrics unavailable for {'the run' if len(no_span) == 1 else 'runs'} without span information "
            "(no text or span_hash): " + ", ".join(map(repr, no_span))
        )

    warnings += id_warnings

    pair_levels = [("doc", a, b) for a, b in pairs]
    pair_levels += [("span", a, b) for a, b in pairs if a in span_runs and b in span_runs]
    _register_inputs(cur, opts, pair_runs, queries, span_runs, pair_levels)
    topk = opts.topk if opts.topk is not None else INT32_MAX
    keyed = not opts.docid_map and catalog.hash_keys_unique(cur)
    if density_bins is not None and density_bins < 1:
        raise StabilityError("density bins must be at least 1")
    tau = opts.flip_threshold
    build_cells(cur, keyed, topk, queries, pair_runs, density_bins, tau)

    pairs_df = cur.execute(PAIRS_SQL, [tau]).df()
    pairs_df["same_docs_diff_spans"] = pairs_df["same_docs_diff_spans"].astype("Int64")
    queries_df = cur.execute(QUERIES_SQL).df()
    runs_df = cur.execute(RUNS_SQL).df()
    runs_df["has_spans"] = runs_df["run_id"].isin(span_runs)
    cfg = {
        r[0]: dict(zip(CONFIG_PARAMETERS, r[1:]))
        for r in cur.execute("SELECT run_id, top_k, chunk_size, chunk_overlap FROM runs").fetchall()
    }
    for p in CONFIG_PARAMETERS:
        runs_df[p] = runs_df["run_id"].map(lambda r, p=p: cfg.get(r, {}).get(p)).astype("Int64")
    pairs_df["changed"] = [
        change_label(cfg.get(a, {}), cfg.get(b, {})) for a, b in zip(pairs_df["run_a"], pairs_df["run_b"])
    ]

    for canon, raws in _collisions(cur, opts, pair_runs):
        warnings.append(f"canonical-id collision: {len(raws)} raw ids map to {canon!r}: " + ", ".join(map(repr, raws)))

    summary = _summary(
        cur,
        pairs_df,
        queries_df,
        queries,
        pairs,
        tau,
        hashed,
        warnings=warnings,
        span_unavailable_runs=no_span,
        runs=pair_runs,
        topk=opts.topk,
        baseline=opts.baseline,
    )
    cells = (
        cur.execute(
            """SELECT c.level, pl.run_a, pl.run_b, q.query_id, c.n_a, c.n_b, c.n_inter, c.j
           FROM _cells c JOIN _pair_levels pl ON pl.level = c.level AND pl.ra = c.ra AND pl.rb = c.rb
           JOIN _eval_q q ON q.qi = c.qi ORDER BY c.level, pl.run_a, pl.run_b, q.query_id"""
        ).df()
        if keep_cells
        else None
    )
    density = None
    if density_bins is not None:  # counted with the cells (.joint)
        density = cur.execute("SELECT doc_bin, span_bin, n FROM _density ORDER BY doc_bin, span_bin").df()
    groups = dict(zip(zip(pairs_df["run_a"], pairs_df["run_b"]), pairs_df["changed"]))
    intervals = _intervals(cur, pair_runs, len(queries), tau, opts, groups) if opts.resamples > 0 else None
    for name in ("_sel_runs", "_eval_q", "_span_runs", "_pair_levels", "_map"):
        cur.unregister(name)
    return StabilityResult(
        runs=runs_df,
        pairs=pairs_df,
        queries=queries_df,
        summary=summary,
        cells=cells,
        density=density,
        intervals=intervals,
    )


def _collisions(cur: duckdb.DuckDBPyConnection, opts: StabilityOptions, pair_runs: list[str]) -> list:
    """Canonical ids several raw ids map to, among the compared runs (at most 20): a property of
    the stored data (read once per data version) unless a document-id map is given."""
    if not opts.docid_map:
        return catalog.raw_id_collisions(cur, pair_runs)
    return cur.execute(
        """SELECT coalesce(m.canonical, e.doc_id) AS c, list(DISTINCT e.doc_id_raw ORDER BY e.doc_id_raw)
               FROM evidence e JOIN _sel_runs r ON r.run_id = e.run_id LEFT JOIN _map m ON m.raw = e.doc_id
               GROUP BY c HAVING count(DISTINCT e.doc_id_raw) > 1 ORDER BY c LIMIT 20"""
    ).fetchall()


def _intervals(
    cur: duckdb.DuckDBPyConnection,
    pair_runs: list[str],
    n_queries: int,
    tau: float,
    opts: StabilityOptions,
    groups: dict[tuple[str, str], str],
) -> StabilityIntervals:
    """Bootstrap intervals from the ``_cells`` table, read in batches ordered by level, pair and
    query (:func:`intervals_from_batches`: never every cell in memory at once); ``groups``: what
    changed in each pair, for the effects' intervals."""
    reader = cur.sql(
        """SELECT (level = 'span')::TINYINT AS span, ra, rb, qi, n_a, n_b, n_inter, j FROM _cells
           ORDER BY level, ra, rb, qi"""
    ).to_arrow_reader(_INTERVAL_BATCH_ROWS)
    batches = ({name: batch.column(name).to_numpy() for name in batch.schema.names} for batch in reader)
    return intervals_from_batches(
        batches, n_queries=n_queries, runs=pair_runs, tau=tau, resamples=opts.resamples, groups=groups
    )


_INTERVAL_BATCH_ROWS = 1 << 20


def _selected_runs(cur: duckdb.DuckDBPyConnection, opts: StabilityOptions) -> list[str]:
    """The runs ``opts`` asks for (all runs by default), at least two, each known."""
    all_runs = list_runs(cur)
    if opts.runs is not None:
        missing = [r for r in opts.runs if r not in all_runs]
        if missing:
            raise StabilityError(
                f"{listed('unknown run', list(map(repr, missing)))}; runs are: {', '.join(map(repr, all_runs))}"
            )
        runs = sorted(set(opts.runs))
    else:
        runs = all_runs
    if opts.pairs is not None:
        runs = sorted({r for p in opts.pairs for r in p} | set(runs if opts.runs is not None else []))
    if len(runs) < 2:
        raise StabilityError(
            f"need at least two runs to compare; found {len(runs)}" + (f": {runs[0]!r}" if runs else "")
        )
    return runs


def _register_inputs(
    cur: duckdb.DuckDBPyConnection,
    opts: StabilityOptions,
    pair_runs: list[str],
    queries: list[str],
    span_runs: Collection[str],
    pair_levels: list[tuple[str, str, str]],
) -> None:
    """The metric SQL's inputs as registered views: runs and queries integer-coded, the run
    pairs per level, the document-id map."""
    ri = {r: i for i, r in enumerate(pair_runs)}
    cur.register(
        "_sel_runs",
        pd.DataFrame(
            {"run_id": pd.Series(pair_runs, dtype="string"), "ri": pd.Series(range(len(pair_runs)), dtype="int32")}
        ),
    )
    cur.register(
        "_eval_q",
        pd.DataFrame(
            {"query_id": pd.Series(queries, dtype="string"), "qi": pd.Series(range(len(queries)), dtype="int32")}
        ),
    )
    cur.register("_span_runs", pd.DataFrame({"ri": pd.Series(sorted(ri[r] for r in span_runs), dtype="int32")}))
    pl = pd.DataFrame(pair_levels, columns=["level", "run_a", "run_b"]).astype("string")
    pl["ra"] = pl["run_a"].map(ri).astype("int32")
    pl["rb"] = pl["run_b"].map(ri).astype("int32")
    cur.register("_pair_levels", pl)
    cur.register(
        "_map",
        pd.DataFrame(
            {
                "raw": pd.Series(list(opts.docid_map), dtype="string"),
                "canonical": pd.Series(list(opts.docid_map.values()), dtype="string"),
            }
        ),
    )


def _summary(
    cur: duckdb.DuckDBPyConnection,
    pairs_df: pd.DataFrame,
    queries_df: pd.DataFrame,
    queries: list[str],
    pairs: list[tuple[str, str]],
    tau: float,
    hashed: set[str],
    **settings: Any,
) -> StabilitySummary:
    def level_stats(level: str) -> LevelStats:
        q = queries_df[queries_df["level"] == level]
        p = pairs_df[pairs_df["level"] == level]
        if p.empty:
            return LevelStats(available=False)
        row = cur.execute(
            """SELECT avg(j), avg(CASE WHEN j < ? THEN 1.0 ELSE 0.0 END),
                      sum(CASE WHEN (n_a > 0) <> (n_b > 0) THEN 1 ELSE 0 END), count(*)
               FROM _cells WHERE level = ?""",
            [tau, level],
        ).fetchall()[0]
        return LevelStats(
            available=True,
            mean_j=row[0],
            flip_rate=row[1],
            null_transitions=int(row[2]),
            n_cells=int(row[3]),
            collapse_rate=float(q["collapsed"].mean()) if len(q) else None,
            median_j_min=float(q["j_min"].median()) if len(q) else None,
            n_pairs=len(p),
        )

    doc, span = level_stats("doc"), level_stats("span")
    gap = None
    gap_note = None
    if span.available:
        # mean J_doc and J_span over the (pair, query) cells at both levels: every span cell, and
        # the doc cells of the pairs compared at span level (every doc cell when all are)
        js, jd = span.mean_j, doc.mean_j
        if span.n_pairs != doc.n_pairs:
            jd = cur.execute(
                """SELECT avg(j) FROM _cells d WHERE level = 'doc' AND EXISTS
                   (SELECT 1 FROM _pair_levels p WHERE p.level = 'span' AND p.ra = d.ra AND p.rb = d.rb)"""
            ).fetchall()[0][0]
        if js and js > 0 and jd is not None:
            gap = jd / js
            if all(a in hashed and b in hashed for a, b in pairs):  # no run logged ids: not a finding
                gap_note = (
                    "gap ratio 1 by construction: the compared runs logged no document ids, so each passage's "
                    "document id is its text's hash and J_doc = J_span"
                )
        else:
            gap_note = "gap ratio undefined: mean span-level Jaccard is 0"
    else:
        gap_note = "gap ratio unavailable: no pair has span information on both sides"
    sdds = pairs_df.loc[pairs_df["level"] == "span", "same_docs_diff_spans"]
    return StabilitySummary(
        n_queries=len(queries),
        n_pairs=len(pairs),
        doc=doc,
        span=span,
        gap_ratio=gap,
        gap_ratio_note=gap_note,
        same_docs_diff_spans=int(sdds.sum()) if span.available else None,
        flip_threshold=tau,
        **settings,
    )

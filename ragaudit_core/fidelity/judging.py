"""Running the Pattern-4 judge panel over a run's citations and keeping its verdicts.

``judge_citations`` is the pure step (a query's citations, its context, a backend and the
panel's seeds → one row per citation and judge); ``store_verdicts`` / ``verdict_table`` /
``judge_summary`` keep and read them in the ``judge_verdicts`` table, beside Pattern 3's
rule-based verification (:mod:`.score`), with the agreement and disagreement rates of
:mod:`.judge`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import duckdb
import pandas as pd

from ragaudit_core.fidelity.citations import DEFAULT_PATTERNS
from ragaudit_core.fidelity.graph import QueryGraph
from ragaudit_core.fidelity.judge import (
    agreement,
    bounded_chunk_id,
    context_chunks,
    disagreement,
    judge_prompt,
    majority,
    rule_verdict,
)
from ragaudit_core.logs import store

__all__ = ["judge_citations", "judge_inputs", "judge_summary", "store_verdicts", "verdict_table"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_verdicts (
    job_key     VARCHAR NOT NULL,
    run_id      VARCHAR NOT NULL,
    query_id    VARCHAR NOT NULL,
    citation_index INTEGER NOT NULL,
    citation    VARCHAR NOT NULL,
    rule_score  DOUBLE,
    judge       VARCHAR NOT NULL,
    seed        INTEGER NOT NULL,
    verdict     VARCHAR,
    confidence  DOUBLE,
    matching_chunk_id VARCHAR,
    explanation VARCHAR,
    coordinate_fidelity DOUBLE,
    created_at  TIMESTAMP DEFAULT now()
)
"""


def judge_inputs(g: QueryGraph, max_chars: int = 400) -> tuple[str, list[dict], list[dict]]:
    """(query, citations [{citation, score}], context chunks) of one provenance record; the
    citations are Pattern 3's (extracted and scored by :func:`score.compute_query`)."""
    from ragaudit_core.fidelity.score import compute_query

    q = compute_query(g, DEFAULT_PATTERNS)
    return (
        g.query or "",
        [{"citation": c["citation"], "score": c["score"]} for c in q.citations],
        context_chunks(g, max_chars),
    )


def judge_citations(
    query: str,
    citations: Sequence[dict],
    context: Sequence[dict],
    backend: Any,  # a judge backend (judges.LocalJudge or judges.EndpointJudge)
    seeds: Sequence[int],
    progress: Callable[[str, float], None] | None = None,
) -> list[dict]:
    """One row per (citation, judge): the judge's verdict fields, None where it cast no vote;
    ``progress(label, fraction)`` after each citation."""
    rows = []
    # bounded again here: the inputs may come from a queue file someone else wrote (judge.bounded_chunk_id)
    context = [
        {**c, "chunk_id": bounded_chunk_id(c.get("chunk_id")) or f"context {k + 1}"} for k, c in enumerate(context)
    ]
    chunk_ids = [c["chunk_id"] for c in context]
    for i, c in enumerate(citations):
        verdicts = backend.verdicts(judge_prompt(c["citation"], context, query), chunk_ids, seeds)
        for seed, v in zip(seeds, verdicts):
            rows.append(
                {
                    "citation_index": i,
                    "citation": c["citation"],
                    "rule_score": c["score"],
                    "judge": backend.name,
                    "seed": int(seed),
                    **(
                        v.model_dump()
                        if v is not None
                        else dict.fromkeys(
                            ("verdict", "confidence", "matching_chunk_id", "explanation", "coordinate_fidelity")
                        )
                    ),
                }
            )
        if progress:
            progress(f"judge: citation {i + 1} of {len(citations)}", (i + 1) / len(citations))
    return rows


def store_verdicts(con: duckdb.DuckDBPyConnection, job_key: str, run_id: str, query_id: str, rows: list[dict]) -> None:
    """Replace the verdicts of one judge job (one query, one panel), in one transaction: a writer
    killed half-way leaves the verdicts as they were, never a part of them that
    :func:`has_verdicts` would take for the whole (a batch would skip the query as judged)."""
    con.execute(_SCHEMA)
    with store.transaction(con) as cur:
        cur.execute("DELETE FROM judge_verdicts WHERE job_key = ?", [job_key])
        if rows:
            cur.executemany(
                "INSERT INTO judge_verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                [_verdict_row(job_key, run_id, query_id, r) for r in rows],
            )


def _verdict_row(job_key: str, run_id: str, query_id: str, r: dict) -> list:
    return [
        job_key,
        run_id,
        query_id,
        r["citation_index"],
        r["citation"],
        r["rule_score"],
        r["judge"],
        r["seed"],
        r["verdict"],
        r["confidence"],
        r["matching_chunk_id"],
        r["explanation"],
        r["coordinate_fidelity"],
    ]


def _ensure(con: duckdb.DuckDBPyConnection) -> bool:
    """The table made when missing; False on a read-only database that never stored a verdict."""
    return store.made_on_first_use(con, _SCHEMA, "judge_verdicts")


def has_verdicts(con: duckdb.DuckDBPyConnection, job_key: str) -> bool:
    sql = "SELECT count(*) FROM judge_verdicts WHERE job_key = ?"
    return _ensure(con) and bool(con.execute(sql, [job_key]).fetchall()[0][0])


def verdict_table(con: duckdb.DuckDBPyConnection, run_id: str, precision: str = "auto") -> pd.DataFrame:
    """One row per judged citation of a run: Pattern 3's verdict, the judges' votes, the
    majority and whether the votes were unanimous.

    ``precision``: the panel whose votes are counted — ``auto`` (the default) the judges at their
    model's default weights, ``bf16`` those run with ``--precision bf16`` (named ``… (bf16)``). The
    two are never counted together: a bf16 panel beside the reference's would double each
    citation's votes."""
    cols = ["query_id", "citation", "rule", "votes", "majority", "unanimous", "n_judges", "n_valid"]
    if not _ensure(con):
        return pd.DataFrame(columns=cols)
    suffix = f" ({precision})"
    df = con.execute(
        "SELECT query_id, citation_index, citation, rule_score, judge, seed, verdict, confidence, "
        "matching_chunk_id FROM judge_verdicts WHERE run_id = ? AND "
        + ("NOT ends_with(judge, ' (bf16)')" if precision == "auto" else "ends_with(judge, ?)")
        + " ORDER BY query_id, citation_index, judge, seed",
        [run_id] if precision == "auto" else [run_id, suffix],
    ).df()
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (qid, _idx), grp in df.groupby(["query_id", "citation_index"], sort=False):
        votes = [None if pd.isna(v) else v for v in grp["verdict"]]
        valid = [v for v in votes if v is not None]
        rows.append(
            {
                "query_id": qid,
                "citation": grp["citation"].iloc[0],
                "rule": rule_verdict(None if pd.isna(grp["rule_score"].iloc[0]) else grp["rule_score"].iloc[0]),
                "votes": " · ".join(v or "no vote" for v in votes),
                "majority": majority(votes),
                "unanimous": len(set(valid)) == 1 if len(valid) >= 2 else None,
                "n_judges": len(votes),
                "n_valid": len(valid),
                "judges": sorted(set(grp["judge"])),
                "_votes": votes,
            }
        )
    return pd.DataFrame(rows)


def judge_summary(table: pd.DataFrame) -> dict:
    """Counts, the agreement with Pattern 3 and the judges' disagreement, from a run's
    :func:`verdict_table`."""
    t = table
    if t.empty:
        return {
            "n_citations": 0,
            "agreement": agreement([], []),
            "disagreement": disagreement([]),
            "n_invalid_votes": 0,
            "judges": [],
        }
    return {
        "n_citations": len(t),
        "agreement": agreement(t["majority"].tolist(), t["rule"].tolist()),
        "disagreement": disagreement(t["_votes"].tolist()),
        "n_invalid_votes": int((t["n_judges"] - t["n_valid"]).sum()),
        "judges": sorted(set(t["judges"].explode().dropna())) if "judges" in t else [],
    }

"""Query coverage: which runs lack queries the others have, in one grouped sentence.

The ingest's coverage warning (:func:`coverage_warnings`) and the stability metrics' note
(:func:`coverage_gaps`) say it; :mod:`.catalog` re-exports both. A query id made from the
question's text (``q:`` and 16 hex digits: a Ragas row, a trace without ids) is named with its
question, since the id alone means nothing to a reader.
"""

from __future__ import annotations

import re

import duckdb

from ragaudit_core.logs import derived
from ragaudit_core.logs.selection import natural_key, natural_sorted
from ragaudit_core.wording import counted

__all__ = ["coverage_gaps", "coverage_warnings"]


@derived.memoized("catalog.coverage_gaps/2", derived.JSON)
def coverage_gaps(con: duckdb.DuckDBPyConnection, runs: list[str] | None = None, limit: int = 5) -> str | None:
    """One sentence on which runs lack queries the others have, or None when coverage is equal.

    Runs lacking the same queries are named together (``runs 'a', 'b' each lack the same 3
    queries: …``), so a hundred runs missing one upload's queries read as one clause, not a
    hundred warnings; at most ``limit`` groups and ``limit`` example queries per group are named.
    ``runs``: the runs to compare (default: every run)."""
    sel = "SELECT run_id FROM runs" if runs is None else "SELECT unnest(?::VARCHAR[]) AS run_id"
    params = [] if runs is None else [list(runs)]
    n_runs = len(set(runs)) if runs is not None else con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    if n_runs < 2:
        return None  # one run has every query of the runs compared
    # Counts, not the missing pairs themselves: a run lacks queries only if it has fewer than all
    # of them (a (run, query) pair is stored once), and two runs lack the same queries exactly
    # when they have the same ones — so runs are grouped by a fingerprint of the queries they
    # have. The missing pairs are runs × queries: a log with one run per record has N² of them
    # (5,000 records ran DuckDB out of memory that way, and rolled the ingest back). Fingerprints
    # only for the runs short of queries: equal coverage, the common case, is one count.
    rows = con.execute(
        f"""
        WITH sel AS ({sel}),
             total AS (SELECT count(DISTINCT query_id) AS n FROM records JOIN sel USING (run_id)),
             have AS (SELECT sel.run_id, count(rec.query_id) AS n FROM sel LEFT JOIN records rec USING (run_id)
                      GROUP BY sel.run_id),
             short AS (SELECT have.run_id, total.n - have.n AS missing FROM have, total WHERE have.n < total.n)
        SELECT short.run_id, any_value(short.missing),
               md5(coalesce(string_agg(rec.query_id, chr(31) ORDER BY rec.query_id), ''))
        FROM short LEFT JOIN records rec USING (run_id) GROUP BY short.run_id
        """,
        params,
    ).fetchall()
    if not rows:
        return None
    groups: dict[tuple, list] = {}
    for run, n, fp in rows:
        groups.setdefault((n, fp), []).append(run)
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), -kv[0][0], natural_key(min(kv[1]))))
    clauses = []
    for (n, _fp), members in ordered[:limit]:
        members = natural_sorted(members)
        sample = _missing_sample(con, sel, params, members[0], limit)
        qs = f"{counted(n, 'query')}: " + ", ".join(map(_named, sample)) + (" …" if n > len(sample) else "")
        if len(members) == 1:
            clauses.append(f"run {members[0]!r} lacks {qs}")
        else:
            names = ", ".join(map(repr, members[:limit])) + (
                f" and {len(members) - limit} more" if len(members) > limit else ""
            )
            clauses.append(f"{len(members)} runs ({names}) each lack the same {qs}")
    rest = sum(len(m) for _k, m in ordered[limit:])
    if rest:
        clauses.append(f"{counted(rest, 'more run')} {'lacks' if rest == 1 else 'lack'} other queries")
    return "; ".join(clauses)


def _missing_sample(
    con: duckdb.DuckDBPyConnection, sel: str, params: list, run: str, limit: int
) -> list[tuple[str, str | None]]:
    """The first ``limit`` queries (in id order) of the compared runs that ``run`` lacks, each with
    a text it was asked with (the first in run order; None when no run logged one)."""
    rows = con.execute(
        f"""WITH sel AS ({sel})
            SELECT query_id, arg_min(query, run_id) FILTER (WHERE query IS NOT NULL)
            FROM records JOIN sel USING (run_id)
            WHERE query_id NOT IN (SELECT query_id FROM records WHERE run_id = ?)
            GROUP BY query_id ORDER BY query_id LIMIT {int(limit)}""",
        [*params, run],
    ).fetchall()
    return [(q, t) for q, t in rows]


_HASHED = re.compile(r"q:[0-9a-f]{16}(#[0-9]+)?")
"""A query id made from the question's text (a Ragas row, a trace without ids:
:func:`~ragaudit_core.logs.formats.base.query_id_for`), with its occurrence number."""


def _named(query: tuple[str, str | None]) -> str:
    """A query as the sentence names it: its id, and for an id made from the question's text
    (which means nothing to a reader) the question, shortened: ``'q:ff88…' ("What causes tides?")``."""
    qid, text = query
    if text is None or not _HASHED.fullmatch(qid):
        return repr(qid)
    text = " ".join(text.split())
    return f"{qid!r} (“{text if len(text) <= 60 else text[:59] + '…'}”)"


def coverage_warnings(con: duckdb.DuckDBPyConnection, limit: int = 5) -> list[str]:
    """The ingest report's coverage warning: one grouped sentence (:func:`coverage_gaps`), or none."""
    gaps = coverage_gaps(con, None, limit)
    return (
        []
        if gaps is None
        else [
            f"query coverage differs between runs: {gaps} (the pages compare the queries every compared run has; "
            "`ragaudit stability` asks for --allow-missing to do so)"
        ]
    )

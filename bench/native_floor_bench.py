"""What an ingest done wholly by DuckDB would cost: the floor under item 8 of issue #22.

Issue #22 asks every dialect's ``ragaudit ingest`` at 1M entries with texts to take at most 6×
DuckDB's bare scan of the same files (``SELECT count(*) FROM read_json(...)``). This bench asks
whether any ingest could: it loads the same files (``bench/ingest_bench.py``'s, 12 runs × 8
entries of ~470-character texts) with **DuckDB alone** — one ``INSERT … SELECT`` per call that
decodes the JSON, unnests the evidence, hashes each text with SHA-256 and appends the rows to a
table of the ``evidence`` table's 14 columns — with none of the ingest's work besides: no
validation, no quarantine or line numbers, no duplicate or identity checks, no ``records`` or
``runs`` rows, no canonical ids beyond ``lower(trim(…))``, and no stored overview. It is a lower
bound for a DuckDB-native ingest, not an implementation of one.

Alternating rounds, each command in its own process on a fresh database:

* ``scan``: the target's denominator (``bench/ingest_bench.py``'s scan);
* ``duckdb load``: the SQL below;
* ``ragaudit --no-precompute``: ``ragaudit ingest DIR --db fresh.duckdb --no-precompute``;
* ``ragaudit``: ``ragaudit ingest DIR --db fresh.duckdb`` (with the stored overview the pages open on).

``floor`` = the DuckDB load + the import of ``ragaudit_core`` + the stored overview (``ragaudit``
− ``ragaudit --no-precompute``): what an ingest that kept today's overview would take at best.

    .venv/bin/python bench/native_floor_bench.py --dialect canonical rcc ragas --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ingest_bench import write_logs  # the same files as the ingest bench

ROOT = Path(__file__).resolve().parent.parent
DB = ROOT / "bench" / "out" / "native-floor.duckdb"

_EVIDENCE = """CREATE TABLE evidence (run_id VARCHAR, query_id VARCHAR, position INTEGER, doc_id VARCHAR,
    doc_id_raw VARCHAR, span_hash VARCHAR, chunk_id VARCHAR, text VARCHAR, rank INTEGER, score DOUBLE,
    char_start INTEGER, char_end INTEGER, page INTEGER, metadata VARCHAR)"""
_ROWS = "NULL::VARCHAR, {text}, {rank}, NULL::DOUBLE, NULL::INTEGER, NULL::INTEGER, NULL::INTEGER, NULL::VARCHAR"
_ENTRY = "STRUCT(doc_id VARCHAR, text VARCHAR, rank INTEGER)"

LOADS = {
    # our contract: run and query ids, the evidence objects
    "canonical": f"""INSERT INTO evidence
        SELECT run_id, query_id, i - 1, lower(trim(evidence[i].doc_id)), evidence[i].doc_id,
               sha256(evidence[i].text), {_ROWS.format(text="evidence[i].text", rank="evidence[i].rank")}
        FROM (SELECT run_id, query_id, evidence, generate_subscripts(evidence, 1) AS i
              FROM read_json(?, format='newline_delimited', columns={{'run_id': 'VARCHAR',
                   'query_id': 'VARCHAR', 'query': 'VARCHAR', 'evidence': '{_ENTRY}[]'}}))""",
    # RagCiteCheck's aliases: docs / cited / retrieved objects, contexts as a list of ids
    "rcc": f"""INSERT INTO evidence
        SELECT run_id, query_id, i - 1, lower(trim(coalesce(ev[i].doc_id, ids[i]))),
               coalesce(ev[i].doc_id, ids[i]), sha256(ev[i].text),
               {_ROWS.format(text="ev[i].text", rank="NULL::INTEGER")}
        FROM (SELECT run_id, query_id, coalesce(docs, cited, retrieved) AS ev, contexts AS ids,
                     unnest(range(1, coalesce(len(docs), len(cited), len(retrieved), len(contexts)) + 1)) AS i
              FROM read_json(?, format='newline_delimited', columns={{'run_id': 'VARCHAR',
                   'query_id': 'VARCHAR', 'query': 'VARCHAR', 'docs': '{_ENTRY}[]', 'cited': '{_ENTRY}[]',
                   'retrieved': '{_ENTRY}[]', 'contexts': 'VARCHAR[]'}}))""",
    # Ragas rows: run id from the file name, query id from the question's hash
    "ragas": f"""INSERT INTO evidence
        SELECT regexp_extract(filename, '([^/]*)\\.jsonl$', 1), 'q:' || left(sha256(user_input), 16), i - 1,
               lower(trim(ids[i])), ids[i], sha256(ctx[i]), {_ROWS.format(text="ctx[i]", rank="NULL::INTEGER")}
        FROM (SELECT filename, user_input, retrieved_contexts AS ctx, retrieved_context_ids AS ids,
                     generate_subscripts(retrieved_contexts, 1) AS i
              FROM read_json(?, format='newline_delimited', filename=true, columns={{'user_input': 'VARCHAR',
                   'retrieved_contexts': 'VARCHAR[]', 'retrieved_context_ids': 'VARCHAR[]',
                   'response': 'VARCHAR'}}))""",
}

_LOAD_SCRIPT = """
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("SET threads=2")
con.execute("SET enable_progress_bar=false")
con.execute(sys.argv[2])
con.execute("BEGIN")
con.execute(sys.argv[3], [sys.argv[4:]])
con.execute("COMMIT")
con.execute("CHECKPOINT")
print(con.execute("SELECT count(*) FROM evidence").fetchall()[0][0])
"""
_SCAN_SCRIPT = (
    'import duckdb, sys; duckdb.sql("SET threads=2"); print(duckdb.sql('
    "\"SELECT count(*) FROM read_json(?, format='newline_delimited')\", params=[sys.argv[1:]]).fetchall())"
)


def _fresh() -> None:
    for p in (DB, Path(str(DB) + ".wal")):
        p.unlink(missing_ok=True)


def _timed(cmd: list[str]) -> tuple[float, str]:
    _fresh()
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, (out.strip().splitlines() or [""])[-1]


def run(dialect: str, entries: int, rounds: int) -> dict[str, float]:
    d = write_logs(entries, dialect)
    files = sorted(str(p) for p in d.glob("*.jsonl"))
    exe = str(Path(sys.executable).parent / "ragaudit")
    cmds = {
        "scan": [sys.executable, "-c", _SCAN_SCRIPT, *files],
        "duckdb load": [sys.executable, "-c", _LOAD_SCRIPT, str(DB), _EVIDENCE, LOADS[dialect], *files],
        "import": [sys.executable, "-c", "import ragaudit_core.cli, ragaudit_core.workspace"],
        "ragaudit --no-precompute": [exe, "ingest", str(d), "--db", str(DB), "--no-precompute"],
        "ragaudit": [exe, "ingest", str(d), "--db", str(DB)],
    }
    times: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(rounds):
        for name, cmd in cmds.items():
            wall, out = _timed(cmd)
            times[name].append(wall)
            if name == "duckdb load":
                print(f"  {dialect}: duckdb load stored {int(out):,} rows in {wall:.2f} s", file=sys.stderr)
    _fresh()
    med = {k: statistics.median(v) for k, v in times.items()}
    med["floor"] = med["duckdb load"] + med["import"] + med["ragaudit"] - med["ragaudit --no-precompute"]
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dialect", nargs="+", choices=sorted(LOADS), default=sorted(LOADS))
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    cols = ("dialect", "scan", "duckdb load", "import", "ragaudit --no-precompute", "ragaudit", "floor (ratio)")
    print("| " + " | ".join((*cols, "ragaudit ratio")) + " |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for dialect in args.dialect:
        m = run(dialect, args.entries, args.rounds)
        print(
            f"| {dialect} | {m['scan']:.2f} s | {m['duckdb load']:.2f} s | {m['import']:.2f} s "
            f"| {m['ragaudit --no-precompute']:.2f} s | {m['ragaudit']:.2f} s "
            f"| {m['floor']:.2f} s ({m['floor'] / m['scan']:.1f}×) | {m['ragaudit'] / m['scan']:.1f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()

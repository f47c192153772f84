"""The ``ragaudit`` command line (typer).

Exit codes: 0 success; 2 bad input or usage (the message goes to stderr); ``gate`` exits 1
when the candidate fails an applicable rule.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from . import __version__, store
from .identity import CanonOptions, DocIdMapError, load_docid_map
from .ingest import IngestError, IngestOptions, IngestReport, ingest_paths
from .jsonl import DEFAULT_MAX_LINE_BYTES
from .stability import StabilityError, StabilityOptions, compute_stability, effects_by_change

app = typer.Typer(
    name="ragaudit",
    help="Audit RAG systems from their logs: evidence stability, citation fidelity, attribution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_BAD_INPUT = 2


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _print_ingest(report: IngestReport, max_lines: int = 50) -> None:
    typer.echo(report.summary(), err=True)
    for issue in report.rejected[:max_lines]:
        typer.echo(f"rejected: {issue}", err=True)
    if len(report.rejected) > max_lines:
        typer.echo(f"rejected: … and {len(report.rejected) - max_lines} more (see the quarantine table)", err=True)
    for w in report.warnings[:max_lines]:
        typer.echo(f"warning: {w}", err=True)
    if len(report.warnings) > max_lines:
        typer.echo(f"warning: … and {len(report.warnings) - max_lines} more (see the ingest_warnings table)", err=True)


def _progress():
    last = {"path": None}

    def cb(path: str, n: int) -> None:
        if sys.stderr.isatty() or n % 100000 == 0 or last["path"] != path:
            typer.echo(f"ingest: {path}: {n:,} lines read", err=True)
        last["path"] = path
    return cb


def _ingest_options(case_sensitive: bool, collapse_ws: bool, casefold_spans: bool,
                    max_line_bytes: int) -> IngestOptions:
    return IngestOptions(canon=CanonOptions(case_sensitive=case_sensitive,
                                            collapse_internal_whitespace=collapse_ws),
                         casefold_spans=casefold_spans, max_line_bytes=max_line_bytes)


CaseSensitive = Annotated[bool, typer.Option("--case-sensitive", help="Keep the case of doc ids (default: lower-case).")]
CollapseWs = Annotated[bool, typer.Option("--collapse-internal-whitespace",
                                          help="Collapse whitespace runs inside doc ids to one space.")]
CasefoldSpans = Annotated[bool, typer.Option("--casefold-spans", help="Case-fold cited text before span hashing.")]
MaxLine = Annotated[int, typer.Option("--max-line-bytes", help="Reject lines longer than this many bytes.")]


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="JSONL / JSONL.gz files or folders.")],
    db: Annotated[Path, typer.Option("--db", help="DuckDB file to load into.")] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 2 if any line was rejected.")] = False,
    no_precompute: Annotated[bool, typer.Option(
        "--no-precompute", help="Skip storing the stability overview the dashboard opens on.")] = False,
) -> None:
    """Validate evidence logs and load them into a DuckDB file (one transaction)."""
    db = db or store.default_db_path()
    try:
        con = store.connect(db)
        report = ingest_paths(con, paths, _ingest_options(case_sensitive, collapse_internal_whitespace,
                                                          casefold_spans, max_line_bytes),
                              progress=_progress())
    except (IngestError, store.StoreError) as e:
        _fail(str(e))
    _print_ingest(report)
    if report.n_records and not no_precompute:
        from .derived import precompute

        precompute(con)  # the dashboard's stability overview, stored with the data
    typer.echo(f"database: {db}", err=True)
    if strict and report.rejected:
        raise typer.Exit(EXIT_BAD_INPUT)


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


@app.command()
def stability(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="JSONL files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")] = None,
    docid_map: Annotated[Optional[Path], typer.Option("--docid-map", help="Alias map CSV with headers raw,canonical.")] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Compare every run with this one.")] = None,
    runs: Annotated[Optional[str], typer.Option("--runs", help="Comma-separated runs to include (default: all).")] = None,
    flip_threshold: Annotated[float, typer.Option("--flip-threshold", help="τ: a pair flips when J < τ.")] = 0.5,
    topk: Annotated[Optional[int], typer.Option("--topk", help="Keep only the first K entries of each list.")] = None,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Evaluate the queries all runs share.")] = False,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    casefold_spans: CasefoldSpans = False,
    max_line_bytes: MaxLine = DEFAULT_MAX_LINE_BYTES,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the metrics as JSON here ('-' = stdout).")] = None,
    csv_dir: Annotated[Optional[Path], typer.Option("--csv-dir", help="Write runs.csv, pairs.csv, queries.csv here.")] = None,
) -> None:
    """Document- and span-level evidence stability across runs (seed 000)."""
    if not paths and db is None:
        _fail("give log files or folders, or --db with an ingested database")
    try:
        con = store.connect(db if db is not None else ":memory:")
        if paths:
            report = ingest_paths(con, paths, _ingest_options(case_sensitive, collapse_internal_whitespace,
                                                              casefold_spans, max_line_bytes))
            _print_ingest(report)
        mapping = {}
        if docid_map is not None:
            mapping = load_docid_map(docid_map, case_sensitive=case_sensitive,
                                     collapse_internal_whitespace=collapse_internal_whitespace)
        opts = StabilityOptions(
            runs=[r.strip() for r in runs.split(",") if r.strip()] if runs else None,
            baseline=baseline, flip_threshold=flip_threshold, topk=topk,
            allow_missing=allow_missing, docid_map=mapping)
        result = compute_stability(con, opts)
    except (IngestError, StabilityError, DocIdMapError, store.StoreError) as e:
        _fail(str(e))

    s = result.summary
    lines = [
        f"queries evaluated: {s['n_queries']}   run pairs: {s['n_pairs']}   flip threshold τ = {s['flip_threshold']}",
        f"mean J_doc = {_fmt(s['mean_j_doc'])}   mean J_span = {_fmt(s['mean_j_span'])}   "
        f"gap ratio = {_fmt(s['gap_ratio'])}",
        f"collapse rate (span) = {_fmt(s['collapse_rate'])}   flip rate doc/span = "
        f"{_fmt(s['flip_rate']['doc'])}/{_fmt(s['flip_rate']['span'])}   null transitions = {s['null_transitions']}   "
        f"same docs, different spans = {_fmt(s['same_docs_diff_spans'])}",
    ]
    if s["gap_ratio_note"]:
        lines.append(s["gap_ratio_note"])
    if json_out != "-":
        typer.echo("\n".join(lines))
        table = result.pairs[["run_a", "run_b", "changed", "level", "j_avg", "flip_rate", "null_loss", "null_gain",
                              "collapse_rate", "same_docs_diff_spans"]]
        typer.echo(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        effects = effects_by_change(result.pairs)
        if not effects.empty and set(effects["changed"]) != {"unknown"}:
            typer.echo("\nby what changed between the two runs (pairs weigh equally):")
            typer.echo(effects.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for w in s["warnings"]:
        typer.echo(f"warning: {w}", err=True)
    if json_out:
        payload = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
        if json_out == "-":
            typer.echo(payload)
        else:
            Path(json_out).write_text(payload + "\n", encoding="utf-8")
    if csv_dir:
        csv_dir.mkdir(parents=True, exist_ok=True)
        result.runs.to_csv(csv_dir / "runs.csv", index=False)
        result.pairs.to_csv(csv_dir / "pairs.csv", index=False)
        result.queries.to_csv(csv_dir / "queries.csv", index=False)


def _ints(v: str, what: str) -> list[int]:
    try:
        out = [int(x) for x in v.split(",") if x.strip()]
    except ValueError:
        _fail(f"{what} must be comma-separated integers, got {v!r}")
    if not out:
        _fail(f"{what} is empty")
    return out


def _tqdm_progress():
    from tqdm import tqdm

    bars: dict[str, object] = {}

    def cb(label: str, i: int, n: int) -> None:
        bar = bars.get(label)
        if bar is None:
            bar = bars[label] = tqdm(total=n, desc=label, unit="it", mininterval=2.0)
        bar.update(i - bar.n)
        if i >= n:
            bar.close()
    return cb


@app.command()
def sweep(
    corpus: Annotated[Path, typer.Option("--corpus", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the run files (<run_id>.jsonl.gz).")],
    top_k: Annotated[str, typer.Option("--top-k")] = "5,10,20",
    chunk_size: Annotated[str, typer.Option("--chunk-size")] = "128,256",
    chunk_overlap: Annotated[str, typer.Option("--chunk-overlap")] = "0,32",
    max_queries: Annotated[Optional[int], typer.Option("--max-queries", help="Sample this many queries.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the query sample.")] = 0,
    answers: Annotated[str, typer.Option("--answers", help="Runs to answer, e.g. base,o0,c128.")] = "",
    answer_queries: Annotated[int, typer.Option("--answer-queries", help="Answer the first N queries.")] = 60,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 96,
    embedder: Annotated[Optional[str], typer.Option("--embedder", help="Model id or folder (default: packaged MiniLM).")] = None,
    generator: Annotated[Optional[str], typer.Option("--generator", help="Model id, folder or .gguf (default: packaged SmolLM2).")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    split: Annotated[str, typer.Option("--split")] = "test",
) -> None:
    """Run the retrieval harness over a grid of configurations (seed 000, appendix A)."""
    from .harness import SweepError, run_sweep
    from .models import ModelLoadError

    try:
        res = run_sweep(corpus, out, top_ks=_ints(top_k, "--top-k"), chunk_sizes=_ints(chunk_size, "--chunk-size"),
                        chunk_overlaps=_ints(chunk_overlap, "--chunk-overlap"), max_queries=max_queries, seed=seed,
                        embedder=embedder, generator=generator,
                        answers=[a for a in answers.split(",") if a.strip()], answer_queries=answer_queries,
                        max_new_tokens=max_new_tokens, device=device, split=split, progress=_tqdm_progress())
    except (SweepError, ModelLoadError) as e:
        _fail(str(e))
    typer.echo(f"wrote {len(res.files)} run files for {res.n_queries} queries to {out}")
    typer.echo(json.dumps({"chunks": res.n_chunks, "timings_s": {k: round(v, 1) for k, v in res.timings.items()}}))


@app.command()
def provenance(
    corpus: Annotated[Path, typer.Option("--corpus", help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for prov-<run_id>.jsonl.gz.")],
    configs: Annotated[str, typer.Option("--configs", help="Configurations, e.g. base,c128 or k10-c256-o32.")] = "base,c128",
    queries: Annotated[int, typer.Option("--queries", help="Run the first N answerable queries.")] = 60,
    budget: Annotated[int, typer.Option("--budget", help="Context budget in generator tokens.")] = 1024,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 96,
    embedder: Annotated[Optional[str], typer.Option("--embedder")] = None,
    generator: Annotated[Optional[str], typer.Option("--generator")] = None,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
) -> None:
    """Run the cited RAG pipeline and write its provenance logs (seed 002)."""
    from .citation_pipeline import run_provenance
    from .harness import SweepError
    from .models import ModelLoadError

    try:
        res = run_provenance(corpus, out, configs=[c.strip() for c in configs.split(",") if c.strip()],
                             n_queries=queries, budget=budget, max_new_tokens=max_new_tokens, embedder=embedder,
                             generator=generator, device=device, progress=_tqdm_progress())
    except (SweepError, ModelLoadError, FileNotFoundError) as e:
        _fail(str(e))
    typer.echo(json.dumps(res))


@app.command()
def fidelity(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Provenance JSONL files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")] = None,
    rules: Annotated[Optional[Path], typer.Option("--rules", help="TOML with a [fidelity] table of thresholds.")] = None,
    runs: Annotated[Optional[str], typer.Option("--runs", help="Comma-separated runs (default: all with provenance).")] = None,
    canary_pair: Annotated[Optional[str], typer.Option("--canary", help="BASELINE,CANDIDATE: Mann-Whitney U on CFS.")] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write summaries, alerts and rows as JSON ('-' = stdout).")] = None,
) -> None:
    """Citation fidelity from provenance logs: CFS, stage survival, alerts (seed 002)."""
    from .fidelity import FidelityRules, canary, fidelity_runs, provenance_runs

    if not paths and db is None:
        _fail("give provenance log files or folders, or --db with an ingested database")
    try:
        the_rules = FidelityRules.from_toml(rules) if rules else FidelityRules()
    except (OSError, ValueError) as e:
        _fail(f"{rules}: {e}")
    try:
        con = store.connect(db if db is not None else ":memory:")
        if paths:
            report = ingest_paths(con, paths, _ingest_options(case_sensitive, collapse_internal_whitespace, False,
                                                              DEFAULT_MAX_LINE_BYTES))
            _print_ingest(report)
        available = provenance_runs(con)
        if not available:
            _fail("no provenance records are loaded (a provenance record has a \"nodes\" list; "
                  "see docs/provenance-contract.md)")
        chosen = [r.strip() for r in runs.split(",") if r.strip()] if runs else available
        unknown = [r for r in chosen if r not in available]
        if unknown:
            _fail(f"no provenance for run(s) {', '.join(map(repr, unknown))}; runs are: {', '.join(map(repr, available))}")
        results = fidelity_runs(con, chosen, the_rules)
    except (IngestError, store.StoreError) as e:
        _fail(str(e))
    payload: dict = {"rules": the_rules.model_dump(), "runs": {}}
    lines = []
    for run, r in results.items():
        s = r.summary
        payload["runs"][run] = {"summary": s, "alerts": r.alerts,
                                "queries": json.loads(r.queries.to_json(orient="records")),
                                "citations": json.loads(r.citations.to_json(orient="records")),
                                "findings": json.loads(r.findings.to_json(orient="records"))}
        lines.append(f"run {run}: {s['n_queries']} queries, {s['n_with_citations']} with citations, "
                     f"{s['n_citations']} citations, parse failures {s['n_parse_failures']}"
                     f" ({_fmt(s['parse_failure_rate'])})")
        lines.append(f"  CFS mean {_fmt(s['cfs_mean'])}  p50 {_fmt(s['cfs_p50'])}  p95 {_fmt(s['cfs_p95'])}  "
                     f"p99 {_fmt(s['cfs_p99'])}   product-form CFS (queries with ground truth) "
                     f"{_fmt(s['cfs_product_mean'])}")
        lines.append("  stage survival: " + "  ".join(f"{k} {_fmt(v)}" for k, v in s["stage_survival"].items()))
        if s["outcomes"]:
            lines.append("  outcomes: " + ", ".join(f"{k} {v}" for k, v in s["outcomes"].items()))
        if s["failure_modes"]:
            lines.append("  failure modes: " + ", ".join(f"{k} {v}" for k, v in s["failure_modes"].items()))
        for a in r.alerts:
            if a["status"] == "alert":
                lines.append(f"  ALERT {a['rule']}: {a['message']}")
    if canary_pair:
        parts = [p.strip() for p in canary_pair.split(",")]
        if len(parts) != 2 or any(p not in results for p in parts):
            _fail("--canary takes BASELINE,CANDIDATE, two of the selected runs")
        c = canary(results[parts[0]].queries["cfs"].dropna(), results[parts[1]].queries["cfs"].dropna(),
                   alpha=the_rules.canary_alpha)
        payload["canary"] = {"baseline": parts[0], "candidate": parts[1], **c}
        lines.append(f"canary {parts[0]} → {parts[1]}: Mann-Whitney U = {_fmt(c['u'])}, p = {_fmt(c['p_value'])}, "
                     + ("significant" if c["significant"] else "not significant" if c["significant"] is False
                        else c.get("note", "")) + f" at α = {the_rules.canary_alpha}")
    if json_out != "-":
        typer.echo("\n".join(lines))
    if json_out:
        text = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
        if json_out == "-":
            typer.echo(text)
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")


@app.command()
def attribute(
    db: Annotated[Path, typer.Option("--db", help="DuckDB file holding the run's evidence logs (with texts).")],
    run: Annotated[str, typer.Option("--run", help="The run whose logged queries and documents are explained.")],
    queries: Annotated[Optional[str], typer.Option("--queries", help="Comma-separated query ids.")] = None,
    all_queries: Annotated[bool, typer.Option("--all", help="Every query of the run that has texts.")] = False,
    method: Annotated[str, typer.Option("--method", help="auto, exact, kernel, mc or pmc.")] = "auto",
    n_samples: Annotated[int, typer.Option("--n-samples", help="N coalitions (kernel, mc, pmc).")] = 20,
    n_fits: Annotated[int, typer.Option("--n-fits", help="M Monte-Carlo fits (mc, pmc).")] = 200,
    max_docs: Annotated[int, typer.Option("--max-docs", help="Explain the first K documents.")] = 5,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens")] = 48,
    ig_steps: Annotated[int, typer.Option("--ig-steps", help="L Riemann steps of IG.")] = 100,
    ig_baseline: Annotated[str, typer.Option("--ig-baseline", help="unk, mask, pad or zeros.")] = "unk",
    shuffle: Annotated[bool, typer.Option("--shuffle", help="Also attribute with the documents shuffled (seeded).")] = False,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    retriever: Annotated[Optional[str], typer.Option("--retriever", help="Encoder model id or folder.")] = None,
    generator: Annotated[Optional[str], typer.Option("--generator", help="Causal LM id, folder or .gguf.")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the results as JSON ('-' = stdout).")] = None,
) -> None:
    """Explain logged queries: IG on the retriever, Shapley on the generator, WARG (seed 001)."""
    from tqdm import tqdm

    from .attribution import AttributionError, batch_tables, explain_query
    from .models import DEFAULT_EMBEDDER, ModelLoadError, load_embedder, load_generator

    if method not in ("auto", "exact", "kernel", "mc", "pmc"):
        _fail(f"--method must be auto, exact, kernel, mc or pmc, not {method!r}")
    if ig_baseline not in ("unk", "mask", "pad", "zeros"):
        _fail(f"--ig-baseline must be unk, mask, pad or zeros, not {ig_baseline!r}")
    if not db.exists():
        _fail(f"{db}: no such database; load logs first with `ragaudit ingest PATH... --db {db}`")
    try:
        con = store.connect(db)
    except store.StoreError as e:
        _fail(str(e))
    known = [q for (q,) in con.execute(
        "SELECT DISTINCT query_id FROM records WHERE run_id = ? ORDER BY query_id", [run]).fetchall()]
    if not known:
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        _fail(f"run {run!r} not found; runs are: {', '.join(map(repr, runs))}")
    if all_queries:
        qids = known
    elif queries:
        qids = [q.strip() for q in queries.split(",") if q.strip()]
        missing = [q for q in qids if q not in set(known)]
        if missing:
            _fail(f"run {run!r} has no quer{'y' if len(missing) == 1 else 'ies'} {', '.join(map(repr, missing))}")
    else:
        _fail("name the queries (--queries q1,q2) or pass --all")
    loaded: dict = {}

    def emb():
        if "e" not in loaded:
            loaded["e"] = load_embedder(retriever, device=device)
        return loaded["e"]

    def gen():
        if "g" not in loaded:
            loaded["g"] = load_generator(generator, device=device)
        return loaded["g"]

    out = []
    bar = tqdm(qids, desc=f"attribute {run}", unit="query")
    try:
        for q in bar:
            out += explain_query(con, run, q, embedder=emb, generator=gen, retriever_name=retriever or DEFAULT_EMBEDDER,
                                 generator_name=generator or "SmolLM2-135M-Instruct", method=method,
                                 n_samples=n_samples, n_fits=n_fits, seed=seed, max_docs=max_docs,
                                 max_new_tokens=max_new_tokens, ig_steps=ig_steps, ig_baseline=ig_baseline,
                                 shuffle=shuffle)
    except (AttributionError, ModelLoadError, ValueError) as e:
        _fail(str(e))
    for r in out:
        typer.echo(f"{r['query_id']}: {r['method']}  generator ranking "
                   f"{' > '.join(str(i + 1) for i in r['generator_ranking'])}  "
                   f"WARG(0.5) {r['warg']['0.5']:.3f}  WARG(0.9) {r['warg']['0.9']:.3f}  "
                   f"wasted retrieval {r['wasted_retrieval']}  noise distraction {r['noise_distraction']}")
    tables = batch_tables(con, run)
    if len(qids) > 1 and tables:
        typer.echo("\nfailure rates (stored results of the run):")
        typer.echo(tables["failure"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        typer.echo("\nmean WARG by p:")
        typer.echo(tables["warg"].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    if json_out:
        payload = {"results": out, "tables": {k: json.loads(v.to_json(orient="records")) for k, v in tables.items()}}
        text = json.dumps(payload, ensure_ascii=False, indent=2)
        if json_out == "-":
            typer.echo(text)
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")


def _resolve_run(name: str, runs: list[str]) -> str:
    if name in runs:
        return name
    from .harness import RunConfig, SweepError, parse_run_alias

    grid = []
    for r in runs:
        try:
            parts = dict((p[0], int(p[1:])) for p in r.split("-"))
            grid.append(RunConfig(parts["k"], parts["c"], parts["o"]))
        except (KeyError, ValueError, IndexError):
            continue
    try:
        return parse_run_alias(name, grid).run_id
    except (SweepError, KeyError, ValueError):
        _fail(f"run {name!r} not found; runs are: {', '.join(map(repr, runs))}")


@app.command()
def probe(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Run files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file.")] = None,
    pair: Annotated[Optional[list[str]], typer.Option("--pair", help="A:B (run ids or aliases base, o0, c128, …); repeatable.")] = None,
    flip_threshold: Annotated[float, typer.Option("--flip-threshold", help="τ for silent jitter (J_span < τ).")] = 0.5,
    embedder: Annotated[Optional[str], typer.Option("--embedder", help="SBERT model (default: packaged MiniLM).")] = None,
    device: Annotated[str, typer.Option("--device")] = "auto",
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write rows and summaries as JSON ('-' = stdout).")] = None,
) -> None:
    """The evidence–answer probe: answer similarity vs J_span (seed 000, Table 1)."""
    from .models import ModelLoadError, load_embedder
    from .probe import DEFAULT_SIMILARITY_MODEL, probe_pair

    if not paths and db is None:
        _fail("give log files or folders, or --db with an ingested database")
    try:
        con = store.connect(db if db is not None else ":memory:")
        if paths:
            _print_ingest(ingest_paths(con, paths))
        answered = [r for (r,) in con.execute(
            "SELECT DISTINCT run_id FROM records WHERE answer IS NOT NULL ORDER BY run_id").fetchall()]
        runs = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
        if pair:
            pairs = []
            for p in pair:
                if ":" not in p:
                    _fail(f"--pair must be A:B, got {p!r}")
                a, b = p.split(":", 1)
                pairs.append((_resolve_run(a, runs), _resolve_run(b, runs)))
        else:
            if len(answered) < 2:
                _fail("fewer than two runs carry answers; nothing to probe")
            base = "k10-c256-o32" if "k10-c256-o32" in answered else answered[0]
            pairs = [(base, r) for r in answered if r != base]
        loaded: list = []

        def encoder():  # loaded only when a similarity is not stored in the database yet
            if not loaded:
                loaded.append(load_embedder(embedder, device=device))
            return loaded[0]

        model_key = embedder or DEFAULT_SIMILARITY_MODEL
        results = [probe_pair(con, a, b, encoder, tau=flip_threshold, model=model_key) for a, b in pairs]
    except (IngestError, StabilityError, store.StoreError, ModelLoadError) as e:
        _fail(str(e))
    if json_out != "-":
        typer.echo(f"{'pair':40} {'n':>4} {'J_span':>7} {'Sim':>6} {'Drift<0.9':>9} {'Drift<0.8':>9} {'rho':>7}")
        for r in results:
            s = r.summary
            typer.echo(f"{s['pair']:40} {s['n_queries']:>4} {_fmt(s['mean_j_span']):>7} {_fmt(s['mean_sim']):>6} "
                       f"{s['drift_0.9']:>9} {s['drift_0.8']:>9} {_fmt(s['spearman_rho']):>7}")
    if json_out:
        payload = json.dumps([{"summary": r.summary, "rows": json.loads(r.rows.to_json(orient="records"))}
                              for r in results], indent=2, ensure_ascii=False)
        if json_out == "-":
            typer.echo(payload)
        else:
            Path(json_out).write_text(payload + "\n", encoding="utf-8")


EXIT_GATE_FAILED = 1


def _open_logs(paths, db, what: str = "log files or folders"):
    """A connection to ``db``, or an in-memory database with ``paths`` ingested."""
    if not paths and db is None:
        _fail(f"give {what}, or --db with an ingested database")
    if db is not None and not paths and not Path(db).exists():
        _fail(f"{db}: no such database file (ingest logs first: ragaudit ingest PATH... --db {db})")
    con = store.connect(db if db is not None else ":memory:")
    if paths:
        _print_ingest(ingest_paths(con, paths))
    return con


@app.command()
def gate(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Log files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")] = None,
    baseline: Annotated[str, typer.Option("--baseline", help="The run in production (id or alias).")] = ...,
    candidate: Annotated[str, typer.Option("--candidate", help="The run that would replace it (id or alias).")] = ...,
    rules: Annotated[Optional[Path], typer.Option("--rules", help="TOML rules (preset and/or [[rule]] tables).")] = None,
    preset: Annotated[str, typer.Option("--preset", help="Rule preset when --rules is not given: default or strict.")] = "default",
    flip_threshold: Annotated[float, typer.Option("--flip-threshold", help="τ: a query flips when J < τ.")] = 0.5,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the verdict as JSON here ('-' = stdout).")] = None,
) -> None:
    """Deploy gate: may CANDIDATE replace BASELINE? Exit 0 pass, 1 fail, 2 bad input."""
    from .gate import PRESETS, load_rules, review, verdict_table

    if rules is not None:
        try:
            the_rules = load_rules(rules)
        except FileNotFoundError:
            _fail(f"{rules}: no such rules file")
        except (OSError, ValueError) as e:    # tomllib.TOMLDecodeError and pydantic errors are ValueErrors
            _fail(f"{rules}: {e}")
    elif preset in PRESETS:
        the_rules = PRESETS[preset]
    else:
        _fail(f"--preset must be one of {', '.join(PRESETS)}, not {preset!r}")
    if not the_rules:
        _fail("no rules to evaluate")
    try:
        con = _open_logs(paths, db)
        from .catalog import all_run_ids

        runs = all_run_ids(con)
        if not runs:
            _fail("no runs are loaded")
        verdict = review(con, the_rules, _resolve_run(baseline, runs), _resolve_run(candidate, runs),
                         tau=flip_threshold)
    except (IngestError, StabilityError, store.StoreError) as e:
        _fail(str(e))
    if json_out != "-":
        typer.echo(verdict_table(verdict))
    if json_out:
        payload = json.dumps(verdict.model_dump(mode="json"), indent=2, ensure_ascii=False)
        if json_out == "-":
            typer.echo(payload)
        else:
            Path(json_out).write_text(payload + "\n", encoding="utf-8")
    raise typer.Exit(0 if verdict.status == "pass" else EXIT_GATE_FAILED)


@app.command()
def report(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Log files or folders to ingest first.")] = None,
    db: Annotated[Optional[Path], typer.Option("--db", help="DuckDB file (default: in-memory when PATHs are given).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write the PDF.")] = Path("audit.pdf"),
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Run in production (for the verdict).")] = None,
    candidate: Annotated[Optional[str], typer.Option("--candidate", help="Run that would replace it.")] = None,
    rules: Annotated[Optional[Path], typer.Option("--rules", help="Gate rules TOML (default: the default preset).")] = None,
    flip_threshold: Annotated[float, typer.Option("--flip-threshold", help="τ: a query flips when J < τ.")] = 0.5,
    no_probe: Annotated[bool, typer.Option("--no-probe", help="Do not load SBERT for answer similarities that are "
                                           "not stored yet (their pairs are left out).")] = False,
    device: Annotated[str, typer.Option("--device", help="Device for the SBERT model: auto, cpu or cuda.")] = "auto",
) -> None:
    """The PDF audit report: cover, verdict, stability, worst queries, probe, fidelity, attributions, methods."""
    from .gate import load_rules
    from .report import ReportError, ReportOptions, build_report

    if not out.parent.is_dir():
        _fail(f"{out}: the folder {out.parent} does not exist")
    the_rules, source = None, "default preset"
    if rules is not None:
        try:
            the_rules, source = load_rules(rules), str(rules)
        except FileNotFoundError:
            _fail(f"{rules}: no such rules file")
        except (OSError, ValueError) as e:
            _fail(f"{rules}: {e}")
    try:
        con = _open_logs(paths, db)
        from .catalog import all_run_ids

        runs = all_run_ids(con)
        if not runs:
            _fail("no runs are loaded")
        pair = [None if r is None else _resolve_run(r, runs) for r in (baseline, candidate)]

        def embedder():
            from .models import load_embedder

            return load_embedder(None, device=device)

        opts = ReportOptions(baseline=pair[0], candidate=pair[1], rules=the_rules, rules_source=source,
                             tau=flip_threshold, probe=not no_probe, embedder=embedder,
                             db_label=str(db) if db is not None else ", ".join(map(str, paths or [])))
        _blob, data = build_report(con, out, opts, progress=lambda m: typer.echo(f"report: {m}…", err=True))
    except (IngestError, StabilityError, store.StoreError, ReportError) as e:
        _fail(str(e))
    except OSError as e:
        _fail(f"{out}: {e}")
    verdict = f"; verdict {data.verdict.status.upper()}" if data.verdict is not None else ""
    typer.echo(f"wrote {out} ({data.timings.get('pages', '?')} pages{verdict})")


@app.command()
def version() -> None:
    """Print the version."""
    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

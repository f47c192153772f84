"""``ragaudit fidelity``: citation fidelity from provenance logs (seed 002)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from ragaudit_core.cli.common import (
    CaseSensitive,
    CollapseWs,
    DbOrMemory,
    aliased,
    emit_json,
    fail,
    fmt,
    ingest_options,
    open_logs,
)
from ragaudit_core.cli.terminal import say
from ragaudit_core.fidelity import FidelityRules, RunFidelity, canary, fidelity_runs, provenance_runs
from ragaudit_core.logs.contracts import describe_validation_error
from ragaudit_core.wording import counted, listed

__all__ = ["fidelity"]


def fidelity(
    paths: Annotated[
        list[Path] | None, typer.Argument(help="Provenance JSONL files or folders to ingest first.", readable=False)
    ] = None,
    db: DbOrMemory = None,
    rules: Annotated[Path | None, typer.Option("--rules", help="TOML with a [fidelity] table of thresholds.")] = None,
    runs: Annotated[
        str | None, typer.Option("--runs", help="Comma-separated runs (default: all with provenance).")
    ] = None,
    canary_pair: Annotated[
        str | None, typer.Option("--canary", help="BASELINE,CANDIDATE: Mann-Whitney U on CFS.")
    ] = None,
    case_sensitive: CaseSensitive = False,
    collapse_internal_whitespace: CollapseWs = False,
    json_out: Annotated[
        str | None, typer.Option("--json", help="Write summaries, alerts and rows as JSON ('-' = stdout).")
    ] = None,
) -> None:
    """Citation fidelity from provenance logs: CFS, stage survival, alerts (seed 002)."""
    try:
        the_rules = FidelityRules.from_toml(rules) if rules else FidelityRules()
    except ValidationError as e:  # (a ValueError too) as a sentence naming each field, not pydantic's dump
        fail(f"{rules}: [fidelity] {describe_validation_error(e)}")
    except (OSError, ValueError) as e:
        fail(f"{rules}: {e}")
    con = open_logs(
        paths,
        db,
        what="provenance log files or folders",
        options=ingest_options(case_sensitive, collapse_internal_whitespace),
    )
    available = provenance_runs(con)
    if not available:
        fail(
            'no provenance records are loaded (a provenance record has a "nodes" list; see docs/provenance-contract.md)'
        )
    chosen = aliased([r.strip() for r in runs.split(",") if r.strip()], available) if runs else available
    unknown = [r for r in chosen if r not in available]
    if unknown:
        fail(
            f"no provenance for {listed('run', list(map(repr, unknown)))}; runs are: {', '.join(map(repr, available))}"
        )
    results = fidelity_runs(con, chosen, the_rules)
    payload: dict = {"rules": the_rules.model_dump(), "runs": {}}
    lines = []
    for run, r in results.items():
        payload["runs"][run] = _run_payload(r)
        lines += _run_lines(run, r)
    if canary_pair:
        parts = aliased([p.strip() for p in canary_pair.split(",")], available)
        if len(parts) != 2 or any(p not in results for p in parts):
            fail("--canary takes BASELINE,CANDIDATE, two of the selected runs")
        c = canary(
            results[parts[0]].queries["cfs"].dropna(),
            results[parts[1]].queries["cfs"].dropna(),
            alpha=the_rules.canary_alpha,
        )
        payload["canary"] = {"baseline": parts[0], "candidate": parts[1], **c}
        lines.append(
            f"canary {parts[0]} → {parts[1]}: Mann-Whitney U = {fmt(c['u'])}, p = {fmt(c['p_value'])}, "
            + (
                "significant"
                if c["significant"]
                else "not significant"
                if c["significant"] is False
                else c.get("note", "")
            )
            + f" at α = {the_rules.canary_alpha}"
        )
    if json_out != "-":
        for line in lines:
            say(line)
    emit_json(payload, json_out, default=str)


def _run_payload(r: RunFidelity) -> dict:
    return {
        "summary": r.summary,
        "alerts": r.alerts,
        "queries": json.loads(r.queries.to_json(orient="records")),
        "citations": json.loads(r.citations.to_json(orient="records")),
        "findings": json.loads(r.findings.to_json(orient="records")),
    }


def _run_lines(run: str, r: RunFidelity) -> list[str]:
    s = r.summary
    lines = [
        f"run {run}: {counted(s['n_queries'], 'query')}, {s['n_with_citations']:,} with citations, "
        f"{counted(s['n_citations'], 'citation')}, "
        f"parse failures {s['n_parse_failures']} ({fmt(s['parse_failure_rate'])})",
        f"  CFS mean {fmt(s['cfs_mean'])}  p50 {fmt(s['cfs_p50'])}  p95 {fmt(s['cfs_p95'])}  "
        f"p99 {fmt(s['cfs_p99'])}   product-form CFS (queries with ground truth) {fmt(s['cfs_product_mean'])}",
        "  stage survival: " + "  ".join(f"{k} {fmt(v)}" for k, v in s["stage_survival"].items()),
    ]
    if s["outcomes"]:
        lines.append("  outcomes: " + ", ".join(f"{k} {v}" for k, v in s["outcomes"].items()))
    if s["failure_modes"]:
        lines.append("  failure modes: " + ", ".join(f"{k} {v}" for k, v in s["failure_modes"].items()))
    lines += [f"  ALERT {a['rule']}: {a['message']}" for a in r.alerts if a["status"] == "alert"]
    return lines

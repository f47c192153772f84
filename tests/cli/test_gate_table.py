"""``ragaudit gate`` draws its table with the rules' display labels, as the PDF does (``J_avg, doc ≥
0.5``, not the key ``j_avg,doc >= 0.5``); ``--json`` keeps the keys, which other programs read."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ragaudit_core.cli import app
from ragaudit_core.review.gate import DEFAULT_RULES, dump_rules
from ragaudit_core.review.labels import rule_label


def test_gate_table_shows_rule_labels_and_json_keeps_keys(three_runs, tmp_path):
    rules = tmp_path / "no-floor.toml"  # the default rules' arithmetic on three queries
    rules.write_text(dump_rules([r.model_copy(update={"min_queries": None}) for r in DEFAULT_RULES]))
    out = tmp_path / "v.json"
    args = [str(three_runs), "--baseline", "A", "--candidate", "B", "--rules", str(rules), "--json", str(out)]
    r = CliRunner().invoke(app, ["gate", *args])
    assert r.exit_code == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].split() == ["status", "rule", "value", "why"]
    assert lines[3].startswith("FAIL") and "null loss, doc ≤ 0.01" in lines[3] and "0.333" in lines[3]
    assert "J_avg, doc ≥ 0.5" in r.stdout and "Δ CFS p95 (tail reading) ≥ −0.15" in r.stdout
    assert "j_avg,doc >= 0.5" not in r.stdout and "null_loss" not in r.stdout
    for rule in DEFAULT_RULES:
        assert rule_label(rule) in r.stdout
    data = json.loads(out.read_text())
    assert {x["rule"]["name"] for x in data["results"]} == {rule.name for rule in DEFAULT_RULES}
    assert "j_avg,doc >= 0.5" in {x["rule"]["name"] for x in data["results"]}

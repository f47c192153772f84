"""Text from the user's disk or logs never reaches the terminal raw.

A file named ``"\\x1b]0;pwned\\x07.jsonl"`` or ``"a\\rerror: fake.jsonl"`` was echoed as it is by
``ragaudit ingest`` (its progress, its rejected lines, its refusals), and a run id holding an escape
sequence by every command that prints run ids (the stability table, the gate's verdict): a hostile
name could retitle, clear or rewrite the auditor's terminal, or forge a line of the report. Every
line the CLI prints now goes through one function (:func:`ragaudit_core.cli.terminal.shown`), which
writes control and format characters as their escapes (``\\x1b``, ``\\r``, ``\\u202e``) and leaves
every ordinary name (``报告.csv``, ``résumé``, Persian with its zero-width non-joiner) as it is.
Run in-process with colour on (``color=True``): without it click strips CSI sequences from output
that is not a terminal, and a test would pass for the wrong reason."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragaudit_core.cli import app
from ragaudit_core.cli.terminal import json_shown, shown
from tests.helpers import ev, write_jsonl

_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]")


def _invoke(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args], color=True)


@pytest.mark.parametrize(
    "raw, seen",
    [
        ("\x1b[31mred", "\\x1b[31mred"),
        ("a\rb", "a\\rb"),
        ("a\nb\tc", "a\\nb\\tc"),
        ("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07"),
        ("csi\x9b2J", "csi\\x9b2J"),
        ("del\x7f", "del\\x7f"),
        ("abc\u202efed", "abc\\u202efed"),
        ("line\u2028sep", "line\\u2028sep"),
        ("\ufeffbom", "\\ufeffbom"),
        ("bad\udcffbyte", "bad\\udcffbyte"),
        ("tag\U000e0041", "tag\\U000e0041"),
    ],
)
def test_control_and_format_characters_are_shown_as_escapes(raw, seen):
    assert shown(raw) == seen


@pytest.mark.parametrize(
    "name",
    [
        "报告.csv",
        "résumé.jsonl",
        "रिपोर्ट.csv",
        "می\u200cخواهم.jsonl",  # Persian: the zero-width non-joiner is part of the word
        "👨\u200d👩\u200d👧.json",  # an emoji sequence joined by zero-width joiners
        "a b\u00a0c",  # a no-break space
        "k10-c256-o32",
        "",
    ],
)
def test_ordinary_names_are_shown_unchanged(name):
    assert shown(name) == name


def test_lines_keep_only_their_own_line_breaks():
    assert shown("a\x1b\nb\rc", lines=True) == "a\\x1b\nb\\rc"


def test_json_keeps_its_meaning_and_loses_its_controls():
    payload = {"run": "x\x1b]0;t\x07\u202e\x9b\u2028\udcff", "ok": "报告"}
    text = json_shown(json.dumps(payload, ensure_ascii=False))
    assert not _RAW.search(text) and "报告" in text
    assert json.loads(text) == payload


def test_ingest_shows_hostile_file_names_escaped(tmp_path):
    """Progress, rejected lines, a refused file and the failure summary all name the file: none may
    carry its control characters to the terminal; an ordinary non-ASCII name prints as it is."""
    logs = tmp_path / "logs"
    evil = logs / "t\x1b]0;pwned\x07.jsonl"
    write_jsonl(evil, [{"run_id": "a", "query_id": "q1", "evidence": ["d1"]}])
    with open(evil, "a", encoding="utf-8") as f:
        f.write("not json\n")
    forged = logs / "x\rerror: all good\x1b[2K.jsonl"
    forged.write_text("{broken\n", encoding="utf-8")
    (logs / "报告.jsonl").write_text(json.dumps({"run_id": "b", "query_id": "q1", "evidence": ["d1"]}) + "\n")
    r = _invoke("ingest", logs, "--db", tmp_path / "a.duckdb")
    out = r.stdout + r.stderr
    assert r.exit_code == 2, out
    assert not _RAW.search(out), [ln for ln in out.splitlines() if _RAW.search(ln)]
    assert "t\\x1b]0;pwned\\x07.jsonl line 2: " in out
    assert "x\\rerror: all good\\x1b[2K.jsonl" in out
    assert "报告.jsonl" in out


def test_run_ids_from_logs_are_shown_escaped_by_stability_and_gate(tmp_path):
    evil = "A\x1b[2J\x1b]0;pwned\x07"
    logs = tmp_path / "logs"
    write_jsonl(
        logs / "runs.jsonl",
        [
            {"run_id": run, "query_id": q, "evidence": [ev("d1", "s1"), ev(d, d)]}
            for run, d in ((evil, "d2"), ("B", "d3"))
            for q in ("q1", "q2")
        ],
    )
    db = tmp_path / "s.duckdb"
    assert _invoke("ingest", logs, "--db", db).exit_code == 0
    stab = _invoke("stability", "--db", db)
    assert stab.exit_code == 0, stab.stdout + stab.stderr
    gate = _invoke("gate", "--db", db, "--baseline", "B", "--candidate", evil)
    assert gate.exit_code in (0, 1, 3), gate.stdout + gate.stderr
    for r in (stab, gate):
        assert not _RAW.search(r.stdout + r.stderr), r.stdout + r.stderr
    assert "A\\x1b[2J\\x1b]0;pwned\\x07" in stab.stdout and "A\\x1b[2J\\x1b]0;pwned\\x07" in gate.stdout


def test_the_cli_prints_only_through_the_terminal_module():
    """One place writes to the terminal: a new ``typer.echo`` or ``print`` elsewhere in the CLI would
    bypass the escaping."""
    cli = Path(__file__).resolve().parents[2] / "ragaudit_core" / "cli"
    offenders = [
        f"{p.name}:{i}"
        for p in sorted(cli.glob("*.py"))
        if p.name != "terminal.py"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\b(typer\.echo|click\.echo|print)\(|sys\.std(out|err)\.write", line)
    ]
    assert offenders == []


def test_json_output_writes_an_undefined_figure_as_null_never_a_bare_nan(capsys):
    """IG completeness of an empty text (s = s⁰) is undefined; ``json.dumps`` would write ``NaN``,
    which jq and JavaScript refuse. Every non-finite float leaves as null."""
    import json
    import math

    from ragaudit_core.cli.common import emit_json

    emit_json({"completeness": [math.nan, 1.0], "ratio": math.inf, "n": 2, "name": "NaN"}, "-")

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    out = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert out == {"completeness": [None, 1.0], "ratio": None, "n": 2, "name": "NaN"}


def test_a_reader_that_stops_reading_leaves_the_command_its_own_exit_status(tmp_path):
    """`ragaudit gate … | head -1`: head closes the pipe after one line; the next write raised
    BrokenPipeError and a passing gate exited 1 — 'fail' to CI running bash with -o pipefail. The
    writes after a closed pipe go nowhere and the command ends as it would have."""
    import subprocess
    import sys

    script = (
        "import typer\n"
        "from ragaudit_core.cli.terminal import say\n"
        "for i in range(20000):\n"
        "    say(f'line {i} ' + 'x' * 60)\n"
        "raise SystemExit(3)\n"
    )
    proc = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f'{sys.executable} -c "$SCRIPT" | head -1'],
        env={"SCRIPT": script, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout == "line 0 " + "x" * 60 + "\n"
    assert proc.returncode == 3, proc.stderr  # the command's own status, not 1 (or 120) from the pipe
    assert "BrokenPipeError" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_help_keeps_brackets_and_shows_flags_as_flags():
    """Rich markup took '[fidelity]' and '[[rule]]' in help texts for style tags and dropped them,
    and showed every flag as taking a value ('--allow-missing <bool>': '--allow-missing true' then
    read 'true' as a log path). Plain help: the text as written, flags without a value."""
    from typer.testing import CliRunner

    from ragaudit_core.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["fidelity", "--help"], terminal_width=200).output
    assert "TOML with a [fidelity] table of thresholds." in out
    assert "[[rule]] tables" in runner.invoke(app, ["gate", "--help"], terminal_width=200).output
    stab = runner.invoke(app, ["stability", "--help"], terminal_width=200).output
    assert "--allow-missing " in stab and "--allow-missing <bool>" not in stab and "<bool>" not in stab

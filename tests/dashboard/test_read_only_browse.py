"""A database this user may not write is browsed read-only: every page draws what it holds, nothing
offers to change it, and the file is left byte for byte as it was (issue #22 item 7).

Root ignores file permissions, so the dashboard runs (AppTest) in a child process without the
capabilities that override them (``tests.helpers.unprivileged``); the test is skipped where they
cannot be made to apply."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, unprivileged

pytestmark = pytest.mark.slow

_SCRIPT = r"""
import json, sys
from streamlit.testing.v1 import AppTest

root, page, action = sys.argv[1], sys.argv[2], sys.argv[3]
at = AppTest.from_file(f"{root}/{page}", default_timeout=180)
if action.startswith("state "):  # "state KEY VALUE": left in the session by an earlier page
    _, key, value = action.split(" ", 2)
    at.session_state[key] = value
    action = "-"
at.run()
if action.startswith("click "):  # "click LABEL": a button whose label starts so, then one more interaction
    label = action[len("click "):]
    next(b for b in at.button if b.label.startswith(label)).click().run()
    at.run()
    action = "-"
if action != "-":  # open another database under "Database" in the sidebar ("+init PATH": adding our tables)
    if action.startswith("+init "):
        action = action[len("+init "):]
        next(c for c in at.checkbox if c.label == "Add RagAudit's tables").check()
    next(t for t in at.text_input if t.label == "DuckDB file").set_value(action)
    next(b for b in at.button if b.label == "Open database").click().run()
print(json.dumps({
    "exception": [str(e.value) for e in at.exception],
    "error": [e.value for e in at.error],
    "info": [i.value for i in at.info],
    "caption": [c.value for c in at.caption] + [c.value for c in at.sidebar.caption],
    "buttons": [b.label for b in at.button],
    "uploaders": len(at.get("file_uploader")),
    "metrics": [m.label for m in at.metric],
}))
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _page(prefix: list[str], workspace: Path, db: Path, page: str, action: str = "-") -> dict:
    env = {**os.environ, "RAGAUDIT_DB": str(db), "RAGAUDIT_WORKSPACE": str(workspace), "PYTHONPATH": str(ROOT)}
    r = subprocess.run(
        [*prefix, sys.executable, "-c", _SCRIPT, str(ROOT), page, action],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=workspace,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _plain(s: str) -> str:
    return s.replace("\\", "")


def _prefix() -> list[str]:
    """The command prefix under which file permissions apply (skips the test where none can)."""
    prefix = unprivileged()
    if prefix is None:
        pytest.skip("file permissions cannot be made to apply here")
    return prefix


@contextlib.contextmanager
def _locked(folder: Path):
    """Every file in ``folder`` and the folder itself read-only while the block runs (not even a
    write-ahead log could be made beside a file); writable again after."""
    files = list(folder.iterdir())
    for p in files:
        p.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield
    finally:
        folder.chmod(0o755)
        for p in files:
            p.chmod(0o644)


@pytest.fixture
def read_only_db(sample_db, tmp_path):
    prefix = _prefix()
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "audit.duckdb"
    shutil.copy(sample_db, db)
    with _locked(shared):
        yield prefix, db


def test_every_page_browses_a_read_only_database_and_changes_nothing(read_only_db, tmp_path):
    prefix, db = read_only_db
    before = _digest(db)
    home = _page(prefix, tmp_path, db, "app.py")
    assert not home["exception"] and not home["error"], home
    assert any(_plain(i).startswith("This database is read-only for this user: its logs") for i in home["info"])
    assert f"Database: `{db}` (read-only)" in home["caption"]
    assert home["uploaders"] == 0
    assert not {"Open the sample logs", "Load the uploaded files", "Yes, remove it"} & set(home["buttons"])

    stability = _page(prefix, tmp_path, db, "pages/1_Stability.py")
    assert not stability["exception"] and not stability["error"], stability
    assert stability["metrics"]  # the stored overview, drawn

    fidelity = _page(prefix, tmp_path, db, "pages/4_Citation_fidelity.py")
    assert not fidelity["exception"] and not fidelity["error"], fidelity
    assert not any(b.startswith("Judge the citations") for b in fidelity["buttons"])
    needs = "Judging citations needs a database this user may write"
    assert any(_plain(c).startswith(needs) for c in fidelity["caption"])

    attributions = _page(prefix, tmp_path, db, "pages/5_Attributions.py")
    assert not attributions["exception"] and not attributions["error"], attributions
    assert "Explain this query" not in attributions["buttons"]
    assert any(_plain(c).startswith("Explaining a query needs a database") for c in attributions["caption"])
    assert not any("the result is stored" in _plain(c) for c in attributions["caption"])  # not offered: not said

    drilldown = _page(prefix, tmp_path, db, "pages/2_Query_drilldown.py")
    assert not drilldown["exception"] and not drilldown["error"], drilldown
    compare = _page(prefix, tmp_path, db, "pages/3_Compare.py")
    assert not compare["exception"], compare
    assert [" — FAIL: of 10 rules" in _plain(e) for e in compare["error"]] == [True]  # the verdict, computed
    assert _digest(db) == before
    assert sorted(p.name for p in db.parent.iterdir()) == ["audit.duckdb"]


def test_the_database_picker_opens_a_read_only_file_for_browsing(read_only_db, tmp_path):
    prefix, db = read_only_db
    before = _digest(db)
    home = _page(prefix, tmp_path, tmp_path / "mine.duckdb", "app.py", action=str(db))
    assert not home["exception"] and not home["error"], home
    assert any(_plain(i).startswith("This database is read-only for this user") for i in home["info"]), home
    assert _digest(db) == before


def test_the_job_queue_beside_a_read_only_database_is_read_not_written(sample_db, tmp_path):
    """A database shared with its queue (``.audit.duckdb.queue.sqlite``: jobs were run on it) in a folder
    this user may not write: the queue is read where the pages show jobs; SQLite could not open it for
    writing (its write-ahead log is made beside it), which crashed the fidelity and attribution pages."""
    from ragaudit_core.jobs import plan_judge, queue
    from ragaudit_core.logs import store
    from ragaudit_core.logs.selection import natural_sorted

    prefix = _prefix()
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "audit.duckdb"
    shutil.copy(sample_db, db)
    with store.connect(db) as con:  # the fidelity page's run (the first), one of its queries judged and failed
        run = natural_sorted([r for (r,) in con.execute("SELECT DISTINCT run_id FROM prov_records").fetchall()])[0]
        (qid,) = con.execute("SELECT min(query_id) FROM prov_records WHERE run_id = ?", [run]).fetchone()
        spec, inputs = plan_judge(con, run, qid, model="m", endpoint="http://127.0.0.1:9", seeds=(0,))
    jid = queue.enqueue(str(db), spec, inputs)
    assert queue.claim(str(db)) is not None
    queue.finish(str(db), jid, "failed", "ConnectionError: refused")
    files = sorted(p.name for p in shared.iterdir())
    assert files == [".audit.duckdb.queue.sqlite", "audit.duckdb"]
    before = {p.name: _digest(p) for p in shared.iterdir()}
    with _locked(shared):
        fidelity = _page(prefix, tmp_path, db, "pages/4_Citation_fidelity.py")
        attributions = _page(prefix, tmp_path, db, "pages/5_Attributions.py")
    assert not fidelity["exception"], fidelity["exception"]
    assert [_plain(e) for e in fidelity["error"]] == ["1 judge job failed; the first: ConnectionError: refused"]
    assert "Retry failed judge jobs" not in fidelity["buttons"]
    assert not attributions["exception"] and not attributions["error"], attributions
    assert {p.name: _digest(p) for p in shared.iterdir()} == before


def test_a_new_database_in_a_folder_this_user_may_not_write_is_not_called_missing(read_only_db, tmp_path):
    """Naming a new file in a read-only folder under “Database”: it cannot be created there, which is
    what is said (it was "no such database; load logs into it first (ragaudit ingest …)", which fails
    the same way); nothing is made."""
    prefix, db = read_only_db
    new = db.parent / "new.duckdb"
    home = _page(prefix, tmp_path, tmp_path / "mine.duckdb", "app.py", action=str(new))
    assert not home["exception"], home
    assert [_plain(e) for e in home["error"]] == [
        f"Cannot create database {new}: its folder {db.parent} may not be written by this user; name a database "
        "file in a folder you can write."
    ]
    assert sorted(p.name for p in db.parent.iterdir()) == ["audit.duckdb"]


def test_passage_like_ids_of_a_read_only_database_do_not_point_at_a_button_it_hides(tmp_path):
    """The identity check says to use “Read these ids as texts” on the home page; a database browsed
    read-only hides that button (it stores), so the page says what it needs where the button was."""
    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    prefix = _prefix()
    shared = tmp_path / "shared"
    shared.mkdir()
    db = shared / "audit.duckdb"
    passage = (
        "Stem cells divide asymmetrically, producing one daughter that keeps stemness and one that differentiates."
    )
    with store.connect(db) as con:
        ingest_paths(
            con, [write_jsonl(tmp_path / "p.jsonl", [{"run_id": "r1", "query_id": "q1", "contexts": [passage]}])]
        )
    before = _digest(db)
    with _locked(shared):
        home = _page(prefix, tmp_path, db, "app.py")
    assert not home["exception"] and not home["error"], home
    assert not any(b.startswith("Read these ids as texts") for b in home["buttons"])
    assert (
        "Reading these ids as texts needs a database this user may write: this one is read-only (copy the file, "
        "then open the copy under “Database” in the sidebar)."
    ) in [_plain(c) for c in home["caption"]]
    assert _digest(db) == before


def test_adding_our_tables_to_another_programs_read_only_file_says_it_cannot_be_written(read_only_db, tmp_path):
    """“Add RagAudit's tables” ticked on another program's DuckDB file this user may not write: the
    tables cannot be added, which is what is said — not the read-only reopen's refusal, which said to
    tick that very box."""
    import duckdb

    prefix, db = read_only_db
    other = db.parent / "other.duckdb"
    db.parent.chmod(0o755)
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE t (x INTEGER)")
    con.close()
    other.chmod(0o444)
    db.parent.chmod(0o555)
    before = _digest(other)
    home = _page(prefix, tmp_path, tmp_path / "mine.duckdb", "app.py", action=f"+init {other}")
    assert not home["exception"], home
    assert [_plain(e) for e in home["error"]] == [
        f"Cannot open database {other} for writing: its folder {db.parent} may not be written by this user "
        "(DuckDB keeps its write-ahead log beside the file); the commands that only read it (stability, quality, "
        "fidelity, gate, report) open it read-only, ingest needs a copy in a folder this user may write."
    ]
    assert _digest(other) == before


def test_a_read_only_database_without_what_a_page_needs_says_loading_needs_a_copy(tmp_path):
    """The pages' empty states say to load logs on the home page, which a database browsed read-only
    does not offer: the page says that loading needs a copy this user may write; the home page of an
    empty one says it holds no logs (it said nothing but the read-only note)."""
    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths
    from tests.helpers import write_jsonl

    prefix = _prefix()
    shared = tmp_path / "shared"
    shared.mkdir()
    db, empty = shared / "audit.duckdb", shared / "empty.duckdb"
    with store.connect(db) as con:  # one run, no provenance
        ingest_paths(con, [write_jsonl(tmp_path / "l.jsonl", [{"run_id": "A", "query_id": "q1", "docs": ["d1"]}])])
    store.connect(empty).close()
    with _locked(shared):
        fidelity = _page(prefix, tmp_path, db, "pages/4_Citation_fidelity.py")
        compare = _page(prefix, tmp_path, db, "pages/3_Compare.py")
        home = _page(prefix, tmp_path, empty, "app.py")
    needs = (
        "Loading logs needs a database this user may write: this one is read-only (copy the file, then open the "
        "copy under “Database” in the sidebar)."
    )
    for page in (fidelity, compare):
        assert not page["exception"] and not page["error"], page
        assert len(page["info"]) == 1 and "on the home page" in page["info"][0], page
        assert needs in [_plain(c) for c in page["caption"]], page
    assert not home["exception"] and not home["error"], home
    assert [_plain(i)[:40] for i in home["info"]] == [
        "This database is read-only for this user",
        "No logs are loaded in this database.",
    ]


def test_a_judging_confirmation_left_in_the_session_is_not_offered_read_only(read_only_db, tmp_path):
    prefix, db = read_only_db
    before = _digest(db)
    fidelity = _page(
        prefix, tmp_path, db, "pages/4_Citation_fidelity.py", action="state fid.judge.confirm k10-c128-o32"
    )
    assert not fidelity["exception"] and not fidelity["error"], fidelity
    assert not any(b.startswith("Yes") for b in fidelity["buttons"]), fidelity["buttons"]  # it would queue jobs
    assert _digest(db) == before


def test_answer_similarities_computed_read_only_stay_for_the_session(read_only_db, tmp_path):
    prefix, db = read_only_db
    before = _digest(db)
    compare = _page(prefix, tmp_path, db, "pages/3_Compare.py", action="click Compute answer similarity for")
    assert not compare["exception"], compare
    # one interaction after the click: the probe is still drawn (it was gone, the button back)
    assert "mean answer similarity" in compare["metrics"], compare["metrics"]
    assert not any(b.startswith("Compute answer similarity") for b in compare["buttons"])
    assert _digest(db) == before

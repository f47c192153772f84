"""One database, a dashboard and the CLI at once (issue #15): while the dashboard is open on a
database in a real browser, `ragaudit ingest` adds a run from another process, `ragaudit gate`
and `ragaudit report` read it, and the open page shows the new run after a rerun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragaudit_core.logs import store
from tests.dashboard.browser_support import launch_chromium, metric, new_page, shown, streamlit_server
from tests.helpers import write_jsonl

pytestmark = pytest.mark.slow

RAGAUDIT = str(Path(sys.executable).parent / "ragaudit")


def _run(run_id: str, shift: int) -> list[dict]:
    return [
        {
            "run_id": run_id,
            "query_id": f"q{i}",
            "query": f"question {i}",
            "answer": f"answer {i}",
            "evidence": [
                {"doc_id": f"d{(i + shift + j) % 9}", "text": f"passage {(i + shift + j) % 9}"} for j in range(3)
            ],
        }
        for i in range(6)
    ]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([RAGAUDIT, *args], capture_output=True, text=True, timeout=300)


def _load_base_and_cand(tmp_path: Path, db: Path) -> None:
    """Runs 'base' and 'cand' (six queries each) loaded into ``db`` by the CLI, as a user would."""
    first = _cli("ingest", str(write_jsonl(tmp_path / "a.jsonl", _run("base", 0) + _run("cand", 1))), "--db", str(db))
    assert first.returncode == 0, first.stderr


def test_the_cli_writes_and_reads_the_database_the_dashboard_has_open(tmp_path):
    from playwright.sync_api import sync_playwright

    db = tmp_path / "shared.duckdb"
    _load_base_and_cand(tmp_path, db)
    with streamlit_server(db, tmp_path / "streamlit.log") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = new_page(browser, 1400, 1000)
        page.goto(url)
        assert metric(page, "Runs", "2") == "2"

        # the page is open; another process writes to its database, then two commands read it
        added = _cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", _run("late", 2))), "--db", str(db))
        assert added.returncode == 0, added.stderr
        assert "Conflicting lock" not in added.stderr
        verdict = _cli("gate", "--db", str(db), "--baseline", "base", "--candidate", "late")
        assert verdict.returncode in (0, 1, 3), verdict.stderr  # a verdict, not a usage error
        assert any(w in verdict.stdout for w in ("PASS", "FAIL", "INCONCLUSIVE"))
        report = _cli(
            "report",
            "--db",
            str(db),
            "--out",
            str(tmp_path / "audit.pdf"),
            "--baseline",
            "base",
            "--candidate",
            "late",
            "--no-probe",
        )
        assert report.returncode == 0, report.stderr
        assert (tmp_path / "audit.pdf").read_bytes()[:5] == b"%PDF-"

        # a rerun of the same session shows the new run
        page.locator('[data-testid="stApp"]').click(position={"x": 5, "y": 5})
        page.keyboard.press("r")
        assert metric(page, "Runs", "3") == "3"
        browser.close()
    con = store.connect(db)  # the dashboard has let go of the file
    assert sorted(r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()) == ["base", "cand", "late"]
    con.close()


def test_a_held_database_gives_one_sentence_and_the_cli_waits_for_it(tmp_path):
    """Another process holds the file until the test lets it go, which it does only once the CLI has
    said that it waits: the CLI's wait is seen whatever the machine's load (no holder on a timer)."""
    db = tmp_path / "held.duckdb"
    store.connect(db).close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, duckdb; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
                "sys.stdin.readline(); c.close()"
            ),
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    cli = None
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(store.StoreBusy) as busy:
            store.connect(db, wait_s=0.5)
        msg = str(busy.value)
        assert f"PID {holder.pid}" in msg and "in use by another program" in msg and "IO Error" not in msg
        log = str(write_jsonl(tmp_path / "a.jsonl", _run("base", 0)))
        cli = subprocess.Popen(
            [RAGAUDIT, "ingest", log, "--db", str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        said = []
        for line in cli.stderr:  # until it says it waits (or ends: the file is held, so it cannot finish first)
            said.append(line)
            if "waiting up to" in line:
                break
        assert "waiting up to" in "".join(said), said
        assert f"PID {holder.pid}" in said[-1]
        holder.stdin.write("let go\n")
        holder.stdin.flush()
        _out, err = cli.communicate(timeout=300)
        assert cli.returncode == 0, "".join(said) + err  # the command waited for the holder to let go
        assert "loaded 6 records" in err
    finally:
        holder.kill()
        if cli is not None:
            cli.kill()


def test_two_dashboards_on_one_database_work_side_by_side(tmp_path):
    """Two Streamlit servers (two processes) open the same file: both draw the stability page at
    the same moment, a CLI ingest lands between their interactions, and both show it on rerun."""
    from playwright.sync_api import sync_playwright

    db = tmp_path / "shared.duckdb"
    _load_base_and_cand(tmp_path, db)
    with (
        streamlit_server(db, tmp_path / "one.log") as url1,
        streamlit_server(db, tmp_path / "two.log") as url2,
        sync_playwright() as p,
    ):
        browser = launch_chromium(p)
        pages = [new_page(browser, 1400, 1000) for _ in range(2)]
        for page, url in zip(pages, (url1, url2)):
            page.goto(url)
        for page in pages:
            assert metric(page, "Runs", "2") == "2"
        for page, url in zip(pages, (url1, url2)):  # both interact at once
            page.goto(url.rstrip("/") + "/Stability")
        for page in pages:
            assert metric(page, "mean J_doc") != ""  # waits for a value, then for the page to settle
            assert "is in use by" not in page.inner_text("body")  # no StoreBusy sentence
        added = _cli("ingest", str(write_jsonl(tmp_path / "c.jsonl", _run("late", 2))), "--db", str(db))
        assert added.returncode == 0, added.stderr
        for page, url in zip(pages, (url1, url2)):
            page.goto(url)
        for page in pages:
            assert metric(page, "Runs", "3") == "3"
        browser.close()


def test_a_page_opened_by_link_before_the_home_page_runs_through_the_app(tmp_path):
    """A server's first visit is a direct link to a page (a bookmark, a shared drill-down link).
    Streamlit, seeing a ``pages/`` folder beside ``app.py``, ran that page file on its own until some
    session opened the home page (its old multipage mode): the sidebar showed file names, and
    ``app.py``'s ``finally`` never let go of the database, so the CLI could not write it while the
    page was open. The page now goes through ``app.py`` from the first visit."""
    from playwright.sync_api import sync_playwright

    db = tmp_path / "linked.duckdb"
    _load_base_and_cand(tmp_path, db)
    with streamlit_server(db, tmp_path / "streamlit.log") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = new_page(browser, 1400, 1000)
        page.goto(f"{url}/Stability")  # the first request this server answers
        metric(page, "mean J_doc")
        nav = page.get_by_test_id("stSidebarNav")
        shown(page, nav.get_by_text("Evidence stability"))  # the app's page titles, not the files' names
        assert nav.get_by_text("app", exact=True).count() == 0
        con = store.connect(db, wait_s=5)  # the page has let go of the file
        con.close()
        browser.close()

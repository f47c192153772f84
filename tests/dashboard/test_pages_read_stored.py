"""Every page's first visit after a load reads what the load stored (``logs.derived``): it
computes and stores nothing new, so no page scans every record on its first visit (issue #23
item 9: first visits within 3 s at 10M entries; ``bench/dashboard_bench.py``)."""

from __future__ import annotations

import shutil

import pytest

from ragaudit_core.logs import store
from tests.helpers import app_test, released_app_test

pytestmark = pytest.mark.slow

PAGES = [
    "app.py",
    "pages/1_Stability.py",
    "pages/2_Query_drilldown.py",
    "pages/3_Compare.py",
    "pages/4_Citation_fidelity.py",
    "pages/5_Attributions.py",
]


def _stored(path) -> set[tuple[str, str]]:
    con = store.connect(path, read_only=True)
    try:
        return set(con.execute("SELECT key, kind FROM derived_results").fetchall())
    finally:
        con.close()


@pytest.mark.parametrize("page", PAGES)
def test_a_first_visit_after_a_load_computes_nothing_new(page, app_env, sample_db, tmp_path, monkeypatch):
    db = tmp_path / "copy.duckdb"
    shutil.copy(sample_db, db)  # this page's visit alone
    before = _stored(db)
    assert {"stability/7", "compare/2", "selection.comparable/2"} <= {kind for _key, kind in before}
    app_env(db)
    # as app.py runs a page: its database connections closed at the end of the run
    at = (app_test(page) if page == "app.py" else released_app_test(page, monkeypatch)).run()
    assert not at.exception
    new = {kind for key, kind in _stored(db) - before}
    assert not new, f"{page} computed on its first visit what the load should have stored: {sorted(new)}"

"""Names the dashboard shares between its pages, kept in one place.

Session-state keys and URL query parameters: a click on one page sets them, the page it
opens reads them. Plain strings, so the core stays free of Streamlit.
"""

from __future__ import annotations

__all__ = ["KEYS", "PAGES", "PARAMS"]


class _Keys:
    db_path = "ragaudit.db_path"  # the DuckDB file the dashboard reads
    flip_threshold = "ragaudit.tau"  # τ of the flip rate, shared by every page
    pair = "ragaudit.pair"  # (run_a, run_b) chosen on the stability page
    runs = "ragaudit.runs"  # runs the user picked to compare (None: the default selection)
    query = "ragaudit.query"  # query id opened in the drill-down
    run_a = "ragaudit.run_a"  # drill-down / compare: the two runs
    run_b = "ragaudit.run_b"
    last_ingest = "ragaudit.last_ingest"  # the report of the last upload, shown on the home page
    uploader = "ragaudit.uploader"  # widget key of the file uploader (reset after ingest)
    gate_rules = "ragaudit.gate_rules"  # the compare page's gate rules (rows of the rule editor)
    report = "ragaudit.report"  # the last PDF report built: (what it covers, bytes)
    gate_policy = "ragaudit.gate_policy"  # the compare page's verdict settings (min_applicable, require)
    gate_editor = "ragaudit.gate_editor"  # a counter: a new rule editor widget after a preset / file load
    similarities = "ragaudit.similarities"  # answer similarities computed on a read-only database (not storable)


class _Params:
    query = "query"
    run_a = "a"
    run_b = "b"


class _Pages:
    home = "app.py"
    stability = "pages/1_Stability.py"
    drilldown = "pages/2_Query_drilldown.py"
    compare = "pages/3_Compare.py"
    fidelity = "pages/4_Citation_fidelity.py"
    attributions = "pages/5_Attributions.py"


KEYS = _Keys()
PARAMS = _Params()
PAGES = _Pages()

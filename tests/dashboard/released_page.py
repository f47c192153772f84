"""A page as ``app.py`` runs it, for AppTest: the page's script, then its database connections
closed (``ui.release_connections``), so another process — the background worker — can open the
file between interactions. The page is named by ``RAGAUDIT_TEST_PAGE``."""

import os
import runpy

from pages import ui

try:
    runpy.run_path(os.environ["RAGAUDIT_TEST_PAGE"], run_name="__main__")
finally:
    ui.release_connections()

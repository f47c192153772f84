"""Text from logs on the pages cannot reorder the sentence or the cell around it: a run id holding
U+202E (RIGHT-TO-LEFT OVERRIDE) or a right-to-left script is isolated (U+2068 … U+2069) with its
controls shown; ordinary run ids pass unchanged."""

from __future__ import annotations

import pandas as pd

from pages.ui import _bidi_safe_cells
from pages.ui.render import md


def test_markdown_isolates_a_run_id_holding_an_override():
    evil = "k10\u202eevil"
    out = md(evil)
    assert out.startswith("\u2068") and out.endswith("\u2069") and "\u202e" not in out
    assert out == "\u2068k10\\[U\\+202E\\]evil\u2069"  # the control shown, escaped for markdown
    assert md("k10-c256-o32") == "k10\\-c256\\-o32"  # unchanged without RTL text
    assert md("שלום") == "\u2068שלום\u2069"


def test_table_cells_with_an_override_are_isolated_and_others_kept():
    frame = pd.DataFrame({"why": ["j_avg between k5 and k10\u202eevil is 0.333", "plain 0.5"], "v": [0.333, 0.5]})
    out = _bidi_safe_cells(frame)
    assert out["why"].tolist() == ["\u2068j_avg between k5 and k10[U+202E]evil is 0.333\u2069", "plain 0.5"]
    assert frame["why"].iloc[0].count("\u202e") == 1  # the caller's frame is not changed
    plain = pd.DataFrame({"run": ["k5", "k10"]})
    assert _bidi_safe_cells(plain) is plain

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


def test_markdown_shows_line_breaks_and_controls_so_a_sentence_stays_one_paragraph():
    """A run id holding a line break split the sentence it stood in: ``"x\\n==="`` made the words before
    it a heading, ``"\\n\\n    y"`` the rest of the sentence a code block, a CR a line break (CommonMark
    reads CR, LF and CRLF as line endings). Controls are shown as ``[U+000A]`` like bidi controls, so the
    sentence stays one paragraph; ordinary text is unchanged."""
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark").render
    for evil in ("x\n===", "a\n\n    code", "a\rb", "a\r\n\r\n# h", "e\x1b[31mf", "p\u2028q\u2029r", "t\tu"):
        html = render(f"Run {md(evil)} failed.")
        assert html.startswith("<p>Run ") and html.endswith(" failed.</p>\n") and html.count("<p>") == 1, html
        assert not any(c in html[:-1] for c in "\n\r\x1b\t\u2028\u2029"), html
    assert md("a\nb") == "a\\[U\\+000A\\]b"
    assert md("报告 résumé") == "报告 résumé"


def test_a_code_span_holds_any_path_whole():
    """A path or a command shown as code: a backtick in it no longer ends the span (the rest of a
    file name read as markdown: a review finding), and a line break shows as its code point."""
    from pages.ui.render import code

    assert code("/tmp/audit.duckdb") == "`/tmp/audit.duckdb`"
    assert code("a`b [x](https://e.example)") == "`` a`b [x](https://e.example) ``"
    assert code("run\n# heading") == "`run[U+000A]# heading`"

"""The dashboard's and report's figures: trace types, category labels, escaped log text."""

from __future__ import annotations

from ragaudit_core.review import charts


def test_influence_bars_use_document_ids_as_categories():
    """Ids like "3" and "12" stay categories in rank order (a numeric axis would reorder and
    space them by value); shares are |importance| / total, hand-worked: 1/(1+3) → 25 %."""
    fig = charts.influence_bars([1.0, -3.0], ["3", "12 <b>x</b>"], ["#000", "#111"], title="doc <i>q</i>")
    (bar,) = fig.data
    assert bar.type == "bar" and bar.orientation == "h"
    assert list(bar.y) == ["3", "12 &lt;b&gt;x&lt;/b&gt;"] and fig.layout.yaxis.type == "category"
    assert list(bar.x) == [25.0, 75.0] and list(bar.text) == ["25% (+1.000)", "75% (-3.000)"]
    assert fig.layout.title.text == "doc &lt;i&gt;q&lt;/i&gt;"

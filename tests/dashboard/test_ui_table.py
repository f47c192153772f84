"""Table cells as a reader expects them: counts and positions without decimals, ranks from 1."""

from __future__ import annotations

import pandas as pd

from pages.ui import _whole
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.stability.drilldown import evidence_side_by_side
from tests.helpers import write_jsonl


def test_counts_and_positions_lose_their_decimals_rates_keep_them():
    assert _whole(pd.Series([2.0, None, 14.0]), "page")  # NULLs made the column float: still pages
    assert _whole(pd.Series([3.0, 7.0]), "n_entries")
    assert not _whole(pd.Series([2.5, 1.0]), "page")
    assert not _whole(pd.Series([1.0, 0.0]), "citation_rate")  # a rate of exactly 1 keeps "1.000"
    assert not _whole(pd.Series([None, None], dtype=float), "page")


def test_drilldown_ranks_count_from_one_and_keep_the_logged_rank(tmp_path):
    con = store.connect(":memory:")
    rec = {"run_id": "a", "query_id": "q", "evidence": [{"doc_id": "d1", "rank": 0}, {"doc_id": "d2", "rank": 1}]}
    ingest_paths(con, [write_jsonl(tmp_path / "l.jsonl", [rec, {**rec, "run_id": "b"}])])
    a, _b = evidence_side_by_side(con, "q", "a", "b")
    assert a["rank"].tolist() == [1, 2] and a["logged_rank"].tolist() == [0, 1]


def test_one_query_id_naming_two_questions_is_said_on_the_drilldown(app_env, tmp_path):
    from tests.helpers import app_test, plain

    path = app_env()
    recs = [{"run_id": r, "query_id": "1", "query": "Does aspirin prevent stroke?", "evidence": ["d1"]} for r in "ab"]
    recs.append({"run_id": "upload", "query_id": "1", "query": "What is the capital of France?", "evidence": ["d9"]})
    recs.append({"run_id": "c", "query_id": "1", "query": "does  ASPIRIN prevent stroke?", "evidence": ["d1"]})
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "c.jsonl", recs)])
    at = app_test("pages/2_Query_drilldown.py").run()
    assert not at.exception
    (w,) = [plain(x.value) for x in at.warning if "names 2 different questions" in plain(x.value)]
    assert "“Does aspirin prevent stroke?” (3 runs: a, b, c)" in w and "(1 run: upload)" in w


def test_a_long_per_query_table_sends_its_first_thousand_rows():
    import pandas as pd

    from pages import ui

    frame = pd.DataFrame({"query_id": [str(i) for i in range(2_500)], "j": [i / 2_500 for i in range(2_500)]})
    shown = ui.first_rows(frame)
    assert len(shown) == ui.TABLE_ROWS == 1_000
    assert shown["query_id"].tolist() == [str(i) for i in range(1_000)]  # the worst first, as sorted
    assert len(ui.first_rows(frame.head(10))) == 10


def test_shares_read_as_percentages_in_tables_as_in_the_charts():
    from pages import ui
    from ragaudit_core.review.labels import is_share

    assert is_share("flip_rate") and is_share("collapse_rate_span") and is_share("null_loss_doc")
    assert is_share("citation_rate") and not is_share("j_avg_span") and not is_share("mean_docs")
    frame = pd.DataFrame({"metric": ["J_avg", "flip rate"], "doc": [0.4352, 0.9431], "span": [0.1464, None]})
    styler = ui.metric_rows(frame, pd.Series(["j_avg", "flip_rate"]), ["doc", "span"])
    html = styler.to_html()
    assert "0.435" in html and "94.3%" in html and "0.146" in html
    assert "0.943" not in html and "None" not in html and "nan" not in html

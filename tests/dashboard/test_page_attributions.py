"""AppTest: the attributions page, on the real packaged models (a 3-document query)."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from ragaudit_core.attribution.explain import stored_attribution
from ragaudit_core.logs.ingest import ingest_paths

from tests.helpers import XSS, app_test, write_jsonl

pytestmark = pytest.mark.slow
PAGE = "pages/5_Attributions.py"


def test_no_texts_says_what_to_do(app_env, tmp_path):
    path = app_env()
    at = app_test(PAGE).run()
    assert any("No logs are loaded yet" in i.value for i in at.info)
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "d.jsonl",
                                                   [{"run_id": "r", "query_id": "q", "evidence": ["d1"]}])])
    at = app_test(PAGE).run()
    assert any("carry no document texts" in i.value for i in at.info)


def test_explain_a_query_and_show_it(app_env, tmp_path):
    path = app_env()
    docs = ["Marie Curie was born in Warsaw in 1867.", f"Paris {XSS} is the capital of France.",
            "Curie won two Nobel prizes."]
    ingest_paths(store.connect(path), [write_jsonl(tmp_path / "r.jsonl", [{
        "run_id": "base", "query_id": "q1", "query": "Where was Marie Curie born?",
        "evidence": [{"doc_id": f"D{i}", "text": t} for i, t in enumerate(docs)]}])])
    at = app_test(PAGE).run()
    next(n for n in at.number_input if n.label == "IG steps L").set_value(20)
    at.run()
    next(b for b in at.button if b.label == "Explain this query").click().run()
    assert not at.exception and not at.error
    (res,) = stored_attribution(store.connect(path), "base", "q1")
    shown = {m.label: m.value for m in at.metric}
    assert shown["wasted retrieval"] == ("yes" if res["wasted_retrieval"] else "no")
    assert shown["generator ranking"] == " > ".join(str(i + 1) for i in res["generator_ranking"])
    bodies = [h.proto.body for h in at.get("html")]
    assert len(bodies) == 3 * 2 + 2                                  # query + document per tab, legend, answer
    # the payload is split into words, each escaped: its pieces show as text, no tag is built
    assert any("&lt;" in b and "onerror" in b for b in bodies)
    assert not any("<img" in b or "<script" in b for b in bodies)
    # a second visit shows the stored result without a button press
    at2 = app_test(PAGE).run()
    next(n for n in at2.number_input if n.label == "IG steps L").set_value(20)
    at2.run()
    assert {m.label: m.value for m in at2.metric}["wasted retrieval"] == shown["wasted retrieval"]

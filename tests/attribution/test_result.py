"""The typed attribution result: a JSON round trip (float WARG keys as strings and back), and
tolerance of the extra columns a stored row carries."""

from __future__ import annotations

import json

from ragaudit_core.attribution.result import AttributionResult, TokenSaliency

SAL = TokenSaliency(
    tokens=["[CLS]", "paris", "[SEP]"],
    attributions=[0.0, 0.4, 0.0],
    words=["paris"],
    word_attributions=[0.4],
    score=0.7,
    baseline_score=0.3,
    completeness=1.0,
    baseline="unk",
    steps=24,
)


def _result() -> AttributionResult:
    return AttributionResult(
        run_id="r",
        query_id="q",
        query="where?",
        doc_ids=["d1", "d2"],
        doc_texts=["a", "b"],
        order=[0, 1],
        answer="Paris",
        answer_tokens=["Paris"],
        values=[[0.3], [0.1]],
        importance=[0.3, 0.1],
        v_empty=[-2.0],
        v_full=[-1.6],
        generator_ranking=[0, 1],
        generator_ranking_doc_ids=["d1", "d2"],
        warg={0.5: 0.0, 0.9: 0.0},
        warg_extrapolated={0.5: 0.0, 0.9: 0.0},
        warg_floor={0.5: 0.25, 0.9: 0.81},
        spearman=1.0,
        wasted_retrieval=False,
        noise_distraction=False,
        ig_documents=[SAL, SAL],
        ig_query=[SAL, SAL],
        n_coalitions=4,
        method="exact",
        timings_s={"ig": 1.5, "shapley": 2.0},
    )


def test_json_round_trip():
    r = _result()
    js = json.loads(json.dumps(r.to_json()))
    assert js["warg"] == {"0.5": 0.0, "0.9": 0.0} and js["ig_documents"][0]["words"] == ["paris"]
    back = AttributionResult.from_json(js)
    assert back == r and back.warg[0.9] == 0.0 and back.n_documents == 2


def test_a_stored_row_with_extra_columns_reads_back():
    js = {**_result().to_json(), "condition": "original", "params": {"seed": 0}, "retriever": "m"}
    assert AttributionResult.from_json(js) == _result()

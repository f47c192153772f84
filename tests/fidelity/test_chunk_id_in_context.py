"""A judge's ``matching_chunk_id`` names a chunk of the context it was shown, or null: an endpoint's
reply naming any other chunk credits the citation to evidence the judge never saw, so it is a reply
outside the schema (retried, then no vote) with the reason in the log — never the id itself, which
is the endpoint's text. The local judge picks the id among the context's by construction. Real
parts: a local endpoint in a thread, a tiny random Llama, a real DuckDB database, its queue and the
worker."""

from __future__ import annotations

import json
import logging
import re
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from ragaudit_core.fidelity import endpoint
from ragaudit_core.fidelity.judge import JudgeVerdict
from ragaudit_core.fidelity.judge_panel import skeleton
from ragaudit_core.fidelity.judges import EndpointJudge, LocalJudge
from tests.fidelity.test_chunk_id_limit import judged_rows
from tests.fidelity.test_judge import GOOD, _Server
from tests.helpers import pipeline

FOREIGN = "<b>d9#never-shown</b>"  # a chunk id the judge was not shown (and markup: the log must not carry it)


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for name in (endpoint.ENV_ENDPOINTS, endpoint.ENV_KEY, endpoint.ENV_TIMEOUT):
        monkeypatch.delenv(name, raising=False)


def test_an_endpoint_reply_naming_a_chunk_outside_the_context_is_an_invalid_vote(caplog):
    replies = iter(
        [{**GOOD, "matching_chunk_id": FOREIGN}] * 2
        + [{**GOOD, "matching_chunk_id": "c2"}, {**GOOD, "matching_chunk_id": None}]
    )
    server = _Server(lambda _b: json.dumps(next(replies)))
    try:
        judge = EndpointJudge(server.url, "m", retries=1, timeout_s=10)
        with caplog.at_level(logging.WARNING, logger="ragaudit.judge"):
            assert judge.verdicts("P", ["c1", "c2"], [0]) == [None]  # two attempts, both refused: no vote
        assert judge.n_invalid == 2
        named, unnamed = judge.verdicts("P", ["c1", "c2"], [0, 1])
        assert named is not None and named.matching_chunk_id == "c2"  # a chunk it was shown
        assert unnamed is not None and unnamed.matching_chunk_id is None  # null: no chunk named
        assert judge.n_invalid == 2
    finally:
        server.close()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2
    assert all("not one of the 2 chunks of the context the judge was shown" in m for m in said)
    assert not any("never-shown" in m or "<b>" in m for m in said)  # the reason, not the endpoint's text


def test_the_schema_checks_the_id_against_the_context_it_is_given():
    with pytest.raises(ValidationError, match="not one of the 1 chunk of the context"):
        JudgeVerdict.model_validate({**GOOD, "matching_chunk_id": "c2"}, context={"chunk_ids": ["c1"]})
    with pytest.raises(ValidationError, match="not one of the 0 chunks"):
        JudgeVerdict.model_validate_json(json.dumps(GOOD), context={"chunk_ids": []})
    assert JudgeVerdict.model_validate(GOOD, context={"chunk_ids": ["c1"]}).matching_chunk_id == "c1"
    # the check compares text exactly: no case folding, no trimming
    for near in ("C1", " c1", "c1 "):
        with pytest.raises(ValidationError):
            JudgeVerdict.model_validate({**GOOD, "matching_chunk_id": near}, context={"chunk_ids": ["c1"]})


def test_the_local_judge_names_only_chunks_of_its_context():
    """The skeleton's chunk slot offers exactly the context's ids and null, each picked back as the
    same text (ids that need JSON escaping included); sampled judges on a tiny model stay inside."""
    torch = pytest.importorskip("torch")
    from tests.fidelity.test_judge_batched import CharTokenizer
    from tests.helpers import tiny_llama

    ids = ['D1#0 "quoted"', "back\\slash", "é-ü", "7"]
    for k in range(len(ids) + 1):
        walk, answer, options = skeleton(ids), None, None
        try:
            while True:
                step = walk.send(answer)
                if step[0] == "choose" and step[1][-1] == "null":
                    options, answer = step[1], k
                else:
                    answer = "x" if step[0] == "text" else (0 if step[0] == "choose" else None)
        except StopIteration as done:
            verdict = done.value
        assert options is not None and len(options) == len(ids) + 1
        assert verdict.matching_chunk_id == ([*ids, None][k])

    torch.manual_seed(0)
    gen = SimpleNamespace(model=tiny_llama(), tokenizer=CharTokenizer(), device="cpu", name="tiny")
    verdicts = LocalJudge(gen, explanation_tokens=2).verdicts("Which chunk?", ids, list(range(6)))
    assert all(v is not None and v.matching_chunk_id in [*ids, None] for v in verdicts)


def test_a_judge_job_stores_no_vote_for_a_reply_naming_a_chunk_it_was_not_shown(tmp_path, monkeypatch):
    """Seed 0 names the first chunk of the context it was shown; seed 1 a chunk of another query
    (an id that exists in the logs, but not in this context): the worker stores its vote as none."""
    rec, other = pipeline("base", "q1", text="[Source: D1, p. 2]"), pipeline("base", "q2")
    for n in other["nodes"]:
        if n["node_id"] == "c1":
            n["metadata"]["chunk_id"] = "q2-only-chunk"

    def reply(body):
        shown = re.findall(r'"chunk_id": "([^"]*)"', body["messages"][0]["content"])
        assert "q2-only-chunk" not in shown
        return json.dumps({**GOOD, "matching_chunk_id": shown[0] if body["seed"] == 0 else "q2-only-chunk"})

    rows = judged_rows(tmp_path, monkeypatch, [rec, other], reply)
    assert rows == [(0, "c1", GOOD["verdict"]), (1, None, None)]

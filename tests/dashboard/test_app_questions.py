"""AppTest: the home page's "Questions file" field gives a Ragas export the benchmark's query ids, as
``ragaudit ingest --queries`` does, and the load says how many took them."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from tests.helpers import app_test, plain
from tests.logs.test_query_ids import OTHER, RAGAS_ROWS, Q, _native, _ragas_csv

pytestmark = pytest.mark.slow


def test_an_uploaded_questions_file_gives_the_ragas_rows_their_ids(app_env, tmp_path):
    path = app_env()
    at = app_test("app.py").run()
    logs = [_native(tmp_path), _ragas_csv(tmp_path, [*RAGAS_ROWS, (OTHER, ["d9"])])]
    at.file_uploader[0].set_value([(p.name, p.read_bytes(), "x") for p in logs]).run()
    questions = "".join(f"{qid}\t{text}\n" for qid, text in Q.items()).encode()
    at.file_uploader[1].set_value(("queries.tsv", questions, "text/tab-separated-values")).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception
    said = [plain(w.value) for w in at.warning if "took their ids" in plain(w.value)]
    assert said == [
        "3 queries of run 'ragas_k5' took their ids from queries.tsv; 1 matched no question of it and keeps "
        "its hashed id (q:…)"
    ], [plain(w.value) for w in at.warning]
    c = store.connect(path)
    ids = c.execute("SELECT query_id FROM records WHERE run_id = 'ragas_k5' ORDER BY line_no").fetchall()
    c.close()
    assert [q for (q,) in ids][:3] == ["1", "3", "5"]

"""AppTest: on the home page, a Ragas export uploaded after the native run takes the ids the native
run logs for its questions (ragaudit_core.logs.stored_questions), and the load says so; unticking
"take missing ids from the runs already loaded" keeps the hashes."""

from __future__ import annotations

import pytest

from ragaudit_core.logs import store
from ragaudit_core.logs.formats import query_id_for
from tests.helpers import app_test, plain
from tests.logs.test_query_ids import RAGAS_ROWS, _native, _ragas_csv

pytestmark = pytest.mark.slow

BOX = "Take missing ids from the runs already loaded (questions and passages, by text)"


def _upload(at, path):
    at.file_uploader[0].set_value([(path.name, path.read_bytes(), "x")]).run()
    next(b for b in at.button if b.label == "Load the uploaded files").click().run()
    assert not at.exception


def _column(path, sql: str) -> list:
    """The first column of ``sql`` read from the database file at ``path``."""
    c = store.connect(path, read_only=True)
    try:
        return [v for (v, *_rest) in c.execute(sql).fetchall()]
    finally:
        c.close()


def _ids(path):
    return _column(path, "SELECT query_id FROM records WHERE run_id = 'ragas_k5' ORDER BY line_no")


def _after_native(app_env, native, other, ticked: bool):
    """The home page: ``native`` uploaded, the stored-ids box set to ``ticked``, then ``other``
    uploaded; the database file and the page."""
    path = app_env()
    at = app_test("app.py").run()
    _upload(at, native)
    next(c for c in at.checkbox if c.label == BOX).set_value(ticked).run()
    _upload(at, other)
    return path, at


@pytest.mark.parametrize("ticked", [True, False])
def test_a_ragas_upload_after_the_native_run_takes_its_ids(app_env, tmp_path, ticked):
    path, at = _after_native(app_env, _native(tmp_path), _ragas_csv(tmp_path, RAGAS_ROWS), ticked)
    said = [plain(w.value) for w in at.info if "took their ids" in plain(w.value)]  # a note: st.info
    assert not [w for w in at.warning if "took their ids" in plain(w.value)]
    if ticked:
        assert said == [
            "3 queries of run 'ragas_k5' took their ids from the stored runs' questions (as run 'native' asks them)"
        ]
        assert _ids(path) == ["1", "3", "5"]
    else:
        assert said == []
        assert _ids(path) == [query_id_for(q) for q, _docs in RAGAS_ROWS]


@pytest.mark.parametrize("ticked", [True, False])
def test_the_same_box_gives_a_ragas_upload_without_ids_the_native_runs_document_ids(app_env, tmp_path, ticked):
    """ragaudit_core.logs.stored_passages: passages the native run logs word for word take its ids."""
    from tests.logs.test_stored_passages import TOOK
    from tests.logs.test_stored_passages import _native as native_with_texts
    from tests.logs.test_stored_passages import _ragas_csv as ragas_without_ids

    path, at = _after_native(app_env, native_with_texts(tmp_path), ragas_without_ids(tmp_path), ticked)
    said = [plain(w.value) for w in at.warning if "document ids from the stored runs' passages" in plain(w.value)]
    docs = _column(path, "SELECT doc_id FROM evidence WHERE run_id = 'ragas' ORDER BY ALL")
    assert said == ([TOOK] if ticked else [])
    assert [d for d in docs if not d.startswith("text:")] == (["d1", "d3", "d5"] if ticked else [])

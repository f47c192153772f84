"""Streaming ingest: batches inside the one transaction store exactly what one batch stores; the
span-hash fast path gives the documented identity (NFKC, whitespace collapse, SHA-256)."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

import ragaudit_core.logs.ingest as ing
from ragaudit_core.logs import store
from ragaudit_core.logs.identity import normalise_span_text, span_hash
from tests.helpers import write_jsonl


def _documented(text: str, casefold: bool = False) -> str:
    s = re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()
    return s.casefold() if casefold else s


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB .\t\n\r\x0b\x0c\x1c\x1f\x01\x7f\xa0\u2003ﬁé")), max_size=30),
       st.booleans())
def test_the_fast_path_equals_the_documented_normalisation(text, casefold):
    assert normalise_span_text(text, casefold=casefold) == _documented(text, casefold)
    assert span_hash(text, casefold=casefold) == hashlib.sha256(_documented(text, casefold).encode()).hexdigest()


def _dump(con):
    return (con.execute("SELECT * EXCLUDE (metadata) FROM evidence ORDER BY run_id, query_id, position").fetchall(),
            con.execute("SELECT * FROM records ORDER BY run_id, query_id").fetchall())


def test_small_batches_store_what_one_batch_stores(tmp_path, monkeypatch):
    recs = [{"run_id": r, "query_id": f"q{i}", "evidence": [{"doc_id": f"d{i % 5}", "text": f"text {i % 7} of {r}"},
                                                            {"doc_id": "d9", "text": f"shared {i % 3}"}]}
            for r in ("A", "B") for i in range(40)]
    path = write_jsonl(tmp_path / "logs.jsonl", recs)
    one = store.connect(":memory:")
    ing.ingest_paths(one, [path])
    monkeypatch.setattr(ing, "FLUSH_ENTRIES", 3)            # a flush every other record
    monkeypatch.setattr(ing, "HASH_CACHE", 2)               # and the caches emptied all the time
    many = store.connect(":memory:")
    report = ing.ingest_paths(many, [path])
    assert report.n_records == 80 and report.n_entries == 160
    assert _dump(many) == _dump(one)

"""IG explains the score the retriever computes, for the encoder it is given: its own input length
(a text past MiniLM's 256 word pieces is cut where ``encode`` cuts it) and its own pooling (a CLS
encoder is pooled at CLS); an encoder IG cannot follow (a Dense projection) is refused in a
sentence. The packaged MiniLM's weights; the CLS and Dense encoders are built from its modules."""

from __future__ import annotations

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling

from ragaudit_core.attribution.saliency import RetrieverSaliency
from ragaudit_core.models import load_embedder

QUERY = "Where was Marie Curie born?"
LONG = " ".join(f"Marie Curie was born in Warsaw in 1867 and studied item {i} in Paris." for i in range(60))


@pytest.fixture(scope="module")
def minilm():
    return load_embedder(device="cpu")


def _cosine(enc, a: str, b: str) -> float:
    ea, eb = enc.encode([a, b], normalize_embeddings=True)
    return float(np.dot(ea, eb))


def test_a_document_past_the_encoders_length_is_cut_where_encode_cuts_it(minilm):
    assert len(minilm.tokenizer(LONG)["input_ids"]) > minilm.max_seq_length == 256
    sal = RetrieverSaliency(minilm)
    assert sal.max_length == 256
    assert sal.score(QUERY, LONG) == pytest.approx(_cosine(minilm, QUERY, LONG), abs=1e-5)
    r = sal.attribute(QUERY, LONG, side="document", steps=8, method="gausslegendre")
    assert len(r.tokens) == 256 and r.score == pytest.approx(_cosine(minilm, QUERY, LONG), abs=1e-5)


def test_a_cls_pooled_encoder_is_explained_at_its_cls_token(minilm):
    dim = minilm.get_embedding_dimension()
    cls = SentenceTransformer(modules=[minilm[0], Pooling(dim, pooling_mode="cls"), Normalize()], device="cpu")
    sal = RetrieverSaliency(cls)
    assert sal.pooling == "cls"
    doc = "Marie Curie was born in Warsaw in 1867."
    assert sal.score(QUERY, doc) == pytest.approx(_cosine(cls, QUERY, doc), abs=1e-5)
    assert abs(sal.score(QUERY, doc) - _cosine(minilm, QUERY, doc)) > 1e-3  # not the mean-pooled score


def test_an_encoder_with_a_projection_after_pooling_is_refused_in_a_sentence(minilm):
    dim = minilm.get_embedding_dimension()
    dense = SentenceTransformer(modules=[minilm[0], Pooling(dim), Dense(dim, 16)], device="cpu")
    with pytest.raises(ValueError, match=r"this one has Transformer → Pooling\(mean\) → Dense: explain its documents"):
        RetrieverSaliency(dense)

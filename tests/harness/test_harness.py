"""The retrieval harness on a tiny corpus built here, with the real packaged MiniLM,
real FAISS and the real packaged SmolLM2 (no mocked model)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ragaudit_core.harness.sweep import (
    RunConfig,
    SweepError,
    build_prompt,
    chunk_text,
    generate_answers,
    load_beir,
    parse_run_alias,
    run_sweep,
)
from ragaudit_core.logs import store
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.logs.ingest import ingest_paths
from ragaudit_core.models import load_embedder, load_generator
from ragaudit_core.stability.metrics import StabilityOptions, compute_stability

pytestmark = pytest.mark.slow  # loads the real tokenizers and models

TOPICS = [
    "insulin resistance in adipose tissue",
    "tumour suppressor p53 mutations",
    "malaria parasite drug resistance",
    "gut microbiome and obesity",
]


@pytest.fixture(scope="module")
def tiny_beir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("beir")
    (d / "qrels").mkdir()
    docs = []
    for i in range(12):
        topic = TOPICS[i % 4]
        sents = [f"Study {i}.{j} reports that {topic} changes outcome {j} in cohort {i}." for j in range(14)]
        docs.append({"_id": f"D{i}", "title": f"On {topic} ({i})", "text": " ".join(sents), "metadata": {}})
    (d / "corpus.jsonl").write_text("\n".join(json.dumps(x) for x in docs) + "\n")
    qs = [
        {"_id": f"q{i}", "text": f"Does {t} change outcomes?", "metadata": {"evidence": "GOLD-SECRET"}}
        for i, t in enumerate(TOPICS)
    ] + [{"_id": "q9", "text": "unanswerable", "metadata": {}}]
    (d / "queries.jsonl").write_text("\n".join(json.dumps(x) for x in qs) + "\n")
    (d / "qrels" / "test.tsv").write_bytes(
        b"query-id\tcorpus-id\tscore\r\nq0\tD0\t1\r\nq1\tD1\t1\r\nq2\tD2\t1\r\nq3\tD3\t1\r\nq9\tD9\t0\r\n"
    )
    return d


@pytest.fixture(scope="module")
def embedder():
    return load_embedder(device="cpu")


def test_beir_loader_keeps_answerable_queries_and_never_reads_metadata(tiny_beir):
    data = load_beir(tiny_beir)
    assert sorted(data.queries) == ["q0", "q1", "q2", "q3"]  # q9 has no relevant document
    assert all("GOLD" not in t for t in data.queries.values())
    assert data.qrels["q0"] == {"D0": 1}  # CRLF stripped
    assert data.corpus["D0"].startswith("On insulin resistance in adipose tissue (0)\nStudy 0.0")


def test_chunk_windows_offsets_and_exact_overlap(embedder, tiny_beir):
    tok = embedder.tokenizer
    text = load_beir(tiny_beir).corpus["D1"]
    size, overlap = 24, 5
    spans = chunk_text(text, tok, size, overlap)
    pieces = [
        o for o in tok(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"] if o[1] > o[0]
    ]
    starts = [p[0] for p in pieces]
    ends = [p[1] for p in pieces]
    first_tok = [starts.index(a) for a, _ in spans]
    last_tok = [ends.index(b) for _, b in spans]
    for a, b in zip(first_tok, last_tok):
        assert b - a + 1 == size or b == len(pieces) - 1  # full windows, the last may be shorter
    for i in range(len(spans) - 1):
        assert first_tok[i + 1] == first_tok[i] + size - overlap  # stride
        assert last_tok[i] - first_tok[i + 1] + 1 == overlap  # exactly `overlap` shared pieces
    assert first_tok[0] == 0 and last_tok[-1] == len(pieces) - 1  # every piece covered
    # re-tokenising a chunk's text gives back its pieces
    a, b = spans[1]
    assert len(tok(text[a:b], add_special_tokens=False)["input_ids"]) == size
    assert chunk_text("", tok, 8, 2) == []
    with pytest.raises(SweepError):
        chunk_text(text, tok, 8, 8)


def test_sweep_writes_valid_logs_with_checked_offsets_and_hashes(tiny_beir, tmp_path):
    out = tmp_path / "runs"
    res = run_sweep(
        tiny_beir,
        out,
        top_ks=(3, 5),
        chunk_sizes=(32, 64),
        chunk_overlaps=(0, 8),
        device="cpu",
        cache=tmp_path / "cache",
    )
    assert sorted(p.name for p in res.files) == sorted(
        f"{RunConfig(k, c, o).run_id}.jsonl.gz" for k in (3, 5) for c in (32, 64) for o in (0, 8)
    )
    corpus = load_beir(tiny_beir).corpus
    recs = [json.loads(line) for line in gzip.open(out / "k5-c64-o8.jsonl.gz", "rt")]
    assert [r["query_id"] for r in recs] == ["q0", "q1", "q2", "q3"]
    for r in recs:
        assert r["config"]["top_k"] == 5 and r["config"]["chunk_size"] == 64
        assert [e["rank"] for e in r["evidence"]] == list(range(5))
        scores = [e["score"] for e in r["evidence"]]
        assert scores == sorted(scores, reverse=True)
        for e in r["evidence"]:
            assert corpus[e["doc_id"]][e["char_start"] : e["char_end"]] == e["text"]
            assert e["span_hash"] == span_hash(e["text"])
    con = store.connect(":memory:")
    rep = ingest_paths(con, [out])
    assert rep.rejected == [] and rep.n_records == 32
    st = compute_stability(con, StabilityOptions(pairs=[("k5-c32-o0", "k5-c64-o0")]))
    # changing the chunk size changes every span (different boundaries) but keeps documents
    pairs = st.pairs.set_index("level")
    assert pairs.loc["span", "j_avg"] == 0.0
    assert pairs.loc["doc", "j_avg"] > 0.3
    # a top-k change keeps the shallower list as a prefix: J = 3/5 at both levels
    st2 = compute_stability(con, StabilityOptions(pairs=[("k3-c64-o8", "k5-c64-o8")]))
    assert st2.pairs.set_index("level").loc["span", "j_avg"] == pytest.approx(3 / 5)


def test_embeddings_are_cached_per_chunking(tiny_beir, tmp_path, monkeypatch):
    import ragaudit_core.harness.sweep as h

    run_sweep(
        tiny_beir,
        tmp_path / "a",
        top_ks=(2,),
        chunk_sizes=(48,),
        chunk_overlaps=(0,),
        device="cpu",
        cache=tmp_path / "cache",
    )

    def no_embedding(*a, **k):
        raise AssertionError("re-embedded although the cache holds this chunking")

    monkeypatch.setattr(h, "_embed", no_embedding)
    res = run_sweep(
        tiny_beir,
        tmp_path / "b",
        top_ks=(1, 4),
        chunk_sizes=(48,),
        chunk_overlaps=(0,),
        device="cpu",
        cache=tmp_path / "cache",
    )
    assert len(res.files) == 2
    first_a = json.loads(gzip.open(tmp_path / "a" / "k2-c48-o0.jsonl.gz").readline())
    first_b = json.loads(gzip.open(tmp_path / "b" / "k4-c48-o0.jsonl.gz").readline())
    assert first_a["evidence"] == first_b["evidence"][:2]  # same cached vectors, deeper list


def test_run_aliases():
    grid = [RunConfig(k, c, o) for k in (5, 10, 20) for c in (128, 256) for o in (0, 32)]
    assert parse_run_alias("base", grid).run_id == "k10-c256-o32"
    assert parse_run_alias("o0", grid).run_id == "k10-c256-o0"
    assert parse_run_alias("c128", grid).run_id == "k10-c128-o32"
    assert parse_run_alias("k5-c128-o0", grid).run_id == "k5-c128-o0"
    with pytest.raises(SweepError):
        parse_run_alias("k7", grid)


def test_prompt_follows_rag_e_appendix_b():
    msgs = build_prompt("Q?", ["first", "second"])
    assert msgs[0]["role"] == "system"
    assert msgs[0]["content"].startswith("Use the following retrieved documents, ranked from highest to lowest")
    assert msgs[1]["content"] == "Document 1: first\nDocument 2: second\nQuery: Q?"


def test_real_smollm2_answers_are_deterministic_and_batch_invariant():
    gen = load_generator(device="cpu")
    prompts = [
        build_prompt("What does insulin do?", ["Insulin lowers blood glucose."]),
        build_prompt(
            "Where is p53 found?",
            ["p53 is a tumour suppressor found in the nucleus.", "It is mutated in many cancers."],
        ),
    ]
    a = generate_answers(gen, prompts, max_new_tokens=12, batch_size=2)
    b = generate_answers(gen, prompts, max_new_tokens=12, batch_size=1)
    assert all(x.strip() for x in a)
    assert a == b  # greedy, left padding with correct masks: batching does not change answers


def test_cited_pipeline_writes_provenance_that_loads_and_yields_a_cfs(tiny_beir, tmp_path):
    from ragaudit_core.fidelity.score import fidelity_runs
    from ragaudit_core.harness.citation_pipeline import run_provenance

    res = run_provenance(
        tiny_beir,
        tmp_path / "prov",
        configs=["k5-c24-o5"],
        n_queries=2,
        budget=90,
        max_new_tokens=24,
        device="cpu",
        cache=tmp_path / "cache",
    )
    assert res["runs"] == ["k5-c24-o5"] and res["queries"] == 2
    con = store.connect(":memory:")
    rep = ingest_paths(con, [tmp_path / "prov"])
    assert rep.n_provenance == 2 and not rep.rejected
    recs = [json.loads(x) for x in gzip.open(tmp_path / "prov" / "prov-k5-c24-o5.jsonl.gz", "rt")]
    for r in recs:
        stages = {n["stage"] for n in r["nodes"]}
        assert stages >= {0, 1, 2, 3, 4, 5}
        # every chunk's offsets cut its text out of the document
        data = load_beir(tiny_beir)
        for n in r["nodes"]:
            if n["artifact_type"] == "chunk":
                c = n["coordinates"]
                assert data.corpus[c["doc_id"]][c["char_start"] : c["char_end"]] == n["metadata"]["text"]
        # the budget of 90 generator tokens cannot hold five chunks: drops are logged with a reason
        assert r["dropped"] and all(d["reason"] for d in r["dropped"])
        assert r["ground_truth"] == [{"doc_id": next(iter(data.qrels[r["query_id"]])), "page": 1}]
    fid = fidelity_runs(con)["k5-c24-o5"]
    s = fid.summary
    assert s["n_queries"] == 2 and s["n_with_ground_truth"] == 2
    assert s["stage_survival"]["chunking"] == 1.0  # every chunk carries its offsets
    # post-processed citations point into the context, so each scores exactly 1.0; out-of-range ones 0.0
    assert set(fid.citations["score"]) <= {0.0, 0.3, 1.0}
    assert s["cfs_product_mean"] is not None and 0.0 <= s["cfs_product_mean"] <= 1.0

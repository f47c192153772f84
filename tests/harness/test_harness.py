"""The retrieval harness on a tiny corpus built here, with the real packaged MiniLM,
real FAISS and the real packaged SmolLM2 (no mocked model)."""

from __future__ import annotations

import gzip
import hashlib
import json
import time
import unicodedata
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
    assert res["runs"] == ["k5-c24-o5-b90-t24"] and res["queries"] == 2
    con = store.connect(":memory:")
    rep = ingest_paths(con, [tmp_path / "prov"])
    assert rep.n_provenance == 2 and not rep.rejected
    recs = [json.loads(x) for x in gzip.open(tmp_path / "prov" / "prov-k5-c24-o5-b90-t24.jsonl.gz", "rt")]
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
    fid = fidelity_runs(con)["k5-c24-o5-b90-t24"]
    s = fid.summary
    assert s["n_queries"] == 2 and s["n_with_ground_truth"] == 2
    assert s["stage_survival"]["chunking"] == 1.0  # every chunk carries its offsets
    # post-processed citations point into the context, so each scores exactly 1.0; out-of-range ones 0.0
    assert set(fid.citations["score"]) <= {0.0, 0.3, 1.0}
    assert s["cfs_product_mean"] is not None and 0.0 <= s["cfs_product_mean"] <= 1.0


def _beir(folder, docs: dict[str, str], queries: dict[str, str], qrels: list[tuple[str, str]]):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in docs.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items()))
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels)
    )
    return folder


def test_a_run_is_the_same_whatever_else_the_grid_asks_and_never_padded(tmp_path):
    """Three documents of the same text tie exactly: FAISS ordered them by how far it searched, so
    k2's evidence changed with the grid's largest k (seed 000 holds everything else fixed). Ties
    now go in corpus order, whatever the grid. A top-k past the corpus was padded by FAISS with id
    -1 — the last chunk again with score -3.4e38: the run holds what there is."""
    docs = {f"D{i}": f"Unrelated filler passage number {i} about topic {i}." for i in range(6)}
    docs |= {"DUPA": "Insulin resistance in adipose tissue.", "DUPB": "Insulin resistance in adipose tissue."}
    docs["DUPC"] = "Insulin resistance in adipose tissue."
    corpus = _beir(tmp_path / "dup", docs, {"q": "insulin resistance adipose"}, [("q", "DUPA")])

    def evidence(ks, k):
        out = tmp_path / f"out{'-'.join(map(str, ks))}"
        run_sweep(corpus, out, top_ks=ks, chunk_sizes=(64,), chunk_overlaps=(0,), device="cpu", cache=tmp_path / "c")
        rec = json.loads(gzip.open(out / f"k{k}-c64-o0.jsonl.gz", "rt").readline())
        return [(e["doc_id"], e["rank"]) for e in rec["evidence"]], [e["score"] for e in rec["evidence"]]

    alone, _ = evidence((2,), 2)
    assert alone == [("DUPA", 0), ("DUPB", 1)]  # the tie in corpus order
    assert evidence((2, 3), 2)[0] == alone and evidence((2, 9), 2)[0] == alone
    deep, scores = evidence((2, 50), 50)
    assert len(deep) == 9 and len({d for d, _ in deep}) == 9 and min(scores) > -1.0  # all 9 chunks, once each


def test_a_sweeps_logs_are_the_same_bytes_every_time(tiny_beir, tmp_path):
    """gzip stamps the time of writing in its header: two identical runs gave two SHA-256s, so the
    ingest's "these bytes are loaded" skip and anyone comparing hashes saw a change."""
    digests = []
    for n in (1, 2):
        run_sweep(tiny_beir, tmp_path / f"o{n}", top_ks=(3,), chunk_sizes=(32,), chunk_overlaps=(0,), device="cpu",
                  cache=tmp_path / "c")  # fmt: skip
        digests.append(hashlib.sha256((tmp_path / f"o{n}" / "k3-c32-o0.jsonl.gz").read_bytes()).hexdigest())
        time.sleep(1.1)  # gzip's time stamp counts seconds
    assert digests[0] == digests[1]


def test_a_decomposed_accent_stays_with_its_letter(embedder):
    """NFD text: the tokenizer strips the combining accent, whose offsets then fell outside every
    chunk ('Résume' logged without its last accent, the accent in no chunk)."""
    text = "Re\u0301sume\u0301 of naive\u0308 patients"
    spans = chunk_text(text, embedder.tokenizer, 1, 0)
    covered = {i for a, b in spans for i in range(a, b)}
    assert [i for i, c in enumerate(text) if unicodedata.combining(c) and i not in covered] == []
    assert spans == [(0, 8), (9, 11), (12, 18), (19, 27)]  # "Résumé", "of", "naivë", "patients", accents kept


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"top_ks": (0,)}, "top-k values must be at least 1, not 0"),
        ({"chunk_sizes": (600,)}, "chunk size 600 is past what the embedder reads (510 word pieces"),
        ({"chunk_overlaps": (-1,)}, "chunk overlaps must be at least 0, not -1"),
        ({"max_queries": 0}, "--max-queries must be at least 1, not 0"),
        ({"answers": ("k5-cx-o0",)}, "unknown run alias 'k5-cx-o0'; a full run id is k<N>-c<N>-o<N>"),
    ],
)
def test_settings_no_run_can_have_are_refused_in_a_sentence(tiny_beir, tmp_path, kwargs, said):
    base = {"top_ks": (3,), "chunk_sizes": (32,), "chunk_overlaps": (0,), "device": "cpu", "cache": tmp_path / "c"}
    with pytest.raises(SweepError) as e:
        run_sweep(tiny_beir, tmp_path / "out", **(base | kwargs))
    assert str(e.value).startswith(said)


def test_files_the_harness_cannot_use_are_refused_naming_file_and_line(tmp_path):
    good = {"D0": "A passage."}
    folder = _beir(tmp_path / "b", good, {"q": "a"}, [("q", "D0")])
    (folder / "corpus.jsonl").write_text('{"_id": "D0", "text": "A passage."}\n42\n')
    with pytest.raises(SweepError, match=r"corpus.jsonl line 2: a JSON int, not an object with _id and text"):
        load_beir(folder)
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "D0", "text": "caf\xe9"}\n')
    with pytest.raises(SweepError, match=r"corpus.jsonl line 1: not UTF-8 text \(byte 27\)"):
        load_beir(folder)
    (folder / "corpus.jsonl").write_text('{"_id": "D0", "text": 5}\n')
    with pytest.raises(SweepError, match="title and text must be strings"):
        load_beir(folder)
    _beir(folder, good, {"q": "a"}, [("q", "D0")])
    (folder / "qrels" / "test.tsv").write_text("\ufeffquery-id\tcorpus-id\tscore\nq\tD0\t1\n", encoding="utf-8")
    assert load_beir(folder).qrels == {"q": {"D0": 1}}  # a byte-order mark before the header
    with pytest.raises(SweepError, match=r"is a file, not a folder"):
        run_sweep(folder, folder / "corpus.jsonl", top_ks=(1,), chunk_sizes=(32,), chunk_overlaps=(0,), device="cpu")
    _beir(folder, {"D0": "   "}, {"q": "a"}, [("q", "D0")])
    with pytest.raises(SweepError, match="holds no text to retrieve"):
        run_sweep(folder, tmp_path / "o", top_ks=(1,), chunk_sizes=(32,), chunk_overlaps=(0,), device="cpu")


def test_a_provenance_run_id_names_each_pipeline_setting_off_its_default():
    """Two provenance runs of one grid point with another budget (or λ, near-duplicate threshold,
    answer length) are two runs: their ids differ, so the second's records are not refused as
    repeats of the first's."""
    import inspect

    from ragaudit_core.harness.citation_pipeline import PIPELINE_DEFAULTS, provenance_run_id, run_provenance

    rc = RunConfig(10, 256, 32)
    assert provenance_run_id(rc) == "k10-c256-o32"
    assert provenance_run_id(rc, **PIPELINE_DEFAULTS) == "k10-c256-o32"
    assert provenance_run_id(rc, budget=512) == "k10-c256-o32-b512"
    assert provenance_run_id(rc, lam=0.5, max_new_tokens=64) == "k10-c256-o32-l0.5-t64"
    assert provenance_run_id(rc, budget=2048, lam=0.25, dup_threshold=0.9) == "k10-c256-o32-b2048-l0.25-d0.9"
    assert provenance_run_id(rc, lam=0.7000001) == "k10-c256-o32-l0.7000001"  # not "l0.7", the default's look
    # a model named instead of the packaged one, by its id's or folder's last part
    got = provenance_run_id(rc, embedder="/models/bge small/", generator="Qwen/Qwen2-0.5B")
    assert got == "k10-c256-o32-e.bge_small-g.Qwen2-0.5B"
    params = inspect.signature(run_provenance).parameters
    assert {k: params[k].default for k in PIPELINE_DEFAULTS} == PIPELINE_DEFAULTS

"""The built-in retrieval harness: a real RAG retrieval pipeline run over a grid of
configurations, writing evidence logs in RagAudit's contract (seed 000, §3 and app. A).

Pipeline per configuration ``(top_k, chunk_size, chunk_overlap)``:

1. BEIR corpus → document text ``title + "\\n" + text`` (the title alone when the text is
   empty); queries keep only their ``text`` (BEIR ``metadata`` may hold gold evidence and
   is never read); only queries with at least one relevant qrels document are kept.
2. Chunking in the embedder's tokenizer: windows of ``chunk_size`` word pieces, each
   starting ``chunk_size - chunk_overlap`` pieces after the previous, the last window
   ending at the document's last piece. A chunk's text is the document's characters from
   its first piece's start to its last piece's end (``char_start``/``char_end``, end
   exclusive), so ``text == document[char_start:char_end]``.
3. Embedding with sentence-transformers (normalised; the model's sequence limit raised to
   ``chunk_size + 2`` so no chunk is cut), cached on disk per (corpus hash, model,
   chunking): changing ``top_k`` or re-running costs no embedding.
4. A FAISS flat inner-product index (cosine on normalised vectors); top-k chunks per query.

Each (configuration, query) becomes one evidence record with the config object and, per
chunk, ``doc_id``, ``chunk_id``, ``text``, ``span_hash``, ``rank``, ``score``,
``char_start``, ``char_end``. One gzip JSONL file per configuration.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragaudit_core.errors import RagAuditError
from ragaudit_core.logs.identity import span_hash
from ragaudit_core.prompts import build_prompt

__all__ = [
    "BeirData",
    "Chunk",
    "RunConfig",
    "SweepError",
    "build_prompt",
    "chunk_corpus",
    "chunk_text",
    "load_beir",
    "parse_run_alias",
    "run_sweep",
]

BASE = (10, 256, 32)  # the paper's baseline: k = 10, c = 256, o = 32


class SweepError(RagAuditError, ValueError):
    """The harness cannot run as asked (bad corpus folder, bad grid)."""


@dataclass(frozen=True)
class RunConfig:
    top_k: int
    chunk_size: int
    chunk_overlap: int

    @property
    def run_id(self) -> str:
        return f"k{self.top_k}-c{self.chunk_size}-o{self.chunk_overlap}"


def parse_run_alias(alias: str, grid: Sequence[RunConfig]) -> RunConfig:
    """``base`` (k10-c256-o32), ``o0`` / ``c128`` / ``k5`` (the baseline with one setting
    changed, as in seed 000 Table 1), or a full run id ``k10-c256-o32``."""
    k, c, o = BASE
    a = alias.strip()
    if a != "base":
        if a.startswith("k") and "-" in a:
            parts = {p[0]: int(p[1:]) for p in a.split("-")}
            k, c, o = parts["k"], parts["c"], parts["o"]
        elif a[:1] in "kco" and a[1:].isdecimal():
            v = int(a[1:])
            k, c, o = (v, c, o) if a[0] == "k" else (k, v, o) if a[0] == "c" else (k, c, v)
        else:
            raise SweepError(f"unknown run alias {alias!r}; use base, k<N>, c<N>, o<N> or k<N>-c<N>-o<N>")
    rc = RunConfig(k, c, o)
    if rc not in grid:
        raise SweepError(f"run {alias!r} ({rc.run_id}) is not in the grid")
    return rc


@dataclass
class BeirData:
    corpus: dict[str, str]  # doc id → document text (title + "\n" + text)
    queries: dict[str, str]  # query id → text, answerable queries only
    qrels: dict[str, dict[str, int]]  # query id → {doc id: relevance}
    corpus_sha256: str = ""


def _jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    with open(path, "rb") as f:
        for i, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield i, json.loads(line)
            except json.JSONDecodeError as e:
                raise SweepError(f"{path} line {i}: invalid JSON ({e.msg})") from None


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """Read a BEIR dataset folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).

    The qrels TSV may have CRLF line endings; a header line is skipped. Queries without a
    relevant document (score > 0) are dropped. Query ``metadata`` is never read."""
    folder = Path(folder)
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (folder / name).exists():
            raise SweepError(f"{folder}: not a BEIR folder (missing {name})")
    h = hashlib.sha256()
    corpus: dict[str, str] = {}
    with open(folder / "corpus.jsonl", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    for i, d in _jsonl(folder / "corpus.jsonl"):
        if "_id" not in d:
            raise SweepError(f"{folder / 'corpus.jsonl'} line {i}: document without _id")
        title, text = (d.get("title") or "").strip(), (d.get("text") or "").strip()
        corpus[str(d["_id"])] = f"{title}\n{text}" if title and text else (title or text)
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            parts = line.rstrip("\r\n").split("\t")
            if i == 1 and parts[:1] == ["query-id"]:
                continue
            if len(parts) < 3 or not parts[0]:
                continue
            try:
                score = int(parts[2])
            except ValueError:
                raise SweepError(f"qrels line {i}: score {parts[2]!r} is not an integer") from None
            qrels.setdefault(parts[0], {})[parts[1]] = score
    answerable = {q for q, rel in qrels.items() if any(s > 0 for s in rel.values())}
    queries = {}
    for _i, q in _jsonl(folder / "queries.jsonl"):
        qid = str(q.get("_id"))
        if qid in answerable:
            queries[qid] = q.get("text") or ""  # only the text: metadata holds gold evidence
    return BeirData(
        corpus=corpus,
        queries=dict(sorted(queries.items())),
        qrels={q: qrels[q] for q in queries},
        corpus_sha256=h.hexdigest(),
    )


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    index: int
    char_start: int
    char_end: int
    text: str

    @property
    def chunk_id(self) -> str:
        return f"{self.doc_id}#{self.index}"


def labelled(progress: Callable[[str, int, int], None] | None, label: str) -> Callable[[int, int], None] | None:
    """``progress`` with its first argument (the label) bound; None when there is no callback."""
    return None if progress is None else functools.partial(progress, label)


def chunk_text(text: str, tokenizer: Any, chunk_size: int, chunk_overlap: int) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the token windows of ``text`` (see module doc).

    Edge cases: an empty (or all-whitespace) text has no chunk; a text shorter than one
    window is one chunk; ``chunk_overlap`` must be smaller than ``chunk_size``."""
    if chunk_overlap >= chunk_size or chunk_size < 1 or chunk_overlap < 0:
        raise SweepError(f"chunk_overlap ({chunk_overlap}) must be in [0, chunk_size ({chunk_size}))")
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False)
    offsets = [o for o in enc["offset_mapping"] if o[1] > o[0]]
    n = len(offsets)
    spans = []
    step = chunk_size - chunk_overlap
    start = 0
    while start < n:
        end = min(start + chunk_size, n)
        spans.append((offsets[start][0], offsets[end - 1][1]))
        if end == n:
            break
        start += step
    return spans


def chunk_corpus(corpus: dict[str, str], tokenizer: Any, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    out = []
    for doc_id, text in corpus.items():
        for i, (a, b) in enumerate(chunk_text(text, tokenizer, chunk_size, chunk_overlap)):
            out.append(Chunk(doc_id, i, a, b, text[a:b]))
    return out


@dataclass
class _Index:
    chunks: list[Chunk]
    index: Any  # faiss.IndexFlatIP


def _embed(model: Any, texts: list[str], batch_size: int, progress: Callable[[int, int], None] | None) -> np.ndarray:
    out = []
    order = np.argsort([len(t) for t in texts])[::-1]  # long first: padding-efficient batches
    for s in range(0, len(texts), batch_size):
        idx = order[s : s + batch_size]
        out.append(
            (
                idx,
                model.encode(
                    [texts[i] for i in idx],
                    batch_size=batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                ),
            )
        )
        if progress:
            progress(min(s + batch_size, len(texts)), len(texts))
    emb = np.zeros((len(texts), out[0][1].shape[1]) if out else (0, 1), dtype=np.float32)
    for idx, e in out:
        emb[idx] = e
    return emb


def _build_index(
    data: BeirData,
    model: Any,
    model_name: str,
    chunk_size: int,
    chunk_overlap: int,
    cache: Path,
    progress: Callable[[int, int], None] | None,
) -> _Index:
    import faiss

    chunks = chunk_corpus(data.corpus, model.tokenizer, chunk_size, chunk_overlap)
    key = hashlib.sha256(f"{data.corpus_sha256}|{model_name}|{chunk_size}|{chunk_overlap}|v1".encode()).hexdigest()[:16]
    f = cache / "embeddings" / f"{key}.npy"
    if f.exists():
        emb = np.load(f)
        if emb.shape[0] != len(chunks):
            emb = None
    else:
        emb = None
    if emb is None:
        model.max_seq_length = chunk_size + 2
        emb = _embed(model, [c.text for c in chunks], 64, progress)
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp.npy")
        np.save(tmp, emb)
        tmp.rename(f)
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    return _Index(chunks, index)


def generate_answers(
    gen: Any,
    prompts: list[list[dict]],
    *,
    max_new_tokens: int = 96,
    batch_size: int = 4,
    progress: Callable[[int, int], None] | None = None,
) -> list[str]:
    """Greedy (deterministic) answers; prompts batched with left padding."""
    import torch

    tok, model = gen.tokenizer, gen.model
    texts = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    out: list[str] = [""] * len(texts)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False).to(gen.device)
        with torch.no_grad():
            ids = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id)
        for row, i in zip(ids, idx):
            out[i] = tok.decode(row[enc["input_ids"].shape[1] :], skip_special_tokens=True).strip()
        if progress:
            progress(min(s + batch_size, len(order)), len(order))
    return out


@dataclass
class SweepResult:
    files: list[Path]
    runs: list[RunConfig]
    n_queries: int
    n_chunks: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)


def run_sweep(
    corpus_dir: str | Path,
    out_dir: str | Path,
    *,
    top_ks: Sequence[int] = (5, 10, 20),
    chunk_sizes: Sequence[int] = (128, 256),
    chunk_overlaps: Sequence[int] = (0, 32),
    max_queries: int | None = None,
    seed: int = 0,
    embedder: str | None = None,
    generator: str | None = None,
    answers: Sequence[str] = (),
    answer_queries: int = 60,
    max_new_tokens: int = 96,
    device: str = "auto",
    cache: Path | None = None,
    split: str = "test",
    progress: Callable[[str, int, int], None] | None = None,
) -> SweepResult:
    """Run the grid and write one ``<run_id>.jsonl.gz`` per configuration into ``out_dir``."""
    import time

    from ragaudit_core.models import DEFAULT_EMBEDDER, cache_dir, load_embedder, load_generator

    t0 = time.perf_counter()
    cache = Path(cache) if cache else cache_dir()
    data = load_beir(corpus_dir, split)
    qids = list(data.queries)
    if max_queries is not None and max_queries < len(qids):
        qids = sorted(random.Random(seed).sample(qids, max_queries))
    grid = [RunConfig(k, c, o) for c in chunk_sizes for o in chunk_overlaps for k in top_ks]
    for rc in grid:
        if rc.chunk_overlap >= rc.chunk_size:
            raise SweepError(f"overlap {rc.chunk_overlap} is not smaller than chunk size {rc.chunk_size}")
    answer_runs = {parse_run_alias(a, grid) for a in answers}
    model = load_embedder(embedder, device=device)
    model_name = embedder or DEFAULT_EMBEDDER
    qtexts = [data.queries[q] for q in qids]
    model.max_seq_length = 512
    qemb = model.encode(
        qtexts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    res = SweepResult(files=[], runs=grid, n_queries=len(qids))
    answer_qids = set(qids[:answer_queries]) if answers else set()
    gen = None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t_embed = 0.0
    t_answer = 0.0
    for c in chunk_sizes:
        for o in chunk_overlaps:
            te = time.perf_counter()
            idx = _build_index(
                data,
                model,
                model_name,
                c,
                o,
                cache,
                labelled(progress, f"embed c{c}-o{o}"),
            )
            t_embed += time.perf_counter() - te
            res.n_chunks[f"c{c}-o{o}"] = len(idx.chunks)
            kmax = max(top_ks)
            scores, ids = idx.index.search(qemb, kmax)
            for k in top_ks:
                rc = RunConfig(k, c, o)
                config = {
                    "top_k": k,
                    "chunk_size": c,
                    "chunk_overlap": o,
                    "embedder": model_name,
                    "index": "faiss.IndexFlatIP",
                    "dataset": Path(corpus_dir).name,
                    "split": split,
                }
                records: list[dict[str, Any]] = []
                for qi, q in enumerate(qids):
                    ev = []
                    for r in range(k):
                        ch = idx.chunks[int(ids[qi, r])]
                        ev.append(
                            {
                                "doc_id": ch.doc_id,
                                "chunk_id": ch.chunk_id,
                                "text": ch.text,
                                "span_hash": span_hash(ch.text),
                                "rank": r,
                                "score": round(float(scores[qi, r]), 6),
                                "char_start": ch.char_start,
                                "char_end": ch.char_end,
                            }
                        )
                    records.append(
                        {"run_id": rc.run_id, "query_id": q, "config": config, "query": data.queries[q], "evidence": ev}
                    )
                if rc in answer_runs:
                    ta = time.perf_counter()
                    if gen is None:
                        gen = load_generator(generator, device=device)
                    todo = [r for r in records if r["query_id"] in answer_qids]
                    prompts = [build_prompt(r["query"], [e["text"] for e in r["evidence"]]) for r in todo]
                    texts = generate_answers(
                        gen,
                        prompts,
                        max_new_tokens=max_new_tokens,
                        progress=labelled(progress, f"answers {rc.run_id}"),
                    )
                    for rec, a in zip(todo, texts):
                        rec["answer"] = a
                    t_answer += time.perf_counter() - ta
                    res.timings[f"answers_{rc.run_id}"] = time.perf_counter() - ta
                path = out_dir / f"{rc.run_id}.jsonl.gz"
                with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
                    for rec in records:
                        f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                res.files.append(path)
    res.timings.update(total_s=time.perf_counter() - t0, embed_s=t_embed, answers_s=t_answer)
    return res

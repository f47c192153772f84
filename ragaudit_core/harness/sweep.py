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
   exclusive; combining marks after that end — a decomposed accent the tokenizer strips — go
   with their letter), so ``text == document[char_start:char_end]``.
3. Embedding with sentence-transformers (normalised; the model's sequence limit raised to
   ``chunk_size + 2`` and a few pieces more — a window cut mid-word tokenizes again a piece or
   two longer — so no chunk is cut), cached on disk per (corpus hash, model, chunking):
   changing ``top_k`` or re-running costs no embedding. A chunk size past the embedder's
   positions is refused before any work.
4. A FAISS flat inner-product index (cosine on normalised vectors); the top-k chunks per query
   by score, ties in corpus order (:func:`ranked`: a run's list does not depend on the other
   runs of the grid), never more than the index holds.

Each (configuration, query) becomes one evidence record with the config object and, per
chunk, ``doc_id``, ``chunk_id``, ``text``, ``span_hash``, ``rank``, ``score``,
``char_start``, ``char_end``. One gzip JSONL file per configuration, the same bytes for the
same records (:func:`write_log`).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import random
import re
import unicodedata
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
    "check_corpus",
    "check_grid",
    "chunk_corpus",
    "chunk_text",
    "load_beir",
    "max_chunk_size",
    "out_folder",
    "parse_run_alias",
    "ranked",
    "run_sweep",
    "write_log",
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
            m = re.fullmatch(r"k(\d+)-c(\d+)-o(\d+)", a)
            if m is None:
                raise SweepError(f"unknown run alias {alias!r}; a full run id is k<N>-c<N>-o<N> (k10-c256-o32)")
            k, c, o = map(int, m.groups())
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
    """The JSON objects of a BEIR JSON Lines file, with their line numbers; a line that is not UTF-8
    JSON, or not an object, stops the run naming it (a BEIR file is all objects)."""
    with open(path, "rb") as f:
        for i, line in enumerate(f, 1):
            line = line.strip().removeprefix(b"\xef\xbb\xbf") if i == 1 else line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise SweepError(f"{path} line {i}: not UTF-8 text (byte {e.start + 1}); save it as UTF-8") from None
            except json.JSONDecodeError as e:
                raise SweepError(f"{path} line {i}: invalid JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise SweepError(f"{path} line {i}: a JSON {type(obj).__name__}, not an object with _id and text")
            yield i, obj


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
        if not all(isinstance(d.get(k) or "", str) for k in ("title", "text")):
            raise SweepError(f"{folder / 'corpus.jsonl'} line {i}: title and text must be strings")
        title, text = (d.get("title") or "").strip(), (d.get("text") or "").strip()
        corpus[str(d["_id"])] = f"{title}\n{text}" if title and text else (title or text)
    qrels = _qrels(folder / "qrels" / f"{split}.tsv")
    answerable = {q for q, rel in qrels.items() if any(s > 0 for s in rel.values())}
    queries = {}
    for _i, q in _jsonl(folder / "queries.jsonl"):
        qid = str(q.get("_id"))
        if qid in answerable:
            if not isinstance(q.get("text") or "", str):
                raise SweepError(f"{folder / 'queries.jsonl'} line {_i}: text must be a string")
            queries[qid] = q.get("text") or ""  # only the text: metadata holds gold evidence
    return BeirData(
        corpus=corpus,
        queries=dict(sorted(queries.items())),
        qrels={q: qrels[q] for q in queries},
        corpus_sha256=h.hexdigest(),
    )


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR's qrels TSV (a header line skipped, a byte-order mark too; CRLF line ends)."""
    qrels: dict[str, dict[str, int]] = {}
    try:
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except UnicodeDecodeError as e:
        raise SweepError(f"{path}: not UTF-8 text (byte {e.start + 1}); save it as UTF-8") from None
    for i, line in enumerate(lines, 1):
        parts = line.rstrip("\r\n").split("\t")
        if i == 1 and parts[:1] == ["query-id"]:
            continue
        if len(parts) < 3 or not parts[0]:
            continue
        try:
            score = int(parts[2])
        except ValueError:
            raise SweepError(f"{path} line {i}: score {parts[2]!r} is not an integer") from None
        qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


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
        stop = offsets[end - 1][1]
        while stop < len(text) and unicodedata.combining(text[stop]):  # a decomposed accent the tokenizer strips
            stop += 1
        spans.append((offsets[start][0], stop))
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
    key = hashlib.sha256(f"{data.corpus_sha256}|{model_name}|{chunk_size}|{chunk_overlap}|v2".encode()).hexdigest()[:16]
    f = cache / "embeddings" / f"{key}.npy"
    if f.exists():
        emb = np.load(f)
        if emb.shape[0] != len(chunks):
            emb = None
    else:
        emb = None
    if emb is None:
        # a window cut mid-word tokenizes again a piece or two longer ("##iography" → "io ##graphy"):
        # room for that, so the text logged is the text embedded (the model's positions allowing)
        model.max_seq_length = min(chunk_size + 2 + _RETOKENIZE_MARGIN, max_chunk_size(model) + 2)
        emb = _embed(model, [c.text for c in chunks], 64, progress)
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(".tmp.npy")
        np.save(tmp, emb)
        tmp.rename(f)
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    return _Index(chunks, index)


_RETOKENIZE_MARGIN = 8


def max_chunk_size(model: Any) -> int:
    """The largest chunk (in word pieces) the embedder reads whole: its positions less its two
    special tokens ([CLS], [SEP]); 510 for MiniLM."""
    config = getattr(model[0].auto_model, "config", None)
    positions = int(getattr(config, "max_position_embeddings", None) or 512)
    if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
        positions -= 2  # the first two positions stand for padding
    return positions - 2


def ranked(index: Any, qemb: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The top ``k`` chunks of each query by score, ties in corpus order — the same list whatever
    else is asked of the index (FAISS orders equal scores by how far it searched: a run's evidence
    changed with the largest top-k of the grid). At most as many as the index holds: no padding
    (FAISS pads a short result with id -1 and the lowest float, which read as the last chunk)."""
    n = int(index.ntotal)
    want = min(k, n)
    if want <= 0:
        return np.zeros((len(qemb), 0), np.float32), np.zeros((len(qemb), 0), np.int64)
    got = min(n, want + 16)
    while True:  # far enough that every chunk tied with the k-th is among those found
        scores, ids = index.search(qemb, got)
        if got >= n or not np.any(scores[:, got - 1] >= scores[:, want - 1]):
            break
        got = min(n, got * 2)
    order = np.lexsort((ids, -scores), axis=-1)
    return np.take_along_axis(scores, order, -1)[:, :want], np.take_along_axis(ids, order, -1)[:, :want]


def write_log(path: Path, records: Iterable[dict]) -> None:
    """A gzipped JSON Lines log, byte for byte the same for the same records (no time stamp in the
    gzip header: the ingest skips a file whose bytes it has loaded, and a reader comparing hashes
    sees no change where there is none)."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as gz,
        io.TextIOWrapper(gz, encoding="utf-8") as f,
    ):
        for rec in records:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")


def out_folder(out_dir: str | Path) -> Path:
    """The output folder, made where missing; one sentence where it cannot be."""
    p = Path(out_dir)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise SweepError(f"{p} is a file, not a folder: name a folder for the logs") from None
    except OSError as e:
        raise SweepError(f"cannot make the output folder {p}: {e.strerror or e}") from None
    return p


def check_corpus(data: BeirData, corpus_dir: str | Path) -> None:
    """Refuse a corpus without a document holding text (an index of nothing cannot be searched)."""
    if not any(t.strip() for t in data.corpus.values()):
        raise SweepError(f"{corpus_dir}: its corpus.jsonl holds no text to retrieve")


def check_grid(model: Any, top_ks: Sequence[int], chunk_sizes: Sequence[int], chunk_overlaps: Sequence[int]) -> None:
    """Refuse settings no run can have, before any work: top-k and chunk sizes of at least 1,
    overlaps of at least 0, chunks the embedder reads whole (each configuration's overlap below its
    chunk size is checked by the caller, which knows its configurations)."""
    if not top_ks or min(top_ks) < 1:
        raise SweepError(f"top-k values must be at least 1, not {min(top_ks, default=0)}")
    if not chunk_sizes or min(chunk_sizes) < 1:
        raise SweepError(f"chunk sizes must be at least 1 word piece, not {min(chunk_sizes, default=0)}")
    if not chunk_overlaps or min(chunk_overlaps) < 0:
        raise SweepError(f"chunk overlaps must be at least 0, not {min(chunk_overlaps, default=0)}")
    limit = max_chunk_size(model)
    if max(chunk_sizes) > limit:
        raise SweepError(
            f"chunk size {max(chunk_sizes)} is past what the embedder reads ({limit} word pieces: its positions less "
            f"[CLS] and [SEP]); pick chunk sizes of at most {limit}"
        )


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
    if max_queries is not None and max_queries < 1:
        raise SweepError(f"--max-queries must be at least 1, not {max_queries}")
    data = load_beir(corpus_dir, split)
    check_corpus(data, corpus_dir)
    qids = list(data.queries)
    if max_queries is not None and max_queries < len(qids):
        qids = sorted(random.Random(seed).sample(qids, max_queries))
    grid = [RunConfig(k, c, o) for c in chunk_sizes for o in chunk_overlaps for k in top_ks]
    for rc in grid:
        if rc.chunk_overlap >= rc.chunk_size:
            raise SweepError(f"overlap {rc.chunk_overlap} is not smaller than chunk size {rc.chunk_size}")
    answer_runs = {parse_run_alias(a, grid) for a in answers}
    model = load_embedder(embedder, device=device)
    check_grid(model, top_ks, chunk_sizes, chunk_overlaps)
    model_name = embedder or DEFAULT_EMBEDDER
    qtexts = [data.queries[q] for q in qids]
    model.max_seq_length = 512
    qemb = model.encode(
        qtexts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
    )
    res = SweepResult(files=[], runs=grid, n_queries=len(qids))
    answer_qids = set(qids[:answer_queries]) if answers else set()
    gen = None
    out_dir = out_folder(out_dir)
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
            scores, ids = ranked(idx.index, qemb, max(top_ks))  # each run's list is a prefix, ties in corpus order
            for k in top_ks:
                rc = RunConfig(k, c, o)
                config = {
                    "top_k": k,
                    "chunk_size": c,
                    "chunk_overlap": o,
                    "embedder": model_name,
                    "index": "faiss.IndexFlatIP",
                    "dataset": Path(corpus_dir).resolve().name,
                    "split": split,
                }
                records = _records(rc, config, qids, data, idx, scores[:, :k], ids[:, :k])
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
                write_log(path, records)
                res.files.append(path)
    res.timings.update(total_s=time.perf_counter() - t0, embed_s=t_embed, answers_s=t_answer)
    return res


def _records(
    rc: RunConfig,
    config: dict[str, Any],
    qids: list[str],
    data: BeirData,
    idx: _Index,
    scores: np.ndarray,
    ids: np.ndarray,
) -> list[dict[str, Any]]:
    """One evidence record per query: its chunks in rank order (id, text, span hash, score, offsets)."""
    records: list[dict[str, Any]] = []
    for qi, q in enumerate(qids):
        ev = []
        for r, (i, score) in enumerate(zip(ids[qi], scores[qi])):
            ch = idx.chunks[int(i)]
            ev.append(
                {
                    "doc_id": ch.doc_id,
                    "chunk_id": ch.chunk_id,
                    "text": ch.text,
                    "span_hash": span_hash(ch.text),
                    "rank": r,
                    "score": round(float(score), 6),
                    "char_start": ch.char_start,
                    "char_end": ch.char_end,
                }
            )
        records.append({"run_id": rc.run_id, "query_id": q, "config": config, "query": data.queries[q], "evidence": ev})
    return records

"""What the tests share: logs written as real files, hand-made provenance graphs, and the
dashboard's pages under Streamlit's AppTest. Fixtures live in ``conftest.py``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_jsonl(path: Path, records, *, gz: bool = False) -> Path:
    """Write records (dicts, or raw ``bytes``/``str`` lines written verbatim) as JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks = []
    for r in records:
        if isinstance(r, bytes):
            chunks.append(r)
        elif isinstance(r, str):
            chunks.append(r.encode("utf-8"))
        else:
            chunks.append(json.dumps(r, ensure_ascii=False).encode("utf-8"))
    data = b"\n".join(chunks) + b"\n"
    if gz:
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def records_db(tmp_path: Path, records, name: str = "logs.duckdb") -> Path:
    """A DuckDB file holding ``records`` ingested as one JSONL log (closed, for a page test)."""
    from ragaudit_core.logs import store
    from ragaudit_core.logs.ingest import ingest_paths

    db = tmp_path / name
    con = store.connect(db)
    ingest_paths(con, [write_jsonl(tmp_path / f"{Path(name).stem}.jsonl", records)])
    con.close()
    return db


def ev(doc: str, span: str | None = None, **kw) -> dict:
    e = {"doc_id": doc}
    if span is not None:
        e["span_hash"] = span
    e.update(kw)
    return e


def app_test(page: str):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(str(ROOT / page), default_timeout=120)


def released_app_test(page: str, monkeypatch):
    """``app_test`` whose every run closes the page's database connections at its end, as
    ``app.py`` does (for pages whose work another process does meanwhile)."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RAGAUDIT_TEST_PAGE", str(ROOT / page))
    return AppTest.from_file(str(ROOT / "tests" / "dashboard" / "released_page.py"), default_timeout=120)


XSS = "<img src=x onerror=alert(1)>"


def xss_logs(d: Path) -> Path:
    """Two runs whose query, chunk texts, ids and answers carry HTML/script payloads."""
    text_a = f"Shared start. {XSS} <script>alert(2)</script> tail of A"
    text_b = f"{XSS} <script>alert(2)</script> tail of A and more of B"
    for run, text, start in (("A", text_a, 0), ("B", text_b, 14)):
        write_jsonl(
            d / f"{run}.jsonl",
            [
                {
                    "run_id": run,
                    "query_id": "q<b>1</b>",
                    "query": f"What is {XSS}?",
                    "answer": f"Answer {XSS} {run}",
                    "config": {"top_k": 2, "chunk_size": 128 if run == "A" else 256, "chunk_overlap": 0},
                    "evidence": [
                        {"doc_id": f"doc{XSS}", "text": text, "char_start": start, "char_end": start + len(text)},
                        {"doc_id": "d2", "text": f"other {run}"},
                    ],
                },
            ],
        )
    return d


# --------------------------------------------------------------------------- provenance graphs
# Small provenance graphs written out by hand for the fidelity tests.


def node(nid, stage, at, derived=(), doc=None, page=None, start=None, end=None, **md):
    n = {"node_id": nid, "stage": stage, "artifact_type": at, "derived_from": list(derived), "metadata": md}
    coords = {
        k: v for k, v in (("doc_id", doc), ("page", page), ("char_start", start), ("char_end", end)) if v is not None
    }
    if coords:
        n["coordinates"] = coords
    return n


TEXT = (
    "A [Source: D1, p. 2] B [Document 2] C [Source: D1, p. 3] D [Source: D1, p. 9] "
    "E [Source: D9, p. 1] F [7] G [Source: D1]"
)


def pipeline(
    run="base", qid="q1", *, text=TEXT, strip_rerank=False, gt=("D1",), mutate=False, stale=False, bad_offsets=False
):
    """Two documents through every stage; D1 p. 2 is the ground truth.

    strip_rerank: the reranker returns D1's chunk without any link or coordinates.
    """
    k1 = node(
        "k1",
        3,
        "rank_result",
        [] if strip_rerank else ["r1"],
        doc=None if strip_rerank else "D1",
        page=None if strip_rerank else 2,
        content_hash="MUTATED" if mutate else "h1",
    )
    nodes = [
        node("d1", 0, "document", doc="D1", pages=3, doc_version="2026-01-01T00:00:00Z"),
        node(
            "d2",
            0,
            "document",
            doc="D2",
            pages=1,
            doc_version="2026-02-01T00:00:00Z" if stale else "2025-12-01T00:00:00Z",
        ),
        node(
            "c1",
            1,
            "chunk",
            ["d1"],
            doc="D1",
            page=2,
            start=0,
            end=12 if bad_offsets else 10,
            text="0123456789",
            content_hash="h1",
            indexed_at="2026-01-02T00:00:00Z",
        ),
        node(
            "c2",
            1,
            "chunk",
            ["d2"],
            doc="D2",
            page=1,
            start=0,
            end=5,
            text="abcde",
            content_hash="h2",
            indexed_at="2026-01-01T00:00:00Z",
        ),
        node("r1", 2, "rank_result", ["c1"], doc="D1", page=2, content_hash="h1", rank=0),
        node("r2", 2, "rank_result", ["c2"], doc="D2", page=1, content_hash="h2", rank=1),
        k1,
        node("k2", 3, "rank_result", ["r2"], doc="D2", page=1, content_hash="h2"),
        node("x1", 4, "context_element", ["k1"], context_index=1),
        node("x2", 4, "context_element", ["k2"], context_index=2),
        node("g", 5, "generation", ["x1", "x2"]),
    ]
    return {
        "run_id": run,
        "query_id": qid,
        "query": "what?",
        "nodes": nodes,
        "generated_text": text,
        "ground_truth": [{"doc_id": d} for d in gt],
    }


def spy(monkeypatch, owner, name: str, note) -> None:
    """Wrap the method ``owner.name`` for the test: each call runs as before, then
    ``note(self, args, result)`` sees it (a generator method's result is its generator, not yet
    run: ``note`` reads ``self`` as it is at the call)."""
    real = getattr(owner, name)

    def wrapper(self, *args):
        out = real(self, *args)
        note(self, args, out)
        return out

    monkeypatch.setattr(owner, name, wrapper)


def plain(markdown: str) -> str:
    """A Streamlit element's Markdown source as the reader sees it: ``ui.md``'s backslash escapes
    and invisible word joiners removed (AppTest returns the source)."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


class CharTokens:
    """A character-level tokenizer for tiny random models: one token per character (code point mod
    250, + 3); 0 pad, 1 end of sequence, 2 a marker. Subclasses add the decode and chat template
    their code path calls."""

    eos_token_id = 1
    pad_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
        return {"input_ids": [3 + ord(c) % 250 for c in text]}


def tiny_llama(**config):
    """A tiny random Llama (2 layers, hidden 32, vocabulary 256; seed 0), in eval mode: a real causal
    LM for plumbing tests, without a download. ``config`` overrides LlamaConfig fields."""
    import torch
    import transformers

    torch.manual_seed(0)
    cfg = {
        "vocab_size": 256,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        **config,
    }
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**cfg)).eval()


def verdict_rows(
    judge: str, verdict: str, *, citation: str = "[Source: D1, p. 2]", rule_score: float = 1.0
) -> list[dict]:
    """Three stored votes (seeds 0-2) of one judge on citation 0 of a record, as a judge job
    stores them (``fidelity.judging.store_verdicts``)."""
    return [
        {
            "citation_index": 0,
            "citation": citation,
            "rule_score": rule_score,
            "judge": judge,
            "seed": seed,
            "verdict": verdict,
            "confidence": 1.0,
            "matching_chunk_id": None,
            "explanation": "",
            "coordinate_fidelity": 1.0,
        }
        for seed in (0, 1, 2)
    ]


def unprivileged() -> list[str] | None:
    """A command prefix under which file permissions apply to this user (root without the capabilities
    that override them: ``setpriv``), or None where they cannot be made to (checked on a file of mode 0)."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return None
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]
    with tempfile.TemporaryDirectory() as d:
        locked = Path(d, "locked")
        locked.write_text("x")
        locked.chmod(0)
        try:
            r = subprocess.run(
                [*prefix, sys.executable, "-c", "import sys; open(sys.argv[1])", str(locked)],
                capture_output=True,
                timeout=60,
            )
        except OSError:
            return None
    return prefix if b"PermissionError" in r.stderr else None

"""The judge's precision option (issue #24 item 5): a local judge model's weights in bf16 instead of
the reference's fp32 — its own job key, its own judge name, refused for an endpoint; the batched
panel decodes valid verdicts on bf16 weights (a tiny Llama here; the packaged model, slow)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ragaudit_core.fidelity.judge import JudgeVerdict
from ragaudit_core.logs import store
from ragaudit_core.logs.ingest import ingest_paths
from tests.helpers import pipeline, verdict_rows, write_jsonl

torch = pytest.importorskip("torch")


@pytest.fixture()
def con(tmp_path):
    c = store.connect(tmp_path / "j.duckdb")
    ingest_paths(c, [write_jsonl(tmp_path / "p.jsonl", [pipeline("base", "q1", text="[Source: D1, p. 2]")])])
    return c


def test_bf16_is_a_job_of_its_own_and_the_default_keeps_its_key(con):
    from ragaudit_core.jobs import plan_judge

    ref, _ = plan_judge(con, "base", "q1")
    same, _ = plan_judge(con, "base", "q1", precision="auto")
    half, _ = plan_judge(con, "base", "q1", precision="bf16")
    assert "precision" not in ref.params  # jobs queued before the option keep their ids
    assert same.job_id() == ref.job_id()
    assert half.params["precision"] == "bf16" and half.job_id() != ref.job_id()
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        plan_judge(con, "base", "q1", precision="fp8")
    with pytest.raises(ValueError, match="precision applies to a local judge model"):
        plan_judge(con, "base", "q1", model="m", endpoint="http://127.0.0.1:9/v1", precision="bf16")


def test_the_generator_dtype_follows_the_precision():
    from ragaudit_core.models import generator_dtype

    assert generator_dtype("cpu") is torch.float32  # the reference on the CPU
    assert generator_dtype("cpu", "bf16") is torch.bfloat16
    assert generator_dtype("cuda:0", "fp32") is torch.float32
    with pytest.raises(ValueError, match="unknown precision"):
        generator_dtype("cpu", "half")


def test_auto_keeps_a_small_generator_in_fp32_on_cuda():
    """``auto`` on CUDA by size (no card needed: its memory and bf16 support are given): the packaged
    SmolLM2's 134,515,008 parameters stay fp32 on an 80 GB card; past 1e9 parameters, of unknown
    size, or when 4 bytes a parameter pass a quarter of the card (540 MB > 2 GB / 4), bf16, or fp16
    on a card without bf16."""
    from ragaudit_core.models import generator_dtype

    gb = 1_000_000_000
    smol = 134_515_008
    assert generator_dtype("cuda", n_params=smol, device_memory=80 * gb, bf16=True) is torch.float32
    assert generator_dtype("cuda:1", n_params=10**9, device_memory=80 * gb, bf16=True) is torch.float32
    assert generator_dtype("cuda", n_params=10**9 + 1, device_memory=80 * gb, bf16=True) is torch.bfloat16
    assert generator_dtype("cuda", n_params=None, device_memory=80 * gb, bf16=True) is torch.bfloat16
    assert generator_dtype("cuda", n_params=smol, device_memory=2 * gb, bf16=True) is torch.bfloat16
    assert generator_dtype("cuda", n_params=smol, device_memory=4 * smol * 4, bf16=True) is torch.float32
    assert generator_dtype("cuda", n_params=7 * gb, device_memory=80 * gb, bf16=False) is torch.float16
    assert generator_dtype("cuda", "bf16", n_params=smol) is torch.bfloat16  # a named precision wins
    assert generator_dtype("cpu", n_params=7 * gb) is torch.float32  # the CPU ignores the size


def test_parameter_count_reads_the_configuration_only(tmp_path, caplog):
    """A tiny Llama saved with its weights: 256·32 embeddings + 2 layers × (q 32·32 + k, v 32·16 each +
    o 32·32 + MLP 3·32·64 + 2 norms of 32) + the final norm 32 + an untied head 256·32 = 34,976; the
    count equals the real model's and needs no weights (a folder holding only the configuration);
    an unreadable target gives None."""
    from ragaudit_core.models import parameter_count
    from tests.helpers import tiny_llama

    model = tiny_llama()
    model.save_pretrained(tmp_path / "full")
    model.config.save_pretrained(tmp_path / "config-only")
    expected = 256 * 32 + 2 * (32 * 32 + 2 * 32 * 16 + 32 * 32 + 3 * 32 * 64 + 2 * 32) + 32 + 256 * 32
    assert expected == 34_976 == sum(p.numel() for p in model.parameters())
    assert parameter_count(str(tmp_path / "full")) == expected
    assert parameter_count(str(tmp_path / "config-only")) == expected
    assert parameter_count(str(tmp_path / "missing")) is None
    assert "cannot size the model" in caplog.text and "missing" in caplog.text  # said, not silent


def test_the_batched_panel_decodes_valid_verdicts_on_bf16_weights():
    from ragaudit_core.fidelity.judges import LocalJudge
    from tests.fidelity.test_judge_batched import CHUNKS, PROMPT, CharTokenizer
    from tests.helpers import tiny_llama

    model = tiny_llama().to(torch.bfloat16)
    gen = SimpleNamespace(model=model, tokenizer=CharTokenizer(), device="cpu", name="tiny")
    verdicts = LocalJudge(gen, explanation_tokens=4).verdicts(PROMPT, CHUNKS, [0, 1, 2])
    assert all(isinstance(v, JudgeVerdict) and v.matching_chunk_id in [*CHUNKS, None] for v in verdicts)
    assert all(s == s for lane in verdicts for s in (lane.confidence, lane.coordinate_fidelity))  # no NaN


@pytest.mark.slow
def test_a_bf16_judge_job_on_the_packaged_model(con):
    """Through the job: the caller's fp32 model is not used for a bf16 job; the bf16 weights are
    loaded once and kept; the verdicts are stored under a judge name of their own."""
    from ragaudit_core.fidelity.judging import verdict_table
    from ragaudit_core.jobs import plan_judge, run_batch
    from ragaudit_core.models import _CACHE

    spec, _ = plan_judge(con, "base", "q1", precision="bf16", device="cpu")
    rep = run_batch(con, [plan_judge(con, "base", "q1", precision="bf16", device="cpu")])
    assert rep.done == ["q1"]
    model = _CACHE[("generator", spec.generator, "cpu", "bf16")].model
    assert next(model.parameters()).dtype is torch.bfloat16
    assert verdict_table(con, "base").empty  # the reference panel has not judged
    table = verdict_table(con, "base", "bf16")
    (name,) = table["judges"].iloc[0]
    assert name.startswith("local:SmolLM2") and name.endswith(" (bf16)")
    assert table["n_valid"].iloc[0] == 3


def test_a_bf16_job_never_uses_the_callers_model(con, monkeypatch):
    """The worker hands its (default-weights) model to every job; a bf16 job loads its own."""
    from ragaudit_core import models
    from ragaudit_core.fidelity.judge_job import JUDGE_JOB
    from ragaudit_core.jobs import plan_judge

    loaded = []

    def fake_cached(kind, name, device, precision="auto"):
        loaded.append((kind, precision))
        return SimpleNamespace(model=None, tokenizer=None, device="cpu", name="bf16 copy")

    monkeypatch.setattr(models, "cached_model", fake_cached)
    callers = SimpleNamespace(model=None, tokenizer=None, device="cpu", name="callers")
    half, _ = plan_judge(con, "base", "q1", precision="bf16")
    judge = JUDGE_JOB._backend(half, callers)
    assert judge.gen.name == "bf16 copy" and loaded == [("generator", "bf16")]
    assert judge.name.endswith(" (bf16)")
    ref, _ = plan_judge(con, "base", "q1")
    assert JUDGE_JOB._backend(ref, callers).gen is callers and len(loaded) == 1


def test_the_panels_are_counted_apart(con):
    """A citation judged by the reference panel (3 × ACCURATE) and by a bf16 panel (3 ×
    HALLUCINATED): each table holds its own three votes, never six."""
    from ragaudit_core.fidelity.judging import store_verdicts, verdict_table

    store_verdicts(con, "judge-ref", "base", "q1", verdict_rows("local:m", "ACCURATE"))
    store_verdicts(con, "judge-half", "base", "q1", verdict_rows("local:m (bf16)", "HALLUCINATED"))
    ref, half = verdict_table(con, "base"), verdict_table(con, "base", "bf16")
    assert ref["n_judges"].tolist() == [3] and ref["majority"].tolist() == ["ACCURATE"]
    assert half["n_judges"].tolist() == [3] and half["majority"].tolist() == ["HALLUCINATED"]
    assert bool(ref["unanimous"].iloc[0]) and bool(half["unanimous"].iloc[0])

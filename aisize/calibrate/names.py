"""Published names to catalog ids: Hugging Face model ids, GPU names, precisions, engines.

Benchmark exports name things as their authors do ("nvidia/DeepSeek-R1-0528-FP4-v2", "H100 SXM",
"fp8_e4m3", "TensorRT-LLM"). A quantized or dated checkpoint keeps its base model's architecture,
so the organisation, quantization, date, version and instruct suffixes are stripped before the
name is matched against ``data/transformers.csv``; the format itself travels in the precision.
Anything that matches nothing is an error naming the value and what would match.
"""

from __future__ import annotations

import re

from aisize import catalog

_SUFFIX = re.compile(r"[-_.](fp8|fp4|nvfp4|mxfp4|bf16|fp16|int4|int8|w4a16|w8a8|awq|gptq|preview|instruct|chat|"
                     r"hf|v\d+(\.\d+)?|\d{4})$")
_GPU_ALIASES = {"h100": "h100-sxm", "h100 sxm": "h100-sxm", "h100 sxm5": "h100-sxm", "h100 80gb": "h100-sxm",
                "h100 80gb hbm3": "h100-sxm", "h200": "h200-sxm", "h200 sxm": "h200-sxm", "h200 141gb": "h200-sxm",
                "a100": "a100-sxm-80gb", "a100 80gb": "a100-sxm-80gb", "a100 sxm 80gb": "a100-sxm-80gb",
                "gaudi 2": "gaudi2", "gaudi 3": "gaudi3"}
_PRECISIONS = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8-e4m3": "fp8", "e4m3": "fp8", "nvfp4": "nvfp4", "fp4": "nvfp4",
               "mxfp4": "mxfp4", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16",
               "int8": "int8", "int4": "int4-g128", "awq": "int4-g128", "gptq": "int4-g128", "auto": "bf16", "": "bf16"}
_ENGINES = {"trtllm": "trtllm", "tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt": "trtllm",
            "trtllm-serve": "trtllm", "trtllm-bench": "trtllm-bench", "vllm": "vllm", "sglang": "sglang",
            "dynamo-trtllm": "trtllm", "dynamo-sglang": "sglang", "dynamo-vllm": "vllm", "sglang-pd": "sglang"}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.strip().lower()).strip("-")


def model_id(name: str) -> str:
    """The catalog id of a published model name (``meta-llama/Llama-3.3-70B-Instruct`` -> ``llama-3.3-70b``)."""
    n = _norm(str(name).split("/")[-1])
    if not n:
        raise ValueError("no model name given")
    ids = {_norm(t.id): t.id for t in catalog.transformers} | {_norm(t.name): t.id for t in catalog.transformers}
    while True:
        if n in ids:
            return ids[n]
        stripped = _SUFFIX.sub("", n)
        if stripped == n:
            break
        n = stripped
    raise ValueError(f"model {str(name)[:80]!r} matches no catalog model (tried {n!r}); known: "
                     f"{', '.join(t.id for t in catalog.transformers)}")


def accelerator_id(name: str) -> str:
    """The catalog id of a GPU name (``H100 SXM`` -> ``h100-sxm``, ``MI355X`` -> ``mi355x``)."""
    raw = " ".join(str(name).lower().replace("nvidia", "").replace("amd", "").replace("instinct", "").split())
    if raw in _GPU_ALIASES:
        return _GPU_ALIASES[raw]
    n = _norm(raw)
    for a in catalog.accelerators:
        if n in (a.id, _norm(a.name)):
            return a.id
    raise ValueError(f"GPU {str(name)[:60]!r} matches no catalog accelerator; known: "
                     f"{', '.join(catalog.accelerators.ids())}")


def precision(name: str, what: str) -> str:
    """A weight or KV format name (``fp8_e4m3`` -> ``fp8``, ``fp4`` -> ``nvfp4``)."""
    key = str(name).strip().lower()
    if key not in _PRECISIONS:
        raise ValueError(f"{what} precision {str(name)[:40]!r} is not known; allowed: "
                         f"{', '.join(k for k in _PRECISIONS if k)}")
    return _PRECISIONS[key]


def engine_key(name: str) -> str | None:
    """An ``engines.csv`` key for an engine or framework name (empty: None, the default)."""
    key = str(name).strip().lower().split(" ")[0]
    if not key:
        return None
    if key in catalog.engines:
        return key
    if key not in _ENGINES:
        raise ValueError(f"engine {str(name)[:40]!r} is not known; allowed: {', '.join(sorted(_ENGINES))}")
    return _ENGINES[key]

"""The serving engine's scheduler limits: batch size, token budget, KV pool, admission.

A continuous-batching engine (Orca [1], vLLM [2], TensorRT-LLM) runs one
iteration at a time over every admitted sequence. Four settings bound what an
iteration may carry, and they decide throughput as much as the GPU does:

- ``max_batch_size``: sequences scheduled in one iteration (prefilling or decoding);
- ``max_num_tokens``: tokens in one iteration (each decoding sequence costs one,
  a prefill its prompt, or its chunk with chunked prefill [3]);
- the KV pool: the share ``kv_memory_fraction`` of the memory left after weights and
  the runtime's own peak, in blocks of ``block_tokens``;
- admission: with ``reserve_full_sequence`` a request is admitted only when blocks
  for its whole prompt + output are free (TensorRT-LLM's GUARANTEED_NO_EVICT), so
  concurrency is the pool over (prompt + output) rounded up to blocks;
- ``windowed_kv``: whether sliding-window and chunked-attention layers allocate only
  their window (vLLM's hybrid allocator) or the whole context like full layers.

:data:`TRTLLM_BENCH` holds trtllm-bench 1.0's defaults for the PyTorch backend;
when it is given no limits, :func:`trtllm_bench_limits` reproduces the
heuristic it uses to choose them (``bench/build/tuning.py``).

References
----------
.. [1] Yu et al. 2022, "Orca: A Distributed Serving System for Transformer-Based
       Generative Models", OSDI'22 (iteration-level scheduling).
.. [2] Kwon et al. 2023, "Efficient Memory Management for Large Language Model
       Serving with PagedAttention", SOSP'23, arXiv:2309.06180.
.. [3] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference
       with Sarathi-Serve", OSDI'24, arXiv:2403.02310 (chunked prefill, token budget).
.. [4] NVIDIA/TensorRT-LLM v1.0: ``tensorrt_llm/bench/build/tuning.py``
       (``calc_engine_setting``, ``finetune_setting``), ``bench/benchmark/utils/general.py``
       (``max_num_tokens >= max_isl + max_batch_size`` without chunking), ``llmapi``
       ``KvCacheConfig`` (``tokens_per_block`` 32), ``capacityScheduler.cpp``
       (GUARANTEED_NO_EVICT), ``docs/source/performance/perf-overview.md`` at commit
       00f37686 (``kv_cache_free_gpu_mem_fraction`` 0.95, 0.90 on out-of-memory).
.. [5] ai-dynamo/aiconfigurator ``systems/*.yaml`` (``other_mem`` 3.5 GiB) and its
       activation-memory coefficients (2 x tokens x hidden x 11 for dense models at TP 1,
       22 for MoE).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.units import GiB


@dataclass(frozen=True)
class Engine:
    """Scheduler settings of a serving engine. ``None`` limits are chosen by the heuristic."""

    name: str
    key: str  # short name (ENGINES key)
    kv_memory_fraction: float  # share of free memory after weights and runtime peak given to KV
    block_tokens: int  # paged-KV block size [tokens]
    chunked_prefill: bool  # prefills split to fit the token budget (Sarathi-Serve)
    reserve_full_sequence: bool  # admit only when blocks for prompt + output are free
    max_batch_size: int | None = None
    max_num_tokens: int | None = None
    windowed_kv: bool = True  # sliding/chunked layers allocate only their window (else the whole context)
    runtime_reserve_bytes: float = 3.5 * GiB  # CUDA context, NCCL, CUDA graphs [5]
    activation_bytes_per_token_hidden: float = 22.0  # profiling peak = tokens x hidden x this [5]
    source: str = ""


TRTLLM_BENCH = Engine(
    name="TensorRT-LLM 1.0 trtllm-bench (PyTorch backend)", key="trtllm", kv_memory_fraction=0.95, block_tokens=32,
    chunked_prefill=False, reserve_full_sequence=True,
    source="trtllm-bench throughput defaults, TensorRT-LLM 1.0 (tuning.py, perf-overview.md @00f37686)")

VLLM = Engine(
    name="vLLM defaults", key="vllm", kv_memory_fraction=0.9, block_tokens=16, chunked_prefill=True,
    reserve_full_sequence=False, max_batch_size=256, max_num_tokens=8192,
    source="vLLM EngineArgs defaults: gpu_memory_utilization 0.9, block_size 16, max_num_seqs 256, "
           "max_num_batched_tokens 8192 with chunked prefill")

ENGINES = {"trtllm": TRTLLM_BENCH, "vllm": VLLM}

_BATCH_CAP = 4096  # tuning.py: min(kv_cache_max_requests, 4096)
_TOKEN_CAP = 32768  # tuning.py: min(raw_bs x (1 + isl/osl), 32768)


def _round_batch(raw):
    """tuning.py: batches under 256 round up to 32 (at least 64), under 1024 to 128, else to 256."""
    step = np.where(raw < 256, 32, np.where(raw < 1024, 128, 256))
    return np.maximum(np.where(raw < 256, 64, 0), step * np.ceil(raw / step))


def _round_tokens(raw):
    """tuning.py: token budgets under 4096 round up to 256 (at least 2048), under 8192 to 512, else 1024."""
    step = np.where(raw < 4096, 256, np.where(raw < 8192, 512, 1024))
    return np.maximum(np.where(raw < 4096, 2048, 0), step * np.ceil(raw / step))


def trtllm_bench_limits(kv_max_requests, input_tokens, output_tokens, *, pipeline_parallel=1,
                        chunked_prefill=False):
    """trtllm-bench's ``max_batch_size`` and ``max_num_tokens`` for a fixed-length workload.

    Parameters
    ----------
    kv_max_requests : requests of ``input + output`` tokens the heuristic thinks the
        KV cache holds (its own estimate, from total memory minus weights) [count]
    input_tokens, output_tokens : the dataset's mean lengths [tokens]
    pipeline_parallel : PP degree; chunked_prefill : whether prefills are chunked

    Returns
    -------
    (max_batch_size, max_num_tokens) as floats or arrays.

    References
    ----------
    .. [4] ``finetune_setting`` in ``tensorrt_llm/bench/build/tuning.py``;
       ``get_settings`` in ``bench/benchmark/utils/general.py``.
    """
    req = checks.positive("kv_max_requests", kv_max_requests)
    i = checks.positive("input_tokens", input_tokens)
    o = checks.positive("output_tokens", output_tokens)
    pp = checks.integer("pipeline_parallel", pipeline_parallel)
    raw_bs = np.minimum(req, _BATCH_CAP) / pp
    raw_token = np.minimum(raw_bs * (1.0 + i / o), _TOKEN_CAP)
    batch = _round_batch(raw_bs)
    tokens = _round_tokens(raw_token)
    if not chunked_prefill:
        tokens = np.maximum(tokens, i + batch)  # a whole prompt must fit one iteration
    return batch, tokens


def trtllm_bench_kv_requests(costs, weight_precision, memory_bytes, gpus, tensor_parallel, fraction,
                             input_tokens, output_tokens):
    """Requests of ``input + output`` tokens trtllm-bench's heuristic believes the KV cache holds.

    ``(memory x gpus - engine size) x fraction / (KV bytes per token x (I + O))``, with
    its own simplifications: KV heads counted as ``max(tp, kv_heads)`` and an NVFP4
    engine sized from its packed element count (two FP4 values per byte, then 0.5 B per
    element: half the real size of the quantized layers) [4].

    Parameters
    ----------
    costs : :class:`~aisize.serving.costs.ModelCosts`; weight_precision : the weight format
    memory_bytes : usable memory per GPU [B]; gpus, tensor_parallel : replica shape [count]
    fraction : the KV memory fraction; input_tokens, output_tokens : [tokens]
    """
    engine_bytes = costs.weights_bytes
    if weight_precision == "nvfp4":
        engine_bytes = costs.weights_bytes - 0.5 * (costs.weights_bytes - costs.head_bytes)
    per_token = costs.kv_bytes_per_token_full + costs.kv_bytes_per_token_window
    per_token = per_token * np.maximum(tensor_parallel, costs.kv_heads) / costs.kv_heads
    free = np.maximum(memory_bytes * gpus - engine_bytes, 0.0) * fraction
    return free / (per_token * (input_tokens + output_tokens))

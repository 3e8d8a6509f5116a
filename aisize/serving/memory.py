"""Memory of one serving replica: weights per GPU, the KV pool, and the sequences it holds.

Per GPU: weights (dense layers split over the tensor-parallel group, routed
experts over all GPUs), the runtime's reserve (CUDA context, NCCL buffers, CUDA
graphs) and its activation peak for a full token budget; the engine hands a
fraction of what is left to the paged KV cache [1, 2]. KV heads split over
``min(tp, kv_heads)`` GPUs (beyond that heads are replicated); an MLA latent is
replicated on every tensor-parallel rank [3]; with attention data parallelism
each group holds the whole cache of its own sequences.

References
----------
.. [1] Kwon et al. 2023, arXiv:2309.06180, sec. 4 (paged KV, block granularity).
.. [2] TensorRT-LLM 1.0 ``_torch/pyexecutor/_util.py`` ``KvCacheCreator``: the pool is
       ``(total - peak after a profiling run) x kv_cache_free_gpu_mem_fraction``.
.. [3] DeepSeek-AI 2024, "DeepSeek-V2", arXiv:2405.04434, sec. 2.1.2.
.. [4] ai-dynamo/aiconfigurator: activation memory ``2 x tokens x hidden x c`` with
       c = 11, 6.5, 5 at TP 1, 2, >= 4 for dense models and twice that for MoE.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.serving.shapes import expert_slots

_ACTIVATION_COEFFICIENT = {1: 11.0, 2: 6.5}  # [4]; 5.0 at TP >= 4
_MOE_ACTIVATION_FACTOR = 2.0  # [4]


@dataclass(frozen=True)
class ReplicaMemory:
    """Per-GPU memory of a replica and the concurrency its KV pool allows [B, count]."""

    weights_bytes: object  # per GPU
    runtime_bytes: object  # reserve + activation peak, per GPU
    kv_pool_bytes: object  # per GPU
    kv_bytes_per_sequence: object  # per GPU, one sequence at its full length, in whole blocks
    sequences: object  # the replica holds this many full-length sequences at once
    fits: object  # weights and runtime leave room for at least one sequence


def activation_peak_bytes(costs, tokens, tp):
    """Activation memory of a forward pass over ``tokens`` tokens, per GPU [B] [4]."""
    t = np.asarray(tp, dtype=float)
    c = np.where(t <= 1, _ACTIVATION_COEFFICIENT[1], np.where(t <= 2, _ACTIVATION_COEFFICIENT[2], 5.0))
    if costs.moe_layers:
        c = c * _MOE_ACTIVATION_FACTOR
    return 2.0 * tokens * costs.hidden * c


def weights_per_gpu_bytes(costs, gpus, attention_dp=1, pipeline_parallel=1, expert_parallel=None):
    """Weights on one GPU: dense part over the TP group, routed experts over all GPUs of a
    stage (with the redundant copies of :func:`~aisize.serving.shapes.expert_slots` where the
    ``expert_parallel`` ranks do not divide the experts), layers over the pipeline stages [B]."""
    g = np.asarray(gpus, dtype=float)
    tp = g / np.asarray(attention_dp, dtype=float)
    experts = costs.moe_layers * costs.experts * costs.expert_bytes
    resident = experts if expert_parallel is None else (
        costs.moe_layers * expert_slots(costs.experts, expert_parallel) * costs.expert_bytes)
    return ((costs.weights_bytes - experts) / tp + resident / g) / np.asarray(pipeline_parallel, dtype=float)


def replica_memory(costs, engine, memory_bytes, *, sequence_tokens, max_num_tokens, gpus=1,
                   attention_dp=1, pipeline_parallel=1, extra_weights_bytes=0.0,
                   expert_parallel=None) -> ReplicaMemory:
    """Weights, runtime, KV pool and concurrent full-length sequences of a replica.

    Parameters
    ----------
    costs : :class:`~aisize.serving.costs.ModelCosts`
    engine : :class:`~aisize.serving.engine.Engine` (KV fraction, block size, reserve)
    memory_bytes : usable memory per GPU (what nvidia-smi reports) [B]
    sequence_tokens : prompt + output of one request [tokens]
    max_num_tokens : the iteration token budget the runtime profiles with [tokens]
    gpus, attention_dp : GPUs per pipeline stage and attention data-parallel groups [count]
    pipeline_parallel : stages; each holds 1/p of the layers, of their weights and of the KV
    extra_weights_bytes : other resident weights per GPU (a speculative drafter) [B]
    expert_parallel : ranks the routed experts spread over (None: they divide evenly) [count]
    """
    g = np.asarray(gpus, dtype=float)
    dp = np.asarray(attention_dp, dtype=float)
    tp = g / dp
    pp = np.asarray(pipeline_parallel, dtype=float)
    weights = weights_per_gpu_bytes(costs, g, dp, pp, expert_parallel) + extra_weights_bytes
    runtime = engine.runtime_reserve_bytes + activation_peak_bytes(costs, max_num_tokens / dp, tp)
    if engine.kv_fraction_of_total:  # vLLM's gpu_memory_utilization, SGLang's mem_fraction_static
        pool = np.maximum(memory_bytes * engine.kv_memory_fraction - weights - runtime, 0.0)
    else:  # TensorRT-LLM's free_gpu_memory_fraction: a share of what weights and runtime leave
        pool = np.maximum(memory_bytes - weights - runtime, 0.0) * engine.kv_memory_fraction
    blocks = np.ceil(np.asarray(sequence_tokens, dtype=float) / engine.block_tokens) * engine.block_tokens
    whole = costs.kv_bytes_per_token_full + costs.kv_bytes_per_token_window
    kv = costs.kv_bytes(blocks) if engine.windowed_kv else whole * blocks
    per_seq = (kv / np.minimum(tp, costs.kv_heads) + costs.ssm_state_bytes(tp)) / pp  # a hybrid's fixed state too
    sequences = dp * np.floor(pool / per_seq)
    return ReplicaMemory(weights, runtime, pool, per_seq, sequences, sequences >= 1)

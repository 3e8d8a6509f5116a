"""LLM serving performance: prefill, decode, batch size and throughput per replica.

A replica is one model copy over ``tp`` GPUs. Prefill (the prompt) is
compute-bound: time = FLOPs / (tp x peak x efficiency). Decode (one token per
sequence per step) is memory-bound at small batch: each step reads the weights
once and every sequence's KV cache, so step time = max(bytes / memory rate,
FLOPs / compute rate) — a roofline. Larger batches raise throughput until the
step time exceeds the time-per-output-token target or the KV cache no longer
fits.

All functions accept scalars or numpy arrays.

References
----------
.. [1] R. Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023,
   arXiv:2211.05102, section 2 (2N FLOPs per token; decode is bound by
   weight and KV-cache loading at small batch).
.. [2] Z. Yuan et al., "LLM Inference Unveiled: Survey and Roofline Model
   Insights", arXiv:2402.16363, 2024, section 3 (prefill vs decode rooflines).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks

# Assumptions, shown to the user: achieved shares of datasheet peaks in serving
# engines (decode reaches 60-80 % of HBM bandwidth, prefill 40-60 % of tensor peak;
# ref. [2], figures 5-6).
DECODE_MEMORY_EFFICIENCY = 0.7
PREFILL_COMPUTE_EFFICIENCY = 0.5


def prefill_flops(active_params, prompt_tokens, layers, hidden):
    """Forward FLOPs to process a prompt of ``prompt_tokens`` [FLOP].

    ``2 N s`` for the weights plus ``2 L h s^2`` for causal attention (QK^T and
    AV each cost 2 h FLOPs per token pair; causality halves the pairs).

    Parameters
    ----------
    active_params : parameters used per token, N [count]
    prompt_tokens : s [tokens]
    layers, hidden : L, h [count]

    References
    ----------
    .. [1] Pope et al. 2023, section 2; Chowdhery et al. 2022 (PaLM), appendix B.
    """
    n = checks.positive("active_params", active_params)
    s = checks.positive("prompt_tokens", prompt_tokens)
    L = checks.positive("layers", layers)
    h = checks.positive("hidden", hidden)
    return 2.0 * n * s + 2.0 * L * h * s * s


def prefill_seconds(flops, tp, peak_flops_per_s, efficiency=PREFILL_COMPUTE_EFFICIENCY):
    """Time to first token without queueing: prefill FLOPs over ``tp`` GPUs [s].

    Parameters
    ----------
    flops : prefill FLOPs [FLOP]
    tp : GPUs in the replica [count]
    peak_flops_per_s : dense peak per GPU at the serving precision [FLOP/s]
    efficiency : achieved share of peak, (0, 1]
    """
    f = checks.positive("flops", flops)
    t = checks.integer("tp", tp, high=1024)
    peak = checks.positive("peak_flops_per_s", peak_flops_per_s)
    eff = checks.fraction("efficiency", efficiency)
    return f / (t * peak * eff)


def _replica_rates(tp, memory_bytes_per_s, peak_flops_per_s, memory_efficiency, compute_efficiency):
    """Checked (tp, achieved HBM rate per GPU, achieved FLOP rate per GPU)."""
    t = checks.integer("tp", tp, high=1024)
    bw = checks.positive("memory_bytes_per_s", memory_bytes_per_s) * checks.fraction(
        "memory_efficiency", memory_efficiency)
    peak = checks.positive("peak_flops_per_s", peak_flops_per_s) * checks.fraction(
        "compute_efficiency", compute_efficiency)
    return t, bw, peak


def decode_step_seconds(batch, context_tokens, weights_bytes, kv_bytes_per_token, active_params,
                        tp, memory_bytes_per_s, peak_flops_per_s, *,
                        memory_efficiency=DECODE_MEMORY_EFFICIENCY,
                        compute_efficiency=PREFILL_COMPUTE_EFFICIENCY):
    """One decode step (one new token for each of ``batch`` sequences) [s].

    Roofline: the larger of reading the weights plus ``batch`` KV caches of
    ``context_tokens`` each from HBM, and ``2 N batch`` FLOPs, both spread over
    ``tp`` GPUs.

    Parameters
    ----------
    batch : concurrent sequences [count], >= 1
    context_tokens : mean tokens in each sequence's cache [tokens]
    weights_bytes : the replica's weights [B]
    kv_bytes_per_token : KV cache per token, whole model [B]
    active_params : parameters used per token [count]
    tp : GPUs in the replica [count]
    memory_bytes_per_s : HBM bandwidth per GPU [B/s]
    peak_flops_per_s : dense peak per GPU [FLOP/s]

    References
    ----------
    .. [1] Pope et al. 2023, section 2.1; [2] Yuan et al. 2024, section 3.
    """
    b = checks.positive("batch", batch)
    ctx = checks.non_negative("context_tokens", context_tokens)
    w = checks.positive("weights_bytes", weights_bytes)
    kv = checks.non_negative("kv_bytes_per_token", kv_bytes_per_token)
    n = checks.positive("active_params", active_params)
    t, bw, peak = _replica_rates(tp, memory_bytes_per_s, peak_flops_per_s, memory_efficiency,
                                 compute_efficiency)
    memory_s = (w + b * ctx * kv) / (t * bw)
    compute_s = 2.0 * n * b / (t * peak)
    return np.maximum(memory_s, compute_s)


def max_batch(tpot_seconds, context_tokens, weights_bytes, kv_bytes_per_token, active_params, tp,
              memory_bytes_per_s, peak_flops_per_s, kv_capacity_bytes, *,
              memory_efficiency=DECODE_MEMORY_EFFICIENCY,
              compute_efficiency=PREFILL_COMPUTE_EFFICIENCY):
    """Largest decode batch meeting a time-per-output-token target and fitting the KV cache.

    Solves :func:`decode_step_seconds` ``<= tpot_seconds`` for the batch (both
    roofline terms are linear in it) and caps it by ``kv_capacity_bytes /
    (context_tokens x kv_bytes_per_token)``. Returns 0 where even one sequence
    misses the target or does not fit.

    Parameters
    ----------
    tpot_seconds : time-per-output-token target [s]
    kv_capacity_bytes : HBM left for KV cache in the whole replica [B]
    (others as in :func:`decode_step_seconds`)

    Returns
    -------
    batch [count], integer-valued float or array
    """
    tpot = checks.positive("tpot_seconds", tpot_seconds)
    ctx = checks.positive("context_tokens", context_tokens)
    w = checks.positive("weights_bytes", weights_bytes)
    kv = checks.positive("kv_bytes_per_token", kv_bytes_per_token)
    n = checks.positive("active_params", active_params)
    t, bw, peak = _replica_rates(tp, memory_bytes_per_s, peak_flops_per_s, memory_efficiency,
                                 compute_efficiency)
    cap = checks.non_negative("kv_capacity_bytes", kv_capacity_bytes)
    by_memory = (tpot * t * bw - w) / (ctx * kv)
    by_compute = tpot * t * peak / (2.0 * n)
    by_capacity = cap / (ctx * kv)
    return np.maximum(0.0, np.floor(np.minimum(np.minimum(by_memory, by_compute), by_capacity)))


@dataclass(frozen=True)
class ReplicaPerformance:
    """One replica at its chosen batch."""

    batch: float | np.ndarray  # concurrent sequences per replica [count]
    ttft_seconds: float | np.ndarray  # prefill alone, no queueing [s]
    tpot_seconds: float | np.ndarray  # decode step at that batch [s]
    request_seconds: float | np.ndarray  # a request's time in a batch slot: prefill + output x step [s]
    output_tokens_per_s: float | np.ndarray  # per replica [tokens/s]


def replica_performance(prompt_tokens, output_tokens, tpot_target_seconds, *, active_params,
                        layers, hidden, weights_bytes, kv_bytes_per_token, tp,
                        memory_bytes_per_s, peak_flops_per_s, kv_capacity_bytes) -> ReplicaPerformance:
    """Batch, latencies and throughput of one replica serving a request shape.

    The mean context during decode is the prompt plus half the output. Each
    request holds a batch slot for its prefill plus ``output_tokens`` decode
    steps, so a replica serves ``batch / request_seconds`` requests per second.
    """
    ctx = checks.positive("prompt_tokens", prompt_tokens) + 0.5 * checks.positive(
        "output_tokens", output_tokens)
    tpot = checks.positive("tpot_target_seconds", tpot_target_seconds)
    batch = max_batch(tpot, ctx, weights_bytes, kv_bytes_per_token, active_params, tp,
                      memory_bytes_per_s, peak_flops_per_s, kv_capacity_bytes)
    used = np.maximum(batch, 1.0)  # a replica that misses the target still runs one sequence
    step = decode_step_seconds(used, ctx, weights_bytes, kv_bytes_per_token, active_params, tp,
                               memory_bytes_per_s, peak_flops_per_s)
    ttft = prefill_seconds(prefill_flops(active_params, prompt_tokens, layers, hidden), tp,
                           peak_flops_per_s)
    request = ttft + output_tokens * step
    return ReplicaPerformance(batch=batch, ttft_seconds=ttft, tpot_seconds=step,
                              request_seconds=request, output_tokens_per_s=used / step)

"""Time of one continuous-batching iteration on one replica, from the roofline.

An iteration runs every layer once over the tokens it carries: one token for
each decoding sequence plus the prompt tokens (or chunks) being prefilled [1, 2].
Per GPU of the replica, its time is the sum over the kinds of work of each
kind's roofline time, max(FLOPs / achieved peak, bytes / achieved bandwidth) [3]:

- dense linear layers (attention projections, dense MLPs, shared experts):
  ``2·N·n`` FLOPs for n tokens against one read of their weights;
- routed experts: ``k`` experts' FLOPs per token at the grouped-GEMM rate, against
  the distinct experts the iteration's tokens touch, plus the traffic of routing
  each token to its experts and back;
- output head: at the sampling positions only (one per sequence), and its fp32 logits;
- elementwise work (norms, rotary, activation, quantization, residuals): HBM
  traffic proportional to tokens x hidden x layers;
- decode attention: the KV cache of every decoding sequence is read once;
- prefill attention: causal FLOPs ``2·d_attn·s²`` per layer per prompt;
- tensor-parallel all-reduces (two per layer, of the tokens' hidden states) and,
  for MoE with attention data parallelism, the dispatch/combine of tokens;
- a fixed GPU time per layer (and per MoE layer) per iteration.

The host schedules the next iteration while the GPU runs this one (TensorRT-LLM's
overlap scheduler, vLLM's async scheduling), so an iteration takes the longer of
the GPU time and the host time, which grows with the scheduled sequences.

All inputs broadcast, so one call evaluates a whole grid of shapes and batches.

References
----------
.. [1] Yu et al. 2022 (Orca), OSDI'22, sec. 4 (iteration-level scheduling).
.. [2] Agrawal et al. 2024 (Sarathi-Serve), OSDI'24, arXiv:2403.02310, sec. 3-4
       (prefill is compute-bound, decode memory-bound; a hybrid batch costs their parts).
.. [3] Williams, Waterman, Patterson 2009, "Roofline", CACM 52(4); Pope et al. 2023,
       arXiv:2211.05102, sec. 2-3 (inference rooflines, weight vs KV loading).
.. [4] Patarasuk & Yuan 2009 (ring all-reduce moves 2(n-1)/n of the buffer).
.. [5] Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2 (pipeline micro-batches); vLLM and
       TensorRT-LLM pipeline-parallel serving run one micro-batch per stage at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACTIVATION_BYTES = 2.0  # hidden states between layers and on the wire are 16-bit
LOGIT_BYTES = 4.0  # fp32 logits, written by the head and read by the sampler
LINK_LATENCY_SECONDS = 2e-6  # one NVLink collective step (nccl-tests small-message latency)


@dataclass(frozen=True)
class Rates:
    """Achieved rates of one GPU for one serving precision [FLOP/s, B/s, s]."""

    gemm_flops_per_s: float
    expert_flops_per_s: float
    attention_flops_per_s: float
    memory_bytes_per_s: float
    link_bytes_per_s: float  # scale-up link per direction
    host_seconds_per_sequence: float
    uncalibrated: bool  # the GPU's generation has no fitted efficiency (a stand-in was used)


def achieved_rates(device, calib) -> Rates:
    """Datasheet figures of a :class:`~aisize.serving.hardware.Device` times the calibration."""
    gen = device.generation if device.generation in calib.gemm_efficiency else calib.fallback_generation
    gemm = device.gemm_peak_flops_per_s * calib.gemm_efficiency[gen]
    host = calib.host_seconds_per_sequence * (calib.grace_host_factor if device.grace_hosted else 1.0)
    return Rates(gemm, gemm * calib.expert_gemm_efficiency,
                 device.attention_peak_flops_per_s * calib.attention_efficiency,
                 device.memory_bandwidth_bytes_per_s * calib.memory_efficiency,
                 device.link_bytes_per_s * calib.link_efficiency, host, gen != device.generation)


@dataclass(frozen=True)
class IterationTime:
    """One iteration's time on one GPU of the replica, by kind of work [s]."""

    linear_seconds: object
    experts_seconds: object
    head_seconds: object
    elementwise_seconds: object
    decode_attention_seconds: object
    prefill_attention_seconds: object
    communication_seconds: object
    overhead_seconds: object
    host_seconds: object

    @property
    def gpu_seconds(self):
        return (self.linear_seconds + self.experts_seconds + self.head_seconds + self.elementwise_seconds
                + self.decode_attention_seconds + self.prefill_attention_seconds
                + self.communication_seconds + self.overhead_seconds)

    @property
    def seconds(self):
        return np.maximum(self.gpu_seconds, self.host_seconds)


def all_reduce_seconds(payload_bytes, n, link_bytes_per_s):
    """Ring all-reduce of a buffer over n GPUs of one scale-up domain [s] [4]."""
    n = np.asarray(n, dtype=float)
    ring = 2.0 * (n - 1.0) / n * payload_bytes / link_bytes_per_s + 2.0 * (n - 1.0) * LINK_LATENCY_SECONDS
    return np.where(n > 1, ring, 0.0)


def iteration_time(costs, rates: Rates, calib, *, decode_sequences, decode_context, prefill_tokens,
                   prefill_prompts, prompt_tokens, gpus=1, attention_dp=1, pipeline_parallel=1,
                   stage_link_bytes_per_s=None) -> IterationTime:
    """Time of one iteration of one replica, per GPU (work balanced over its GPUs).

    Parameters
    ----------
    costs : :class:`~aisize.serving.costs.ModelCosts`
    rates : achieved rates of one GPU (:func:`achieved_rates`)
    calib : :class:`~aisize.serving.calibration.Calibration` (overheads, traffic constants)
    decode_sequences : sequences generating a token this iteration [count]
    decode_context : their mean context (tokens in cache) [tokens]
    prefill_tokens : prompt tokens processed this iteration [tokens]
    prefill_prompts : prompts finishing their prefill this iteration (they sample) [count]
    prompt_tokens : prompt length, for the causal attention cost [tokens]
    gpus : GPUs of the replica [count]
    attention_dp : attention data-parallel groups; attention and dense layers are
        tensor-parallel over ``gpus / attention_dp`` GPUs, routed experts spread over
        all ``gpus`` of a stage (expert parallelism) [count]
    pipeline_parallel : stages, p; ``gpus`` is then per stage. The running sequences
        split into p micro-batches that follow each other through the stages [5], so
        one round (every sequence advancing one token) takes p stage-times of one
        micro-batch; a stage runs L/p layers, the last one also the output head
    stage_link_bytes_per_s : datasheet rate per GPU per direction of the link between stages
        (default: the scale-up link); collectives reach ``calib.link_efficiency`` of it

    Returns
    -------
    :class:`IterationTime` (``seconds`` is the iteration's wall time).
    """
    g = np.asarray(gpus, dtype=float)
    dp = np.asarray(attention_dp, dtype=float)
    pp = np.asarray(pipeline_parallel, dtype=float)
    tp = g / dp
    n = (decode_sequences + prefill_tokens) / pp  # tokens of one micro-batch through every linear layer
    sampled = (decode_sequences + prefill_prompts) / pp
    decode_sequences, prefill_prompts = decode_sequences / pp, prefill_prompts / pp
    mem = rates.memory_bytes_per_s
    linear = np.maximum(costs.dense_flops_per_token * n / g / rates.gemm_flops_per_s,
                        costs.dense_weight_bytes / tp / mem)
    experts = np.maximum(costs.expert_flops_per_token * n / g / rates.expert_flops_per_s,
                         costs.expert_bytes_read(n) / g / mem)
    experts = experts + (calib.expert_bytes_per_token * costs.hidden * costs.moe_layers * costs.experts_per_token
                         * n / g / mem)
    head = (costs.head_flops_per_token * sampled / g / rates.gemm_flops_per_s
            + sampled / g * costs.vocab * LOGIT_BYTES * 2.0 / mem)
    elementwise = calib.elementwise_bytes_per_token * costs.hidden * costs.layers * n / dp / mem
    kv_split = np.minimum(tp, costs.kv_heads) * dp
    decode_attention = decode_sequences * costs.kv_bytes(decode_context) / kv_split / mem
    prefill_attention = (prefill_prompts * costs.attention_flops(prompt_tokens, prompt_tokens) / g
                         / rates.attention_flops_per_s)
    hidden_bytes = n / dp * costs.hidden * ACTIVATION_BYTES
    comm = 2.0 * costs.layers * all_reduce_seconds(hidden_bytes, tp, rates.link_bytes_per_s)
    if costs.moe_layers:  # attention-DP groups gather their tokens for the experts and scatter them back
        comm = comm + 2.0 * costs.moe_layers * np.where(
            dp > 1, (dp - 1.0) * hidden_bytes / rates.link_bytes_per_s, 0.0)
    overhead = costs.layers * calib.layer_overhead_seconds + costs.moe_layers * calib.moe_layer_overhead_seconds
    host = rates.host_seconds_per_sequence * sampled * pp / dp
    # a round is p stage-times; a stage runs 1/p of every per-layer term, the last one the head
    link = rates.link_bytes_per_s if stage_link_bytes_per_s is None else (
        np.asarray(stage_link_bytes_per_s, dtype=float) * calib.link_efficiency)
    send = np.where(pp > 1, pp * (n / dp * costs.hidden * ACTIVATION_BYTES / tp / link + LINK_LATENCY_SECONDS), 0.0)
    return IterationTime(linear, experts, head * pp, elementwise, decode_attention, prefill_attention,
                         comm + send, overhead + 0.0 * n, host)

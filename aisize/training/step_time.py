"""Step time of a parallel training layout, part by part, and the MFU it implies.

step = compute + exposed TP + exposed CP + pipeline sends + exposed DP/FSDP + MoE all-to-all
       + pipeline bubble + stragglers

* compute: the slowest pipeline stage's layers (:func:`aisize.training.work.layer_times`:
  GEMMs on their roofline, FlashAttention, memory-bound work, casts, recompute), the
  output layer and loss on the last stage, for every micro-batch, plus the optimizer;
* TP (Megatron-style, all-reduces or all-gather + reduce-scatter with sequence
  parallelism: the same bytes): two collective pairs forward, two backward, two more
  with full recompute (one with PyTorch's selective policy, which re-gathers); async
  TP hides :data:`ASYNC_TP_HIDDEN_SHARE` of them behind the GEMMs [1][2];
* CP: K and V all-gathered forward and their gradients reduce-scattered backward
  per layer (again with full recompute); ``all-gather`` (torchtitan, Llama 3) leaves it
  exposed, ``ring`` (Megatron-LM) hides each step under the attention of the previous
  chunk [3][4];
* PP: one activation send forward and one gradient send backward per micro-batch and
  model chunk, split over the TP ranks (scatter/gather) [1];
* bubble: :func:`aisize.training.schedules.bubble_share` of each pipeline flush;
* DP/FSDP: ZeRO-3/FSDP all-gathers the parameters (twice per micro-batch without
  PP, once per step with it) and reduce-scatters the gradients; stages 0-2 all-reduce
  the gradients; over the group's real span of NVLink and network, with the fabric's
  oversubscription; hidden under compute up to :data:`DP_OVERLAP` of it, except the
  first gather and the last reduction [5];
* EP: dispatch and combine all-to-alls of the routed tokens, forward and backward [6];
* stragglers: the expected slowest rank (:func:`aisize.training.efficiency.straggler_factor`).

References
----------
.. [1] Narayanan et al. 2021, arXiv:2104.04473, sec. 2.2, 3 and 4.1.
.. [2] Wang et al. 2023, "Overlap Communication with Dependent Computation via
   Decomposition", ASPLOS'23; pytorch/torchtitan benchmarks/asyncTP_llama3_h100_2025-06
   (async TP: 1.09x bf16, 1.16x fp8 on Llama 3 70B, TP 8: about half of the TP time hidden).
.. [3] Liu et al. 2023, "Ring Attention with Blockwise Transformers", arXiv:2310.01889.
.. [4] Llama Team 2024, "The Llama 3 Herd of Models", arXiv:2407.21783, sec. 3.3.2 (all-gather CP).
.. [5] Rajbhandari et al. 2020, arXiv:1910.02054, sec. 7; Zhao et al. 2023, "PyTorch FSDP",
   arXiv:2304.11277, sec. 3.3 (prefetch and overlap).
.. [6] Lepikhin et al. 2020, "GShard", arXiv:2006.16668.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.compute import flops_per_token
from aisize.memory.states import tidy
from aisize.training import comm
from aisize.training.dims import ModelDims
from aisize.training.efficiency import straggler_factor
from aisize.training.recipes import Recipe
from aisize.training.schedules import bubble_share, stage_layers
from aisize.training.work import head_seconds, layer_times, optimizer_seconds

# Share of the backward pass data-parallel traffic can hide under (DDP buckets,
# FSDP prefetch and reduce-scatter streams run beside compute). Assumption.
DP_OVERLAP = 0.8
# Share of the TP collectives async TP hides behind the GEMMs, implied by torchtitan's
# async-TP benchmark (Llama 3 70B, 256 H100, TP 8: 1.09x bf16, 1.16x float8).
ASYNC_TP_HIDDEN_SHARE = 0.5
ACTIVATION_BYTES = 2.0  # 16-bit activations and activation gradients on the wire
CP_METHODS = ("all-gather", "ring")
PARTS = ("compute_seconds", "tp_comm_seconds", "cp_comm_seconds", "pp_comm_seconds", "dp_comm_exposed_seconds",
         "ep_comm_seconds", "pp_bubble_seconds", "straggler_seconds")


@dataclass(frozen=True)
class StepTime:
    """One optimizer step of one layout [s], its parts and its model FLOPs utilization."""

    compute_seconds: float
    tp_comm_seconds: float  # exposed
    cp_comm_seconds: float  # exposed
    pp_comm_seconds: float
    dp_comm_exposed_seconds: float
    ep_comm_seconds: float
    pp_bubble_seconds: float
    straggler_seconds: float
    model_flops: float  # per step, all GPUs [FLOP] (PaLM: 6N + 12·L·H·Q·s per token)
    tokens: float  # per step, all GPUs
    gpus: float
    peak_flops_per_s: float  # the 16-bit dense peak MFU is measured against
    step_seconds: float  # the sum of the parts (PARTS)

    def __post_init__(self):
        tidy(self)

    @property
    def mfu(self):
        """Model FLOPs / (step time x GPUs x 16-bit dense peak)."""
        return self.model_flops / (self.step_seconds * self.gpus * self.peak_flops_per_s)

    @property
    def tokens_per_s(self):
        return self.tokens / self.step_seconds

    @property
    def tokens_per_s_per_gpu(self):
        return self.tokens / (self.step_seconds * self.gpus)


def step_breakdown(d: ModelDims, *, recipe: Recipe, gen: str, framework: str, compiled: bool, seq_len,
                   micro_batch, microbatches, accumulation, tp, pp, cp, dp, ep, virtual_stages, schedule_code,
                   code, sp, stage, high_peak, low_peak, hbm_bytes_per_s, links: comm.Links,
                   state_bytes_per_param, gather_bytes, grad_bytes, async_tp=False,
                   cp_method="all-gather", dp_overlap=DP_OVERLAP) -> StepTime:
    """Vectorized core (inputs checked by the caller; arrays broadcast).

    ``micro_batch``: sequences per pipeline micro-batch; ``microbatches``: micro-batches per
    pipeline flush (1 without PP); ``accumulation``: flushes per optimizer step.
    """
    L = d.layers
    tokens_mb = micro_batch * seq_len / cp
    lt = layer_times(d, tokens=tokens_mb, micro_batch=micro_batch, seq_len=seq_len, tp=tp, sp=sp, code=code,
                     selective_op=framework == "fsdp", compiled=compiled, recipe=recipe, gen=gen,
                     high_peak=high_peak, low_peak=low_peak, hbm_bytes_per_s=hbm_bytes_per_s)
    busy, last = stage_layers(L, pp, virtual_stages)
    head = head_seconds(d, tokens=tokens_mb, tp=tp, framework=framework, high_peak=high_peak, gen=gen,
                        hbm_bytes_per_s=hbm_bytes_per_s)
    layer = lt.total
    stage_mb = np.where(pp == 1, L * layer + head, np.maximum(busy * layer, last * layer + head))
    layers_here = np.where(pp == 1, L, busy)
    n_mb = microbatches * accumulation
    shard = dp * cp
    local = (layers_here * d.layer_resident_params + layers_here * d.layer_expert_params / ep
             + np.where(pp == 1, d.embed_params + d.head_params, d.embed_params)) / tp
    optim = optimizer_seconds(local / np.where(stage >= 1, shard, 1), state_bytes_per_param, hbm_bytes_per_s)
    compute = n_mb * stage_mb + optim

    fsdp = framework == "fsdp"
    act = ACTIVATION_BYTES * tokens_mb * d.hidden
    # Per layer: forward all-gathers (into Q/K/V and the MLP) and reduce-scatters (out of the
    # output projections), as many backward; recompute repeats the forward ones (PyTorch's
    # selective policy saves the reduce-scatter outputs, so only the gathers). Low-precision
    # TP (torchao Float8ColwiseParallel) gathers the forward inputs already cast.
    forward_ag = 2.0 * (1.0 + (code == 2) + (code == 1) * (1.0 if fsdp else 0.0))
    forward_rs = 2.0 * (1.0 + (code == 2))
    ag_elem = recipe.element_bytes if (fsdp and recipe.low_dtype) else ACTIVATION_BYTES
    ag_fwd = comm.collective_seconds("all-gather", act * ag_elem / ACTIVATION_BYTES, tp, 1, links)
    ag = comm.collective_seconds("all-gather", act, tp, 1, links)
    rs = comm.collective_seconds("reduce-scatter", act, tp, 1, links)
    tp_layer = forward_ag * ag_fwd + forward_rs * rs + 2.0 * (ag + rs)
    gemm_layer = lt.gemm_forward * (3.0 + (code == 2))
    tp_layer = tp_layer - np.where(async_tp, np.minimum(ASYNC_TP_HIDDEN_SHARE * tp_layer, gemm_layer), 0.0)

    kv = ACTIVATION_BYTES * micro_batch * seq_len * (d.k_width + d.v_width) / tp
    gather = comm.collective_seconds("all-gather", kv, cp, tp, links)
    scatter = comm.collective_seconds("reduce-scatter", kv, cp, tp, links)
    if cp_method == "ring":
        attn_bwd = lt.attention_forward * 2.5
        cp_layer = (np.maximum(gather - lt.attention_forward, 0.0) * (1.0 + (code == 2))
                    + np.maximum(scatter - attn_bwd, 0.0))
    else:
        cp_layer = gather * (1.0 + (code == 2)) + scatter

    comm_mb = layers_here * (tp_layer + cp_layer)
    routed = ACTIVATION_BYTES * tokens_mb * d.hidden * d.experts_per_token / np.where(sp, tp, 1)
    a2a = comm.collective_seconds("all-to-all", routed, ep, tp * cp, links)
    moe_here = layers_here * d.moe_layers / L
    ep_time = n_mb * np.where(ep > 1, (4.0 + 2.0 * (code == 2)) * moe_here * a2a, 0.0)

    send = comm.pipeline_send_seconds(act, tp, tp * cp * dp, sp | fsdp, links)
    pp_time = np.where(pp > 1, 2.0 * n_mb * virtual_stages * send, 0.0)
    bubble = accumulation * bubble_share(pp, microbatches, virtual_stages, schedule_code) * microbatches \
        * (stage_mb + comm_mb)

    params = local
    if_pp = pp > 1
    gathers = np.where(if_pp, 1.0, 2.0 * n_mb)
    reductions = np.where(if_pp, 1.0, n_mb)
    ag = comm.collective_seconds("all-gather", params * gather_bytes, shard, tp, links)
    rs = comm.collective_seconds("reduce-scatter", params * grad_bytes, shard, tp, links)
    ar = comm.collective_seconds("all-reduce", params * grad_bytes, shard, tp, links)
    dp_total = np.where(stage >= 3, gathers * ag + reductions * rs, ar)
    edge = np.where(stage >= 3, (ag + rs) / layers_here, ar / layers_here)
    dp_exposed = np.where(shard > 1, np.maximum(dp_total - dp_overlap * compute, 0.0) + edge, 0.0)

    step = compute + n_mb * comm_mb + pp_time + dp_exposed + ep_time + bubble
    gpus = tp * pp * cp * dp
    factor = straggler_factor(gpus)
    straggle = step * (factor - 1.0)
    tokens = dp * n_mb * micro_batch * seq_len
    model = flops_per_token(d.active_params, layers=L, attention_dim=d.attention_dim, seq_len=seq_len)
    return StepTime(compute, n_mb * layers_here * tp_layer, n_mb * layers_here * cp_layer, pp_time, dp_exposed,
                    ep_time, bubble, straggle, model * tokens, tokens, gpus * 1.0, high_peak, step * factor)

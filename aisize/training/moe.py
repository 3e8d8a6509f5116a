"""The routed experts of one MoE layer for one micro-batch on one GPU: grouped GEMMs, routing,
permutation, the token dispatch and the host synchronisation it needs.

With MoE parallel folding (Megatron-Core) the expert layers reuse attention's GPUs
(TP x CP x DP) as expert-TP x EP x expert-DP. A rank enters the MoE block with its
sequence-parallel share of the micro-batch, ``tokens`` = b·s/(c·t) tokens, and routes each to
k of the E experts. Balanced routing gives each of its E/ep local experts
``T_e = tokens·k·ep·etp / E`` tokens (the expert-TP group all-gathers its members' tokens and
splits each expert's width by etp), so the FLOPs per rank are those of a dense layer of
width k·f_e, but they run as E/ep small GEMMs:

* **grouped GEMMs**: each expert's GEMMs on their roofline (weights read once per expert:
  a few tokens per expert make them memory-bound), at the dense GEMM efficiency times
  ``T_e / (T_e + grouped_gemm_half_tokens)``: tile and wave quantization and per-group setup
  cost a share that falls as the tokens per expert grow [1][2]; under ``moe_source="kernels"``
  :mod:`aisize.training.kernel_moe` reads them from NVIDIA's measured MoE operator instead (off by
  default, docs/training-kernels.md);
* **router**: the h x E logits GEMM is among the layer's dense GEMMs; its fp32 softmax/top-k
  and the load-balancing loss move :data:`ROUTER_BYTES_PER_LOGIT` per logit [3];
* **permutation**: the all-to-all dispatcher copies every token k times into expert order and
  back (read h, write k·h; read k·h, write h, 16-bit), forward and backward; DeepEP/HybridEP
  ("flex") fuse the permutation into the dispatch kernels [3][4];
* **dispatch**: dispatch and combine all-to-alls of k·tokens·h 16-bit elements over the EP
  group, forward and backward (in :mod:`aisize.training.step_time`);
* **host synchronisation**: the dispatchers size their buffers from the routed token counts,
  copied to the host every forward (``MoEAlltoAllTokenDispatcher`` synchronises on a
  device-to-host copy; DeepEP and HybridEP wait for the receive counts unless a token capacity
  is set), so the CPU stops running ahead of the GPU and the GPU waits while the host launches
  the rest of the layer: ``moe_sync_host_seconds`` per MoE layer forward, of which CUDA
  graphs leave ``cuda_graph_host_share`` (:mod:`aisize.training.calibration`) [3]. The all-to-all
  dispatcher's wait is its host-side permutation: with more than one expert per rank it sorts the
  received tokens by local expert in ep x E/ep chunks, dispatch and combine (``sort_chunks_by_idxs``,
  "Permutation 2", run only when ``num_local_experts > 1``) [3]. With one expert per rank (Mixtral
  8x7B at EP 8) that sort is skipped and the host, like DeepEP's, only waits for the counts: the
  flex dispatcher's fitted wait (:func:`host_sync_seconds`; docs/training-cv.md). Every fitted
  all-to-all row has 2 to 32 experts per rank;
* **latent MoE** (Nemotron 3 Super): the experts, the permutation and the dispatch carry tokens of the
  latent width l instead of h (``ModelDims.expert_width``); the two h x l projections around them
  are dense GEMMs of the layer (:mod:`aisize.training.work`) [5];
* **load imbalance**: the busiest rank sets the pace of every all-to-all and of its grouped GEMMs
  (its E/ep experts run one after another, so their sum is what counts); ``imbalance`` (max /
  mean tokens per rank, 1 = balanced as the benchmark recipes force it) scales the expert work
  and the dispatch. :func:`busiest_rank_imbalance` derives it: the router's own violation
  (max expert load / mean - 1; :data:`AUX_FREE_MAX_VIOLATION` for auxiliary-loss-free routing [6])
  times the spread of a balanced router's token counts over the EP ranks (the expected maximum of
  ep binomial counts, mean + sigma·sqrt(2 ln ep));
* **dispatch overlap**: :func:`ep_layer_seconds` is a layer's dispatch and combine
  (:func:`aisize.training.comm.moe_alltoall_seconds`, deduplicated per node under ``flex``);
  Megatron's combined 1F1B (``--overlap-moe-expert-parallel-comm``) runs one micro-batch's
  all-to-alls beside another's forward or backward compute, so in the steady state only what
  exceeds that compute is exposed, and the warmup / cool-down chunks
  (:func:`aisize.training.schedules.unpaired_share`) stay exposed (:func:`exposed_alltoall_seconds`) [7].
  Design and effect on published runs: docs/training-moe.md.

References
----------
.. [1] Liu et al. 2025, "MoE Parallel Folding", arXiv:2504.14960, sec. 3-4.
.. [2] NVIDIA CUTLASS grouped GEMM; Gale et al. 2023, "MegaBlocks", MLSys (block-sparse
   grouped GEMMs lose efficiency at few tokens per expert).
.. [3] NVIDIA Megatron-LM ``megatron/core/transformer/moe/token_dispatcher.py`` (``cuda_sync_point``,
   ``_maybe_dtoh_and_synchronize``), ``router.py`` (fp32 router, aux loss), ``moe_utils.permute``.
.. [4] DeepSeek-AI, DeepEP (github.com/deepseek-ai/DeepEP); NVIDIA HybridEP (Megatron-LM
   ``fused_a2a.py``).
.. [6] Wang et al. 2024, "Auxiliary-Loss-Free Load Balancing Strategy for Mixture-of-Experts",
   arXiv:2408.15664, Table 1 (MaxVio_global 0.04 for Loss-Free Balancing at 1B and 3B, against
   0.72 and 0.52 with an auxiliary loss); DeepSeek-V3 (arXiv:2412.19437, sec. 2.1.2) routes this way.
.. [7] NVIDIA Megatron-Core developer guide, "Combined 1F1B: Expert-Parallel All-to-All Overlap"
   (``--overlap-moe-expert-parallel-comm``; requires interleaving when PP > 1) and
   ``megatron/core/pipeline_parallel/combined_1f1b.py`` ("EP A2A in forward step is hidden by the
   attention/mlp computation in the backward step, and vice versa").
.. [5] NVIDIA 2026, Nemotron 3 Super technical report, arXiv:2604.12374, sec. 2 (LatentMoE); Megatron-LM
   ``MoELayer`` (``fc1_latent_proj`` before the token dispatcher, ``fc2_latent_proj`` after it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize.training import comm
from aisize.training import efficiency as E
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import DISPATCHERS, TrainingCalibration
from aisize.training.dims import ModelDims
from aisize.training.recipes import Recipe, cast_bytes_per_element

# The fitted MoE constants live in the calibration (aisize.training.calibration): the grouped GEMMs'
# half-efficiency tokens per expert; the host time the GPU waits for after the dispatcher's
# device-to-host synchronisation, per MoE layer forward, by dispatcher (the all-to-all dispatcher
# launches permutation, NCCL all-to-all and grouped-GEMM kernels after it; DeepEP/HybridEP fuse the
# permutation into their dispatch kernels); and the share of it CUDA graphs leave (fitted 1.0: the
# graphed launches run before the synchronisation, where the host is ahead of the GPU anyway). Below,
# the shipped values under their old names (code reads the Engine's calibration).
GROUPED_GEMM_HALF_TOKENS = SHIPPED.grouped_gemm_half_tokens
MOE_SYNC_HOST_SECONDS = SHIPPED.moe_sync_host_seconds
CUDA_GRAPH_HOST_SHARE = SHIPPED.cuda_graph_host_share
# fp32 router: logits written, softmax read/write, top-k read, the aux-loss statistics read:
# about four 4-byte passes per logit forward (Megatron-LM router.py, moe_router_dtype fp32).
ROUTER_BYTES_PER_LOGIT = 16.0
# The all-to-all dispatcher's permute reads each token (2h) and writes k copies (2kh); unpermute
# reads the k copies and writes the weighted sum: 4h(1 + k) bytes per token forward, as many backward.
PERMUTE_BYTES_PER_COPY = 4.0
# Auxiliary-loss-free routing (bias balancing, DeepSeek-V3): the busiest expert's load over the mean,
# minus 1, measured over a whole validation set [6]; a single micro-batch spreads more (the sampling
# term of busiest_rank_imbalance adds that).
AUX_FREE_MAX_VIOLATION = 0.04
TOKEN_BYTES = 2.0  # 16-bit token copies on the wire (dispatch and combine)
SWIGLU_FUSED_BYTES = 6.0  # per inner element: read gate and up, write the product (Megatron's fused SwiGLU)
ACTIVATION_FUSED_BYTES = 4.0  # GeLU/ReLU: read, write


@dataclass(frozen=True)
class ExpertTimes:
    """Seconds the routed experts of one MoE layer take for one micro-batch on one GPU."""

    gemm_forward: object
    memory_forward: object  # activation, casts, router, permutation
    activation_forward: object  # the expert activation function alone (what ``moe_act`` recomputes)
    tokens_per_expert: object
    backward_bytes_ratio: float = SHIPPED.backward_bytes_ratio  # the calibration's (elementwise backward / forward)
    cast_forward: object = 0.0  # the low-precision casts of the expert activations (part of memory_forward)

    @property
    def forward(self):
        return self.gemm_forward + self.memory_forward

    @property
    def backward(self):
        return 2.0 * self.gemm_forward + self.backward_bytes_ratio * self.memory_forward


def tokens_per_expert(d: ModelDims, tokens, ep, etp):
    """Tokens one local expert GEMM sees per micro-batch, balanced routing [count]."""
    return tokens * d.experts_per_token * ep * etp / d.experts


def expert_times(d: ModelDims, *, tokens, ep, etp, dispatcher_code, recipe: Recipe, gen: str, high_peak,
                 low_peak, hbm_bytes_per_s, compiled: bool, imbalance=1.0,
                 cal: TrainingCalibration = SHIPPED) -> ExpertTimes:
    """Routed-expert work of one MoE layer, one micro-batch, one GPU (vectorized; 0 for dense models).

    ``tokens``: tokens this rank routes (b·s/(c·t)); ``dispatcher_code``: index in :data:`DISPATCHERS`.
    """
    if not d.moe_layers:
        z = np.zeros(np.broadcast(tokens, ep, etp).shape) if np.ndim(tokens) + np.ndim(ep) + np.ndim(etp) else 0.0
        return ExpertTimes(z, z, z, z, cal.backward_bytes_ratio, z)
    h, f = d.expert_width, d.expert_ffn  # a latent MoE's tokens reach the experts at the latent width
    k = d.experts_per_token
    t_e = tokens_per_expert(d, tokens, ep, etp)
    local = d.experts / ep
    grouped = t_e / (t_e + cal.grouped_gemm_half_tokens)
    e_high = E.gemm_efficiency(gen, "16", cal) * grouped
    e_low = E.gemm_efficiency(gen, recipe.low_bits, cal) * grouped if recipe.low_dtype else e_high
    width_in = f * (2 if d.ffn_gated else 1) / etp

    def gemm(n_in, n_out):
        return E.recipe_gemm_seconds(t_e, n_in, n_out, recipe, high_peak=high_peak, low_peak=low_peak,
                                     e_high=e_high, e_low=e_low, hbm_bytes_per_s=hbm_bytes_per_s, cal=cal)

    listed = h * width_in + (f / etp) * h
    scale = d.expert_params / (etp * listed)  # expert biases: keep the parameter count's FLOPs
    gemm_fwd = local * (gemm(h, width_in) + gemm(f / etp, h)) * scale * imbalance

    routed = tokens * k * etp  # token copies this rank's experts process
    inner = routed * f / etp
    act = inner * (SWIGLU_FUSED_BYTES if d.ffn_gated else ACTIVATION_FUSED_BYTES)
    cast = cast_bytes_per_element(recipe, compiled) * recipe.low_share * (routed * h + inner)
    router = ROUTER_BYTES_PER_LOGIT * tokens * d.experts
    permute = np.where(np.asarray(dispatcher_code) == 0, PERMUTE_BYTES_PER_COPY * h * tokens * (1.0 + k), 0.0)
    act_s = E.memory_seconds(act * imbalance, hbm_bytes_per_s, cal)
    mem = E.memory_seconds((act + cast) * imbalance + router + permute, hbm_bytes_per_s, cal)
    cast_s = E.memory_seconds(cast * imbalance, hbm_bytes_per_s, cal)
    return ExpertTimes(gemm_fwd, mem, act_s, t_e, cal.backward_bytes_ratio, cast_s)


def host_sync_seconds(dispatcher_code, local_experts, cal: TrainingCalibration = SHIPPED):
    """GPU time lost to the host after the dispatcher's device-to-host sync, per MoE layer forward [s].

    ``dispatcher_code``: index into :data:`DISPATCHERS`; ``local_experts``: routed experts per EP rank (E/ep).
    The all-to-all dispatcher pays its fitted wait where it sorts tokens by local expert (more than one
    per rank); with one it skips that sort and waits as the flex dispatcher does (module docstring).
    """
    code = np.asarray(dispatcher_code)
    fitted = np.choose(code, [cal.moe_sync_host_seconds[k] for k in DISPATCHERS])
    sorts = np.asarray(local_experts) > 1
    return np.where(sorts | (code != DISPATCHERS.index("alltoall")), fitted, cal.moe_sync_host_seconds["flex"])


def busiest_rank_imbalance(routed_per_rank, ep, max_violation=0.0):
    """Max / mean token copies an EP rank receives in one micro-batch [>= 1].

    ``routed_per_rank``: the mean copies per rank (tokens x k a rank routes); ``max_violation``:
    the router's systematic excess (0 for forced balance, :data:`AUX_FREE_MAX_VIOLATION` for
    auxiliary-loss-free routing). A balanced router's counts are binomial, so the busiest of ep
    ranks expects mean + sigma·sqrt(2 ln ep) with sigma = sqrt(mean (1 - 1/ep)) (the Gaussian
    bound on the maximum of ep samples); 1 where ep = 1.
    """
    mu = np.maximum(np.asarray(routed_per_rank, dtype=float), 1.0)
    n = np.asarray(ep, dtype=float)
    spread = np.sqrt(2.0 * np.log(np.maximum(n, 1.0)) * (1.0 - 1.0 / n) / mu)
    return (1.0 + max_violation) * np.where(n > 1, 1.0 + spread, 1.0)


def ep_layer_seconds(d: ModelDims, *, tokens, ep, etp, links, dispatcher_code, imbalance=1.0, redo_share=0.0):
    """EP communication of one MoE layer for one micro-batch on one GPU, forward and backward [s].

    Dispatch and combine forward, their gradients backward, and again for a recomputed MoE forward
    (``redo_share``); with expert TP the experts' tokens are all-gathered and their outputs
    reduce-scattered over it. ``tokens``: tokens this rank routes; ``dispatcher_code`` 1 (flex)
    crosses the network once per destination node (:func:`aisize.training.comm.moe_alltoall_seconds`).
    """
    k = d.experts_per_token
    copy = TOKEN_BYTES * tokens * d.expert_width * imbalance
    dedup = np.asarray(dispatcher_code) == DISPATCHERS.index("flex")
    a2a = comm.moe_alltoall_seconds(copy, k, d.experts, ep, etp, links, dedup=dedup)
    etp_ag = comm.collective_seconds("all-gather", copy * k * etp, etp, 1, links)
    etp_rs = comm.collective_seconds("reduce-scatter", copy * k * etp, etp, 1, links)
    return 2.0 * (2.0 + redo_share) * (a2a + 0.5 * (etp_ag + etp_rs))


def exposed_alltoall_seconds(a2a_seconds, compute_seconds, overlap, unpaired):
    """The part of a MoE layer's all-to-all time left on the critical path [s].

    Without overlap all of it. With Megatron's combined 1F1B a paired chunk's all-to-alls run beside
    the partner micro-batch's compute of that layer (``compute_seconds``, forward and backward), so
    only max(a2a - compute, 0) shows; the ``unpaired`` share of chunks (warmup and cool-down,
    :func:`aisize.training.schedules.unpaired_share`) shows all of it [7].
    """
    hidden = (1.0 - unpaired) * np.minimum(a2a_seconds, compute_seconds)
    return a2a_seconds - np.where(overlap, hidden, 0.0)


def overlap_assumed(ep, stride, links, pp, virtual_stages, recompute_code):
    """Whether the combined 1F1B all-to-all overlap is assumed when the layout does not say [bool].

    On where the EP group crosses scale-up domains (its all-to-all goes over the NIC), as NVIDIA's
    Megatron-Bridge recipes set ``moe_a2a_overlap`` there (Qwen3-235B on H100 at EP 32, DeepSeek-V3 on
    H100 at EP 64 and on B200 at EP 32), and where Megatron allows it: no pipeline or an interleaved one,
    and no full recompute [7].
    """
    _, domains = comm.span(ep, stride, links.scaleup_domain)
    schedule_ok = (np.asarray(pp) == 1) | (np.asarray(virtual_stages) > 1)
    return (np.asarray(domains) > 1) & schedule_ok & (np.asarray(recompute_code) != 2)

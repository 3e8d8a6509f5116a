"""Step time of a parallel training layout, part by part, and the MFU it implies.

step = compute + exposed TP + exposed CP + pipeline sends + exposed DP/FSDP + MoE all-to-all
       + host synchronisation + exposed activation offload + pipeline bubble + stragglers

* compute: the slowest pipeline stage's layers (:func:`aisize.training.work.layer_times`, hybrid
  models' Mamba-2 scans included:
  GEMMs on their roofline, FlashAttention, memory-bound work, casts; the routed experts,
  :func:`aisize.training.moe.expert_times`, its grouped GEMMs from measured MoE tables under
  ``moe_source="kernels"``, :mod:`aisize.training.kernel_moe`; recompute, :mod:`aisize.training.recompute`),
  the output layer and loss on the last stage, for every micro-batch, plus the optimizer.
  Megatron can count the embedding and the loss as pipeline layers
  (``embedding_in_pipeline_split``, ``loss_in_pipeline_split``): the first and last stages
  then hold one transformer layer fewer; multi-token-prediction modules (DeepSeek-V3) add a
  layer and an output head per module on the last stage;
* TP (Megatron-style, all-reduces or all-gather + reduce-scatter with sequence
  parallelism: the same bytes): two collective pairs forward, two backward, two more
  with full recompute (one with PyTorch's selective policy, which re-gathers); async
  TP hides ``async_tp_hidden_share`` (:mod:`aisize.training.calibration`) of them behind the GEMMs [1][2];
* CP: K and V all-gathered forward and their gradients reduce-scattered backward
  per layer (again with full recompute); ``all-gather`` (torchtitan, Llama 3) leaves it
  exposed, ``ring`` (Megatron-LM) hides each step under the attention of the previous
  chunk [3][4];
* PP: one activation send forward and one gradient send backward per micro-batch and
  model chunk, split over the TP ranks (scatter/gather) [1];
* bubble: :func:`aisize.training.schedules.bubble_share` of each pipeline flush;
* DP/FSDP: ZeRO-3/FSDP all-gathers the parameters (twice per micro-batch without
  PP, once per step with it) and reduce-scatters the gradients, hidden under compute up to
  ``dp_overlap`` of it; the distributed optimizer (stages 1-2) reduce-scatters the
  gradients (in ``grad_reduce_precision``) and all-gathers the updated 16-bit parameters
  once per step, hidden under the last micro-batch's backward and the first one's forward
  (Megatron's ``overlap_grad_reduce`` / ``overlap_param_gather``); stage 0 all-reduces. Dense
  parameters reduce over DP x CP (stride TP), routed experts over the expert-data-parallel
  group (stride EP x expert-TP), each over its real span of NVLink and network, with the
  fabric's oversubscription; the first gather and the last reduction stay exposed [5];
* EP: dispatch and combine all-to-alls of the routed tokens over the EP group (stride
  expert-TP), forward and backward (and again for a recomputed MoE forward); with expert
  TP the experts' tokens are all-gathered and their outputs reduce-scattered over it [6]
  (:func:`aisize.training.moe.ep_layer_seconds`); Megatron's combined 1F1B hides them under the
  partner micro-batch's compute outside the warmup chunks (:func:`aisize.training.moe.exposed_alltoall_seconds`);
* host: the MoE dispatcher's host synchronisation (``moe_sync_host_seconds`` of the calibration
  per MoE layer forward; with one expert per rank the all-to-all dispatcher skips its chunk sort and
  waits as the flex one does: :func:`aisize.training.moe.host_sync_seconds`);
* offload: activations of ``activation_offload_layers`` layers copied to host memory after
  their forward and back before their backward over the host link, each copy hidden under
  the next layer's compute (Megatron-Core activation offloading);
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

from aisize.training.layer_kinds import model_flops_per_token
from aisize.memory.states import tidy
from aisize.training import comm, kernel_gemms, kernel_moe
from aisize.training.arrays import add
from aisize.training.dims import ModelDims
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.efficiency import attention_kernel, gemm_efficiency, straggler_factor
from aisize.training import moe as moe_kernels
from aisize.training.moe import expert_times
from aisize.training.schedules import bubble_share, pipeline_slots, unpaired_share
from aisize.training.setup import Engine
from aisize.training.values import Layouts, Options
from aisize.training.work import head_seconds, layer_times, optimizer_seconds

# The shipped overlap shares under their old names (aisize.training.calibration: dp_overlap, an
# assumption; async_tp_hidden_share, implied by torchtitan's async-TP benchmark); code reads the Engine's.
DP_OVERLAP = SHIPPED.dp_overlap
ASYNC_TP_HIDDEN_SHARE = SHIPPED.async_tp_hidden_share
WIRE_ACTIVATION_BYTES = 2.0  # 16-bit activations and activation gradients on the wire
CP_METHODS = ("all-gather", "ring")
PARTS = ("compute_seconds", "tp_comm_seconds", "cp_comm_seconds", "pp_comm_seconds", "dp_comm_exposed_seconds",
         "ep_comm_seconds", "host_sync_seconds", "offload_exposed_seconds", "pp_bubble_seconds",
         "straggler_seconds")


@dataclass(frozen=True)
class StepTime:
    """One optimizer step of one layout [s], its parts and its model FLOPs utilization."""

    compute_seconds: float
    tp_comm_seconds: float  # exposed
    cp_comm_seconds: float  # exposed
    pp_comm_seconds: float
    dp_comm_exposed_seconds: float
    ep_comm_seconds: float
    host_sync_seconds: float  # GPU idle while the host launches after the MoE dispatcher's synchronisation
    offload_exposed_seconds: float  # activation offload copies not hidden under compute
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


def _redo(lt, xt, moe_share, code, full_share, modules: tuple, selective_op: bool, shared_share: float):
    """(recomputed forward seconds per layer, recomputed MoE forwards per MoE layer)."""
    full = full_share * (lt.forward + moe_share * xt.forward)
    if selective_op:
        selective, moe_again = lt.sac_redo, 0.0
    else:
        mods = modules
        parts = {"core_attn": lt.attention_forward, "layernorm": lt.norm_forward, "mla_up_proj": lt.mla_up_forward,
                 "mlp": lt.mlp_forward * (1.0 - shared_share), "shared_experts": lt.mlp_forward * shared_share,
                 "moe_act": moe_share * xt.activation_forward, "moe": moe_share * xt.forward}
        selective = sum((parts[m] for m in mods), 0.0)
        moe_again = 1.0 if "moe" in mods else 0.0
    code = np.asarray(code)
    redo = np.where(code == 2, full, np.where(code == 1, selective, 0.0))
    again = np.where(code == 2, full_share, np.where(code == 1, moe_again, 0.0))
    return redo, again


def step_breakdown(d: ModelDims, lay: Layouts, eng: Engine, opt: Options, *, offload_bytes=0.0,
                   trainable_share=None, parts=True,
                   gemm_source: kernel_gemms.GemmSource | None = None) -> StepTime:
    """Step time of layouts ``lay`` (broadcast arrays, checked by the caller) of a model ``d`` on the
    hardware, precision and calibration of ``eng`` under the framework options ``opt``.

    ``offload_bytes``: activation bytes of one offloaded layer per micro-batch (``opt.offload_layers``
    of them per stage); ``te`` (of ``opt``): Transformer Engine kernels (Megatron-Core, Megatron-FSDP);
    framework ``fsdp`` without them is torchtitan's PyTorch (op-level selective checkpointing, DTensor
    float8 TP, eager cross entropy);
    ``parts=False``: only ``step_seconds`` (the parts 0), the same sum in fewer full-size array
    operations (what ranking a large grid needs). ``trainable_share``: LoRA (None: every weight trains);
    the frozen base computes no weight gradients, so each backward GEMM runs once (the input gradient)
    instead of twice, and the optimizer and the data-parallel gradient reduction (and, below ZeRO-3, the
    parameter all-gather) cover the adapters' share of the weights only (Hu et al. 2021,
    arXiv:2106.09685, sec. 4.2: no gradients or optimizer states for the frozen weights).
    ``gemm_source``: where the layers' GEMMs are timed (:mod:`aisize.training.kernel_gemms`; None: the one
    :func:`aisize.training.kernel_gemms.using` set, else the roofline). The fitted and assumed constants
    are ``eng.calibration`` (:mod:`aisize.training.calibration`); ``opt.dp_overlap`` None: the calibration's.
    """
    cal = eng.calibration
    dp_overlap = cal.dp_overlap if opt.dp_overlap is None else opt.dp_overlap
    recipe, gen, high_peak, low_peak = eng.recipe, eng.generation, eng.high_peak, eng.low_peak
    hbm_bytes_per_s, links = eng.hbm_bytes_per_s, eng.links
    seq_len, micro_batch, microbatches, accumulation = lay.seq_len, lay.micro_batch, lay.microbatches, lay.accumulation
    tp, pp, cp, dp, ep, sp, stage = lay.tp, lay.pp, lay.cp, lay.dp, lay.ep, lay.sp, lay.stage
    virtual_stages, schedule_code = lay.virtual_stages, lay.schedule_code
    framework, compiled, te, cp_method = opt.framework, opt.fused, opt.te, opt.cp_method
    offload_layers, host_bytes_per_s = opt.offload_layers, eng.host_bytes_per_s
    state_bytes_per_param, gather_bytes, grad_bytes = eng.optimizer_state_bytes, eng.gather_bytes, eng.grad_bytes
    optimizer_flops_per_param = d.muon_flops_per_param if eng.optimizer == "muon" else 0.0
    attn_kernel = attention_kernel(gen, te)
    L = d.layers
    fsdp = framework == "fsdp"
    torch_kernels = fsdp and not te
    code = np.asarray(lay.recompute)
    tokens_mb = micro_batch * seq_len / cp
    lt = layer_times(d, eng, tokens=tokens_mb, micro_batch=micro_batch, seq_len=seq_len, tp=tp, sp=sp,
                     compiled=compiled, attention_kernel=attn_kernel)
    src = gemm_source or kernel_gemms.active()
    if src.source == "kernels":  # the layers' GEMMs from measured tables (aisize.training.kernel_gemms)
        e_high = gemm_efficiency(gen, "16", cal)
        kt = kernel_gemms.linear_times(
            d, gpu=src.gpu, recipe=recipe, tokens=tokens_mb, tp=tp, fused=te, high_peak=high_peak,
            low_peak=low_peak, e_high=e_high,
            e_low=gemm_efficiency(gen, recipe.low_bits, cal) if recipe.low_dtype else e_high,
            hbm_bytes_per_s=hbm_bytes_per_s, cal=cal)
        lt = kernel_gemms.with_kernel_gemms(lt, kt)
    moe_share = d.moe_layers / L
    tokens_r = tokens_mb / tp  # sequence-parallel share each rank routes (Megatron requires SP with TP for MoE)
    xt = expert_times(d, tokens=tokens_r, ep=ep, etp=lay.etp, dispatcher_code=opt.dispatcher, recipe=recipe,
                      gen=gen, high_peak=high_peak, low_peak=low_peak, hbm_bytes_per_s=hbm_bytes_per_s,
                      compiled=compiled, imbalance=opt.imbalance, cal=cal)
    if d.moe_layers and kernel_moe.active() == "kernels":  # grouped GEMMs from the measured MoE tables
        xt, _ = kernel_moe.with_kernel_experts(xt, d, gpu=src.gpu, recipe=recipe, tokens=tokens_r, ep=ep,
                                               etp=lay.etp, high_peak=high_peak, low_peak=low_peak,
                                               imbalance=opt.imbalance)
    redo, moe_again = _redo(lt, xt, moe_share, code, lay.full_share, opt.modules, torch_kernels, d.shared_ffn_share)
    fwd = lt.forward + moe_share * xt.forward
    bwd = lt.backward + moe_share * xt.backward
    lora = trainable_share is not None
    if lora:  # frozen base: no weight-gradient GEMMs (the adapters' own GEMMs are rank-r thin, left out)
        bwd = bwd - getattr(lt, "gemm_wgrad", lt.gemm_forward) - moe_share * xt.gemm_forward
    layer = fwd + bwd + redo
    sync = moe_kernels.host_sync_seconds(opt.dispatcher, d.experts / ep, cal)
    sync = sync * (cal.cuda_graph_host_share if opt.cuda_graphs else 1.0)
    host = moe_share * sync * (1.0 + moe_again) if d.moe_layers else 0.0

    busy, last, first = pipeline_slots(L, pp, virtual_stages, opt.embed_slot, opt.loss_slot)
    head = head_seconds(d, eng, tokens=tokens_mb, tp=tp, fused_loss=not torch_kernels)
    if src.source == "kernels":
        head = head + kernel_gemms.head_gemm_seconds(d, gpu=src.gpu, tokens=tokens_mb, tp=tp, high_peak=high_peak,
                                                     e_high=gemm_efficiency(gen, "16", cal),
                                                     hbm_bytes_per_s=hbm_bytes_per_s, cal=cal)
    middle = np.where(pp >= 3, busy, 0)
    stage_layers_ = np.maximum(np.maximum(first, middle), last)  # most transformer layers on one stage
    # multi-token prediction: each MTP module runs one more layer and output head on the last stage
    mtp = d.mtp_layers * (layer + head)
    stage_c = np.where(pp == 1, L * layer + head + mtp,
                       np.maximum(np.maximum(first, middle) * layer, last * layer + head + mtp))
    layers_here = np.where(pp == 1, L, stage_layers_)
    stage_mb = stage_c + layers_here * host
    n_mb = microbatches * accumulation
    shard = dp * cp
    etp = lay.etp
    edp = np.maximum(tp * cp * dp // np.maximum(ep * etp, 1), 1)  # expert data parallel (MoE parallel folding)
    dense_local = (layers_here * d.layer_resident_params
                   + np.where(pp == 1, d.embed_params + d.head_params, d.embed_params)) / tp
    expert_local = layers_here * d.layer_expert_params / (ep * etp)
    local = dense_local + expert_local
    share = trainable_share if lora else 1.0
    optim = share * optimizer_seconds(np.where(stage >= 1, dense_local / shard + expert_local / edp, local),
                              state_bytes_per_param, hbm_bytes_per_s, high_peak * gemm_efficiency(gen, "16", cal),
                              optimizer_flops_per_param, cal)
    host_total = n_mb * layers_here * host
    compute = n_mb * stage_c + optim

    act = WIRE_ACTIVATION_BYTES * tokens_mb * d.hidden
    # Per layer: forward all-gathers (into Q/K/V and the MLP) and reduce-scatters (out of the
    # output projections), as many backward; recompute repeats the forward ones (PyTorch's
    # selective policy saves the reduce-scatter outputs, so only the gathers). Low-precision
    # TP (torchao Float8ColwiseParallel) gathers the forward inputs already cast.
    full_redo = np.where(code == 2, lay.full_share, 0.0)
    forward_ag = 2.0 * (1.0 + full_redo + (code == 1) * (1.0 if torch_kernels else 0.0))
    forward_rs = 2.0 * (1.0 + full_redo)
    ag_elem = recipe.element_bytes if (torch_kernels and recipe.low_dtype) else WIRE_ACTIVATION_BYTES
    ag_fwd = comm.collective_seconds("all-gather", act * ag_elem / WIRE_ACTIVATION_BYTES, tp, 1, links)
    ag = comm.collective_seconds("all-gather", act, tp, 1, links)
    rs = comm.collective_seconds("reduce-scatter", act, tp, 1, links)
    tp_layer = forward_ag * ag_fwd + forward_rs * rs + 2.0 * (ag + rs)
    # GEMMs async TP hides under: forward (again under full recompute), dgrad, wgrad (none for a frozen base)
    dgrad, wgrad = getattr(lt, "gemm_dgrad", lt.gemm_forward), getattr(lt, "gemm_wgrad", lt.gemm_forward)
    gemm_layer = lt.gemm_forward * (1.0 + full_redo) + dgrad + (0.0 if lora else wgrad)
    tp_layer = tp_layer - np.where(opt.async_tp, np.minimum(cal.async_tp_hidden_share * tp_layer, gemm_layer), 0.0)

    kv = WIRE_ACTIVATION_BYTES * micro_batch * seq_len * (d.k_width + d.v_width) / tp
    gather = comm.collective_seconds("all-gather", kv, cp, tp, links)
    scatter = comm.collective_seconds("reduce-scatter", kv, cp, tp, links)
    attn_redo = 1.0 + full_redo
    if cp_method == "ring":
        cp_layer = (np.maximum(gather - lt.attention_forward, 0.0) * attn_redo
                    + np.maximum(scatter - lt.attention_backward, 0.0))
    else:
        cp_layer = gather * attn_redo + scatter
    comm_mb = layers_here * (tp_layer + cp_layer)

    if d.moe_layers:
        # dispatch and combine of k token copies (latent width on a latent MoE; once per node under flex)
        ep_layer = moe_kernels.ep_layer_seconds(d, tokens=tokens_r, ep=ep, etp=etp, links=links,
                                                dispatcher_code=opt.dispatcher, imbalance=opt.imbalance,
                                                redo_share=moe_again)
        overlap = moe_kernels.overlap_assumed(ep, etp, links, pp, virtual_stages, code)
        # combined 1F1B: the partner micro-batch's compute and host waits of one MoE layer hide the all-to-alls
        ep_layer = moe_kernels.exposed_alltoall_seconds(ep_layer, layer + host / moe_share, overlap,
                                                        unpaired_share(pp, microbatches, virtual_stages))
        ep_time = n_mb * layers_here * moe_share * ep_layer
    else:
        ep_time = 0.0 * n_mb

    offload = 0.0
    if host_bytes_per_s is not None:
        copy = offload_bytes / host_bytes_per_s  # each way, hidden under the next layer's forward / backward
        exposed = np.maximum(copy - fwd, 0.0) + np.maximum(copy - bwd, 0.0)
        offload = n_mb * offload_layers * exposed

    send = comm.pipeline_send_seconds(act, tp, tp * cp * dp, pp, sp | fsdp, links)
    pp_time = np.where(pp > 1, 2.0 * n_mb * virtual_stages * send, 0.0)
    idle = accumulation * bubble_share(pp, microbatches, virtual_stages, schedule_code) * microbatches

    if_pp = pp > 1
    gathers = np.where(if_pp, 1.0, 2.0 * n_mb)
    reductions = np.where(if_pp, 1.0, n_mb)

    def dp_traffic(params, group, stride):
        """(all traffic of a step, the part no compute can hide) of one parameter group [s]."""
        gathered = params * np.where(stage >= 3, 1.0, share)  # ZeRO-3 gathers the frozen weights too
        ag_ = comm.collective_seconds("all-gather", gathered * gather_bytes, group, stride, links)
        rs_ = comm.collective_seconds("reduce-scatter", share * params * grad_bytes, group, stride, links)
        ar_ = comm.collective_seconds("all-reduce", share * params * grad_bytes, group, stride, links)
        total = np.where(stage >= 3, gathers * ag_ + reductions * rs_, np.where(stage >= 1, ag_ + rs_, ar_))
        edge = np.where(stage >= 1, ag_ + rs_, ar_) / layers_here
        on = group > 1
        return np.where(on, total, 0.0), np.where(on, edge, 0.0)

    dense_total, dense_edge = dp_traffic(dense_local, shard, tp)
    expert_total, expert_edge = dp_traffic(expert_local, edp, ep * etp) if d.moe_layers else (0.0, 0.0)
    # ZeRO-3 / FSDP traffic runs beside every micro-batch; the distributed optimizer's once-a-step
    # reduce-scatter and all-gather only beside the last backward and the first forward
    hide = dp_overlap * np.where(stage >= 3, compute, stage_c)
    dp_exposed = np.maximum(add(dense_total, expert_total) - hide, 0.0) + add(dense_edge, expert_edge)

    gpus = tp * pp * cp * dp
    factor = straggler_factor(gpus, cal)
    tokens = dp * n_mb * micro_batch * seq_len
    # 6N + attention + Mamba-2 scans; 4N under LoRA (the FLOPs the step needs, as the planner counts them)
    model = model_flops_per_token(d, seq_len, method="lora" if lora else "full")
    if not parts:  # micro-batches and bubble both run stage + communication: one full-size product
        runs = n_mb + idle
        step = add(runs * (stage_c + comm_mb), runs * layers_here * host, optim, pp_time, dp_exposed, ep_time, offload)
        return StepTime(*([0.0] * 10), model * tokens, tokens, gpus * 1.0, high_peak, step * factor)
    bubble = idle * (stage_mb + comm_mb)
    step = add(compute, n_mb * comm_mb, pp_time, dp_exposed, ep_time, host_total, offload, bubble)
    return StepTime(compute, n_mb * layers_here * tp_layer, n_mb * layers_here * cp_layer, pp_time, dp_exposed,
                    ep_time, host_total, offload, bubble, step * (factor - 1.0), model * tokens, tokens, gpus * 1.0,
                    high_peak, step * factor)

"""Training memory per GPU: every part a named line item, overheads included.

The breakdown is for the pipeline stage that needs the most memory: the first
stage holds the input embedding and the activations of the micro-batches in
flight (:func:`aisize.training.schedules.in_flight`); the last holds the output
layer, the loss buffers and one micro-batch. TP divides layer weights and
activations, PP divides layers (unevenly when it must), CP divides the sequence,
EP divides routed experts, ZeRO/FSDP shards model states over DP x CP.

Saved activations per layer and token follow :mod:`aisize.memory.activations`
(Korthikanti et al.), by recompute mode. Framework ``fsdp`` (PyTorch FSDP2 as
torchtitan runs it) adds what that stack does differently, each from its code:

* selective recompute is PyTorch's op-level policy: the layer input, every second
  matmul output and the attention output are saved (:func:`sac_saved_sbh`);
* tensor-parallel linear layers save their all-gathered (full-size) inputs;
* the loss upcasts the logits to fp32: at the start of backward the log-softmax
  output, its incoming and outgoing gradients are alive, 12 B per logit (``del
  pred`` has freed the 16-bit logits) where Megatron's fused loss keeps 4;
* with pipeline parallelism FSDP2 keeps the stage's parameters unsharded and
  accumulates fp32 unsharded gradients until the last micro-batch (``reshard_after_forward
  = False``, ``set_requires_gradient_sync(False)``); interleaved stages allocate
  one chunk's at the activation peak.

Recomputation needs workspace: the backward of one layer holds what it recomputed
and gradients of about that size. Overheads are explicit assumptions (module
constants); the allocator's fragmentation is a share of the short-lived bytes,
fitted on the torchtitan peaks (reserved memory) for eager and compiled code.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from aisize import checks
from aisize.memory.activations import (CROSS_ENTROPY_BYTES, ActivationConstants, activation_constants,
                                       edge_bytes_core, layer_bytes_core, recompute_code)
from aisize.memory.overheads import CUDA_CONTEXT_BYTES, NCCL_BYTES_PER_COMMUNICATOR
from aisize.memory.states import FRAMEWORK_STAGES, state_factors, states_of, per_param_bytes, tidy
from aisize.precision import bytes_per_element, training_precision
from aisize.training.arrays import add
from aisize.training.schedules import in_flight as pipeline_in_flight
from aisize.training.schedules import stage_in_flight
from aisize.training.calibration import CALIBRATION as SHIPPED
from aisize.training.calibration import TrainingCalibration
from aisize.training.values import Layouts
from aisize.units import MiB

# Gradient all-reduce buckets in flight: PyTorch DDP bucket_cap_mb = 25 (MiB), two
# buckets overlapping (torch.nn.parallel.DistributedDataParallel docs).
GRAD_BUCKET_BYTES = 2 * 25 * MiB
# ZeRO-3/FSDP gather the current and the prefetched layer (DeepSpeed's ZeRO-3
# estimator books 4 B x largest layer = two 16-bit copies; FSDP2 prefetches one layer).
GATHERED_LAYERS = 2
# Bytes per logit alive at the loss (see the module docstring); other frameworks keep
# Korthikanti's fp32 logits (aisize.memory.activations.CROSS_ENTROPY_BYTES).
LOSS_BYTES_PER_LOGIT = {"fsdp": 12.0}
# fp32 unsharded gradients FSDP2 reduce-scatters (torchtitan's mixed_precision_reduce).
REDUCE_BYTES = 4.0
# PyTorch caching allocator: reserved minus allocated, as a share of the short-lived bytes (activations,
# loss, buffers), fitted on the torchtitan reserved-memory peaks: eager code allocates many small
# intermediates and strands more than compiled (fused) code. The calibration's
# ``allocator_fragmentation_share`` (aisize.training.calibration); the shipped value under its old name:
ALLOCATOR_FRAGMENTATION_SHARE = SHIPPED.allocator_fragmentation_share


@dataclass(frozen=True)
class TrainingMemory:
    """Per-GPU training memory of the largest pipeline stage [B]."""

    weights_bytes: float
    gradients_bytes: float
    master_weights_bytes: float
    optimizer_moments_bytes: float
    activations_bytes: float
    loss_buffers_bytes: float  # logits and the loss's fp32 copies (last stage)
    temporary_buffers_bytes: float  # backward workspace, gathered parameters, SP/CP gathers, buckets, stage sends
    communication_buffers_bytes: float  # NCCL communicators
    cuda_context_bytes: float
    fragmentation_bytes: float
    host_bytes: float  # offloaded states and activations per GPU, in host RAM (not in total_bytes)

    def __post_init__(self):
        tidy(self)

    @property
    def total_bytes(self):
        """GPU bytes: every line item except host_bytes."""
        return add(*(getattr(self, f.name) for f in fields(self) if f.name != "host_bytes"))

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total_bytes": self.total_bytes}


@dataclass(frozen=True)
class Fit:
    """Whether a breakdown fits one GPU, keeping ``headroom`` of it free."""

    fits: bool
    capacity_bytes: float
    usable_bytes: float
    free_bytes: float  # usable minus needed (negative: short by that much)


def sac_saved_sbh(hidden, q_width, k_width, v_width, ffn_width, gated) -> float:
    """Bytes per token per layer (in units of h) PyTorch op-level selective checkpointing saves.

    torchtitan's policy saves every second ``aten.mm`` output (the 1st, 3rd, ... of
    Q, K, V, O, [gate,] up, down), the attention output and the layer input, 16-bit.

    References
    ----------
    .. [1] pytorch/torchtitan ``parallelize_llama.py`` ``_save_list`` and ``_custom_policy``.
    """
    outs = [q_width, k_width, v_width, hidden] + ([ffn_width, ffn_width] if gated else [ffn_width]) + [hidden]
    saved = sum(outs[0::2])
    return 2.0 * (hidden + q_width + saved) / hidden


@dataclass(frozen=True)
class MemoryModel:
    """What the memory core reads of a model: parameters by part [count], sizes, and the activation bytes
    per token and layer (:func:`aisize.training.memory_inputs.transformer_memory_inputs` gives most of them).

    ``consts``: :func:`aisize.memory.activations.activation_constants`; ``sac_sbh`` :func:`sac_saved_sbh`
    (framework fsdp); ``kv_width`` the K + V width context parallelism gathers [elements];
    ``moe_copy_sbh`` the routed token copies MoE layers keep (the experts' inputs and outputs, k·h each,
    averaged over layers, TP-split); ``saved_rep_sbh`` / ``saved_par_sbh`` what Megatron's recompute
    modules do not keep (replicated / TP-split, per s·b·h); ``mtp_layers`` multi-token-prediction modules
    (a layer, its weights and another loss each) on the last stage; ``trainable_share`` LoRA's share.
    """

    layer_params: object
    expert_params: object
    embed_params: object
    output_params: object
    hidden: object
    heads: object
    vocab: object
    consts: ActivationConstants
    sac_sbh: object = None
    kv_width: object = 0.0
    moe_copy_sbh: object = 0.0
    saved_rep_sbh: object = 0.0
    saved_par_sbh: object = 0.0
    mtp_layers: int = 0
    trainable_share: object = 1.0


@dataclass(frozen=True)
class StageSplit:
    """How the pipeline splits layouts into stages (broadcast arrays): the layers of the first and the last
    stage, the micro-batches the first holds (``in_flight``, with the ``interleave`` factor of interleaved
    schedules, :func:`aisize.training.schedules.in_flight`) and those of its layers the last holds
    (:func:`aisize.training.schedules.stage_in_flight`: 1 under 1F1B, ((v - 1)·p + 1)/v under interleaving)."""

    layers_first: object
    layers_last: object
    in_flight: object
    interleave: object = 1.0
    in_flight_last: object = 1.0


@dataclass(frozen=True)
class MemoryRecipe:
    """The precision's and the framework's bytes and behaviour the memory core reads.

    ``unit``: bytes per parameter of each state (:func:`aisize.memory.states.per_param_bytes`);
    ``gather_bytes`` per parameter FSDP/ZeRO-3 all-gathers (None: ``weight_bytes``); ``fused``: fused
    kernels (less allocator fragmentation); ``te``: Transformer Engine kernels (Megatron-Core,
    Megatron-FSDP), framework ``fsdp`` without them is PyTorch FSDP2 as torchtitan runs it;
    ``dropout`` 1.0 where dropout masks are kept; ``offload_layers`` layers per stage whose
    activations wait in host memory; ``calibration`` the allocator's fragmentation share (None: the
    shipped one).
    """

    unit: dict
    weight_bytes: float
    act_scale: float
    framework: str
    gather_bytes: float | None = None
    fused: bool = False
    te: bool = False
    dropout: float = 0.0
    frozen_dtype_bytes: float = 0.0
    offload_optimizer: bool = False
    offload_params: bool = False
    offload_layers: object = 0
    calibration: TrainingCalibration | None = None

    @classmethod
    def of(cls, eng, opt) -> "MemoryRecipe":
        """An :class:`~aisize.training.setup.Engine`'s bytes under :class:`~aisize.training.values.Options`."""
        return cls(eng.unit, eng.weight_bytes, eng.activation_scale, opt.framework, eng.gather_bytes, opt.fused,
                   opt.te, 0.0, opt.frozen_dtype_bytes, offload_layers=opt.offload_layers,
                   calibration=eng.calibration)


def stage_breakdowns(m: MemoryModel, lay: Layouts, split: StageSplit, rec: MemoryRecipe, *, totals=False) -> tuple:
    """(first stage, last stage) breakdowns of layouts ``lay`` of model ``m``: the vectorized core, inputs
    unchecked (the public functions check them). With one stage both are the same. ``totals``: only the
    two totals [B], summed in a factored order (what ranking a large grid needs).

    Dense states shard over dp x cp; routed experts, split over ep x etp, over tp x cp x dp / (ep x etp)
    (MoE parallel folding); full recompute re-runs ``lay.full_share`` of the layers (the others keep
    everything); each stage keeps the routed experts of its own MoE layers; the last stage's loss
    buffers stay one micro-batch's.
    """
    layer_params, expert_params, embed_params, output_params = m.layer_params, m.expert_params, m.embed_params, \
        m.output_params
    hidden, heads, vocab, consts, sac_sbh, kv_width = m.hidden, m.heads, m.vocab, m.consts, m.sac_sbh, m.kv_width
    moe_copy_sbh, saved_rep_sbh, saved_par_sbh, mtp_layers = m.moe_copy_sbh, m.saved_rep_sbh, m.saved_par_sbh, \
        m.mtp_layers
    trainable_share = m.trainable_share
    tp, pp, dp, ep, cp, etp, sp, stage = lay.tp, lay.pp, lay.dp, lay.ep, lay.cp, lay.etp, lay.sp, lay.stage
    seq_len, micro_batch, code, full_share, virtual_stages = (lay.seq_len / cp, lay.micro_batch, lay.recompute,
                                                              lay.full_share, lay.virtual_stages)
    layers_first, layers_last, in_flight, interleave, in_flight_last = (
        split.layers_first, split.layers_last, split.in_flight, split.interleave, split.in_flight_last)
    unit, weight_bytes, gather_bytes, act_scale, framework = (rec.unit, rec.weight_bytes, rec.gather_bytes,
                                                              rec.act_scale, rec.framework)
    compiled, te, dropout, frozen_dtype_bytes, offload_layers = rec.fused, rec.te, rec.dropout, \
        rec.frozen_dtype_bytes, rec.offload_layers
    offload_optimizer, offload_params, calibration = rec.offload_optimizer, rec.offload_params, rec.calibration
    fsdp = framework == "fsdp"
    torch_kernels = fsdp and not te
    gather = weight_bytes if gather_bytes is None else gather_bytes
    single = pp == 1
    first_params = layers_first * layer_params / tp + (embed_params + single * output_params) / tp
    last_params = (layers_last + mtp_layers) * layer_params / tp + (single * embed_params + output_params) / tp
    experts_first = layers_first * expert_params / (etp * ep)
    experts_last = (layers_last + mtp_layers) * expert_params / (etp * ep)

    sbh = seq_len * micro_batch * hidden
    none = layer_bytes_core(consts, seq_len, micro_batch, hidden, heads, tp, sp, 0) + moe_copy_sbh * sbh / tp
    if torch_kernels:  # DTensor TP linear layers save their all-gathered inputs (QKV and MLP: 2 + 2 per element)
        none = none + np.where(tp > 1, 4.0 * sbh * (1.0 - 1.0 / tp), 0.0)
        sel = (sac_sbh * sbh + 4.0 * heads * seq_len * micro_batch) / tp
    else:
        sel = (layer_bytes_core(consts, seq_len, micro_batch, hidden, heads, tp, sp, 1) + moe_copy_sbh * sbh / tp
               - sbh * (saved_rep_sbh / np.where(sp, tp, 1) + saved_par_sbh / tp))
    full = layer_bytes_core(consts, seq_len, micro_batch, hidden, heads, tp, sp, 2)
    stored = np.where(code == 2, full_share * full + (1.0 - full_share) * none, np.where(code == 1, sel, none))
    workspace = (none - stored) + none  # recomputed tensors + gradients of one layer in backward
    layer_act = stored * act_scale
    first_edge, last_edge = edge_bytes_core(consts, seq_len, micro_batch, hidden, vocab, tp, sp, dropout, in_flight)
    logits = seq_len * micro_batch * vocab / tp
    loss = (LOSS_BYTES_PER_LOGIT["fsdp"] if torch_kernels else CROSS_ENTROPY_BYTES) * logits
    last_edge = last_edge - CROSS_ENTROPY_BYTES * logits  # booked as loss_buffers_bytes
    if torch_kernels:  # torchtitan's output layer saves its all-gathered input
        last_edge = last_edge + 2.0 * sbh * (1.0 - 1.0 / tp)

    kw = dict(stage=stage, framework=framework, unit=unit, trainable_share=trainable_share,
              frozen_bytes=frozen_dtype_bytes, offload_optimizer=offload_optimizer, offload_params=offload_params)
    shard = dp * cp
    dense_f = state_factors(shard, **kw)
    expert_f = state_factors(np.maximum(shard * tp / (ep * etp), 1.0), **kw)
    moe_first, moe_last = states_of(experts_first, expert_f), states_of(experts_last, expert_f)
    layer_local = layer_params / tp + expert_params / (ep * etp)
    common = workspace * act_scale + np.where(sp & (tp > 1), 2.0 * sbh, 0.0)
    common = common + 2.0 * kv_width / tp * seq_len * micro_batch * (cp - 1)
    common = common + np.where(pp > 1, 2.0 * 2.0 * sbh / tp * in_flight, 0.0)
    comms = NCCL_BYTES_PER_COMMUNICATOR * ((tp > 1) * 1.0 + (pp > 1) + (dp > 1) + (ep > 1) + (cp > 1))
    share = (calibration or SHIPPED).allocator_fragmentation_share["compiled" if compiled else "eager"]

    def temporary(params, experts):
        if fsdp:
            zero3 = np.where(pp > 1, (params + experts) * (gather + REDUCE_BYTES / virtual_stages),
                             GATHERED_LAYERS * gather * layer_local + REDUCE_BYTES * layer_local)
        else:
            zero3 = GATHERED_LAYERS * weight_bytes * layer_local
        return np.where(stage >= 3, zero3, GRAD_BUCKET_BYTES * (shard > 1)) + common

    def total(params, act, loss_bytes, experts, moe):
        on_gpu = ("weights", "gradients", "master_weights", "optimizer_moments")
        dense_sum = add(*(dense_f[k] for k in on_gpu))
        fixed = add(params * dense_sum, moe.total_bytes, comms, CUDA_CONTEXT_BYTES)
        return fixed + (1.0 + share) * add(act, loss_bytes, temporary(params, experts))

    def one(params, act, loss_bytes, experts, moe) -> TrainingMemory:
        dense = states_of(params, dense_f)
        temp = temporary(params, experts)
        return TrainingMemory(
            dense.weights_bytes + moe.weights_bytes, dense.gradients_bytes + moe.gradients_bytes,
            dense.master_weights_bytes + moe.master_weights_bytes,
            dense.optimizer_moments_bytes + moe.optimizer_moments_bytes, act, loss_bytes, temp, comms,
            CUDA_CONTEXT_BYTES, share * (act + loss_bytes + temp), dense.host_bytes + moe.host_bytes)

    # offloaded layers' activations wait in host memory: their copies finish under the later layers'
    # forward, and backward frees the kept layers before the first reload, so the peak (the end of
    # the forward) holds the kept layers only
    kept = np.maximum(layers_first - offload_layers, 0)
    first_act = layer_act * (kept * in_flight * interleave) + first_edge
    last_held = np.where(single, in_flight * interleave, in_flight_last)
    last_act = layer_act * (np.maximum(layers_last - offload_layers, 0) + mtp_layers) * last_held + last_edge
    loss_last = loss * (1 + mtp_layers)
    f_moe, l_moe = (experts_first, moe_first), (experts_last, moe_last)
    if totals:
        return (total(first_params, first_act, single * loss_last, *f_moe),
                total(last_params, last_act, loss_last, *l_moe))
    offloaded = layer_act * (layers_first - kept) * in_flight * interleave
    first = one(first_params, first_act, single * loss_last, *f_moe)
    last = one(last_params, last_act, loss_last, *l_moe)
    first = replace(first, host_bytes=first.host_bytes + offloaded)
    last = replace(last, host_bytes=last.host_bytes + layer_act * np.minimum(offload_layers, layers_last))
    return first, last


def memory_breakdown(m: MemoryModel, lay: Layouts, split: StageSplit, rec: MemoryRecipe) -> TrainingMemory:
    """The breakdown of the stage that needs more memory, first or last (see :func:`stage_breakdowns`)."""
    first, last = stage_breakdowns(m, lay, split, rec)
    pick = first.total_bytes >= last.total_bytes
    return TrainingMemory(*(np.where(pick, getattr(first, f.name), getattr(last, f.name))
                            for f in fields(TrainingMemory)))


def peak_memory_bytes(m: MemoryModel, lay: Layouts, split: StageSplit, rec: MemoryRecipe):
    """Per-GPU bytes of the stage that needs more memory (see :func:`stage_breakdowns`)."""
    first, last = stage_breakdowns(m, lay, split, rec, totals=True)
    return np.maximum(first, last)


def training_memory(*, layer_params, embed_params, output_params, layers, hidden, heads, vocab,
                    seq_len, micro_batch, expert_params=0.0, tp=1, pp=1, dp=1, ep=1, cp=1,
                    sequence_parallel=False, recompute="none", zero_stage=0, precision="bf16",
                    optimizer="adamw", framework="zero", num_microbatches=None, virtual_stages=1,
                    constants: ActivationConstants | None = None, dropout=True, trainable_share=1.0,
                    frozen_dtype="bf16", offload_optimizer=False, offload_params=False, compiled=False,
                    sac_sbh=None, kv_width=0.0, gather_bytes=None, moe_copy_sbh=0.0) -> TrainingMemory:
    """Per-GPU training memory of a transformer from plain numbers.

    Parameters
    ----------
    layer_params : parameters of one layer outside routed experts [count]
    embed_params : input embedding (V·h, + positions) [count]; output_params : output
        layer [count] (V·h; 0 if tied and pp = 1, a copy if tied and pp > 1)
    expert_params : routed-expert parameters of one layer, all experts [count]
    layers : L (pp need not divide it: stages get floor or ceil of L/pp); hidden : h;
        heads : a; vocab : V; seq_len : s (whole sequence); micro_batch : b
    tp, pp, dp, ep, cp : parallel degrees (tp divides heads, pp <= layers, ep divides dp,
        cp divides seq_len); states shard over dp x cp
    sequence_parallel, recompute (none | selective | full), zero_stage, precision,
    optimizer, framework : see :mod:`aisize.memory.activations` and
        :func:`aisize.memory.states.model_states`; framework "fsdp" adds PyTorch FSDP2's
        behaviour (module docstring)
    num_microbatches : m per step (None: at least pp, so the first stage holds pp)
    virtual_stages : v, interleaved 1F1B chunks per stage
    constants : :func:`activation_constants` (default GPT-3 style); dropout: dropout masks in edges
    trainable_share, frozen_dtype : LoRA (bf16) / QLoRA (nf4) frozen base
    offload_optimizer, offload_params : see ``model_states``
    compiled : fused kernels (torch.compile): less allocator fragmentation
    sac_sbh : :func:`sac_saved_sbh` of the model (framework fsdp, selective recompute)
    kv_width : K + V width per token (context parallel all-gathers it) [elements]
    gather_bytes : bytes per parameter FSDP all-gathers (default: the working weights')
    moe_copy_sbh : routed token copies MoE layers keep, bytes per token per layer in units of h
        (:func:`aisize.training.memory_inputs.moe_copy_sbh`)

    Returns
    -------
    :class:`TrainingMemory` [B per GPU]

    References
    ----------
    .. [1] Rajbhandari et al. 2020, arXiv:1910.02054; Korthikanti et al. 2022,
       arXiv:2205.05198 sec. 4 (incl. 4.3 embeddings, output layer, 4sbv/t logits);
       Narayanan et al. 2021, arXiv:2104.04473 sec. 2.2 (1F1B in-flight micro-batches).
    """
    unit = per_param_bytes(precision, optimizer, framework)
    p = training_precision(precision)
    lp = checks.positive("layer_params", layer_params)
    xp = checks.non_negative("expert_params", expert_params)
    emb = checks.non_negative("embed_params", embed_params)
    outp = checks.non_negative("output_params", output_params)
    L = checks.integer("layers", layers, high=10**5)
    h = checks.positive("hidden", hidden)
    a = checks.integer("heads", heads, high=10**6)
    V = checks.positive("vocab", vocab)
    s = checks.positive("seq_len", seq_len)
    b = checks.positive("micro_batch", micro_batch)
    t = checks.integer("tp", tp, high=10**4)
    pp_ = checks.integer("pp", pp, high=10**4)
    d = checks.integer("dp", dp, high=10**7)
    e = checks.integer("ep", ep, high=10**5)
    c = checks.integer("cp", cp, high=10**5)
    v = checks.integer("virtual_stages", virtual_stages, high=10**3)
    share = checks.fraction("trainable_share", trainable_share)
    stage = checks.integer("zero_stage", zero_stage, low=0, high=3)
    sp = checks.flag("sequence_parallel", sequence_parallel)
    offload_optimizer = checks.flag("offload_optimizer", offload_optimizer)
    offload_params = checks.flag("offload_params", offload_params)
    compiled = checks.flag("compiled", compiled)
    if np.any(np.asarray(a) % t):
        raise ValueError(f"tp={tp!r} is not allowed: must divide heads={heads!r}")
    if np.any(pp_ > L):
        raise ValueError(f"pp={pp!r} is not allowed: must be at most layers={layers!r}")
    if np.any(np.asarray(d) % e):
        raise ValueError(f"ep={ep!r} is not allowed: must divide dp={dp!r}")
    if np.any(np.asarray(s) % c):
        raise ValueError(f"cp={cp!r} is not allowed: must divide seq_len={seq_len!r}")
    if not np.all(np.isin(stage, FRAMEWORK_STAGES[framework])):
        raise ValueError(f"zero_stage={zero_stage!r} is not allowed: framework {framework!r} offers "
                         f"stages {FRAMEWORK_STAGES[framework]}")
    if offload_params and not np.all(stage == 3):
        raise ValueError("offload_params=True is not allowed: parameter offload needs zero_stage=3")
    m = pp_ if num_microbatches is None else checks.integer("num_microbatches", num_microbatches, high=10**9)
    held, interleave = pipeline_in_flight(pp_, m, v)
    consts = constants or activation_constants()
    if framework == "fsdp" and sac_sbh is None:
        sac_sbh = sac_saved_sbh(h, h, h, h, consts.parallel_sbh / 8.0 * h, False)
    model = MemoryModel(lp, xp, emb, outp, h, a, V, consts, sac_sbh, checks.non_negative("kv_width", kv_width),
                        checks.non_negative("moe_copy_sbh", moe_copy_sbh), trainable_share=share)
    lay = Layouts(seq_len=s, micro_batch=b, microbatches=m, accumulation=1, tp=t, pp=pp_, cp=c, dp=d, ep=e,
                  virtual_stages=v, recompute=recompute_code(recompute), sp=sp, stage=stage)
    split = StageSplit(-(-L // pp_), L // pp_, held, interleave, stage_in_flight(pp_, m, v, pp_ - 1))
    rec = MemoryRecipe(unit, p.weight_bytes, p.activation_scale, framework, gather_bytes, compiled, False,
                       1.0 if checks.flag("dropout", dropout) else 0.0,
                       bytes_per_element(frozen_dtype, name="frozen_dtype"), offload_optimizer, offload_params)
    return memory_breakdown(model, lay, split, rec)


def fits(memory: TrainingMemory | float, capacity_bytes, *, headroom=0.05) -> Fit:
    """Does a breakdown (or a byte total) fit a GPU of ``capacity_bytes``, keeping a share free?

    Parameters
    ----------
    memory : a breakdown with ``total_bytes``, or bytes [B]
    capacity_bytes : GPU memory [B] (catalog ``memory_visible_bytes`` where published)
    headroom : share of capacity kept free, [0, 1)

    References
    ----------
    .. [1] the accelerator's datasheet via the catalog.
    """
    need = checks.non_negative("memory", getattr(memory, "total_bytes", memory))
    cap = checks.positive("capacity_bytes", capacity_bytes)
    room = checks.number("headroom", headroom, low=0.0, high=1.0, high_inclusive=False)
    usable = cap * (1.0 - room)
    ok = need <= usable
    return Fit(np.asarray(ok) if np.ndim(ok) else bool(ok), cap, usable, usable - need)


def max_micro_batch(capacity_bytes, *, headroom=0.05, **kwargs):
    """Largest micro-batch whose :func:`training_memory` fits [sequences]; 0 if none.

    Every line item is affine in b, so b_max = floor((usable - M(0)) / slope)
    with M evaluated at b = 1 and b = 2. ``kwargs`` are those of :func:`training_memory`
    except ``micro_batch``.

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4 (activations linear in b).
    """
    if "micro_batch" in kwargs:
        raise ValueError("micro_batch is not allowed here: it is what max_micro_batch solves for")
    cap = checks.positive("capacity_bytes", capacity_bytes)
    room = checks.number("headroom", headroom, low=0.0, high=1.0, high_inclusive=False)
    one = training_memory(micro_batch=1, **kwargs).total_bytes
    two = training_memory(micro_batch=2, **kwargs).total_bytes
    slope = two - one
    b = np.floor((cap * (1.0 - room) - (one - slope)) / slope)
    b = np.maximum(b, 0.0)
    return int(b) if np.ndim(b) == 0 else b.astype(np.int64)


def other_model_training_memory(model, *, micro_batch, precision="fp16", optimizer="sgd",
                                framework="zero", zero_stage=0, dp=1) -> TrainingMemory:
    """Per-GPU training memory of a catalog ``OtherModel`` (CNN, U-Net) under data parallelism.

    Model states from the parameter count (:func:`aisize.memory.states.model_states`);
    activations from :func:`aisize.memory.activations.other_model_activation_bytes`.

    References
    ----------
    .. [1] Rajbhandari et al. 2020, arXiv:1910.02054; He et al. 2016, arXiv:1512.03385.
    """
    from aisize.memory.activations import other_model_activation_bytes
    from aisize.memory.states import model_states

    st = model_states(model.params, precision=precision, optimizer=optimizer, framework=framework,
                      zero_stage=zero_stage, dp=dp)
    act = other_model_activation_bytes(model.forward_per_sample_flops, micro_batch,
                                       bytes_per_element=2.0 * training_precision(precision).activation_scale,
                                       measured_bytes_per_sample=model.activations_per_sample_bytes)
    temp = GRAD_BUCKET_BYTES * (dp > 1)
    return TrainingMemory(st.weights_bytes, st.gradients_bytes, st.master_weights_bytes,
                          st.optimizer_moments_bytes, act, 0.0, temp, NCCL_BYTES_PER_COMMUNICATOR * (dp > 1),
                          CUDA_CONTEXT_BYTES, ALLOCATOR_FRAGMENTATION_SHARE["eager"] * (act + temp),
                          st.host_bytes)

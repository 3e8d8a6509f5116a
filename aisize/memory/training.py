"""Training memory per GPU: every part a named line item, overheads included.

The breakdown is for the pipeline stage that needs the most memory: the first
stage holds the input embedding and activations of min(p, m) micro-batches
(1F1B); the last holds the output layer, the fp32 logits and one micro-batch.
TP divides layer weights and activations, PP divides layers, EP divides routed
experts, ZeRO/FSDP shards model states over the data-parallel group.

Overheads are explicit assumptions (module constants), never a fudge factor.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from aisize import checks
from aisize.memory.activations import (NORM_IMPLS, ActivationConstants, _edge_bytes, _layer_bytes,
                                       _recompute_code, activation_constants, pipeline_in_flight)
from aisize.memory.states import FRAMEWORK_STAGES, _factors, _states, per_param_bytes, tidy
from aisize.precision import bytes_per_element, training_precision
from aisize.units import GiB, MiB

# CUDA context and loaded kernels (cuBLAS, cuDNN, NCCL, PyTorch): the memory
# nvidia-smi shows before the first tensor; ~0.3-0.6 GiB on A100/H100 with CUDA 12
# lazy module loading (CUDA C Programming Guide, "Lazy Loading"), more without.
CUDA_CONTEXT_BYTES = 0.5 * GiB
# NCCL communicator buffers: NCCL_BUFFSIZE 4 MiB per channel and peer direction
# (NCCL environment-variable docs); ~32 such buffers per communicator in use.
NCCL_BYTES_PER_COMMUNICATOR = 32 * 4 * MiB
# Gradient all-reduce buckets in flight: PyTorch DDP bucket_cap_mb = 25 (MiB), two
# buckets overlapping (torch.nn.parallel.DistributedDataParallel docs).
GRAD_BUCKET_BYTES = 2 * 25 * MiB
# ZeRO-3/FSDP gather the current and the prefetched layer (DeepSpeed's ZeRO-3
# estimator books 4 B x largest layer = two 16-bit copies).
GATHERED_LAYERS = 2
# PyTorch caching allocator: blocks freed by short-lived tensors (activations,
# buffers) split and strand free space; ZeRO arXiv:1910.02054 sec. 3.2 reports
# OOM with over 30 % memory free in extreme cases. Assume 10 % of those bytes.
ALLOCATOR_FRAGMENTATION_SHARE = 0.10


@dataclass(frozen=True)
class TrainingMemory:
    """Per-GPU training memory of the largest pipeline stage [B]."""

    weights_bytes: float
    gradients_bytes: float
    master_weights_bytes: float
    optimizer_moments_bytes: float
    activations_bytes: float
    temporary_buffers_bytes: float  # gathered ZeRO-3 layers, SP all-gather, gradient buckets
    communication_buffers_bytes: float  # NCCL communicators
    cuda_context_bytes: float
    fragmentation_bytes: float
    host_bytes: float  # offloaded states per GPU, in host RAM (not in total_bytes)

    def __post_init__(self):
        tidy(self)

    @property
    def total_bytes(self):
        """GPU bytes: every line item except host_bytes."""
        return sum(getattr(self, f.name) for f in fields(self) if f.name != "host_bytes")

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total_bytes": self.total_bytes}


@dataclass(frozen=True)
class Fit:
    """Whether a breakdown fits one GPU, keeping ``headroom`` of it free."""

    fits: bool
    capacity_bytes: float
    usable_bytes: float
    free_bytes: float  # usable minus needed (negative: short by that much)


def _memory(*, layer_params, expert_params, embed_params, output_params, layers, hidden, heads,
            vocab, seq_len, micro_batch, tp, pp, dp, ep, sp, code, stage, in_flight, interleave,
            consts: ActivationConstants, act_scale, dropout, unit, framework, weight_bytes,
            trainable_share=1.0, frozen_dtype_bytes=0.0, offload_optimizer=False, offload_params=False):
    """Vectorized core over plain numbers (inputs checked by the caller)."""
    per_stage = layers / pp
    single = pp == 1  # one stage holds everything
    body = per_stage * layer_params / tp
    experts = per_stage * expert_params / (tp * ep)
    first_params = body + (embed_params + single * output_params) / tp
    last_params = body + (single * embed_params + output_params) / tp
    layer_act = _layer_bytes(consts, seq_len, micro_batch, hidden, heads, tp, sp, code) * (act_scale * per_stage)
    first_edge, last_edge = _edge_bytes(consts, seq_len, micro_batch, hidden, vocab, tp, sp, dropout, in_flight)
    first_act = layer_act * (in_flight * interleave) + first_edge + single * last_edge
    last_act = np.where(single, first_act, layer_act + last_edge)

    kw = dict(stage=stage, framework=framework, unit=unit, trainable_share=trainable_share,
              frozen_bytes=frozen_dtype_bytes, offload_optimizer=offload_optimizer, offload_params=offload_params)
    dense_f = _factors(dp, **kw)
    moe = _states(experts, _factors(np.maximum(dp / ep, 1.0), **kw))
    # The two stages differ only in parameters and activations: keep the larger.
    on_gpu = dense_f["weights"] + dense_f["gradients"] + dense_f["master_weights"] + dense_f["optimizer_moments"]
    pick = (first_params - last_params) * on_gpu + (first_act - last_act) * (1.0 + ALLOCATOR_FRAGMENTATION_SHARE) >= 0
    dense = _states(np.where(pick, first_params, last_params), dense_f)
    act = np.where(pick, first_act, last_act)
    temp = np.where(stage >= 3, GATHERED_LAYERS * weight_bytes * (layer_params + expert_params / ep) / tp,
                    GRAD_BUCKET_BYTES * (dp > 1))
    temp = temp + np.where(sp & (tp > 1), 2.0 * seq_len * micro_batch * hidden, 0.0)
    comms = NCCL_BYTES_PER_COMMUNICATOR * ((tp > 1) * 1.0 + (pp > 1) + (dp > 1) + (ep > 1))
    return TrainingMemory(
        dense.weights_bytes + moe.weights_bytes, dense.gradients_bytes + moe.gradients_bytes,
        dense.master_weights_bytes + moe.master_weights_bytes,
        dense.optimizer_moments_bytes + moe.optimizer_moments_bytes, act, temp, comms,
        CUDA_CONTEXT_BYTES, ALLOCATOR_FRAGMENTATION_SHARE * (act + temp), dense.host_bytes + moe.host_bytes)


def training_memory(*, layer_params, embed_params, output_params, layers, hidden, heads, vocab,
                    seq_len, micro_batch, expert_params=0.0, tp=1, pp=1, dp=1, ep=1,
                    sequence_parallel=False, recompute="none", zero_stage=0, precision="bf16",
                    optimizer="adamw", framework="zero", num_microbatches=None, virtual_stages=1,
                    constants: ActivationConstants | None = None, dropout=True, trainable_share=1.0,
                    frozen_dtype="bf16", offload_optimizer=False, offload_params=False) -> TrainingMemory:
    """Per-GPU training memory of a transformer from plain numbers.

    Parameters
    ----------
    layer_params : parameters of one layer outside routed experts [count]
    embed_params : input embedding (V·h, + positions) [count]; output_params : output
        layer [count] (V·h; 0 if tied and pp = 1, a copy if tied and pp > 1)
    expert_params : routed-expert parameters of one layer, all experts [count]
    layers : L; hidden : h; heads : a; vocab : V; seq_len : s; micro_batch : b
    tp, pp, dp, ep : parallel degrees (tp divides heads, pp <= layers, ep divides dp)
    sequence_parallel, recompute (none | selective | full), zero_stage, precision,
    optimizer, framework : see :mod:`aisize.memory.activations` and :func:`aisize.memory.states.model_states`
    num_microbatches : m per step (None: at least pp, so the first stage holds pp)
    virtual_stages : v, interleaved 1F1B chunks per stage
    constants : :func:`activation_constants` (default GPT-3 style); dropout: dropout masks in edges
    trainable_share : trainable share of the parameters (LoRA adapters); the rest is
        frozen at ``frozen_dtype`` (bf16 LoRA, nf4 QLoRA)
    offload_optimizer, offload_params : see ``model_states``

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
    share = checks.fraction("trainable_share", trainable_share)
    stage = checks.integer("zero_stage", zero_stage, low=0, high=3)
    sp = checks.flag("sequence_parallel", sequence_parallel)
    offload_optimizer = checks.flag("offload_optimizer", offload_optimizer)
    offload_params = checks.flag("offload_params", offload_params)
    if np.any(np.asarray(a) % t):
        raise ValueError(f"tp={tp!r} is not allowed: must divide heads={heads!r}")
    if np.any(pp_ > L):
        raise ValueError(f"pp={pp!r} is not allowed: must be at most layers={layers!r}")
    if np.any(np.asarray(d) % e):
        raise ValueError(f"ep={ep!r} is not allowed: must divide dp={dp!r}")
    if not np.all(np.isin(stage, FRAMEWORK_STAGES[framework])):
        raise ValueError(f"zero_stage={zero_stage!r} is not allowed: framework {framework!r} offers "
                         f"stages {FRAMEWORK_STAGES[framework]}")
    if offload_params and not np.all(stage == 3):
        raise ValueError("offload_params=True is not allowed: parameter offload needs zero_stage=3")
    m = pp_ if num_microbatches is None else num_microbatches
    in_flight, interleave = pipeline_in_flight(pp_, m, virtual_stages)
    return _memory(layer_params=lp, expert_params=xp, embed_params=emb, output_params=outp, layers=L,
                   hidden=h, heads=a, vocab=V, seq_len=s, micro_batch=b, tp=t, pp=pp_, dp=d, ep=e,
                   sp=sp, code=_recompute_code(recompute), stage=stage,
                   in_flight=in_flight, interleave=interleave, consts=constants or activation_constants(),
                   act_scale=p.activation_scale, dropout=1.0 if checks.flag("dropout", dropout) else 0.0,
                   unit=unit, framework=framework, weight_bytes=p.weight_bytes, trainable_share=share,
                   frozen_dtype_bytes=bytes_per_element(frozen_dtype, name="frozen_dtype"),
                   offload_optimizer=offload_optimizer, offload_params=offload_params)


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


def _lora_layer_params(arch, rank) -> float:
    """LoRA adapters on every linear layer of one dense layer (QLoRA's 'all linear')."""
    from aisize.memory.states import lora_adapter_params

    h, q, kv, f = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim, arch.ffn_hidden
    mlp = [(h, f), (h, f), (f, h)] if arch.ffn_type == "swiglu" else [(h, f), (f, h)]
    return lora_adapter_params(rank, 1, [(h, q), (h, kv), (h, kv), (q, h)] + mlp)


def transformer_memory_inputs(model, *, pp=1, dropout=False, flash_attention=True, lora_rank=None,
                              norm_impl="fused", softmax_fp32=False) -> dict:
    """The plain numbers :func:`training_memory` needs, from a catalog Transformer.

    Splits :func:`aisize.models.transformer_params` into per-layer,
    routed-expert (all experts of one layer, on average), embedding and output
    parts (a tied output layer is a copy on the last stage when pp > 1), and
    derives the activation constants (FFN type and size, GQA/MLA widths; MoE:
    (experts per token + shared) x expert size). With ``lora_rank`` the layer
    parameters include the adapters and ``trainable_share`` is their share.
    ``norm_impl`` (fused | eager) applies to RMSNorm models; LayerNorm models are
    always fused (torch.nn.LayerNorm is one native kernel). Default fused: production
    stacks (Megatron, TorchTitan, DeepSpeed, Liger) use fused norms; eager is HF's
    upcasting LlamaRMSNorm. ``softmax_fp32``: eager attention upcasting the softmax
    (HF Llama family). See :func:`aisize.memory.activations.activation_constants`.

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4; Hu et al. 2021, arXiv:2106.09685.
    """
    from aisize.models import transformer_params

    pc = transformer_params(model)
    h, L = model.hidden, model.layers
    moe = model.experts > 1
    idle = pc.total - pc.active
    routed = idle * model.experts / (model.experts - model.experts_per_token) if moe and idle else 0.0
    layer = (pc.attention + pc.mlp + pc.norm - routed) / L
    output = pc.head if not model.tied_embeddings else np.where(np.asarray(pp) > 1, model.vocab * h, 0.0)
    ratio = ((model.experts_per_token + model.shared_experts) * model.moe_ffn_hidden if moe
             else model.ffn_hidden) / h
    if model.attention == "mla":
        qk = model.qk_nope_head_dim + model.qk_rope_head_dim
        q_ratio, kv_ratio = model.heads * qk / h, model.heads * (qk + model.v_head_dim) / (2 * h)
        heads_per_kv = 1.0
    else:
        q_ratio, kv_ratio = model.heads * model.head_dim / h, model.kv_heads * model.head_dim / h
        heads_per_kv = model.heads / model.kv_heads
    checks.choice("norm_impl", norm_impl, NORM_IMPLS)
    consts = activation_constants(model.ffn_type, ratio, dropout=dropout, q_ratio=q_ratio,
                                  kv_ratio=kv_ratio, flash_attention=flash_attention,
                                  norm_impl=norm_impl if model.norm == "rmsnorm" else "fused",
                                  softmax_fp32=softmax_fp32, heads_per_kv=heads_per_kv)
    share = 1.0
    if lora_rank is not None:
        adapters = _lora_layer_params(model, lora_rank)
        share = adapters * L / (pc.total + adapters * L)
        layer = layer + adapters
    return dict(layer_params=layer, expert_params=routed / L, embed_params=pc.embedding, output_params=output,
                layers=L, hidden=h, heads=model.heads, vocab=model.vocab, constants=consts, dropout=dropout,
                trainable_share=share)


def transformer_training_memory(model, *, seq_len, micro_batch, pp=1, dropout=False, flash_attention=True,
                                lora_rank=None, qlora=False, norm_impl="fused", softmax_fp32=False,
                                **kwargs) -> TrainingMemory:
    """Per-GPU training memory of a catalog :class:`~aisize.catalog.Transformer`.

    Parameters
    ----------
    model : a Transformer record (catalog or ``transformer_from_hf_config``)
    seq_len, micro_batch, pp : as in :func:`training_memory`
    dropout : dropout on (GPT-3, OPT) or off (Llama, Mistral, DeepSeek configs: 0.0)
    flash_attention : attention kernel without s x s matrices
    norm_impl, softmax_fp32 : implementation the activations assume (fused | eager norm,
        fp32 eager softmax), see :func:`transformer_memory_inputs`
    lora_rank : LoRA rank on all linear layers; None trains every parameter
    qlora : frozen base stored as NF4 (QLoRA; embeddings are counted at NF4 too,
        though QLoRA keeps them 16-bit: under 1 % of a 7B model's bytes at NF4)
    kwargs : tp, dp, ep, sequence_parallel, recompute, zero_stage, precision, optimizer,
        framework, num_microbatches, virtual_stages, offload_optimizer, offload_params

    References
    ----------
    .. [1] see :func:`training_memory` and :func:`transformer_memory_inputs`;
       Dettmers et al. 2023, arXiv:2305.14314 (QLoRA).
    """
    if qlora and lora_rank is None:
        raise ValueError("qlora=True is not allowed without lora_rank: QLoRA trains LoRA adapters")
    inputs = transformer_memory_inputs(model, pp=pp, dropout=dropout, flash_attention=flash_attention,
                                       lora_rank=lora_rank, norm_impl=norm_impl, softmax_fp32=softmax_fp32)
    frozen = "nf4" if qlora else "bf16"
    return training_memory(seq_len=seq_len, micro_batch=micro_batch, pp=pp, frozen_dtype=frozen,
                           **inputs, **kwargs)


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
                          st.optimizer_moments_bytes, act, temp, NCCL_BYTES_PER_COMMUNICATOR * (dp > 1),
                          CUDA_CONTEXT_BYTES, ALLOCATOR_FRAGMENTATION_SHARE * (act + temp), st.host_bytes)

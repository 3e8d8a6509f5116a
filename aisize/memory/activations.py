"""Activation memory of transformer layers (Korthikanti et al.) and of other models.

Per layer, 16-bit activations, 1-byte dropout masks, Korthikanti et al. count
(sec. 4.1): attention 11sbh + 5as^2b, MLP 19sbh, two LayerNorms 4sbh, in all
sbh(34 + 5as/h). The same count, tensor by tensor, generalises it:

* replicated under TP without SP (Korthikanti eq. 2: 10sbh): what the two norms
  save (2 each, fused; 6 each plus 4 B per token, eager RMSNorm: see below),
  the QKV input 2, the MLP input 2, and 2 dropout masks (1 each).
* split by TP: Q 2·q, K and V 4·kv (q = a·d_h/h, kv = k_v·d_h/h; GQA shrinks kv),
  the attention output fed to the out-projection 2·q, and the MLP inner
  tensors 2·r per saved tensor (r = ffn_hidden/h): GeLU saves its input and
  output (2 tensors), ReLU its output (1, reused by the down-projection),
  SwiGLU/GeGLU in eager PyTorch the gate, act(gate), up and their product (4).
  GPT-3 (q = kv = 1, GeLU, r = 4): 2 + 4 + 2 + 16 = 24 -> sbh(10 + 24/t).
* the score term per a·s²·b: softmax output 2, dropout mask 1, dropout output 2
  = 5 with attention dropout; 2 without (the softmax output feeds the V matmul).
  FlashAttention keeps no s x s matrix: 0, plus its fp32 log-sum-exp, 4 B per
  head per token (Dao et al. 2022, arXiv:2205.14135, algorithm 2).

Implementations (defaults = Korthikanti = Megatron-style fused kernels):

* ``norm_impl="fused"``: one kernel (Megatron/Apex/Transformer Engine fused
  LayerNorm or RMSNorm, torch.nn.LayerNorm) saves its 16-bit input, 2 sbh; its fp32
  mean/rstd (4-8 B per token, 8/h-16/h sbh a layer) are neglected as in Korthikanti.
* ``norm_impl="eager"``: Hugging Face ``LlamaRMSNorm.forward`` (x.to(fp32),
  x * rsqrt(mean(x²) + eps), weight * x.to(bf16)) saves the fp32 input 4, the
  bf16 normalised tensor 2 and the fp32 rstd 4 B per token: 6 sbh + 4sb a norm.
* ``softmax_fp32``: eager attention that upcasts the softmax (HF Llama
  ``eager_attention_forward``: softmax(dtype=float32).to(bf16); Megatron's
  unfused softmax with attention_softmax_in_fp32) saves its fp32 output 4 and
  the bf16 copy fed onward 2: 6 per a·s²·b without dropout, 7 with.
* without FlashAttention, GQA K and V are expanded to all a heads before the
  score matmul (HF ``repeat_kv``, Megatron's repeat_interleave) and saved at that
  width: 4·kv·(a/k_v) = 4·q instead of 4·kv.

So a Llama-style layer (SwiGLU, r = 11008/4096, no dropout, MHA) stores
sbh(8 + 8 + 8·2.6875) = 37.5 sbh plus 2as²b fused; eager (HF, no SDPA)
sbh(45.5 + 8/h) plus 6as²b. Modes (Korthikanti Table 2):
TP sbh(rep + par/t) + score/t; TP+SP all ÷t; selective recompute drops the
score term; full recompute keeps the layer input 2sbh (÷t with SP).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aisize import checks
from aisize.compute import RECOMPUTE

FFN_TYPES = ("gelu", "relu", "swiglu", "geglu")
# Saved MLP inner tensors (size ffn_hidden) per FFN type, eager PyTorch autograd.
FFN_SAVED_TENSORS = {"gelu": 2, "relu": 1, "swiglu": 4, "geglu": 4}
NORM_IMPLS = ("fused", "eager")
# Bytes one norm saves: (per s·b·h element, per token). fused: 16-bit input
# (Korthikanti sec. 4.1; statistics neglected); eager HF LlamaRMSNorm: fp32
# input 4 + bf16 normalised 2, and one fp32 rstd per token.
NORM_SAVED_BYTES = {"fused": (2.0, 0.0), "eager": (6.0, 4.0)}
FLASH_STATS_BYTES_PER_HEAD_TOKEN = 4.0  # fp32 log-sum-exp, arXiv:2205.14135 alg. 2
CROSS_ENTROPY_BYTES = 4.0  # fp32 logits kept for the loss, Korthikanti sec. 4.3 (4sbv)
OUTPUT_INPUT_BYTES = 2.0  # 16-bit input of the output projection, Korthikanti sec. 4.3

# Other models: bytes saved for backward per forward FLOP at 16-bit activations,
# MEASURED on ResNet-50 v1.5 (tests/torch_cnn.py): PyTorch 2.13 on CPU, model in
# bf16, 224 x 224, saved-for-backward tensors counted once per storage (in-place
# ReLU shares BatchNorm's output; the max-pool's int64 indices included):
# 43,759,576 B per image over 8.18 GFLOP forward (2 x 4.09 G multiply-adds,
# torchvision). The rule does not transfer across architectures: ResNet-152
# measures 89.5 MB per image, the rule says 123 MB (+38 %: its added 14 x 14
# blocks are FLOP-heavy and activation-light); VGG-16 measures 42.8 MB, the rule
# says 166 MB (+287 %). Catalog models carry their measured figure
# (OtherModel.activations_per_sample_bytes); the rule is for models without one.
RESNET50_SAVED_BYTES_PER_SAMPLE = 43_759_576.0  # bf16, 224 x 224, measured (see above)
RESNET50_FORWARD_FLOPS = 8.18e9
SAVED_BYTES_PER_FORWARD_FLOP_16BIT = RESNET50_SAVED_BYTES_PER_SAMPLE / RESNET50_FORWARD_FLOPS


@dataclass(frozen=True)
class ActivationConstants:
    """Per-layer activation bytes = s·b·h·(replicated_sbh + parallel_sbh) + replicated_sb·s·b
    + score_as2b·a·s²·b; the last stage adds final_norm_sbh·s·b·h + final_norm_sb·s·b."""

    replicated_sbh: float  # not divided by TP unless sequence parallel
    parallel_sbh: float  # divided by TP
    score_as2b: float  # attention score matrices (divided by TP)
    flash: bool  # FlashAttention: no score term, fp32 log-sum-exp instead
    replicated_sb: float = 0.0  # per-token norm statistics [B/token], replicated like replicated_sbh
    final_norm_sbh: float = 2.0  # the final norm before the output layer (last stage)
    final_norm_sb: float = 0.0  # its per-token statistics [B/token]
    attention_share: float = 1.0  # share of layers with attention (FlashAttention's statistics scale with it)


def activation_constants(ffn_type: str = "gelu", ffn_ratio=4.0, *, dropout: bool = True,
                         q_ratio=1.0, kv_ratio=1.0, flash_attention: bool = False,
                         norm_impl: str = "fused", softmax_fp32: bool = False,
                         heads_per_kv=1.0, fused_activation: bool = False,
                         low_precision_inputs: bool = False, attention_share=1.0, norms=2,
                         block_inputs=2.0, extra_parallel_sbh=0.0) -> ActivationConstants:
    """The constants of the per-layer activation formula for an architecture and implementation.

    Parameters
    ----------
    ffn_type : gelu | relu | swiglu | geglu
    ffn_ratio : MLP inner size / hidden size (MoE: experts per token x expert size / h)
    dropout : attention and residual dropout on (GPT-3 style) or off (Llama style)
    q_ratio : a·d_h / h (1 for standard attention)
    kv_ratio : k_v·d_h / h (1 for MHA, 1/8 for Llama-3-70B GQA)
    flash_attention : attention kernel that keeps no s x s matrices
    norm_impl : fused | eager. fused (default): one kernel saves the 16-bit input,
        2 sbh a norm [1]. eager: HF LlamaRMSNorm upcasting to fp32 saves the fp32
        input 4 + bf16 normalised 2 = 6 sbh and an fp32 rstd, 4 B per token [3]
    softmax_fp32 : eager attention upcasting the softmax [3]: fp32 output 4 + the
        16-bit copy fed to the V matmul 2 = 6 per a·s²·b (7 with dropout's mask);
        ignored with flash_attention
    heads_per_kv : a / k_v, query heads per K/V head (1 for MHA and MLA). Without
        flash_attention, K and V are saved expanded to all heads [3]: 4·kv·a/k_v sbh
    fused_activation : a fused gated activation (Megatron's ``bias_swiglu_impl``) keeps the first
        GEMM's output (gate and up) and its product, 3 inner tensors instead of eager's 4 [4]
    low_precision_inputs : Transformer Engine with an fp8 recipe keeps the inputs of the QKV and
        first MLP GEMMs and of the second MLP GEMM quantized (1 B) for the weight gradient; the
        attention output feeds the projection as an extra 1-byte copy (FlashAttention keeps its
        16-bit output for its own backward) [4]
    attention_share : share of the layers with attention (hybrid models; 1 otherwise): the Q, K,
        V, output and score terms scale with it
    norms : norms per layer (2; 1 for single-block layers, Nemotron-H)
    block_inputs : blocks per layer whose first GEMM keeps its (normed) input, on average (2:
        attention and MLP)
    extra_parallel_sbh : TP-split bytes per token per layer (in units of h) of other blocks
        (a hybrid's Mamba-2 layers, averaged over layers)

    Returns
    -------
    :class:`ActivationConstants`; GPT-3 defaults give 10 + 24 and 5 (Korthikanti eq. 1-2).

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, sec. 4.1-4.3, eq. 1-2, Table 2.
    .. [2] Shazeer 2020, "GLU Variants Improve Transformer", arXiv:2002.05202 (SwiGLU).
    .. [3] Hugging Face transformers 5.x, models/llama/modeling_llama.py: ``LlamaRMSNorm.forward``,
       ``eager_attention_forward`` (softmax(dtype=torch.float32).to(query.dtype)), ``repeat_kv``.
    .. [4] NVIDIA Megatron-LM ``megatron/core/fusions/fused_bias_swiglu.py`` (saves the input,
       returns the product); Transformer Engine ``LayerNormLinear`` / ``Linear`` (fp8: the
       quantized input is saved for the weight-gradient GEMM).
    """
    checks.choice("ffn_type", ffn_type, FFN_TYPES)
    checks.choice("norm_impl", norm_impl, NORM_IMPLS)
    r = checks.positive("ffn_ratio", ffn_ratio)
    q = checks.positive("q_ratio", q_ratio)
    kv = checks.positive("kv_ratio", kv_ratio)
    g = checks.number("heads_per_kv", heads_per_kv, low=1.0)
    d = 1.0 if dropout else 0.0
    norm_sbh, norm_sb = NORM_SAVED_BYTES[norm_impl]
    gemm_in = 1.0 if low_precision_inputs else 2.0
    share = checks.fraction("attention_share", attention_share, allow_zero=True)
    replicated = norms * norm_sbh + block_inputs * gemm_in + 2.0 * d
    kv_saved = kv if flash_attention else kv * g  # eager GQA saves K, V after repeat_kv
    tensors = FFN_SAVED_TENSORS[ffn_type]
    if fused_activation and ffn_type in ("swiglu", "geglu"):
        tensors = 3  # gate and up (one GEMM output) + the product
    # the last saved inner tensor feeds the second MLP GEMM: quantized with low-precision inputs
    inner = 2.0 * tensors * r - (2.0 - gemm_in) * r
    proj_copy = (2.0 - gemm_in) * q  # the quantized copy of the attention output
    parallel = share * (2.0 * q + 4.0 * kv_saved + 2.0 * q + proj_copy) + inner + extra_parallel_sbh
    softmax = 4.0 if softmax_fp32 else 2.0
    # A new 16-bit tensor feeds the V matmul (dropout output or the cast-down copy)
    # unless that input is the softmax output itself.
    matmul_input = 2.0 if (dropout or softmax_fp32) else 0.0
    score = 0.0 if flash_attention else share * (softmax + d + matmul_input)
    return ActivationConstants(replicated, parallel, score, bool(flash_attention), norms * norm_sb,
                               norm_sbh, norm_sb, share)


def recompute_code(recompute) -> int:
    """0, 1, 2 for recompute "none", "selective", "full" (checked)."""
    return RECOMPUTE.index(checks.choice("recompute", recompute, RECOMPUTE))


def layer_bytes_core(c: ActivationConstants, s, b, h, a, t, sp, code):
    """:func:`layer_activation_bytes` without input checks (vectorized core); ``sp`` bool/array, ``code`` 0 none / 1 selective / 2 full."""
    sbh = s * b * h
    rep_sbh = c.replicated_sbh + c.replicated_sb / h  # per-token statistics folded in
    rep = np.where(sp, rep_sbh / t, rep_sbh)
    attn = c.score_as2b * a * s * s * b / t
    if c.flash:
        attn = attn + c.attention_share * FLASH_STATS_BYTES_PER_HEAD_TOKEN * a * s * b / t
    stored = sbh * (rep + c.parallel_sbh / t) + np.where(code == 1, 0.0, attn)
    full = 2.0 * sbh / np.where(sp, t, 1)
    return np.where(code == 2, full, stored)


def layer_activation_bytes(seq_len, micro_batch, hidden, heads, *, tp=1, sequence_parallel=False,
                           recompute: str = "none", constants: ActivationConstants | None = None):
    """Activation bytes one transformer layer stores for one micro-batch, per GPU.

    Parameters
    ----------
    seq_len : s [tokens]; micro_batch : b [sequences]; hidden : h; heads : a
    tp : tensor-parallel degree t, must divide heads
    sequence_parallel : shard the replicated part over t as well
    recompute : none | selective | full
    constants : from :func:`activation_constants` (default: GPT-3 style)

    Returns
    -------
    bytes per layer per micro-batch [B], at 16-bit activations

    References
    ----------
    .. [1] Korthikanti et al. 2022, arXiv:2205.05198, eq. 1-3 and Table 2.
    """
    s = checks.positive("seq_len", seq_len)
    b = checks.positive("micro_batch", micro_batch)
    h = checks.positive("hidden", hidden)
    a = checks.integer("heads", heads, high=10**6)
    t = checks.integer("tp", tp, high=10**4)
    if np.any(np.asarray(a) % np.asarray(t)):
        raise ValueError(f"tp={tp!r} is not allowed: must divide heads={heads!r}")
    code = recompute_code(recompute)
    return layer_bytes_core(constants or activation_constants(), s, b, h, a, t, bool(sequence_parallel), code)


def edge_bytes_core(c: ActivationConstants, s, b, h, vocab, t, sp, dropout, in_flight):
    """Vectorized core, inputs unchecked: (first-stage embedding-dropout bytes, last-stage bytes: final norm, output-layer
    input, fp32 logits; Korthikanti sec. 4.3: 4sbh/t + 4sbv/t with a fused norm)."""
    first = dropout * s * b * h * in_flight / t
    norm = c.final_norm_sbh + c.final_norm_sb / h
    last = (norm + OUTPUT_INPUT_BYTES) * s * b * h / t + CROSS_ENTROPY_BYTES * s * b * vocab / t
    return first, last


def other_model_activation_bytes(forward_per_sample_flops, micro_batch, *, bytes_per_element=2.0,
                                 measured_bytes_per_sample=None):
    """Stored activations of a non-transformer model (CNN, U-Net) per micro-batch [B].

    Parameters
    ----------
    forward_per_sample_flops : forward FLOPs of one sample [FLOP]
    micro_batch : samples per GPU [count]
    bytes_per_element : 2 for 16-bit activations (mixed precision), 4 for fp32
    measured_bytes_per_sample : bytes saved for backward per sample, measured at
        16-bit [B]; None: :data:`SAVED_BYTES_PER_FORWARD_FLOP_16BIT` x forward FLOPs

    Returns
    -------
    bytes per micro-batch [B]: per-sample bytes at 16-bit x bytes_per_element / 2 x micro_batch

    References
    ----------
    .. [1] measured here: tests/torch_cnn.py (ResNet-50 v1.5 as torchvision builds it, PyTorch 2.13
       CPU, bf16, ``torch.autograd.graph.saved_tensors_hooks``, unique storages); cross-checked in
       tests/test_torch_cnn.py.
    .. [2] He et al. 2016, "Deep Residual Learning", arXiv:1512.03385, Table 1 (architecture).
    """
    flops = checks.positive("forward_per_sample_flops", forward_per_sample_flops)
    b = checks.positive("micro_batch", micro_batch)
    e = checks.positive("bytes_per_element", bytes_per_element)
    if measured_bytes_per_sample is None:
        per_sample = flops * SAVED_BYTES_PER_FORWARD_FLOP_16BIT
    else:
        per_sample = checks.positive("measured_bytes_per_sample", measured_bytes_per_sample)
    return per_sample * (e / 2.0) * b

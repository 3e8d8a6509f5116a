"""One layer of each kind, the way training sees it: parameters, FLOPs per token and saved activations.

A model is a stack of blocks of four kinds, read from the same record serving reads
(:func:`aisize.models.block_params`): ``attention`` (MHA/GQA/MQA or MLA), ``mamba`` (a Mamba-2
mixer, hybrids), ``mlp`` (a dense MLP) and ``moe`` (routed experts, router, shared experts).
A transformer layer holds an attention and an MLP or MoE block; a Nemotron-H layer one block.

* **FLOPs per token** (model FLOPs, the MFU numerator): 2 per weight a token passes through
  forward (Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1), plus on attention blocks PaLM's
  4·H·Q·s (Chowdhery et al. 2022, arXiv:2204.02311, appendix B) and on Mamba-2 blocks the SSD
  scan (:func:`aisize.models.mamba_scan_flops_per_token`; Dao & Gu 2024, arXiv:2405.21060,
  sec. 6). Training is 3x forward: the backward computes the input and the weight gradients,
  each a matmul of the forward's size; the scan's chunk matmuls likewise.
* **saved activations** per token per block, 16-bit, Megatron-Core kernels (fused norms,
  FlashAttention, no dropout; Korthikanti et al. 2022, arXiv:2205.05198, sec. 4), at tensor
  parallel t with sequence parallelism: every block keeps its norm's input and its first GEMM's
  input (2 + 2 bytes x h, over t with SP); attention Q, K, V and the core attention's output
  (2q + 2(k + v) + 2q bytes, over t) and FlashAttention's fp32 log-sum-exp (4 B per head); an
  MLP its inner tensors (2 x saved tensors x f, over t); an MoE block that for the k routed
  experts and the shared ones, plus the k routed copies of the token (2k·h); a latent MoE
  (Nemotron 3 Super, latent l) routes copies of width l (2k·l) and keeps fc2_latent_proj's input
  (2l); a Mamba-2 block :func:`mamba_saved_bytes_per_token` over t.
* **latent MoE** FLOPs: the two h x l projections count with the block's active weights, and the
  k experts are l-wide (:func:`aisize.models.block_params`; NVIDIA 2026, arXiv:2604.12374, sec. 2).
"""

from __future__ import annotations

from dataclasses import dataclass

from aisize import checks, models
from aisize.compute import flops_per_token
from aisize.memory.activations import FFN_SAVED_TENSORS, FLASH_STATS_BYTES_PER_HEAD_TOKEN
from aisize.training.dims import ModelDims, check_tensor_parallel, model_dims, resolve

# Recompute adds one forward of the scan with "full" (Korthikanti sec. 5); Megatron's selective
# recompute (core_attn) re-runs the attention only.
SCAN_RECOMPUTE_FORWARDS = {"none": 0.0, "selective": 0.0, "full": 1.0}


def mamba_saved_bytes_per_token(d: ModelDims) -> float:
    """Bytes one Mamba-2 mixer keeps for backward per token, all heads (divide by TP) [B].

    Megatron-LM's ``MambaMixer._ssm_training`` runs mamba_ssm's memory-efficient
    ``mamba_split_conv1d_scan_combined``, which saves the in_proj output z, x, B, C, dt
    (2d + 2GN + H) and the scan output before the z gate (d), and re-runs the convolution and
    the chunk states in backward; the gated RMSNorm after it saves its input (d) and fp32 rstd
    (one per group, 4G B), and out_proj its input (d). 16-bit: 2·(5d + 2GN + H) + 4G bytes
    (d = H·P inner width, G groups, N state, H heads).

    References
    ----------
    .. [1] NVIDIA Megatron-LM ``megatron/core/ssm/mamba_mixer.py`` (``_ssm_training``, ``self.norm``,
       ``out_proj``); state-spaces/mamba ``mamba_ssm/ops/triton/ssd_combined.py``
       (``MambaSplitConv1dScanCombinedFn.forward``: ``ctx.save_for_backward(zxbcdt, ..., out_x, ...)``;
       backward: "Recompute x, B, C"), ``layernorm_gated.py`` (saves x and rstd).
    .. [2] Dao & Gu 2024, arXiv:2405.21060, sec. 6-7 (the block's tensors).
    """
    if not d.mamba_layers:
        return 0.0
    in_proj = 2 * d.mamba_inner + 2 * d.mamba_groups * d.ssm_state + d.mamba_heads
    return 2.0 * (in_proj + 3 * d.mamba_inner) + 4.0 * d.mamba_groups


def model_flops_per_token(d: ModelDims, seq_len, recompute: str = "none", method: str = "full"):
    """Training FLOPs per token [FLOP]: 6N + 12·L_attn·H·Q·s (:func:`aisize.compute.flops_per_token`; 4N for
    ``method="lora"``: a frozen base computes no weight gradients) plus 3 x the Mamba-2 layers' SSD scans
    (one more forward with full recompute)."""
    base = flops_per_token(d.active_params, layers=d.attention_layers, attention_dim=d.attention_dim,
                           seq_len=seq_len, recompute=recompute, method=method)
    if not d.mamba_layers:
        return base
    scans = (3.0 + SCAN_RECOMPUTE_FORWARDS[recompute]) * d.mamba_layers * d.mamba_scan_flops
    return base + scans


@dataclass(frozen=True)
class LayerKind:
    """One block kind of a model in training (per block of that kind)."""

    kind: str  # "attention" | "mamba" | "mlp" | "moe"
    layers: int  # blocks of this kind
    params: float  # weights one block holds (all experts) [count]
    active_params: float  # weights a token passes through [count]
    forward_flops_per_token: float  # [FLOP]
    training_flops_per_token: float  # forward + backward [FLOP]
    activation_bytes_per_token: float  # saved for backward on one GPU at the given TP (SP on) [B]


def layer_kinds(model, *, seq_len, tensor_parallel=1) -> tuple[LayerKind, ...]:
    """Parameters, FLOPs per token and saved activations of one block of each kind (module docstring).

    Parameters
    ----------
    model : catalog id, Transformer record or Hugging Face config mapping
    seq_len : tokens per sequence s (the attention term) [tokens]
    tensor_parallel : TP degree t (with sequence parallelism); must divide the attention heads and,
        on a hybrid, the Mamba-2 heads and groups

    Returns
    -------
    One :class:`LayerKind` per kind the model has. Summed over blocks, with the embeddings and output
    head at 6 FLOPs per weight, the training FLOPs are :func:`model_flops_per_token`'s.
    """
    m = resolve(model)
    d = model_dims(m)
    s = checks.positive("seq_len", seq_len)
    t = int(checks.scalar("tensor_parallel", checks.integer("tensor_parallel", tensor_parallel, high=10**4)))
    check_tensor_parallel(m, t)
    h = d.hidden
    rep = 4.0 * h / t  # norm input + first GEMM input, sequence parallel
    tensors = FFN_SAVED_TENSORS[m.ffn_type]
    out = []
    for b in models.block_params(m):
        fwd = 2.0 * b.active
        if b.kind == "attention":
            fwd += 4.0 * d.attention_dim * s  # PaLM appendix B, as in the MFU
            act = (4.0 * d.q_width + 2.0 * (d.k_width + d.v_width) + FLASH_STATS_BYTES_PER_HEAD_TOKEN * d.heads) / t
        elif b.kind == "mamba":
            fwd += d.mamba_scan_flops
            act = mamba_saved_bytes_per_token(d) / t
        elif b.kind == "mlp":
            act = 2.0 * tensors * m.ffn_hidden / t
        else:  # moe: k routed experts, the shared ones, k routed copies of the token (latent: l wide)
            inner = d.experts_per_token * d.expert_ffn + (m.shared_ffn_hidden or 0)
            act = 2.0 * tensors * inner / t + 2.0 * (d.experts_per_token * d.expert_width + d.moe_latent) / t
        out.append(LayerKind(b.kind, b.layers, b.params, b.active, float(fwd), 3.0 * float(fwd), float(rep + act)))
    return tuple(out)

"""The sizes of a transformer that training work, memory and traffic depend on.

:func:`resolve` turns a catalog id (or an already built record) into a
``Transformer`` record; :func:`model_dims` reduces the record to the plain
numbers the vectorized cores use: per-layer GEMM parameters (active per token
and resident), tensor widths, the vocabulary and the MoE shape. Keeping this in
one place means the step-time, memory and layout cores never read a record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import models

# Mamba-2's SSD chunk in training: Megatron-LM's MambaMixer (chunk_size=128) and Hugging Face's
# NemotronHConfig (chunk_size 128) (Dao & Gu 2024, arXiv:2405.21060, sec. 6).
SSD_CHUNK_TOKENS = 128


def resolve(model):
    """A ``Transformer`` record for anything :func:`aisize.models.resolve` accepts (a catalog id, a
    record, a Hugging Face config mapping, inline fields); errors name ``model``."""
    try:
        return models.resolve(model)
    except ValueError as exc:
        raise ValueError(f"model={model!r} is not allowed: {exc}") from None


@lru_cache(maxsize=256)
def param_count(model):
    """Parameter counts (``.total``, ``.active``, ``.embedding``, ``.head``, ...) of a record (cached)."""
    return models.transformer_params(model)


@dataclass(frozen=True)
class ModelDims:
    """Plain numbers of one transformer [counts; widths in elements]."""

    layers: int
    hidden: int  # h
    heads: int  # a
    kv_heads: int
    q_width: int  # query width a·d_h (MLA: a·(nope + rope))
    k_width: int  # one of K or V per token (kv_heads·d_h; MLA: the up-projected per-head width)
    v_width: int
    attention_dim: int  # H·Q of PaLM's 12·L·H·Q·s attention FLOPs
    ffn_width: float  # MLP inner width a token passes through (MoE: (k + shared) x expert width)
    ffn_gated: bool  # SwiGLU/GeGLU: two input projections
    layer_gemm_params: float  # GEMM weights a token passes through, one layer on average
    layer_resident_params: float  # weights one layer holds, outside routed experts
    layer_expert_params: float  # routed-expert weights one layer holds (all experts), on average
    embed_params: float
    head_params: float  # output projection (a copy of the tied embedding counts here too)
    vocab: int
    experts: int
    experts_per_token: int
    moe_layers: int
    total_params: float
    active_params: float
    norm: str
    rope: bool
    window: int | None = None  # tokens a windowed layer attends to (sliding or chunked)
    window_layers: int = 0
    window_kind: str = "sliding"
    dense_ffn_width: float = 0.0  # MLP width outside the routed experts, averaged over layers (dense + shared)
    shared_ffn_share: float = 0.0  # share of dense_ffn_width that is shared experts (what ``shared_experts`` recomputes)
    expert_ffn: int = 0  # inner width of one routed expert
    expert_params: float = 0.0  # parameters of one routed expert
    mla_up_params: float = 0.0  # MLA up-projections of one layer (q_b, kv_b): what ``mla_up_proj`` recomputes
    mla_latent_width: int = 0  # MLA latents one token keeps (q_lora + kv_lora + rope dims)
    attention_layers: int = 0  # layers with attention (all but the Mamba-2 layers of a hybrid)
    muon_flops_per_param: float = 0.0  # Muon's Newton-Schulz FLOPs per parameter of the layers' matrices
    norms_per_layer: int = 2
    mamba_layers: int = 0  # layers with a Mamba-2 block
    mamba_inner: int = 0  # H·P
    mamba_conv_dim: int = 0  # H·P + 2·G·N (x, B, C through the convolution)
    mamba_heads: int = 0
    mamba_head_dim: int = 0
    ssm_state: int = 0  # N
    mamba_groups: int = 0
    ffn_layers: int = 0  # layers with an MLP or MoE block
    mtp_layers: int = 0  # multi-token-prediction modules (one layer and an output head each)
    mamba_scan_flops: float = 0.0  # forward SSD FLOPs per token of one Mamba-2 layer (chunk SSD_CHUNK_TOKENS)
    moe_latent: int = 0  # LatentMoE: the routed experts' width l (0: they read the hidden width)

    @property
    def expert_width(self) -> int:
        """Width a routed token copy has, in the dispatch and in the experts' GEMMs: the latent l of a
        latent MoE (Nemotron 3 Super: 1024 of 4096), else the hidden width h."""
        return self.moe_latent or self.hidden

    @property
    def attention_share(self) -> float:
        """Share of the layers with attention (1 but for hybrids)."""
        return self.attention_layers / self.layers

    @property
    def mamba_share(self) -> float:
        return self.mamba_layers / self.layers

    @property
    def routed_gemm_params(self) -> float:
        """Routed-expert weights a token passes through, averaged over layers (k x one expert) [count]."""
        return self.moe_layers / self.layers * self.experts_per_token * self.expert_params if self.moe_layers else 0.0

    @property
    def dense_gemm_params(self) -> float:
        """GEMM weights a token passes through outside the routed experts, one layer on average [count]."""
        return self.layer_gemm_params - self.routed_gemm_params

    @property
    def model_layer_params(self) -> float:
        """All weights of one layer (resident + routed experts) [count]."""
        return self.layer_resident_params + self.layer_expert_params

    def attention_keys(self, seq_len):
        """Attention FLOPs per token per unit of H·Q, forward, averaged over the attention layers: 4 x
        the keys a query attends to on average (QK^T and AV, 2 FLOPs each per key and dimension).

        Full causal attention sees s/2 keys on average (2·s·H·Q per token); a sliding window of w
        sees w - w²/(2s) (s >= w); a chunked window (Llama 4) w/2. References: Beltagy et al.
        2020, "Longformer", arXiv:2004.05150 (sliding window); Meta, Llama 4 model card (chunked).
        """
        s = np.asarray(seq_len, dtype=float)
        full = s / 2.0
        if not self.window_layers:
            return 4.0 * full
        w = float(self.window)
        win = np.where(s > w, w - w * w / (2.0 * s) if self.window_kind == "sliding" else w / 2.0, full)
        share = self.window_layers / max(self.attention_layers, 1)
        return 4.0 * ((1.0 - share) * full + share * win)


@lru_cache(maxsize=256)
def model_dims(model) -> ModelDims:
    """The :class:`ModelDims` of a catalog id or record (cached; records are frozen).

    References
    ----------
    .. [1] :func:`aisize.models.transformer_params` (parameter counts).
    .. [2] Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, appendix B (attention dimension).
    """
    m = resolve(model)
    pc = param_count(m)
    L, h = m.layers, m.hidden
    moe = m.experts > 1
    moe_layers = pc.moe_layers
    idle = pc.total - pc.active
    routed = idle * m.experts / (m.experts - m.experts_per_token) if moe and idle else 0.0
    norms = pc.norm
    body = pc.attention + pc.mlp - routed  # resident (non-routed) layer weights, all layers
    active_body = pc.attention + pc.mlp - idle
    if m.attention == "mla":
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q_width, k_width, v_width = m.heads * qk, m.heads * qk, m.heads * m.v_head_dim
    else:
        q_width = m.heads * m.head_dim
        k_width = v_width = m.kv_heads * m.head_dim
    n_ffn = models.ffn_layer_count(m)
    if moe:
        shared = m.shared_ffn_hidden or 0
        ffn = ((n_ffn - moe_layers) * m.ffn_hidden + moe_layers * (m.experts_per_token * m.moe_ffn_hidden + shared)) / L
    else:
        ffn = n_ffn * m.ffn_hidden / L
    head = pc.head if not m.tied_embeddings else m.vocab * h
    shared = (m.shared_ffn_hidden or 0) if moe else 0
    dense_ffn = ((n_ffn - moe_layers) * m.ffn_hidden + moe_layers * shared) / L
    mla_up = mla_latent = 0
    if m.attention == "mla":
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        mla_up = m.kv_lora_rank * m.heads * (m.qk_nope_head_dim + m.v_head_dim) + (
            m.q_lora_rank * m.heads * qk if m.q_lora_rank else 0)
        mla_latent = (m.q_lora_rank or 0) + m.kv_lora_rank + m.qk_rope_head_dim
    muon = _muon_flops_per_param(m, q_width, k_width, v_width, dense_ffn)
    inner = (m.mamba_heads or 0) * (m.mamba_head_dim or 0)
    state, groups = m.ssm_state_size or 0, m.mamba_groups or 0
    return ModelDims(
        layers=L, hidden=h, heads=m.heads, kv_heads=m.kv_heads, q_width=q_width, k_width=k_width,
        v_width=v_width, attention_dim=models.attention_dim(m), ffn_width=float(ffn),
        ffn_gated=m.ffn_type == "swiglu", layer_gemm_params=active_body / L,
        layer_resident_params=(body + norms) / L, layer_expert_params=routed / L,
        embed_params=float(pc.embedding), head_params=float(head), vocab=m.vocab, experts=m.experts,
        experts_per_token=m.experts_per_token, moe_layers=moe_layers, total_params=float(pc.total),
        active_params=float(pc.active), norm=m.norm, rope=m.position == "rope",
        window=m.sliding_window, window_layers=m.sliding_layers, window_kind=m.window_kind,
        dense_ffn_width=float(dense_ffn), shared_ffn_share=moe_layers * shared / (L * dense_ffn) if dense_ffn else 0.0,
        expert_ffn=int(m.moe_ffn_hidden or 0) if moe else 0,
        expert_params=float(pc.routed_expert), mla_up_params=float(mla_up), mla_latent_width=int(mla_latent),
        attention_layers=models.attention_layer_count(m), muon_flops_per_param=muon, norms_per_layer=m.norms_per_layer,
        mamba_layers=m.mamba_layers, mamba_inner=inner, mamba_conv_dim=inner + 2 * groups * state if m.mamba_layers else 0,
        mamba_heads=m.mamba_heads or 0, mamba_head_dim=m.mamba_head_dim or 0, ssm_state=state, mamba_groups=groups,
        ffn_layers=n_ffn, mtp_layers=m.mtp_layers,
        mamba_scan_flops=models.mamba_scan_flops_per_token(m, SSD_CHUNK_TOKENS),
        moe_latent=int(m.moe_latent_size or 0) if moe else 0)



def tensor_parallel_units(m) -> int:
    """What TP must divide: the attention heads, and on a hybrid also the Mamba-2 heads and groups
    (Megatron-LM ``MambaMixer``: "nheads must be evenly divisible by tp_size", "ngroups must be
    evenly divisible by tp_size"; in_proj, conv1d, dt_bias, A_log, D and the gated norm split by
    heads and groups, out_proj by its input rows)."""
    units = m.heads
    if m.mamba_layers:
        units = math.gcd(units, m.mamba_heads, m.mamba_groups)
    return units


def check_tensor_parallel(m, tp: int, cp: int = 1) -> None:
    """Raise a ValueError naming ``tensor_parallel`` when TP does not divide the heads (and, on a
    hybrid, the Mamba-2 heads and groups), or ``context_parallel`` when a hybrid's Mamba-2 heads per
    TP rank do not split over CP."""
    if m.heads % tp:
        raise ValueError(f"tensor_parallel={tp} is not allowed: it must divide the {m.heads} attention heads")
    if m.mamba_layers and (m.mamba_heads % tp or m.mamba_groups % tp):
        raise ValueError(f"tensor_parallel={tp} is not allowed: it must divide the {m.mamba_heads} Mamba-2 heads "
                         f"and the {m.mamba_groups} Mamba-2 groups (Megatron-LM splits both over TP); allowed: "
                         f"the divisors of {tensor_parallel_units(m)}")
    if m.mamba_layers and (m.mamba_heads // tp) % cp:
        raise ValueError(f"context_parallel={cp} is not allowed: with tensor_parallel={tp} it must divide the "
                         f"{m.mamba_heads // tp} Mamba-2 heads per TP rank (Megatron-LM's MambaContextParallel "
                         f"splits the heads over CP: 'nheads must be evenly divisible by tp_size * cp_size')")


# Muon orthogonalizes each weight update with 5 Newton-Schulz iterations X <- aX + (bA + cA²)X,
# A = X Xᵀ: 4m²n + 2m³ FLOPs per iteration for an m x n matrix (m <= n).
MUON_NS_STEPS = 5


def _muon_flops_per_param(m, q_width, k_width, v_width, dense_ffn) -> float:
    """Newton-Schulz FLOPs per parameter, averaged over one layer's matrices (Muon).

    References
    ----------
    .. [1] Jordan et al. 2024, "Muon: An optimizer for hidden layers" (5 Newton-Schulz steps);
       Liu et al. 2025, arXiv:2502.16982, sec. 2 and 3 (distributed Muon, under 1 % overhead).
    """
    h = m.hidden
    shapes = [(h, q_width), (h, k_width), (h, v_width), (q_width, h)]
    if dense_ffn:
        shapes += [(h, dense_ffn)] * (3 if m.ffn_type == "swiglu" else 2)
    if m.experts > 1:
        width = models.expert_width(m)  # a latent MoE's experts are l x f_e, plus its two h x l projections
        shapes += [(width, m.moe_ffn_hidden)] * ((3 if m.ffn_type == "swiglu" else 2) * m.experts)
        shapes += [(h, m.moe_latent_size)] * (2 if m.moe_latent_size else 0)
    work = sum(MUON_NS_STEPS * (4.0 * min(a, b) ** 2 * max(a, b) + 2.0 * min(a, b) ** 3) for a, b in shapes)
    return work / sum(a * b for a, b in shapes)

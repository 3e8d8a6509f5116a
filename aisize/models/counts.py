"""Parameter counts of a transformer from the fields of its :class:`~aisize.catalog.Transformer` record.

Counting rules (h hidden, L layers, a heads, k KV heads, d head dim, f MLP inner
size, V vocabulary, E routed experts, f_e one expert's inner size, f_s the shared
experts' inner size together):

- attention (MHA/GQA/MQA): q and o are h x a*d, k and v are h x k*d [1, 2]; biases
  on q, k, v (a*d + 2*k*d) and o (h) as ``attention_bias`` says (Qwen2: q, k, v
  only; GPT-2, gpt-oss: all four); ``qk_norm`` adds RMSNorm weights of d on q and on k
  (Qwen3, Gemma 3); ``attention_sinks`` one logit per head (gpt-oss [7]);
- attention (MLA, DeepSeek-V2/V3 [5]): q_a h x q_lora, q_b q_lora x a*(d_nope + d_rope)
  (or one h x a*(d_nope + d_rope) without q_lora), kv_a h x (kv_lora + d_rope),
  kv_b kv_lora x a*(d_nope + d_v), o a*d_v x h, plus RMSNorm weights on the q_lora
  and kv_lora latents;
- MLP: GELU/ReLU 2 matrices (2 h f), gated SwiGLU/GeGLU 3 (3 h f) [3]; biases
  f + h (2 f + h gated) when ``bias``;
- MoE layers [4, 5]: E routed experts of size f_e, the router E x h (+ E biases when
  ``router_bias``), the shared experts as one MLP of size f_s (+ an h-weight gate,
  Qwen2-MoE); the ``dense_layers`` other layers keep a dense MLP of size f;
- latent MoE (Nemotron 3 Super [9]): with ``moe_latent_size`` l the routed experts read and
  write a latent of width l, so each is an MLP of width l (2 l f_e for squared ReLU) and the
  layer adds fc1_latent_proj h x l before the experts and fc2_latent_proj l x h after them;
  the router and the shared experts still read the hidden width h;
- norms: LayerNorm 2h (weight + bias), RMSNorm h; ``norms_per_layer`` per layer (2;
  Gemma 2/3: 4; Nemotron-H's single-block layers: 1), one final (decoders) or one on the
  embeddings (BERT) [1, 6];
- hybrid models [8]: ``attention_layers`` layers hold attention, ``mamba_layers`` a Mamba-2
  block, ``ffn_layers`` an MLP or MoE block. A Mamba-2 block with H heads of width P (inner
  width d = H·P), G groups and state N has in_proj h x (2d + 2GN + H) (gate z, x, B, C and
  the step dt), a depthwise convolution of width K over x, B, C ((d + 2GN)(K + 1) with its
  bias), dt_bias, A_log and D (3H), a gated RMSNorm of d and out_proj d x h;
- embeddings: V x h tokens, ``max_seq`` x h learned positions, a V x h output head
  unless ``tied_embeddings``; BERT adds 2 x h token-type embeddings and an h x h + h
  pooler [6].

Active parameters. ``active`` is every parameter a token passes through: all but the
routed experts it skips, the embedding table included, as Meta (Llama 4: 17 B), Mistral
(Mixtral: 12.9 B) and DeepSeek (V3: 37 B) count. OpenAI's gpt-oss card counts the
unembedding but not the embedding (gpt-oss-120b: 5.1 B); ``active_excl_embedding``
gives that figure. The two differ only for untied embeddings and learned positions.

Not counted (each below 0.001 % of the total): OPT's two extra position rows, BLOOM's
embedding LayerNorm and DeepSeek-V3's multi-token-prediction module (14 B, used in
training only; the 671 B headline excludes it [5]). Rotary ``inv_freq`` buffers are not
parameters. Vision encoders of multimodal checkpoints are not part of the record.

References
----------
.. [1] Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2), Sec. 2.3;
       Brown et al. 2020, arXiv:2005.14165, Table 2.1 (GPT-3).
.. [2] Touvron et al. 2023, "Llama 2", arXiv:2307.09288, Sec. 2.2 (GQA); Ainslie et al. 2023,
       arXiv:2305.13245 (GQA).
.. [3] Shazeer 2020, "GLU Variants Improve Transformer", arXiv:2002.05202, Eq. 6 (SwiGLU, GeGLU FFN).
.. [4] Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, Sec. 2 (46.7 B total, 12.9 B active).
.. [5] DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, Sec. 2.1 (MLA, MoE) and
       4.2 (671 B total, 37 B activated, MTP excluded).
.. [6] Devlin et al. 2019, "BERT", arXiv:1810.04805, Sec. 3; HF ``modeling_bert.py`` (pooler).
.. [7] OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", Table 1 and Sec. 2.1 (116.8 B total,
       5.1 B active: "we count the unembedding parameters as active, but not the embeddings").
.. [8] Dao & Gu 2024, "Transformers are SSMs" (Mamba-2), arXiv:2405.21060, sec. 7; NVIDIA 2025,
       "Nemotron-H", arXiv:2504.03624, sec. 2; Hugging Face ``modeling_nemotron_h.py``
       (``NemotronHMamba2Mixer``: in_proj, conv1d, dt_bias, A_log, D, gated norm, out_proj).
.. [9] NVIDIA 2026, "Nemotron 3 Super: Open, Efficient Mixture-of-Experts Hybrid Mamba-Transformer
       Model for Agentic Reasoning", arXiv:2604.12374, sec. 2 (LatentMoE; 120.6 B total, 12.7 B
       active); config.json of nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 (``moe_latent_size``
       1024); Megatron-LM ``MoELayer`` and Hugging Face ``NemotronHMoE`` (router and shared expert
       on the hidden states, ``fc1_latent_proj`` / ``fc2_latent_proj`` around the routed experts).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from aisize import checks
from aisize.catalog.records import Transformer

__all__ = ["ParamCount", "GATED_FFN", "validate", "transformer_params", "active_params", "attention_dim",
           "moe_layers", "attention_layer_count", "ffn_layer_count", "mamba_block_params", "BlockParams",
           "block_params", "mamba_scan_flops_per_token", "expert_width", "latent_projection_params"]

BERT_TOKEN_TYPES = 2  # BERT's segment A/B embeddings [6]
FFN_TYPES = ("gelu", "relu", "swiglu", "geglu")
GATED_FFN = ("swiglu", "geglu")  # three matrices: gate, up, down [3]
ATTENTION_BIAS = ("none", "qkv", "qkvo")
MAX_DIM = 10**7  # no published width, vocabulary or window comes near; larger is a typo


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts of a transformer by component [count].

    ``embedding`` holds token, position and token-type embeddings; ``head`` the untied
    output projection and BERT's pooler; ``attention`` the attention blocks and the Mamba-2
    blocks of a hybrid (the mixers); ``mlp`` dense MLPs, experts, routers and shared
    experts; ``norm`` every LayerNorm/RMSNorm weight (and bias). ``total`` is their sum.
    ``active`` counts only the routed experts a token uses (the embedding table included);
    ``active_excl_embedding`` leaves out the input embeddings (OpenAI's convention).
    ``routed_expert`` is one routed expert's parameters and ``moe_layers`` the layers that
    hold routed experts (both 0 for a dense model).
    """

    embedding: int
    attention: int
    mlp: int
    norm: int
    head: int
    total: int
    active: int
    active_excl_embedding: int
    routed_expert: int
    moe_layers: int


def validate(arch) -> None:
    """Check a Transformer record's fields; a ValueError names the field, value and allowed range."""
    checks.integer("layers", arch.layers, high=10**5)
    checks.integer("hidden", arch.hidden, high=MAX_DIM)
    checks.integer("heads", arch.heads, high=10**5)
    checks.integer("kv_heads", arch.kv_heads, high=arch.heads)
    if arch.attention != "mla" and arch.heads % arch.kv_heads:
        raise ValueError(f"kv_heads={arch.kv_heads!r} is not allowed: heads={arch.heads} must be a "
                         f"multiple of kv_heads (each KV head serves a whole group of query heads)")
    checks.integer("head_dim", arch.head_dim, high=10**5)
    checks.integer("ffn_hidden", arch.ffn_hidden, high=MAX_DIM)
    checks.integer("vocab", arch.vocab, high=MAX_DIM)
    checks.integer("max_seq", arch.max_seq, high=10**9)
    checks.integer("experts", arch.experts, high=10**5)
    checks.integer("experts_per_token", arch.experts_per_token, high=arch.experts)
    checks.integer("shared_experts", arch.shared_experts, low=0, high=10**3)
    checks.integer("dense_layers", arch.dense_layers, low=0, high=arch.layers)
    checks.integer("norms_per_layer", arch.norms_per_layer, high=8)
    checks.choice("ffn_type", arch.ffn_type, FFN_TYPES)
    checks.choice("norm", arch.norm, ("layernorm", "rmsnorm"))
    checks.choice("position", arch.position, ("learned", "rope", "alibi", "none"))
    checks.choice("attention", arch.attention, ("mha", "gqa", "mqa", "mla"))
    checks.choice("window_kind", arch.window_kind, ("sliding", "chunked"))
    if arch.attention_bias is not None:
        checks.choice("attention_bias", arch.attention_bias, ATTENTION_BIAS)
    if arch.experts > 1:
        checks.integer("moe_ffn_hidden", arch.moe_ffn_hidden, high=MAX_DIM)
    if arch.shared_experts:
        checks.integer("shared_ffn_hidden", arch.shared_ffn_hidden, high=MAX_DIM)
    checks.integer("sliding_layers", arch.sliding_layers, low=0, high=arch.layers)
    if arch.sliding_layers:
        checks.integer("sliding_window", arch.sliding_window, high=10**9)
    checks.integer("mamba_layers", arch.mamba_layers, low=0, high=arch.layers)
    if arch.attention_layers is not None:
        checks.integer("attention_layers", arch.attention_layers, low=0, high=arch.layers)
    if arch.ffn_layers is not None:
        checks.integer("ffn_layers", arch.ffn_layers, low=0, high=arch.layers)
    if attention_layer_count(arch) + arch.mamba_layers > arch.layers and arch.attention_layers is not None:
        raise ValueError(f"attention_layers={arch.attention_layers} + mamba_layers={arch.mamba_layers} is not "
                         f"allowed: more mixers than the {arch.layers} layers")
    if arch.experts > 1 and arch.layers - arch.dense_layers > ffn_layer_count(arch):
        raise ValueError(f"dense_layers={arch.dense_layers} is not allowed: it leaves more MoE layers than the "
                         f"{ffn_layer_count(arch)} layers with an FFN block (ffn_layers)")
    if arch.mamba_layers:
        for name in ("mamba_heads", "mamba_head_dim", "ssm_state_size", "mamba_groups"):
            checks.integer(name, getattr(arch, name), high=10**6)
        checks.integer("mamba_conv_kernel", arch.mamba_conv_kernel, high=64)
        if arch.mamba_heads % arch.mamba_groups:
            raise ValueError(f"mamba_groups={arch.mamba_groups} is not allowed: it must divide mamba_heads="
                             f"{arch.mamba_heads}")
    checks.integer("mtp_layers", arch.mtp_layers, low=0, high=64)
    if arch.moe_latent_size is not None:
        if arch.experts <= 1:
            raise ValueError(f"moe_latent_size={arch.moe_latent_size!r} is not allowed on a dense model "
                             f"(experts={arch.experts}): the latent is the routed experts' width")
        checks.integer("moe_latent_size", arch.moe_latent_size, high=arch.hidden)
    if arch.attention == "mla":
        for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            checks.integer(name, getattr(arch, name), high=10**5)
        if arch.q_lora_rank is not None:
            checks.integer("q_lora_rank", arch.q_lora_rank, high=10**5)


def moe_layers(arch) -> int:
    """Layers holding routed experts: all but the dense ones in an MoE model, else 0."""
    return arch.layers - arch.dense_layers if arch.experts > 1 else 0


def expert_width(arch) -> int:
    """Width the routed experts read and write: the latent of a latent MoE [9], else hidden."""
    return arch.moe_latent_size or arch.hidden


def latent_projection_params(arch) -> int:
    """fc1_latent_proj (h x l) and fc2_latent_proj (l x h) of one latent-MoE layer, with their biases when
    ``bias`` (Megatron-LM gives them the experts' ``add_bias_linear``) [9]; 0 without a latent."""
    l = arch.moe_latent_size
    if not l:
        return 0
    return 2 * arch.hidden * l + ((l + arch.hidden) if arch.bias else 0)


def attention_layer_count(arch) -> int:
    """Layers with self-attention: ``attention_layers``, else all but the Mamba-2 layers."""
    return arch.attention_layers if arch.attention_layers is not None else arch.layers - arch.mamba_layers


def ffn_layer_count(arch) -> int:
    """Layers with an MLP or MoE block: ``ffn_layers``, else all."""
    return arch.ffn_layers if arch.ffn_layers is not None else arch.layers


def mamba_block_params(arch) -> int:
    """Parameters of one Mamba-2 block (module docstring, [8]); 0 without Mamba-2 layers."""
    if not arch.mamba_layers:
        return 0
    h, heads, groups, state = arch.hidden, arch.mamba_heads, arch.mamba_groups, arch.ssm_state_size
    inner = heads * arch.mamba_head_dim
    conv = inner + 2 * groups * state
    return h * (inner + conv + heads) + conv * (arch.mamba_conv_kernel + 1) + 3 * heads + inner + inner * h


def mamba_scan_flops_per_token(arch, chunk_tokens: int) -> float:
    """Forward FLOPs per token of one Mamba-2 layer's SSD scan, outside its in_proj, convolution and
    out_proj (those count with the parameters) [FLOP]; 0 without Mamba-2 layers.

    SSD splits the sequence into chunks of Q tokens [8, sec. 6]: per token, C·Bᵀ within its chunk
    2·Q·N·G, that matrix times x 2·Q·P·H, the chunk state Bᵀx and its read-out C·state 4·N·P·H
    (H heads of width P, G groups, state N). Megatron-LM's MambaMixer and Hugging Face's
    NemotronHConfig use Q = 128; the reference kernels' default is 256.
    """
    if not arch.mamba_layers:
        return 0.0
    q = checks.integer("chunk_tokens", chunk_tokens, high=10**6)
    n, g, heads, p = arch.ssm_state_size, arch.mamba_groups, arch.mamba_heads, arch.mamba_head_dim
    return 2.0 * q * n * g + 2.0 * q * p * heads + 4.0 * n * p * heads


@dataclass(frozen=True)
class BlockParams:
    """Parameters of one layer kind: ``layers`` blocks of that kind, ``params`` weights each (norms
    included), ``active`` the weights one token passes through (MoE: k routed experts) [count]."""

    kind: str  # "attention" | "mamba" | "mlp" (dense) | "moe"
    layers: int
    params: float
    active: float


def block_params(arch) -> tuple[BlockParams, ...]:
    """Parameters by layer kind (the kinds the model has, in the order attention, mamba, mlp, moe).

    Each block takes its share of the per-layer norms (``norms_per_layer`` x layers / blocks: one
    per block in a transformer's two-block layer and in Nemotron-H's one-block layers); the
    attention blocks also hold their own norms (q/k norms, MLA's latent norms). Summed with the
    embeddings, the output head and the final norm, the blocks give ``transformer_params(arch).total``.
    """
    pc = transformer_params(arch)
    h, L = arch.hidden, arch.layers
    n_attn, n_mamba, n_ffn, n_moe = attention_layer_count(arch), arch.mamba_layers, ffn_layer_count(arch), pc.moe_layers
    blocks = n_attn + n_mamba + n_ffn
    norm = L * arch.norms_per_layer * _norm_size(arch, h) / blocks if blocks else 0.0
    attn_weights, attn_norms = _attention(arch)
    expert = pc.routed_expert
    per_moe = (pc.mlp - (n_ffn - n_moe) * _mlp(arch, arch.ffn_hidden)) / n_moe if n_moe else 0.0
    idle = (arch.experts - arch.experts_per_token) * expert
    rows = [("attention", n_attn, attn_weights + attn_norms + norm, 0.0),
            ("mamba", n_mamba, mamba_block_params(arch) + norm, 0.0),
            ("mlp", n_ffn - n_moe, _mlp(arch, arch.ffn_hidden) + norm, 0.0),
            ("moe", n_moe, per_moe + norm, idle)]
    return tuple(BlockParams(k, n, float(p), float(p - skip)) for k, n, p, skip in rows if n)


def _norm_size(arch, width: int) -> int:
    return 2 * width if arch.norm == "layernorm" else width


def _attention_bias(arch) -> str:
    return arch.attention_bias or ("qkvo" if arch.bias else "none")


def _attention(arch) -> tuple[int, int]:
    """(weights, norm weights) of one attention block."""
    h, a, bias = arch.hidden, arch.heads, _attention_bias(arch)
    sinks = a if arch.attention_sinks else 0
    if arch.attention == "mla":
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        kv_a = arch.kv_lora_rank + arch.qk_rope_head_dim
        if arch.q_lora_rank is None:
            q, q_norm, q_bias = h * a * qk, 0, 0
        else:
            q, q_norm, q_bias = h * arch.q_lora_rank + arch.q_lora_rank * a * qk, arch.q_lora_rank, arch.q_lora_rank
        kv = h * kv_a + arch.kv_lora_rank * a * (arch.qk_nope_head_dim + arch.v_head_dim)
        o = a * arch.v_head_dim * h
        # HF DeepseekV3Attention: attention_bias on q_a, kv_a and o only
        biases = (q_bias + kv_a + (h if bias == "qkvo" else 0)) if bias != "none" else 0
        return q + kv + o + biases + sinks, q_norm + arch.kv_lora_rank
    q_width, kv_width = a * arch.head_dim, arch.kv_heads * arch.head_dim
    weights = 2 * h * q_width + 2 * h * kv_width
    biases = {"none": 0, "qkv": q_width + 2 * kv_width, "qkvo": q_width + 2 * kv_width + h}[bias]
    qk_norm = 2 * arch.head_dim if arch.qk_norm else 0
    return weights + biases + sinks, qk_norm


def _mlp(arch, inner: int, width: int | None = None) -> int:
    """One dense MLP (or one expert) of inner size ``inner`` reading and writing ``width`` (default hidden)."""
    h = width or arch.hidden
    if arch.ffn_type in GATED_FFN:
        return 3 * h * inner + ((2 * inner + h) if arch.bias else 0)
    return 2 * h * inner + ((inner + h) if arch.bias else 0)


@lru_cache(maxsize=512)
def transformer_params(arch: Transformer) -> ParamCount:
    """Parameters of a transformer from its architecture fields [count] (cached: records are frozen).

    Parameters
    ----------
    arch : a :class:`~aisize.catalog.Transformer` record.

    Returns
    -------
    ParamCount with the breakdown, total and both active counts.

    References
    ----------
    See the module docstring: GPT-2/3 [1], Llama 2 [2], SwiGLU [3], Mixtral [4],
    DeepSeek-V3 [5], BERT [6], gpt-oss [7]. Llama-2-7B gives 6,738,415,616, the tensor
    count of meta-llama/Llama-2-7b-hf; Qwen2.5-7B 7,615,616,512, its safetensors count.
    """
    validate(arch)
    h, L = arch.hidden, arch.layers
    embedding = arch.vocab * h
    if arch.position == "learned":
        embedding += arch.max_seq * h
    if arch.encoder_only:
        embedding += BERT_TOKEN_TYPES * h
    head = 0 if arch.tied_embeddings else arch.vocab * h
    if arch.encoder_only:
        head += h * h + h  # pooler dense + tanh

    attn_weights, attn_norms = _attention(arch)
    n_attn = attention_layer_count(arch)
    attention = n_attn * attn_weights + arch.mamba_layers * mamba_block_params(arch)
    norm = L * arch.norms_per_layer * _norm_size(arch, h) + n_attn * attn_norms + _norm_size(arch, h)

    n_moe = moe_layers(arch)
    expert = _mlp(arch, arch.moe_ffn_hidden, expert_width(arch)) if n_moe else 0
    per_moe = arch.experts * expert + arch.experts * h + (arch.experts if arch.router_bias else 0)
    per_moe += latent_projection_params(arch) if n_moe else 0
    if arch.shared_experts:
        per_moe += _mlp(arch, arch.shared_ffn_hidden) + (h if arch.shared_expert_gate else 0)
    mlp = (ffn_layer_count(arch) - n_moe) * _mlp(arch, arch.ffn_hidden) + n_moe * per_moe
    idle = n_moe * (arch.experts - arch.experts_per_token) * expert
    total = embedding + attention + mlp + norm + head
    active = total - idle
    # OpenAI's convention: the unembedding counts, the input embeddings do not (a tied
    # table is the unembedding, so it stays)
    input_embedding = embedding - (arch.vocab * h if arch.tied_embeddings else 0)
    return ParamCount(embedding=embedding, attention=attention, mlp=mlp, norm=norm, head=head, total=total,
                      active=active, active_excl_embedding=active - input_embedding, routed_expert=expert,
                      moe_layers=n_moe)


def active_params(arch: Transformer) -> int:
    """Parameters one token passes through [count]: all but the routed experts it skips.

    References
    ----------
    Jiang et al. 2024 (Mixtral, 12.9 B of 46.7 B); DeepSeek-V3 report Sec. 4.2 (37 B of 671 B).
    """
    return transformer_params(arch).active


def attention_dim(arch: Transformer) -> int:
    """H·Q of PaLM's attention FLOPs (12·L·H·Q·s per token): heads x head dimension.

    MLA (DeepSeek) scores queries and keys at qk_nope + qk_rope dims per head and
    mixes values at v_head_dim, so its width is the mean of the two times heads.

    References
    ----------
    .. [1] Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, appendix B.
    .. [2] DeepSeek-AI 2024, DeepSeek-V3 technical report, arXiv:2412.19437, sec. 2.1.1.
    """
    if arch.attention == "mla":
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        return arch.heads * (qk + arch.v_head_dim) // 2
    return arch.heads * arch.head_dim

"""Inference memory per GPU: weights at their precision, KV cache, workspace, and what fits.

KV cache per token = 2 (K and V) · L · k_v · d_h · bytes; MLA (DeepSeek-V2/V3)
caches one compressed latent of kv_lora_rank + qk_rope_head_dim elements per
layer (576 for DeepSeek-V3). Tensor parallelism splits KV heads over
min(t, k_v) GPUs (beyond k_v the heads are replicated); the MLA latent is
replicated on every TP rank. Paged caches (vLLM) allocate whole blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from aisize import checks
from aisize.memory.states import tidy
from aisize.memory.overheads import CUDA_CONTEXT_BYTES
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element

# vLLM defaults (docs, EngineArgs): gpu_memory_utilization 0.9 of HBM is the
# budget; block_size 16 tokens; max_num_batched_tokens 8192 for a prefill chunk.
SERVING_MEMORY_UTILIZATION = 0.9
PAGED_BLOCK_TOKENS = 16
MAX_BATCHED_TOKENS = 8192
LOGITS_BYTES = 4.0  # fp32 logits of the sampled positions


@dataclass(frozen=True)
class InferenceMemory:
    """Per-GPU inference memory [B]."""

    weights_bytes: float
    kv_cache_bytes: float
    activation_workspace_bytes: float  # transient forward pass of one prefill chunk + logits
    cuda_context_bytes: float

    def __post_init__(self):
        tidy(self)

    @property
    def total_bytes(self):
        return self.weights_bytes + self.kv_cache_bytes + self.activation_workspace_bytes + self.cuda_context_bytes

    def as_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {"total_bytes": self.total_bytes}


@dataclass(frozen=True)
class KvCapacity:
    """What the KV budget of one GPU holds."""

    kv_budget_bytes: float
    tokens: float  # concurrent cached tokens
    sequences: float  # concurrent sequences of the given length (whole blocks)

    def __post_init__(self):
        tidy(self)


def weight_bytes(params, dtype: str = "bf16", *, tp=1):
    """Weights per GPU at a storage dtype, block scales included [B].

    Parameters
    ----------
    params : parameters [count]; dtype : a key of ``aisize.precision.BITS_PER_ELEMENT``
    tp : GPUs the weights are split over (tensor x pipeline parallel) [count]

    References
    ----------
    .. [1] OCP MX spec v1.0 (MXFP4 4.25 bit); NVIDIA NVFP4 (4.5 bit); GPTQ/AWQ group-128.
    """
    n = checks.positive("params", params)
    t = checks.integer("tp", tp, high=10**4)
    return n * bytes_per_element(dtype) / t


def kv_bytes_per_token(layers, kv_heads, head_dim, kv_dtype: str = "fp16", *, tp=1):
    """KV-cache bytes per token per GPU: 2·L·k_v·d_h·bytes / min(t, k_v) [B].

    Parameters
    ----------
    layers : L; kv_heads : k_v (= heads for MHA, 1 for MQA); head_dim : d_h
    kv_dtype : cache dtype (fp16, bf16, fp8, ...); tp : tensor-parallel degree

    References
    ----------
    .. [1] Kwon et al. 2023, "vLLM / PagedAttention", arXiv:2309.06180, sec. 3
       (OPT-13B: 2 x 5120 x 40 x 2 B = 800 KB per token).
    .. [2] Ainslie et al. 2023, "GQA", arXiv:2305.13245; Shazeer 2019, "MQA", arXiv:1911.02150.
    """
    L = checks.integer("layers", layers, high=10**5)
    k = checks.integer("kv_heads", kv_heads, high=10**5)
    d = checks.integer("head_dim", head_dim, high=10**5)
    t = checks.integer("tp", tp, high=10**4)
    return 2.0 * L * k * d * bytes_per_element(kv_dtype, name="kv_dtype") / np.minimum(t, k)


def mla_kv_bytes_per_token(layers, kv_lora_rank, qk_rope_head_dim, kv_dtype: str = "bf16"):
    """MLA cache bytes per token per GPU: L·(kv_lora_rank + qk_rope_head_dim)·bytes [B].

    Replicated on each TP rank. DeepSeek-V3: 512 + 64 = 576 elements per layer.

    References
    ----------
    .. [1] DeepSeek-AI 2024, "DeepSeek-V2", arXiv:2405.04434, sec. 2.1.2-2.1.3, Table 1.
    """
    L = checks.integer("layers", layers, high=10**5)
    r = checks.integer("kv_lora_rank", kv_lora_rank, high=10**6)
    rope = checks.integer("qk_rope_head_dim", qk_rope_head_dim, high=10**6)
    return L * (r + rope) * bytes_per_element(kv_dtype, name="kv_dtype")


def paged_tokens(seq_len, block_tokens=PAGED_BLOCK_TOKENS):
    """Tokens a paged cache allocates for a sequence: whole blocks [tokens].

    References
    ----------
    .. [1] Kwon et al. 2023, arXiv:2309.06180, sec. 4.1 (KV blocks).
    """
    s = checks.positive("seq_len", seq_len)
    blk = checks.integer("block_tokens", block_tokens, high=10**6)
    return np.ceil(s / blk) * blk


def transformer_kv_bytes_per_token(model, kv_dtype: str = "bf16", *, tp=1):
    """KV bytes per token per GPU of a catalog Transformer (MLA-aware) [B]."""
    if model.attention == "mla":
        return mla_kv_bytes_per_token(model.layers, model.kv_lora_rank, model.qk_rope_head_dim, kv_dtype)
    return kv_bytes_per_token(model.layers, model.kv_heads, model.head_dim, kv_dtype, tp=tp)


def inference_memory(*, params, kv_bytes_per_token_per_gpu, hidden, ffn_hidden, vocab, seq_len, batch,
                     weight_dtype="bf16", tp=1, block_tokens=PAGED_BLOCK_TOKENS,
                     max_batched_tokens=MAX_BATCHED_TOKENS) -> InferenceMemory:
    """Per-GPU inference memory for ``batch`` sequences of ``seq_len`` tokens.

    Parameters
    ----------
    params : all parameters (MoE: every expert) [count]
    kv_bytes_per_token_per_gpu : from :func:`kv_bytes_per_token` [B]
    hidden, ffn_hidden, vocab : h, f, V; seq_len : s (prompt + output) [tokens]; batch : sequences
    weight_dtype : storage dtype of the weights; tp : GPUs the model is split over
    block_tokens : paged-cache block size; max_batched_tokens : prefill chunk [tokens]

    Returns
    -------
    :class:`InferenceMemory`. Workspace rule: the largest live set of one chunk's
    forward pass, tokens x (2h + 2f/t) x 2 B (residual, norm output, MLP inner),
    plus fp32 logits of one position per sequence (batch x V/t x 4 B).

    References
    ----------
    .. [1] Kwon et al. 2023, arXiv:2309.06180; vLLM EngineArgs docs (defaults).
    """
    checks.choice("weight_dtype", weight_dtype, BITS_PER_ELEMENT)
    t = checks.integer("tp", tp, high=10**4)
    kv_tok = checks.positive("kv_bytes_per_token_per_gpu", kv_bytes_per_token_per_gpu)
    h = checks.positive("hidden", hidden)
    f = checks.positive("ffn_hidden", ffn_hidden)
    V = checks.positive("vocab", vocab)
    b = checks.integer("batch", batch, high=10**9)
    chunk = checks.integer("max_batched_tokens", max_batched_tokens, high=10**9)
    s = paged_tokens(seq_len, block_tokens)
    work = np.minimum(chunk, b * s) * (2.0 * h + 2.0 * f / t) * 2.0 + b * V / t * LOGITS_BYTES
    return InferenceMemory(weight_bytes(params, weight_dtype, tp=t), kv_tok * s * b, work, CUDA_CONTEXT_BYTES)


def kv_capacity(capacity_bytes, *, memory: InferenceMemory, kv_bytes_per_token_per_gpu, seq_len,
                utilization=SERVING_MEMORY_UTILIZATION, block_tokens=PAGED_BLOCK_TOKENS) -> KvCapacity:
    """Concurrent tokens and sequences the KV budget holds on one GPU.

    Budget = capacity x utilization (the serving framework's reservation) minus
    weights, workspace and context of ``memory`` (its kv_cache_bytes are ignored).

    Parameters
    ----------
    capacity_bytes : GPU memory [B]; utilization : share the server may use, (0, 1]
    memory : an :class:`InferenceMemory`; kv_bytes_per_token_per_gpu : [B]
    seq_len : tokens per sequence; block_tokens : paged block size

    References
    ----------
    .. [1] vLLM docs, ``gpu_memory_utilization`` (default 0.9); Kwon et al. 2023, sec. 4.
    """
    cap = checks.positive("capacity_bytes", capacity_bytes)
    u = checks.fraction("utilization", utilization)
    kv_tok = checks.positive("kv_bytes_per_token_per_gpu", kv_bytes_per_token_per_gpu)
    budget = cap * u - (memory.total_bytes - memory.kv_cache_bytes)
    budget = np.maximum(budget, 0.0)
    tokens = np.floor(budget / kv_tok)
    per_seq = paged_tokens(seq_len, block_tokens)
    sequences = np.floor(np.floor(tokens / block_tokens) * block_tokens / per_seq)
    return KvCapacity(budget, tokens, sequences)

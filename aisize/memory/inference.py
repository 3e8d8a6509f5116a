"""Inference memory per GPU: weights at their precision, KV cache, workspace, and what fits.

KV-cache sizes come from :mod:`aisize.models.kv_cache` (GQA, MLA, sliding windows);
they are re-exported here under their earlier names (``kv_bytes_per_token`` for the
per-layer-shape formula, ``transformer_kv_bytes_per_token`` for a model). Paged caches
(vLLM) allocate whole blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from aisize import checks
from aisize.memory.states import tidy
from aisize.memory.overheads import CUDA_CONTEXT_BYTES
from aisize.models.kv_cache import gqa_kv_bytes_per_token as kv_bytes_per_token
from aisize.models.kv_cache import kv_bytes_per_token as transformer_kv_bytes_per_token
from aisize.models.kv_cache import mla_kv_bytes_per_token
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element

__all__ = ["InferenceMemory", "KvCapacity", "weight_bytes", "kv_bytes_per_token", "mla_kv_bytes_per_token",
           "transformer_kv_bytes_per_token", "paged_tokens", "inference_memory", "kv_capacity"]

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


def paged_tokens(seq_len, block_tokens=PAGED_BLOCK_TOKENS):
    """Tokens a paged cache allocates for a sequence: whole blocks [tokens].

    References
    ----------
    .. [1] Kwon et al. 2023, arXiv:2309.06180, sec. 4.1 (KV blocks).
    """
    s = checks.positive("seq_len", seq_len)
    blk = checks.integer("block_tokens", block_tokens, high=10**6)
    return np.ceil(s / blk) * blk


def inference_memory(*, params, kv_bytes_per_token_per_gpu, hidden, ffn_hidden, vocab, seq_len, batch,
                     weight_dtype="bf16", tp=1, block_tokens=PAGED_BLOCK_TOKENS,
                     max_batched_tokens=MAX_BATCHED_TOKENS) -> InferenceMemory:
    """Per-GPU inference memory for ``batch`` sequences of ``seq_len`` tokens.

    Parameters
    ----------
    params : all parameters (MoE: every expert) [count]
    kv_bytes_per_token_per_gpu : from :func:`aisize.models.kv_bytes_per_token` [B]
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

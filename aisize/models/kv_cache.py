"""KV-cache size of a transformer: per token and per sequence, per GPU.

A full-attention layer caches K and V for every token of the context: 2·k_v·d_h
elements per token (GQA/MQA/MHA) [1, 2]. MLA (DeepSeek-V2/V3) caches one compressed
latent of kv_lora_rank + qk_rope_head_dim elements per token (576 for DeepSeek-V3),
replicated on every tensor-parallel rank [3]. Tensor parallelism splits KV heads over
min(t, k_v) GPUs; beyond k_v the heads are replicated. A sliding-window layer keeps only
its last W tokens (Mistral, Gemma 2/3, gpt-oss [4]); a chunked-attention layer (Llama 4
[5]) attends within its chunk of W tokens, so it never holds more than W: both stop
growing at W. Per sequence of c tokens:

    bytes = per-layer bytes per token x (full layers x c + windowed layers x min(c, W))

Only attention layers cache K and V. The Mamba-2 layers of a hybrid (Nemotron-H, Nemotron 3)
keep a fixed state per sequence instead, whatever its length [6]: the convolution's last K - 1
inputs (x, B and C: (K - 1)(H·P + 2·G·N) elements) and the SSM state (H·P·N elements, fp32 in
Hugging Face's and vLLM's caches), split over TP by heads (:func:`ssm_state_bytes_per_sequence`).

References
----------
.. [1] Kwon et al. 2023, "vLLM / PagedAttention", arXiv:2309.06180, sec. 3
       (OPT-13B: 2 x 5120 x 40 x 2 B = 800 KB per token).
.. [2] Ainslie et al. 2023, "GQA", arXiv:2305.13245; Shazeer 2019, "MQA", arXiv:1911.02150.
.. [3] DeepSeek-AI 2024, "DeepSeek-V2", arXiv:2405.04434, sec. 2.1.2-2.1.3, Table 1.
.. [4] Jiang et al. 2023, "Mistral 7B", arXiv:2310.06825, sec. 2 (rolling buffer cache of W tokens);
       Gemma Team 2025, "Gemma 3 Technical Report", arXiv:2503.19786, sec. 2 (5 local : 1 global,
       window 1024); OpenAI 2025, gpt-oss model card, sec. 2.1 (alternating 128-token banded layers).
.. [5] Hugging Face ``configuration_llama4.py`` (attention_chunk_size 8192 on the RoPE layers,
       every 4th layer global without RoPE) and ``modeling_llama4.py``.
.. [6] Dao & Gu 2024, "Transformers are SSMs" (Mamba-2), arXiv:2405.21060, sec. 7; Hugging Face
       ``modeling_nemotron_h.py`` (``HybridMambaAttentionDynamicCache``: conv_states of
       conv_kernel_size x conv_dim and ssm_states of num_heads x head_dim x ssm_state_size per
       layer; ``mamba_ssm_cache_dtype`` float32 by default).
"""

from __future__ import annotations

import numpy as np

from aisize import checks
from aisize.precision import bytes_per_element

__all__ = ["gqa_kv_bytes_per_token", "mla_kv_bytes_per_token", "layer_kv_bytes_per_token",
           "kv_bytes_per_token", "kv_bytes_per_sequence", "ssm_state_bytes_per_sequence"]


def gqa_kv_bytes_per_token(layers, kv_heads, head_dim, kv_dtype: str = "fp16", *, tp=1):
    """KV-cache bytes per token per GPU: 2·L·k_v·d_h·bytes / min(t, k_v) [B].

    Parameters
    ----------
    layers : L; kv_heads : k_v (= heads for MHA, 1 for MQA); head_dim : d_h
    kv_dtype : cache dtype (fp16, bf16, fp8, ...); tp : tensor-parallel degree

    References
    ----------
    Module references [1] (vLLM, OPT-13B 800 KB per token) and [2] (GQA, MQA).
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
    Module reference [3] (DeepSeek-V2, Table 1).
    """
    L = checks.integer("layers", layers, high=10**5)
    r = checks.integer("kv_lora_rank", kv_lora_rank, high=10**6)
    rope = checks.integer("qk_rope_head_dim", qk_rope_head_dim, high=10**6)
    return L * (r + rope) * bytes_per_element(kv_dtype, name="kv_dtype")


def _record(model):
    from aisize.models.resolve import resolve

    return resolve(model)


def layer_kv_bytes_per_token(model, kv_dtype: str = "bf16", *, tp=1):
    """KV bytes one layer of ``model`` caches per token per GPU [B] (MLA-aware).

    Parameters
    ----------
    model : a catalog id or :class:`~aisize.catalog.Transformer`; kv_dtype : cache dtype;
    tp : tensor-parallel degree
    """
    m = _record(model)
    if m.attention == "mla":
        return mla_kv_bytes_per_token(1, m.kv_lora_rank, m.qk_rope_head_dim, kv_dtype)
    return gqa_kv_bytes_per_token(1, m.kv_heads, m.head_dim, kv_dtype, tp=tp)


def kv_bytes_per_token(model, kv_dtype: str = "bf16", *, tp=1):
    """KV bytes per token per GPU while every layer's cache grows (context below any window) [B].

    Parameters
    ----------
    model : a catalog id or :class:`~aisize.catalog.Transformer`; kv_dtype : cache dtype;
    tp : tensor-parallel degree (ignored by MLA, whose latent every rank holds)

    References
    ----------
    Module references [1]-[3]; Llama-3-70B (80 layers, 8 KV heads, d_h 128, bf16): 320 KiB.
    """
    from aisize.models.counts import attention_layer_count

    m = _record(model)
    return attention_layer_count(m) * layer_kv_bytes_per_token(m, kv_dtype, tp=tp)


def kv_bytes_per_sequence(model, context_tokens, kv_dtype: str = "bf16", *, tp=1):
    """KV bytes per GPU of one sequence holding ``context_tokens`` tokens (vectorized) [B].

    Windowed layers (sliding or chunked) stop growing at their window.

    Parameters
    ----------
    model : a catalog id or :class:`~aisize.catalog.Transformer`
    context_tokens : tokens in the sequence (prompt + generated so far), scalar or array
    kv_dtype : cache dtype; tp : tensor-parallel degree

    References
    ----------
    Module references [1]-[5]. Gemma 3 27B at 32,768 tokens, bf16: 62 layers x 8 KiB per token,
    10 global layers x 32,768 + 52 local layers x 1,024 tokens.
    """
    from aisize.models.counts import attention_layer_count

    m = _record(model)
    c = checks.non_negative("context_tokens", context_tokens, high=1e10)
    per_layer = layer_kv_bytes_per_token(m, kv_dtype, tp=tp)
    full = attention_layer_count(m) - m.sliding_layers
    windowed = m.sliding_layers * np.minimum(c, m.sliding_window) if m.sliding_layers else 0.0
    return per_layer * (full * c + windowed)


def ssm_state_bytes_per_sequence(model, state_dtype: str = "fp32", conv_dtype: str = "bf16", *, tp=1):
    """State bytes per GPU one sequence keeps in the Mamba-2 layers of a hybrid model [B] (0 without).

    It does not grow with the context: per Mamba-2 layer the convolution's last K - 1 inputs,
    (K - 1)·(H·P + 2·G·N) elements at ``conv_dtype``, and the SSM state H·P·N at
    ``state_dtype``; tensor parallelism splits the state and x by heads (over min(t, H) GPUs) and
    B, C by group (over min(t, G)).

    Parameters
    ----------
    model : a catalog id or :class:`~aisize.catalog.Transformer`
    state_dtype : SSM state dtype (fp32 in Hugging Face's and vLLM's default caches)
    conv_dtype : convolution state dtype (the activations')
    tp : tensor-parallel degree

    References
    ----------
    Module reference [6]. Nemotron-H 8B (24 Mamba-2 layers, H 128, P 64, N 128, G 8, K 4):
    24 x (3 x 10,240 x 2 B + 128 x 64 x 128 x 4 B) = 102.1 MB per sequence.
    """
    m = _record(model)
    if not m.mamba_layers:
        return 0.0
    t = checks.integer("tp", tp, high=10**4)
    inner = m.mamba_heads * m.mamba_head_dim
    groups_bc = 2 * m.mamba_groups * m.ssm_state_size
    conv = (m.mamba_conv_kernel - 1) * (inner / np.minimum(t, m.mamba_heads) + groups_bc / np.minimum(t, m.mamba_groups))
    state = inner * m.ssm_state_size / np.minimum(t, m.mamba_heads)
    return m.mamba_layers * (conv * bytes_per_element(conv_dtype, name="conv_dtype")
                             + state * bytes_per_element(state_dtype, name="state_dtype"))

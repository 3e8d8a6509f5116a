"""What one token costs a model: FLOPs, weight bytes read, KV bytes, per layer group.

A serving iteration runs the same layers over every token it carries, so the
iteration model needs, for a model at a weight and KV precision:

- linear FLOPs per token, ``2·N_lin`` over the active linear weights of every
  layer (attention projections, dense MLPs, shared experts, k routed experts):
  two FLOPs per weight per token [1]; the output head ``2·V·h`` runs only at the
  positions that sample a token (the last prompt token and every decode token);
- attention FLOPs: a query at position p scores and mixes p keys, ``4·d_attn·p``
  per layer (``d_attn`` = heads x head dim), so a causal prompt of s tokens costs
  ``2·d_attn·s²`` per layer [2]; sliding-window layers stop at their window;
- weight bytes one iteration reads: every dense weight once, and per MoE layer
  the distinct routed experts its tokens touch, ``E·(1 - (1 - k/E)^T)`` for T
  tokens under uniform routing [3];
- KV bytes per token of context, per layer (K and V, or MLA's latent) [4].

Precision convention: the linear layers are stored at the serving weight
precision and the token embedding and output head stay at 16 bits, as
TensorRT Model Optimizer quantizes them by default (its FP8/NVFP4 recipes skip
``*lm_head*``) [5]. Routers and norms are too small to matter and count as 16-bit.

References
----------
.. [1] Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (forward pass ~2N FLOPs per token).
.. [2] Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, appendix B (attention FLOPs);
       Pope et al. 2023, arXiv:2211.05102, sec. 2.
.. [3] DESIGN.md section 2 (serving): expected distinct experts for T tokens with top-k of E.
.. [4] Kwon et al. 2023 (vLLM), arXiv:2309.06180, sec. 3; DeepSeek-V2, arXiv:2405.04434, sec. 2.1.
.. [5] NVIDIA TensorRT Model Optimizer, default quantization configs (``"*lm_head*": {"enable": False}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element

HEAD_PRECISION = "bf16"  # embedding and output head stay 16-bit [5]


@dataclass(frozen=True)
class ModelCosts:
    """Per-token work of one model at a weight and KV precision (whole model, unsplit).

    Bytes [B], FLOPs [FLOP], counts of layers and experts.
    """

    layers: int
    hidden: int
    vocab: int
    heads: int
    kv_heads: int  # heads the KV cache is split by under TP (MLA: 1, its latent is replicated)
    dense_flops_per_token: float  # attention projections, dense MLPs, shared experts (no output head)
    expert_flops_per_token: float  # the k routed experts of every MoE layer
    head_flops_per_token: float  # output head, at sampling positions only
    attention_flops_per_pair: float  # 4·d_attn summed over full-attention layers, per (query, key) pair
    window_attention_flops_per_pair: float  # the same over sliding-window layers
    window_tokens: float  # sliding window (inf when no layer has one)
    dense_weight_bytes: float  # read once per iteration: attention, dense MLPs, shared experts, head
    expert_bytes: float  # one routed expert of one layer
    moe_layers: int
    experts: int
    experts_per_token: int
    kv_bytes_per_token_full: float  # per token of context, summed over full-attention layers
    kv_bytes_per_token_window: float  # per token (up to the window), summed over sliding layers
    weights_bytes: float  # everything resident: all experts, embedding and head
    head_bytes: float  # the 16-bit embedding and output head, part of weights_bytes

    def kv_bytes(self, context_tokens):
        """KV bytes of one sequence holding ``context_tokens`` [B] (vectorized)."""
        c = np.asarray(context_tokens, dtype=float)
        return self.kv_bytes_per_token_full * c + self.kv_bytes_per_token_window * np.minimum(c, self.window_tokens)

    def attention_flops(self, queries, context_tokens):
        """FLOPs of ``queries`` new tokens attending to a context that ends at ``context_tokens``.

        Exact causal sum for a chunk of q queries ending at position c: q keys
        ... the mean query sees c - (q - 1)/2 keys; window layers see at most the window.
        """
        q = np.asarray(queries, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        mean_keys = np.maximum(c - 0.5 * (q - 1.0), 0.0)
        return q * (self.attention_flops_per_pair * mean_keys
                    + self.window_attention_flops_per_pair * np.minimum(mean_keys, self.window_tokens))

    def expert_bytes_read(self, tokens):
        """Routed-expert weight bytes an iteration of ``tokens`` tokens reads [B] (vectorized).

        Each MoE layer reads the distinct experts its tokens route to, in
        expectation ``E·(1 - (1 - k/E)^T)`` for uniform top-k routing [3].
        """
        t = np.asarray(tokens, dtype=float)
        if self.moe_layers == 0:
            return 0.0 * t
        touched = self.experts * (1.0 - (1.0 - self.experts_per_token / self.experts) ** t)
        return self.moe_layers * touched * self.expert_bytes


def _layer_params(m):
    """(attention, dense MLP, one routed expert, shared experts, router) parameters of one layer."""
    h, a = m.hidden, m.heads
    if m.attention == "mla":
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = h * a * qk if m.q_lora_rank is None else h * m.q_lora_rank + m.q_lora_rank * a * qk
        attn = q + h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * a * (m.qk_nope_head_dim + m.v_head_dim)
        attn += a * m.v_head_dim * h
    else:
        attn = 2 * h * a * m.head_dim + 2 * h * m.kv_heads * m.head_dim
    mats = 3 if m.ffn_type in ("swiglu", "geglu") else 2
    dense = mats * h * m.ffn_hidden
    if m.experts > 1:
        expert = mats * h * m.moe_ffn_hidden
        shared_inner = getattr(m, "shared_ffn_hidden", None) or m.shared_experts * m.moe_ffn_hidden
        shared = mats * h * shared_inner
        router = m.experts * h
    else:
        expert = shared = router = 0
    return attn, dense, expert, shared, router


def _attention_width(m) -> int:
    if m.attention == "mla":
        return m.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) // 2
    return m.heads * m.head_dim


def _kv_elements_per_layer(m) -> int:
    if m.attention == "mla":
        return m.kv_lora_rank + m.qk_rope_head_dim
    return 2 * m.kv_heads * m.head_dim


@lru_cache(maxsize=512)
def model_costs(model, weight_precision: str, kv_precision: str) -> ModelCosts:
    """:class:`ModelCosts` of a catalog Transformer record at a weight and KV precision.

    Parameters
    ----------
    model : a :class:`~aisize.catalog.Transformer` (catalog row or built from a config)
    weight_precision : storage format of the linear weights (a key of BITS_PER_ELEMENT)
    kv_precision : KV-cache element format

    References
    ----------
    See the module docstring.
    """
    wb = bytes_per_element(checks.choice("weight_precision", weight_precision, BITS_PER_ELEMENT))
    kb = bytes_per_element(kv_precision, name="kv_precision")
    hb = bytes_per_element(HEAD_PRECISION)
    attn, dense, expert, shared, router = _layer_params(model)
    L = model.layers
    moe = L - model.dense_layers if model.experts > 1 else 0
    dense_layers = L - moe
    k = model.experts_per_token if moe else 0
    dense_linear = L * attn + dense_layers * dense + moe * shared
    head = model.vocab * model.hidden
    window = getattr(model, "sliding_window", None)
    window_layers = getattr(model, "sliding_layers", 0) if window else 0
    full_layers = L - window_layers
    pair = 4.0 * _attention_width(model)
    kv_layer = _kv_elements_per_layer(model) * kb
    resident_linear = L * attn + dense_layers * dense + moe * (shared + model.experts * expert)
    embed_and_head = head * (1 if model.tied_embeddings else 2)
    return ModelCosts(
        layers=L, hidden=model.hidden, vocab=model.vocab, heads=model.heads,
        kv_heads=1 if model.attention == "mla" else model.kv_heads,
        dense_flops_per_token=2.0 * dense_linear, expert_flops_per_token=2.0 * moe * k * expert,
        head_flops_per_token=2.0 * head,
        attention_flops_per_pair=pair * full_layers, window_attention_flops_per_pair=pair * window_layers,
        window_tokens=float(window) if window else np.inf,
        dense_weight_bytes=(L * attn + dense_layers * dense + moe * shared) * wb + moe * router * hb + head * hb,
        expert_bytes=expert * wb, moe_layers=moe, experts=model.experts if moe else 1, experts_per_token=max(k, 1),
        kv_bytes_per_token_full=kv_layer * full_layers, kv_bytes_per_token_window=kv_layer * window_layers,
        weights_bytes=resident_linear * wb + moe * router * hb + embed_and_head * hb,
        head_bytes=embed_and_head * hb)

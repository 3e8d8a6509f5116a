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

from aisize import checks, models
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element

HEAD_PRECISION = "bf16"  # embedding and output head stay 16-bit [5]


@dataclass(frozen=True)
class ModelCosts:
    """Per-token work of one model at a weight and KV precision (whole model, unsplit).

    Bytes [B], FLOPs [FLOP], counts of layers and experts.
    """

    model: object  # the Transformer record
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
    window_tokens: float  # sliding window or attention chunk (0 when no layer has one)
    window_chunked: bool  # chunked attention (Llama 4): a query sees its chunk only
    dense_weight_bytes: float  # read once per iteration: attention, dense MLPs, shared experts, head
    expert_bytes: float  # one routed expert of one layer
    moe_layers: int
    experts: int
    experts_per_token: int
    kv_bytes_per_token_full: float  # per token of context, summed over full-attention layers
    kv_bytes_per_token_window: float  # per token (up to the window), summed over sliding layers
    weights_bytes: float  # everything resident: all experts, embedding and head
    head_bytes: float  # the 16-bit embedding and output head, part of weights_bytes
    kv_precision: str

    def kv_bytes(self, context_tokens):
        """KV bytes of one sequence holding ``context_tokens`` [B] (vectorized, whole model).

        The rule of :func:`aisize.models.kv_bytes_per_sequence` (windowed layers stop at their
        window) on this record's per-token figures, without its input checks: this runs in the
        inner loop of every search (tests/test_serving.py checks the two agree).
        """
        c = np.asarray(context_tokens, dtype=float)
        return self.kv_bytes_per_token_full * c + self.kv_bytes_per_token_window * np.minimum(c, self.window_tokens)

    def attention_flops(self, queries, context_tokens):
        """FLOPs of ``queries`` new tokens attending to a context that ends at ``context_tokens``.

        Causal: the q queries ending at position c see c - (q - 1)/2 keys on average;
        a sliding-window layer sees at most its window, a chunked one (Llama 4) half its
        chunk on average once the context is longer than one chunk.
        """
        q = np.asarray(queries, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        keys = np.maximum(c - 0.5 * (q - 1.0), 0.0)
        w = self.window_tokens
        windowed = np.where(keys <= w, keys, 0.5 * w) if self.window_chunked else np.minimum(keys, w)
        return q * (self.attention_flops_per_pair * keys + self.window_attention_flops_per_pair * windowed)

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


@lru_cache(maxsize=512)
def model_costs(model, weight_precision: str, kv_precision: str) -> ModelCosts:
    """:class:`ModelCosts` of a model record at a weight and KV precision.

    Parameters
    ----------
    model : a :class:`~aisize.catalog.Transformer` (catalog row or built from a config)
    weight_precision : storage format of the linear weights (a key of BITS_PER_ELEMENT)
    kv_precision : KV-cache element format

    References
    ----------
    See the module docstring; parameter counts from :func:`aisize.models.params`.
    """
    wb = bytes_per_element(checks.choice("weight_precision", weight_precision, BITS_PER_ELEMENT))
    hb = bytes_per_element(HEAD_PRECISION)
    pc = models.params(model)
    moe = pc.moe_layers
    routed = moe * model.experts * pc.routed_expert
    # linear weights outside the routed experts (attention, dense MLPs, shared experts, routers)
    dense = pc.total - pc.embedding - pc.head - pc.norm - routed
    head = model.vocab * model.hidden
    window = model.sliding_window if model.sliding_layers else None
    pair = 4.0 * models.attention_dim(model)
    kv_layer = float(models.layer_kv_bytes_per_token(model, kv_precision))
    return ModelCosts(
        model=model, layers=model.layers, hidden=model.hidden, vocab=model.vocab, heads=model.heads,
        kv_heads=1 if model.attention == "mla" else model.kv_heads,
        dense_flops_per_token=2.0 * dense, expert_flops_per_token=2.0 * moe * model.experts_per_token * pc.routed_expert,
        head_flops_per_token=2.0 * head,
        attention_flops_per_pair=pair * (model.layers - model.sliding_layers),
        window_attention_flops_per_pair=pair * model.sliding_layers,
        window_tokens=float(window) if window else 0.0, window_chunked=model.window_kind == "chunked",
        dense_weight_bytes=dense * wb + head * hb, expert_bytes=pc.routed_expert * wb, moe_layers=moe,
        experts=model.experts if moe else 1, experts_per_token=model.experts_per_token if moe else 1,
        kv_bytes_per_token_full=kv_layer * (model.layers - model.sliding_layers),
        kv_bytes_per_token_window=kv_layer * model.sliding_layers,
        weights_bytes=(pc.total - pc.embedding - pc.head) * wb + (pc.embedding + pc.head) * hb,
        head_bytes=(pc.embedding + pc.head) * hb, kv_precision=kv_precision)

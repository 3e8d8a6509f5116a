"""What one token costs a model: FLOPs, weight bytes read, KV bytes, per kind of layer.

A serving iteration runs the same layers over every token it carries, so the
iteration model needs, for a model at its weight formats and KV precision:

- linear FLOPs per token, ``2·N`` over the active linear weights (two FLOPs per
  weight per token [1]), kept apart by kind because each kind may be stored in its
  own format (gpt-oss ships MXFP4 experts beside BF16 attention [6]): attention
  projections, dense MLPs (with shared experts and routers), and the k routed
  experts; the output head ``2·V·h`` runs only at the positions that sample a token;
- attention FLOPs per (query, key) pair and layer: prefill ``4·d_attn`` (scores and
  mixing, PaLM [2]); decode in the form engines run it. MLA decodes in its absorbed
  form (DeepSeek-V2 sec. 2.1.2 [4]): every head scores the 576-wide latent
  (``kv_lora + rope``) and mixes the 512-wide latent, ``2·a·(r + d_rope) + 2·a·r``
  FLOPs per pair, which is why FlashMLA is compute-bound on Hopper [7];
  sliding-window layers stop at their window;
- weight bytes one iteration reads: every dense weight once, and per MoE layer the
  distinct routed experts its tokens touch, ``E·(1 - (1 - k/E)^T)`` for T tokens
  under uniform routing [3];
- KV bytes per token of context, per layer (K and V, or MLA's latent) [4], on attention layers
  only; a hybrid model's Mamba-2 layers keep a fixed state per sequence instead (the SSM state
  and the convolution's last inputs), which every decode step reads and writes, and whose scan
  costs ``2·Q·N·G + 2·Q·P·H + 4·N·P·H`` FLOPs per prompt token per layer (the SSD algorithm, chunk Q) [8].

Precision convention: linear layers are stored at their weight format; the token
embedding and output head stay at 16 bits, as TensorRT Model Optimizer quantizes
them by default (its FP8/NVFP4 recipes skip ``*lm_head*``) [5]. Routers and norms
are too small to matter and count with the dense MLP.

References
----------
.. [1] Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1 (forward pass ~2N FLOPs per token).
.. [2] Chowdhery et al. 2022 (PaLM), arXiv:2204.02311, appendix B (attention FLOPs);
       Pope et al. 2023, arXiv:2211.05102, sec. 2.
.. [3] docs/DESIGN.md section 2 (serving): expected distinct experts for T tokens with top-k of E.
.. [4] Kwon et al. 2023 (vLLM), arXiv:2309.06180, sec. 3; DeepSeek-V2, arXiv:2405.04434,
       sec. 2.1 (MLA; absorbing W_UK into W_Q and W_UV into W_O for inference).
.. [5] NVIDIA TensorRT Model Optimizer, default quantization configs (``"*lm_head*": {"enable": False}``).
.. [6] OpenAI 2025, gpt-oss model card, sec. 2.1 (MoE weights in MXFP4, the rest in BF16).
.. [7] deepseek-ai/FlashMLA README (H800: up to 3,000 GB/s memory-bound, 660 TFLOPS compute-bound).
.. [8] Dao & Gu 2024, "Transformers are SSMs" (Mamba-2), arXiv:2405.21060, sec. 6-7;
       :func:`aisize.models.ssm_state_bytes_per_sequence` (state bytes, split over TP by heads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aisize import checks, models
from aisize.precision import BITS_PER_ELEMENT, bytes_per_element

HEAD_PRECISION = "bf16"  # embedding and output head stay 16-bit [5]
LAYER_KINDS = ("attention", "dense", "experts")  # the parts a weight format may be given for


@dataclass(frozen=True)
class WeightFormats:
    """The storage format of each kind of linear layer (``attention``, ``dense`` MLPs, routed ``experts``)."""

    attention: str
    dense: str
    experts: str

    @property
    def label(self) -> str:
        """One name when every kind shares it, else ``experts mxfp4 / attention bf16 / dense bf16``."""
        if self.attention == self.dense == self.experts:
            return self.experts
        return " / ".join(f"{k} {getattr(self, k)}" for k in ("experts", "attention", "dense"))


def weight_formats(weight_precision) -> WeightFormats:
    """:class:`WeightFormats` from a format name (every linear layer) or a mapping by layer kind.

    A mapping names some of ``attention``, ``dense`` and ``experts``; kinds it leaves out take
    ``default`` when it gives one, else bf16 (how mixed checkpoints such as gpt-oss store them).
    """
    if isinstance(weight_precision, WeightFormats):
        return weight_precision
    if isinstance(weight_precision, Mapping):
        unknown = set(weight_precision) - set(LAYER_KINDS) - {"default"}
        if unknown:
            raise ValueError(f"weight_precision has unknown layer kinds {sorted(unknown)!r}: allowed "
                             f"{', '.join(LAYER_KINDS)} (and default)")
        default = weight_precision.get("default", "bf16")
        kinds = {k: checks.choice(f"weight_precision[{k!r}]", weight_precision.get(k, default), BITS_PER_ELEMENT)
                 for k in LAYER_KINDS}
        return WeightFormats(**kinds)
    wp = checks.choice("weight_precision", weight_precision, BITS_PER_ELEMENT)
    return WeightFormats(wp, wp, wp)


@dataclass(frozen=True)
class ModelCosts:
    """Per-token work of one model at its weight formats and KV precision (whole model, unsplit).

    Bytes [B], FLOPs [FLOP], counts of layers and experts.
    """

    model: object  # the Transformer record
    formats: WeightFormats
    layers: int
    hidden: int
    vocab: int
    heads: int
    kv_heads: int  # heads the KV cache is split by under TP (MLA: 1, its latent is replicated)
    attention_flops_per_token: float  # q/k/v/o (or MLA) projections
    dense_flops_per_token: float  # dense MLPs, shared experts, routers
    expert_flops_per_token: float  # the k routed experts of every MoE layer
    head_flops_per_token: float  # output head, at sampling positions only
    attention_flops_per_pair: float  # prefill: 4·d_attn summed over full-attention layers, per (query, key)
    window_attention_flops_per_pair: float  # the same over sliding-window layers
    decode_flops_per_pair: float  # decode attention per (token, key), full-attention layers (MLA absorbed)
    window_decode_flops_per_pair: float  # the same over sliding-window layers
    window_tokens: float  # sliding window or attention chunk (0 when no layer has one)
    window_chunked: bool  # chunked attention (Llama 4): a query sees its chunk only
    attention_weight_bytes: float  # read once per iteration
    dense_weight_bytes: float  # dense MLPs, shared experts, routers: read once per iteration
    head_weight_bytes: float  # the 16-bit output head: read once per iteration
    expert_bytes: float  # one routed expert of one layer
    expert_hidden: int  # one routed expert's inner size (its GEMMs' split dimension)
    moe_layers: int
    experts: int
    experts_per_token: int
    kv_bytes_per_token_full: float  # per token of context, summed over full-attention layers
    kv_bytes_per_token_window: float  # per token (up to the window), summed over sliding layers
    weights_bytes: float  # everything resident: all experts, embedding and head
    head_bytes: float  # the 16-bit embedding and output head, part of weights_bytes
    kv_precision: str
    mamba_layers: int = 0  # hybrid models: layers whose mixer is a Mamba-2 block
    mamba_heads: int = 1
    mamba_groups: int = 1
    ssm_inner_state_bytes: float = 0.0  # per sequence, all Mamba layers: the parts split by heads (unsplit)
    ssm_group_state_bytes: float = 0.0  # the parts split by groups (B and C of the convolution)
    ssm_scan_flops_per_token: float = 0.0  # prefill scan FLOPs per token, all Mamba layers

    def ssm_state_bytes(self, tensor_parallel=1):
        """A sequence's Mamba-2 state on one GPU of a tensor-parallel group [B] (0 without Mamba layers)."""
        t = np.asarray(tensor_parallel, dtype=float)
        return (self.ssm_inner_state_bytes / np.minimum(t, self.mamba_heads)
                + self.ssm_group_state_bytes / np.minimum(t, self.mamba_groups))

    @property
    def linear_weight_bytes(self) -> float:
        """Attention, dense MLP and head weights (everything but the routed experts) [B]."""
        return self.attention_weight_bytes + self.dense_weight_bytes + self.head_weight_bytes

    def kv_bytes(self, context_tokens):
        """KV bytes of one sequence holding ``context_tokens`` [B] (vectorized, whole model).

        The rule of :func:`aisize.models.kv_bytes_per_sequence` (windowed layers stop at their
        window) on this record's per-token figures, without its input checks: this runs in the
        inner loop of every search (tests/test_serving.py checks the two agree).
        """
        c = np.asarray(context_tokens, dtype=float)
        return self.kv_bytes_per_token_full * c + self.kv_bytes_per_token_window * np.minimum(c, self.window_tokens)

    def _keys(self, context_tokens):
        """Keys a query at the end of ``context_tokens`` sees in full and in windowed layers."""
        c = np.asarray(context_tokens, dtype=float)
        w = self.window_tokens
        windowed = np.where(c <= w, c, 0.5 * w) if self.window_chunked else np.minimum(c, w)
        return c, windowed

    def attention_flops(self, queries, context_tokens):
        """Prefill FLOPs of ``queries`` new tokens attending to a context that ends at ``context_tokens``.

        Causal: the q queries ending at position c see c - (q - 1)/2 keys on average;
        a sliding-window layer sees at most its window, a chunked one (Llama 4) half its
        chunk on average once the context is longer than one chunk.
        """
        q = np.asarray(queries, dtype=float)
        c = np.asarray(context_tokens, dtype=float)
        full, windowed = self._keys(np.maximum(c - 0.5 * (q - 1.0), 0.0))
        return q * (self.attention_flops_per_pair * full + self.window_attention_flops_per_pair * windowed)

    def decode_attention_flops(self, context_tokens):
        """Decode FLOPs of one token attending to ``context_tokens`` keys (the engine's decode form)."""
        full, windowed = self._keys(context_tokens)
        return self.decode_flops_per_pair * full + self.window_decode_flops_per_pair * windowed

    def touched_experts(self, tokens):
        """Expected distinct routed experts ``tokens`` tokens route to, per MoE layer (uniform top-k) [3]."""
        t = np.asarray(tokens, dtype=float)
        if self.moe_layers == 0:
            return 0.0 * t
        return self.experts * -np.expm1(t * np.log1p(-self.experts_per_token / self.experts))

    def expert_bytes_read(self, tokens):
        """Routed-expert weight bytes an iteration of ``tokens`` tokens reads, all layers [B] (vectorized)."""
        return self.moe_layers * self.touched_experts(tokens) * self.expert_bytes


def _decode_pair_flops(model) -> float:
    """Decode attention FLOPs per (token, key) pair per layer: scores and mixing.

    GQA/MHA: ``4·a·d``. MLA absorbed [4]: queries are projected into the latent, so each of
    the ``a`` heads scores ``kv_lora + rope`` dims and mixes ``kv_lora`` dims.
    """
    if model.attention == "mla":
        r = model.kv_lora_rank
        return 2.0 * model.heads * (r + model.qk_rope_head_dim) + 2.0 * model.heads * r
    return 4.0 * models.attention_dim(model)


def model_costs(model, weight_precision, kv_precision: str) -> ModelCosts:
    """:class:`ModelCosts` of a model record at its weight formats and a KV precision.

    Parameters
    ----------
    model : a :class:`~aisize.catalog.Transformer` (catalog row or built from a config)
    weight_precision : a weight format name for every linear layer, or a :class:`WeightFormats`
        (see :func:`weight_formats`)
    kv_precision : KV-cache element format

    References
    ----------
    See the module docstring; parameter counts from :func:`aisize.models.params`.
    """
    # built once per model, formats and KV precision: "fp8" and WeightFormats("fp8", ...) are one key
    return _model_costs(model, weight_formats(weight_precision), kv_precision)


@lru_cache(maxsize=512)
def _model_costs(model, fmt: WeightFormats, kv_precision: str) -> ModelCosts:
    ab, db, eb = (bytes_per_element(f) for f in (fmt.attention, fmt.dense, fmt.experts))
    hb = bytes_per_element(HEAD_PRECISION)
    pc = models.params(model)
    moe = pc.moe_layers
    routed = moe * model.experts * pc.routed_expert
    attention = pc.attention
    dense = pc.total - pc.embedding - pc.head - pc.norm - routed - attention  # MLPs, shared experts, routers
    head = model.vocab * model.hidden
    window = model.sliding_window if model.sliding_layers else None
    pair = 4.0 * models.attention_dim(model)
    decode_pair = _decode_pair_flops(model)
    full_layers = models.attention_layer_count(model) - model.sliding_layers
    kv_layer = float(models.layer_kv_bytes_per_token(model, kv_precision))
    return ModelCosts(
        model=model, formats=fmt, layers=model.layers, hidden=model.hidden, vocab=model.vocab, heads=model.heads,
        kv_heads=1 if model.attention == "mla" else model.kv_heads,
        attention_flops_per_token=2.0 * attention, dense_flops_per_token=2.0 * dense,
        expert_flops_per_token=2.0 * moe * model.experts_per_token * pc.routed_expert,
        head_flops_per_token=2.0 * head,
        attention_flops_per_pair=pair * full_layers, window_attention_flops_per_pair=pair * model.sliding_layers,
        decode_flops_per_pair=decode_pair * full_layers,
        window_decode_flops_per_pair=decode_pair * model.sliding_layers,
        window_tokens=float(window) if window else 0.0, window_chunked=model.window_kind == "chunked",
        attention_weight_bytes=attention * ab, dense_weight_bytes=dense * db, head_weight_bytes=head * hb,
        expert_bytes=pc.routed_expert * eb, expert_hidden=int(model.moe_ffn_hidden or 0) if moe else 0,
        moe_layers=moe, experts=model.experts if moe else 1, experts_per_token=model.experts_per_token if moe else 1,
        kv_bytes_per_token_full=kv_layer * full_layers, kv_bytes_per_token_window=kv_layer * model.sliding_layers,
        weights_bytes=attention * ab + dense * db + routed * eb + (pc.embedding + pc.head + pc.norm) * hb,
        head_bytes=(pc.embedding + pc.head) * hb, kv_precision=kv_precision, **_ssm(model))


SSD_CHUNK_TOKENS = 256  # Mamba-2's SSD chunk (the reference kernels' default) [8]
SSM_STATE_PRECISION = "fp32"  # Hugging Face's and vLLM's Mamba caches keep the SSM state in fp32 [8]
SSM_CONV_PRECISION = "bf16"


def _ssm(model) -> dict:
    """The Mamba-2 fields of :class:`ModelCosts` (empty for a pure transformer)."""
    n_layers = getattr(model, "mamba_layers", 0) or 0
    if not n_layers:
        return {}
    h, p, n, g, k = (model.mamba_heads, model.mamba_head_dim, model.ssm_state_size, model.mamba_groups,
                     model.mamba_conv_kernel)
    inner = h * p
    sb, cb = bytes_per_element(SSM_STATE_PRECISION), bytes_per_element(SSM_CONV_PRECISION)
    q = SSD_CHUNK_TOKENS
    return dict(mamba_layers=n_layers, mamba_heads=h, mamba_groups=g,
                ssm_inner_state_bytes=n_layers * (inner * n * sb + (k - 1) * inner * cb),
                ssm_group_state_bytes=n_layers * (k - 1) * 2 * g * n * cb,
                ssm_scan_flops_per_token=n_layers * (2.0 * q * n * g + 2.0 * q * p * h + 4.0 * n * p * h))

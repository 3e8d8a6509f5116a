"""Transformer parameter counts from architecture fields, and catalog records from HF configs.

:func:`transformer_params` counts the weights of a decoder (GPT, OPT, BLOOM, Llama,
Mixtral, DeepSeek-V3) or a BERT-style encoder from the fields of a catalog
:class:`~aisize.catalog.Transformer` record; :func:`transformer_from_hf_config`
builds such a record from a Hugging Face ``config.json``, offline.

Counting rules (h hidden, L layers, a heads, k KV heads, d head dim, f MLP inner
size, V vocabulary, E routed experts, S shared experts, f_e expert inner size):

- attention (MHA/GQA/MQA): q and o are h x a*d, k and v are h x k*d; biases a*d,
  k*d, k*d and h when ``bias`` [1, 2];
- attention (MLA, DeepSeek-V2/V3 [5]): q_a h x q_lora, q_b q_lora x a*(d_nope + d_rope),
  kv_a h x (kv_lora + d_rope), kv_b kv_lora x a*(d_nope + d_v), o a*d_v x h, plus
  RMSNorm weights on the q_lora and kv_lora latents;
- MLP: GELU/ReLU 2 matrices (2 h f), SwiGLU 3 (3 h f) [3]; biases f + h (GELU/ReLU);
- MoE layers [4, 5]: (E + S) experts of the SwiGLU size with f_e, plus the router
  E x h; the first ``dense_layers`` layers keep a dense MLP of size f;
- norms: LayerNorm 2h (weight + bias), RMSNorm h; two per layer, one final (decoders)
  or one on the embeddings (BERT, post-LN, no final norm) [1, 6];
- embeddings: V x h tokens, ``max_seq`` x h learned positions, a V x h output head
  unless ``tied_embeddings``; BERT adds 2 x h token-type embeddings and an h x h + h
  pooler [6].

Not counted (each below 0.001 % of the total): OPT's two extra position rows, BLOOM's
embedding LayerNorm, DeepSeek-V3's router score-correction bias, and DeepSeek-V3's
multi-token-prediction module (14 B, used in training only; the 671 B headline
excludes it [5]). Rotary ``inv_freq`` buffers are not parameters.

References
----------
.. [1] Radford et al. 2019, "Language Models are Unsupervised Multitask Learners" (GPT-2), Sec. 2.3;
       Brown et al. 2020, arXiv:2005.14165, Table 2.1 (GPT-3).
.. [2] Touvron et al. 2023, "Llama 2", arXiv:2307.09288, Sec. 2.2 (GQA); Ainslie et al. 2023,
       arXiv:2305.13245 (GQA).
.. [3] Shazeer 2020, "GLU Variants Improve Transformer", arXiv:2002.05202, Eq. 6 (SwiGLU FFN).
.. [4] Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, Sec. 2 (46.7 B total, 12.9 B active).
.. [5] DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, Sec. 2.1 (MLA, MoE) and
       4.2 (671 B total, 37 B activated, MTP excluded).
.. [6] Devlin et al. 2019, "BERT", arXiv:1810.04805, Sec. 3; HF ``modeling_bert.py`` (pooler).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from aisize import checks
from aisize.catalog.records import Transformer

__all__ = ["ParamCount", "transformer_params", "active_params", "transformer_from_hf_config"]

_BERT_TOKEN_TYPES = 2  # BERT's segment A/B embeddings [6]


@dataclass(frozen=True)
class ParamCount:
    """Parameter counts of a transformer by component [count].

    ``embedding`` holds token, position and token-type embeddings; ``head`` the untied
    output projection and BERT's pooler; ``norm`` every LayerNorm/RMSNorm weight (and
    bias). ``total`` is their sum; ``active`` counts only the routed experts a token
    uses (equal to ``total`` for dense models).
    """

    embedding: int
    attention: int
    mlp: int
    norm: int
    head: int
    total: int
    active: int


def _check(arch) -> None:
    checks.integer("layers", arch.layers)
    checks.integer("hidden", arch.hidden)
    checks.integer("heads", arch.heads)
    checks.integer("kv_heads", arch.kv_heads, high=arch.heads)
    checks.integer("head_dim", arch.head_dim)
    checks.integer("ffn_hidden", arch.ffn_hidden)
    checks.integer("vocab", arch.vocab)
    checks.integer("max_seq", arch.max_seq)
    checks.integer("experts", arch.experts)
    checks.integer("experts_per_token", arch.experts_per_token, high=arch.experts)
    checks.integer("shared_experts", arch.shared_experts, low=0)
    checks.integer("dense_layers", arch.dense_layers, low=0, high=arch.layers)
    checks.choice("ffn_type", arch.ffn_type, ("gelu", "relu", "swiglu"))
    checks.choice("norm", arch.norm, ("layernorm", "rmsnorm"))
    checks.choice("position", arch.position, ("learned", "rope", "alibi"))
    checks.choice("attention", arch.attention, ("mha", "gqa", "mqa", "mla"))
    if arch.experts > 1:
        checks.integer("moe_ffn_hidden", arch.moe_ffn_hidden)
    if arch.attention == "mla":
        for name in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            checks.integer(name, getattr(arch, name))
        if arch.q_lora_rank is not None:
            checks.integer("q_lora_rank", arch.q_lora_rank)


def _norm_size(arch, width: int) -> int:
    return 2 * width if arch.norm == "layernorm" else width


def _attention(arch) -> tuple[int, int]:
    """(weights, norm weights) of one attention block."""
    h, a = arch.hidden, arch.heads
    if arch.attention == "mla":
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        if arch.q_lora_rank is None:
            q, q_norm = h * a * qk, 0
        else:
            q, q_norm = h * arch.q_lora_rank + arch.q_lora_rank * a * qk, arch.q_lora_rank
        kv = h * (arch.kv_lora_rank + arch.qk_rope_head_dim)
        kv += arch.kv_lora_rank * a * (arch.qk_nope_head_dim + arch.v_head_dim)
        o = a * arch.v_head_dim * h
        biases = (a * qk + a * arch.v_head_dim + h) if arch.bias else 0
        return q + kv + o + biases, q_norm + arch.kv_lora_rank
    q_width, kv_width = a * arch.head_dim, arch.kv_heads * arch.head_dim
    weights = 2 * h * q_width + 2 * h * kv_width
    biases = (q_width + 2 * kv_width + h) if arch.bias else 0
    return weights + biases, 0


def _mlp(arch, inner: int) -> int:
    """One dense MLP (or one expert) of inner size ``inner``."""
    h = arch.hidden
    if arch.ffn_type == "swiglu":
        return 3 * h * inner + ((2 * inner + h) if arch.bias else 0)
    return 2 * h * inner + ((inner + h) if arch.bias else 0)


def transformer_params(arch: Transformer) -> ParamCount:
    """Parameters of a transformer from its architecture fields [count].

    Parameters
    ----------
    arch : a :class:`~aisize.catalog.Transformer` record (or any object with its fields).

    Returns
    -------
    ParamCount with embedding, attention, mlp, norm, head, total and active counts.

    References
    ----------
    See the module docstring: GPT-2/3 [1], Llama 2 [2], SwiGLU [3], Mixtral [4],
    DeepSeek-V3 [5], BERT [6]. Llama-2-7B gives 6,738,415,616, the tensor count of
    meta-llama/Llama-2-7b-hf.
    """
    _check(arch)
    h, L = arch.hidden, arch.layers
    embedding = arch.vocab * h
    if arch.position == "learned":
        embedding += arch.max_seq * h
    if arch.encoder_only:
        embedding += _BERT_TOKEN_TYPES * h
    head = 0 if arch.tied_embeddings else arch.vocab * h
    if arch.encoder_only:
        head += h * h + h  # pooler dense + tanh

    attn_weights, attn_norms = _attention(arch)
    attention = L * attn_weights
    norm = L * (2 * _norm_size(arch, h) + attn_norms) + _norm_size(arch, h)

    if arch.experts > 1:
        moe_layers = L - arch.dense_layers
        expert = _mlp(arch, arch.moe_ffn_hidden)
        router = arch.experts * h
        mlp = arch.dense_layers * _mlp(arch, arch.ffn_hidden)
        mlp += moe_layers * ((arch.experts + arch.shared_experts) * expert + router)
        idle = moe_layers * (arch.experts - arch.experts_per_token) * expert
    else:
        mlp, idle = L * _mlp(arch, arch.ffn_hidden), 0
    total = embedding + attention + mlp + norm + head
    return ParamCount(embedding=embedding, attention=attention, mlp=mlp, norm=norm, head=head,
                      total=total, active=total - idle)


def active_params(arch: Transformer) -> int:
    """Parameters one token passes through [count]: all but the routed experts it skips.

    References
    ----------
    Jiang et al. 2024 (Mixtral, 12.9 B of 46.7 B); DeepSeek-V3 report Sec. 4.2 (37 B of 671 B).
    """
    return transformer_params(arch).active


# --- Hugging Face config.json -> Transformer -------------------------------------------------

_SUPPORTED = ("llama", "mistral", "mixtral", "gpt2", "opt", "bert", "deepseek_v3")


def _get(config: dict, key: str, default=None, *, required: bool = True):
    if key in config and config[key] is not None:
        return config[key]
    if default is not None or not required:
        return default
    raise ValueError(f"config key {key!r} is missing (model_type {config.get('model_type')!r})")


def _attention_kind(heads: int, kv_heads: int) -> str:
    return "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")


def _llama_like(c: dict) -> dict:
    heads = _get(c, "num_attention_heads")
    kv = _get(c, "num_key_value_heads", heads)
    hidden = _get(c, "hidden_size")
    moe = c.get("model_type") == "mixtral"
    return dict(layers=_get(c, "num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=kv,
                head_dim=_get(c, "head_dim", hidden // heads), ffn_hidden=_get(c, "intermediate_size"),
                ffn_type="swiglu", vocab=_get(c, "vocab_size"),
                tied_embeddings=bool(c.get("tie_word_embeddings", False)),
                max_seq=_get(c, "max_position_embeddings"), position="rope", norm="rmsnorm",
                bias=bool(c.get("attention_bias", False)), attention=_attention_kind(heads, kv),
                experts=_get(c, "num_local_experts") if moe else 1,
                experts_per_token=_get(c, "num_experts_per_tok") if moe else 1,
                moe_ffn_hidden=_get(c, "intermediate_size") if moe else None)


def _gpt2(c: dict) -> dict:
    hidden, heads = _get(c, "n_embd"), _get(c, "n_head")
    return dict(layers=_get(c, "n_layer"), hidden=hidden, heads=heads, kv_heads=heads,
                head_dim=hidden // heads, ffn_hidden=_get(c, "n_inner", 4 * hidden), ffn_type="gelu",
                vocab=_get(c, "vocab_size"), tied_embeddings=bool(c.get("tie_word_embeddings", True)),
                max_seq=_get(c, "n_positions"), position="learned", norm="layernorm", bias=True,
                attention="mha")


def _opt(c: dict) -> dict:
    hidden, heads = _get(c, "hidden_size"), _get(c, "num_attention_heads")
    if c.get("word_embed_proj_dim", hidden) != hidden:
        raise ValueError("config key 'word_embed_proj_dim' differs from hidden_size (OPT-350m's "
                         "projected embeddings); this layout is not supported")
    return dict(layers=_get(c, "num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=heads,
                head_dim=hidden // heads, ffn_hidden=_get(c, "ffn_dim"), ffn_type="relu",
                vocab=_get(c, "vocab_size"), tied_embeddings=bool(c.get("tie_word_embeddings", True)),
                max_seq=_get(c, "max_position_embeddings"), position="learned", norm="layernorm",
                bias=bool(c.get("enable_bias", True)), attention="mha")


def _bert(c: dict) -> dict:
    hidden, heads = _get(c, "hidden_size"), _get(c, "num_attention_heads")
    if c.get("type_vocab_size", _BERT_TOKEN_TYPES) != _BERT_TOKEN_TYPES:
        raise ValueError(f"config key 'type_vocab_size'={c['type_vocab_size']!r} is not supported: "
                         f"the record assumes BERT's {_BERT_TOKEN_TYPES} token types")
    return dict(layers=_get(c, "num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=heads,
                head_dim=hidden // heads, ffn_hidden=_get(c, "intermediate_size"), ffn_type="gelu",
                vocab=_get(c, "vocab_size"), tied_embeddings=True,
                max_seq=_get(c, "max_position_embeddings"), position="learned", norm="layernorm",
                bias=True, attention="mha", encoder_only=True)


def _deepseek_v3(c: dict) -> dict:
    heads = _get(c, "num_attention_heads")
    nope, rope = _get(c, "qk_nope_head_dim"), _get(c, "qk_rope_head_dim")
    return dict(layers=_get(c, "num_hidden_layers"), hidden=_get(c, "hidden_size"), heads=heads,
                kv_heads=_get(c, "num_key_value_heads", heads), head_dim=nope + rope,
                ffn_hidden=_get(c, "intermediate_size"), ffn_type="swiglu", vocab=_get(c, "vocab_size"),
                tied_embeddings=bool(c.get("tie_word_embeddings", False)),
                max_seq=_get(c, "max_position_embeddings"), position="rope", norm="rmsnorm",
                bias=bool(c.get("attention_bias", False)), attention="mla",
                experts=_get(c, "n_routed_experts"), experts_per_token=_get(c, "num_experts_per_tok"),
                shared_experts=_get(c, "n_shared_experts", 0),
                moe_ffn_hidden=_get(c, "moe_intermediate_size"),
                dense_layers=_get(c, "first_k_dense_replace", 0),
                q_lora_rank=_get(c, "q_lora_rank", required=False), kv_lora_rank=_get(c, "kv_lora_rank"),
                qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=_get(c, "v_head_dim"))


_BUILDERS = {"llama": _llama_like, "mistral": _llama_like, "mixtral": _llama_like, "gpt2": _gpt2,
             "opt": _opt, "bert": _bert, "deepseek_v3": _deepseek_v3}


def transformer_from_hf_config(config: dict | str | Path, id: str | None = None) -> Transformer:
    """A :class:`~aisize.catalog.Transformer` record from a Hugging Face ``config.json``.

    Parameters
    ----------
    config : the parsed config dict, or the path of a ``config.json`` file (read offline).
    id : record id; defaults to ``_name_or_path`` or the model_type.

    Returns
    -------
    Transformer with ``published_params`` set to the architecture count (no published
    figure is known here) and source naming the config.

    Raises ValueError for an unknown ``model_type`` or a missing key.

    References
    ----------
    Hugging Face ``transformers`` configuration classes (LlamaConfig, MistralConfig,
    MixtralConfig, GPT2Config, OPTConfig, BertConfig, DeepseekV3Config) for key names and defaults.
    """
    source = "config dict"
    if isinstance(config, (str, Path)):
        source = str(config)
        try:
            config = json.loads(Path(config).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"config={source!r} cannot be read as JSON: {exc}") from None
    if not isinstance(config, dict):
        raise ValueError(f"config={config!r} is not allowed: must be a dict or a config.json path")
    model_type = config.get("model_type")
    if model_type not in _BUILDERS:
        raise ValueError(f"model_type={model_type!r} is not supported; supported: {', '.join(_SUPPORTED)}")
    fields = dict(experts=1, experts_per_token=1, shared_experts=0, moe_ffn_hidden=None, dense_layers=0,
                  q_lora_rank=None, kv_lora_rank=None, qk_rope_head_dim=None, qk_nope_head_dim=None,
                  v_head_dim=None, encoder_only=False)
    fields.update(_BUILDERS[model_type](config))
    name = id or config.get("_name_or_path") or model_type
    draft = Transformer(id=name, name=name, family=model_type, published_params=0.0,
                        published_active_params=None, source=f"Hugging Face config.json ({source})",
                        note="built by transformer_from_hf_config; published_params is the "
                             "architecture count", **fields)
    count = transformer_params(draft)
    moe = draft.experts > 1
    return Transformer(**{**draft.__dict__, "published_params": float(count.total),
                          "published_active_params": float(count.active) if moe else None})


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

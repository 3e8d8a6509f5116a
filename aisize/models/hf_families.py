"""Per-family readers of Hugging Face ``config.json`` into Transformer record fields.

Each reader names the configuration class whose defaults it applies (Hugging Face
``transformers``, ``src/transformers/models/<family>/configuration_<family>.py`` at commit
008e574391258935f3ecc3035c882e73bbcac419; DeepSeek-V3 and Mistral at 001f85b3) and the
modeling facts that set the count (which projections carry biases, extra norms, routers,
shared experts). Required keys (matrix sizes, expert counts) have no default: see
:mod:`aisize.models.hf_config`.
"""

from __future__ import annotations

from aisize.models.hf_reader import HfConfig

__all__ = ["BUILDERS"]

WINDOWED = ("sliding_attention", "chunked_attention")


def _kind(heads: int, kv_heads: int) -> str:
    return "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")


def _nullable(c: HfConfig, key: str, default):
    """A key whose explicit null means "none" (sliding_window, q_lora_rank), absent means ``default``."""
    if key in c.data and c.data[key] is None:
        return None
    return c.int(key, default)


def _decoder(c: HfConfig, *, kv_default, head_dim_default, max_seq: int, tied: bool) -> dict:
    """Fields every RoPE/RMSNorm decoder shares; ``None`` defaults mean "derived" (kv = heads,
    head_dim = hidden / heads), as the configuration classes do."""
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", heads if kv_default is None else kv_default)
    if kv > heads or heads % kv:
        c.fail(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    head_dim = c.int("head_dim", head_dim_default)
    if head_dim is None:
        if hidden % heads:
            c.fail(f"config key 'head_dim' is missing and hidden_size={hidden} is not a multiple of "
                   f"num_attention_heads={heads}")
        head_dim = hidden // heads
    return dict(layers=c.int("num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=kv, head_dim=head_dim,
                vocab=c.int("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings", tied),
                max_seq=c.int("max_position_embeddings", max_seq), position="rope", norm="rmsnorm",
                bias=False, attention=_kind(heads, kv), ffn_type="swiglu")


def _window(c: HfConfig, f: dict, window: int | None, default_types: list[str]) -> dict:
    """sliding_window / sliding_layers from ``layer_types`` (or the family's default pattern)."""
    if window is None:
        return f
    types = c.str_list("layer_types", f["layers"]) or default_types
    return {**f, "sliding_window": window, "sliding_layers": sum(t in WINDOWED for t in types)}


def _experts(c: HfConfig, f: dict, experts_key: str, moe_layers: int, *, moe_ffn_key: str) -> dict:
    experts, top_k = c.int(experts_key), c.int("num_experts_per_tok")
    if top_k > experts:
        c.fail(f"num_experts_per_tok={top_k} exceeds {experts_key}={experts}")
    dense = f["layers"] - moe_layers
    ffn = c.int("intermediate_size") if dense else c.int("intermediate_size", c.int(moe_ffn_key))
    return {**f, "experts": experts, "experts_per_token": top_k, "moe_ffn_hidden": c.int(moe_ffn_key),
            "dense_layers": dense, "ffn_hidden": ffn}


def _llama(c: HfConfig) -> dict:
    # LlamaConfig: kv = heads, head_dim = hidden / heads, max_position_embeddings 2048,
    # tie False, attention_bias False (q, k, v and o), mlp_bias False.
    f = _decoder(c, kv_default=None, head_dim_default=None, max_seq=2048, tied=False)
    return {**f, "ffn_hidden": c.int("intermediate_size"), "bias": c.flag("mlp_bias", False),
            "attention_bias": "qkvo" if c.flag("attention_bias", False) else "none"}


def _mistral(c: HfConfig) -> dict:
    # MistralConfig: kv 8, max_position_embeddings 4096 * 32, sliding_window 4096 on every layer.
    f = _decoder(c, kv_default=8, head_dim_default=None, max_seq=4096 * 32, tied=False)
    f = {**f, "ffn_hidden": c.int("intermediate_size")}
    return _window(c, f, _nullable(c, "sliding_window", 4096), ["sliding_attention"] * f["layers"])


def _mixtral(c: HfConfig) -> dict:
    # MixtralConfig: kv 8, max_position_embeddings 4096 * 32, sliding_window None; every layer
    # is sparse; router E x h without bias; experts of intermediate_size.
    f = _decoder(c, kv_default=8, head_dim_default=None, max_seq=4096 * 32, tied=False)
    f = _experts(c, f, "num_local_experts", f["layers"], moe_ffn_key="intermediate_size")
    return _window(c, f, _nullable(c, "sliding_window", None), ["sliding_attention"] * f["layers"])


def _qwen_window(c: HfConfig, f: dict, rule) -> dict:
    # Qwen2/Qwen3 configs: sliding_window (default 4096) only when use_sliding_window (default
    # False); max_window_layers default 28.
    if not c.flag("use_sliding_window", False):
        return f
    first = c.int("max_window_layers", 28, low=0)
    types = ["sliding_attention" if rule(i, first) else "full_attention" for i in range(f["layers"])]
    return _window(c, f, _nullable(c, "sliding_window", 4096), types)


def _qwen2(c: HfConfig) -> dict:
    # Qwen2Config: kv 32, head_dim = hidden / heads, max_position_embeddings 32768, tie False;
    # Qwen2Attention: q, k, v with bias, o without; layers i >= max_window_layers slide.
    f = _decoder(c, kv_default=32, head_dim_default=None, max_seq=32768, tied=False)
    f = {**f, "ffn_hidden": c.int("intermediate_size"), "attention_bias": "qkv"}
    return _qwen_window(c, f, lambda i, first: i >= first)


def _qwen3(c: HfConfig) -> dict:
    # Qwen3Config: kv 32, head_dim 128, max_position_embeddings 32768, attention_bias False
    # (q, k, v and o), q_norm and k_norm (RMSNorm of head_dim) in every layer.
    f = _decoder(c, kv_default=32, head_dim_default=128, max_seq=32768, tied=False)
    f = {**f, "ffn_hidden": c.int("intermediate_size"), "qk_norm": True,
         "attention_bias": "qkvo" if c.flag("attention_bias", False) else "none"}
    return _qwen_window(c, f, lambda i, first: i >= first)


def _sparse_layers(c: HfConfig, layers: int) -> int:
    # Qwen2-MoE / Qwen3-MoE decoder layer: sparse when not in mlp_only_layers (default []) and
    # (i + 1) % decoder_sparse_step (default 1) == 0.
    step = c.int("decoder_sparse_step", 1)
    dense = set(c.int_list("mlp_only_layers", []))
    return sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)


def _qwen2_moe(c: HfConfig) -> dict:
    # Qwen2MoeConfig: kv 16, max_position_embeddings 32768, qkv_bias True (q, k, v only), tie
    # False; a shared expert of shared_expert_intermediate_size with a 1-output sigmoid gate
    # (Linear(h, 1, bias=False)); sliding pattern: odd-numbered layers below max_window_layers.
    f = _decoder(c, kv_default=16, head_dim_default=None, max_seq=32768, tied=False)
    f = _experts(c, f, "num_experts", _sparse_layers(c, f["layers"]), moe_ffn_key="moe_intermediate_size")
    shared = c.int("shared_expert_intermediate_size", low=0)
    f = {**f, "attention_bias": "qkv" if c.flag("qkv_bias", True) else "none",
         "shared_experts": 1 if shared else 0, "shared_ffn_hidden": shared or None,
         "shared_expert_gate": bool(shared)}
    return _qwen_window(c, f, lambda i, first: (i + 1) % 2 and i < first)


def _qwen3_moe(c: HfConfig) -> dict:
    # Qwen3MoeConfig: kv 4, head_dim = hidden / heads (no class field), max_position_embeddings
    # 32768, attention_bias False, q/k norms, no shared expert, router without bias.
    f = _decoder(c, kv_default=4, head_dim_default=None, max_seq=32768, tied=False)
    f = _experts(c, f, "num_experts", _sparse_layers(c, f["layers"]), moe_ffn_key="moe_intermediate_size")
    f = {**f, "qk_norm": True, "attention_bias": "qkvo" if c.flag("attention_bias", False) else "none"}
    return _qwen_window(c, f, lambda i, first: True)


def _gpt_oss(c: HfConfig) -> dict:
    # GptOssConfig: kv 8, head_dim 64, max_position_embeddings 131072, sliding_window 128 on
    # even-indexed layers (layer_types), attention_bias True, tie False. Modeling: experts
    # carry gate_up and down biases, the router a bias, each attention head a sink logit.
    f = _decoder(c, kv_default=8, head_dim_default=64, max_seq=131072, tied=False)
    f = _experts(c, f, "num_local_experts", f["layers"], moe_ffn_key="intermediate_size")
    f = {**f, "bias": True, "router_bias": True, "attention_sinks": True,
         "attention_bias": "qkvo" if c.flag("attention_bias", True) else "none"}
    pattern = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(f["layers"])]
    return _window(c, f, _nullable(c, "sliding_window", 128), pattern)


def _deepseek(c: HfConfig, *, kv_default, max_seq: int, first_dense: int, router_bias: bool) -> dict:
    heads = c.int("num_attention_heads")
    nope, rope = c.int("qk_nope_head_dim", 128), c.int("qk_rope_head_dim", 64)
    layers = c.int("num_hidden_layers")
    dense = c.int("first_k_dense_replace", first_dense, low=0)
    if dense > layers:
        c.fail(f"first_k_dense_replace={dense} exceeds num_hidden_layers={layers}")
    f = dict(layers=layers, hidden=c.int("hidden_size"), heads=heads,
             kv_heads=c.int("num_key_value_heads", heads if kv_default is None else kv_default),
             head_dim=nope + rope, vocab=c.int("vocab_size"), tied_embeddings=c.flag("tie_word_embeddings", False),
             max_seq=c.int("max_position_embeddings", max_seq), position="rope", norm="rmsnorm", bias=False,
             attention="mla", ffn_type="swiglu",
             attention_bias="qkvo" if c.flag("attention_bias", False) else "none",
             q_lora_rank=_nullable(c, "q_lora_rank", 1536), kv_lora_rank=c.int("kv_lora_rank", 512),
             qk_rope_head_dim=rope, qk_nope_head_dim=nope, v_head_dim=c.int("v_head_dim", 128))
    f = _experts(c, f, "n_routed_experts", layers - dense, moe_ffn_key="moe_intermediate_size")
    shared = c.int("n_shared_experts", low=0)
    # the shared experts are one MLP of moe_intermediate_size x n_shared_experts
    return {**f, "shared_experts": shared, "shared_ffn_hidden": shared * f["moe_ffn_hidden"] or None,
            "router_bias": router_bias, "mtp_layers": c.int("num_nextn_predict_layers", 0, low=0)}


def _deepseek_v2(c: HfConfig) -> dict:
    # DeepseekV2Config: kv = heads, max_position_embeddings 2048, first_k_dense_replace 0,
    # q_lora_rank 1536 (null: a plain q projection), kv_lora_rank 512, qk dims 128 + 64, v 128;
    # num_experts_per_tok has no usable default (None) and is required.
    return _deepseek(c, kv_default=None, max_seq=2048, first_dense=0, router_bias=False)


def _deepseek_v3(c: HfConfig) -> dict:
    # DeepseekV3Config: kv 128, max_position_embeddings 4096, first_k_dense_replace 3; the
    # router keeps an e_score_correction_bias per expert (stored in the checkpoint).
    # Kimi K2 (model_type kimi_k2) is this architecture (architectures: DeepseekV3ForCausalLM).
    return _deepseek(c, kv_default=128, max_seq=4096, first_dense=3, router_bias=True)


def _gemma(c: HfConfig, *, pattern_default: int | None, qk_norm: bool, max_seq: int) -> dict:
    # Gemma2Config / Gemma3TextConfig: kv 4, head_dim 256, tie True, attention_bias False,
    # sliding_window 4096; GeGLU MLP (gelu_pytorch_tanh gate); four RMSNorms per layer
    # (input, post-attention, pre- and post-feedforward).
    f = _decoder(c, kv_default=4, head_dim_default=256, max_seq=max_seq, tied=True)
    f = {**f, "ffn_hidden": c.int("intermediate_size"), "ffn_type": "geglu", "norms_per_layer": 4,
         "qk_norm": qk_norm, "attention_bias": "qkvo" if c.flag("attention_bias", False) else "none"}
    every = c.int("sliding_window_pattern", pattern_default) if pattern_default else 2
    pattern = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(f["layers"])]
    return _window(c, f, _nullable(c, "sliding_window", 4096), pattern)


def _gemma2(c: HfConfig) -> dict:
    # Gemma2Config: max_position_embeddings 8192; even-indexed layers slide.
    return _gemma(c, pattern_default=None, qk_norm=False, max_seq=8192)


def _gemma3(c: HfConfig) -> dict:
    # Gemma3TextConfig: max_position_embeddings 131072; sliding_window_pattern 6 (five local,
    # one global); q_norm and k_norm.
    return _gemma(c, pattern_default=6, qk_norm=True, max_seq=131072)


def _phi3(c: HfConfig) -> dict:
    # Phi3Config: kv = heads, head_dim = hidden / heads, max_position_embeddings 4096, tie
    # False, sliding_window None (every layer when set); fused qkv_proj and gate_up_proj
    # without biases hold the same weights as separate q, k, v and gate, up.
    f = _decoder(c, kv_default=None, head_dim_default=None, max_seq=4096, tied=False)
    f = {**f, "ffn_hidden": c.int("intermediate_size")}
    return _window(c, f, _nullable(c, "sliding_window", None), ["sliding_attention"] * f["layers"])


def _llama4(c: HfConfig) -> dict:
    # Llama4TextConfig: kv 8, head_dim 128, max_position_embeddings 131072, tie False,
    # interleave_moe_layer_step 1 (moe_layers default: every step-th layer, from step - 1),
    # intermediate_size = one expert and the shared expert, intermediate_size_mlp the dense
    # layers' MLP; attention_chunk_size 8192 on the RoPE layers (no_rope_layers default: every
    # 4th layer is global without RoPE). Its q/k L2 norm has no weights.
    f = _decoder(c, kv_default=8, head_dim_default=128, max_seq=131072, tied=False)
    layers = f["layers"]
    step = c.int("interleave_moe_layer_step", 1)
    moe = c.int_list("moe_layers", None)
    n_moe = len(set(moe)) if moe is not None else len(range(step - 1, layers, step))
    f = _experts(c, f, "num_local_experts", n_moe, moe_ffn_key="intermediate_size")
    if f["dense_layers"]:
        f["ffn_hidden"] = c.int("intermediate_size_mlp")
    f = {**f, "shared_experts": 1, "shared_ffn_hidden": f["moe_ffn_hidden"], "window_kind": "chunked"}
    rope = c.int_list("no_rope_layers", None) or [int((i + 1) % 4 != 0) for i in range(layers)]
    types = c.str_list("layer_types", layers) or \
        ["chunked_attention" if r else "full_attention" for r in rope[:layers]]
    return _window(c, f, _nullable(c, "attention_chunk_size", 8192), types)


def _gpt2(c: HfConfig) -> dict:
    # GPT2Config: n_inner None (4 x n_embd), n_positions 1024, tie True; every linear has a bias.
    hidden, heads = c.int("n_embd"), c.int("n_head")
    if hidden % heads:
        c.fail(f"n_embd={hidden} is not a multiple of n_head={heads}")
    return dict(layers=c.int("n_layer"), hidden=hidden, heads=heads, kv_heads=heads, head_dim=hidden // heads,
                ffn_hidden=c.int("n_inner", 4 * hidden), ffn_type="gelu", vocab=c.int("vocab_size"),
                tied_embeddings=c.flag("tie_word_embeddings", True), max_seq=c.int("n_positions", 1024),
                position="learned", norm="layernorm", bias=True, attention="mha")


def _opt(c: HfConfig) -> dict:
    # OPTConfig: max_position_embeddings 2048, enable_bias True, tie True.
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        c.fail(f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}")
    if c.int("word_embed_proj_dim", hidden) != hidden:
        c.fail("config key 'word_embed_proj_dim' differs from hidden_size (OPT-350m's projected "
               "embeddings); this layout is not supported")
    return dict(layers=c.int("num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=heads,
                head_dim=hidden // heads, ffn_hidden=c.int("ffn_dim"), ffn_type="relu", vocab=c.int("vocab_size"),
                tied_embeddings=c.flag("tie_word_embeddings", True),
                max_seq=c.int("max_position_embeddings", 2048), position="learned", norm="layernorm",
                bias=c.flag("enable_bias", True), attention="mha")


def _bert(c: HfConfig) -> dict:
    # BertConfig: max_position_embeddings 512, type_vocab_size 2; the record assumes 2.
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    if hidden % heads:
        c.fail(f"hidden_size={hidden} is not a multiple of num_attention_heads={heads}")
    if c.int("type_vocab_size", 2) != 2:
        c.fail(f"config key 'type_vocab_size'={c.data['type_vocab_size']!r} is not supported: the record "
               "assumes BERT's 2 token types")
    return dict(layers=c.int("num_hidden_layers"), hidden=hidden, heads=heads, kv_heads=heads,
                head_dim=hidden // heads, ffn_hidden=c.int("intermediate_size"), ffn_type="gelu",
                vocab=c.int("vocab_size"), tied_embeddings=True, max_seq=c.int("max_position_embeddings", 512),
                position="learned", norm="layernorm", bias=True, attention="mha", encoder_only=True)


# Nemotron-H block letters (hybrid_override_pattern) and their layers_block_type names
_NEMOTRON_H_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_NEMOTRON_H_TYPES = {"linear_attention": "M", "mamba": "M", "full_attention": "*", "attention": "*", "mlp": "-",
                     "moe": "E"}


def _nemotron_h(c: HfConfig) -> dict:
    # NemotronHConfig (transformers configuration_nemotron_h.py): kv 8, head_dim 128, intermediate
    # 21504, relu2 (squared-ReLU, two matrices) MLP, mamba_num_heads 128, mamba_head_dim 64,
    # ssm_state_size 128, n_groups 8 (mamba_n_groups), conv_kernel 4 (mamba_d_conv), no biases,
    # tie False, max_position_embeddings 4096; hybrid_override_pattern (M Mamba-2, * attention,
    # - MLP, E MoE: one block per layer, one RMSNorm each) or layers_block_type; no rotary
    # embeddings (the Mamba-2 layers carry position). MoE (Nemotron 3): n_routed_experts 8,
    # num_experts_per_tok 2, moe_intermediate_size 7688, one shared expert of
    # moe_shared_expert_intermediate_size, a router bias (e_score_correction_bias). moe_latent_size
    # (default None; Nemotron 3 Super: 1024): LatentMoE, the routed experts in a projected width
    # (fc1_latent_proj / fc2_latent_proj, see aisize.models.counts [9]).
    pattern = c.data.get("hybrid_override_pattern")
    types = c.data.get("layers_block_type")
    if isinstance(types, list) and all(isinstance(t, str) and t in _NEMOTRON_H_TYPES for t in types):
        pattern = "".join(_NEMOTRON_H_TYPES[t] for t in types)
    if not isinstance(pattern, str) or not pattern or set(pattern) - set(_NEMOTRON_H_BLOCKS):
        c.fail(f"config key 'hybrid_override_pattern'={pattern!r} (or 'layers_block_type') is required: one "
               f"letter per layer from {sorted(_NEMOTRON_H_BLOCKS)}")
    hidden, heads = c.int("hidden_size"), c.int("num_attention_heads")
    kv = c.int("num_key_value_heads", 8)
    if kv > heads or heads % kv:
        c.fail(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv}")
    layers = len(pattern)
    n_moe, n_mlp = pattern.count("E"), pattern.count("-")
    f = dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv,
             head_dim=c.int("head_dim", c.int("attention_head_dim", 128)), vocab=c.int("vocab_size", 131072),
             tied_embeddings=c.flag("tie_word_embeddings", False), max_seq=c.int("max_position_embeddings", 4096),
             position="none", norm="rmsnorm", bias=False, attention=_kind(heads, kv), ffn_type="relu",
             ffn_hidden=c.int("intermediate_size", 21504), norms_per_layer=1,
             attention_bias="qkvo" if c.flag("attention_bias", False) else "none",
             attention_layers=pattern.count("*"), mamba_layers=pattern.count("M"), ffn_layers=n_moe + n_mlp,
             mamba_heads=c.int("mamba_num_heads", 128), mamba_head_dim=c.int("mamba_head_dim", 64),
             ssm_state_size=c.int("ssm_state_size", 128), mamba_groups=c.int("n_groups", c.int("mamba_n_groups", 8)),
             mamba_conv_kernel=c.int("conv_kernel", c.int("mamba_d_conv", 4)),
             mtp_layers=c.int("num_nextn_predict_layers", 0, low=0))
    if n_moe:
        experts, top_k = c.int("n_routed_experts", 8), c.int("num_experts_per_tok", 2)
        if top_k > experts:
            c.fail(f"num_experts_per_tok={top_k} exceeds n_routed_experts={experts}")
        shared = c.int("n_shared_experts", 1, low=0)
        f.update(experts=experts, experts_per_token=top_k, moe_ffn_hidden=c.int("moe_intermediate_size", 7688),
                 dense_layers=layers - n_moe, shared_experts=shared, router_bias=True,
                 shared_ffn_hidden=shared * c.int("moe_shared_expert_intermediate_size", 7688) or None,
                 moe_latent_size=_nullable(c, "moe_latent_size", None))
    elif _nullable(c, "moe_latent_size", None) is not None:
        c.fail(f"config key 'moe_latent_size'={c.data['moe_latent_size']!r} is set but hybrid_override_pattern has "
               "no MoE layer ('E'): the latent is the routed experts' width")
    return f


_DEFAULTS = dict(experts=1, experts_per_token=1, shared_experts=0, moe_ffn_hidden=None, dense_layers=0,
                 q_lora_rank=None, kv_lora_rank=None, qk_rope_head_dim=None, qk_nope_head_dim=None,
                 v_head_dim=None, encoder_only=False)


def _with_defaults(builder):
    return lambda c: {**_DEFAULTS, **builder(c)}


BUILDERS = {name: _with_defaults(b) for name, b in {
    "llama": _llama, "mistral": _mistral, "mixtral": _mixtral, "qwen2": _qwen2, "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3, "qwen3_moe": _qwen3_moe, "gpt_oss": _gpt_oss, "deepseek_v2": _deepseek_v2,
    "deepseek_v3": _deepseek_v3, "kimi_k2": _deepseek_v3, "gemma2": _gemma2, "gemma3_text": _gemma3,
    "phi3": _phi3, "llama4_text": _llama4, "gpt2": _gpt2, "opt": _opt, "bert": _bert,
    "nemotron_h": _nemotron_h}.items()}
# a top-level config of these types holds a text_config (hf_config._unwrap reads it)
BUILDERS["gemma3"] = BUILDERS["gemma3_text"]
BUILDERS["llama4"] = BUILDERS["llama4_text"]

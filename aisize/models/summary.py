"""A plain-text description of one model: architecture, parameters, bytes per precision."""

from __future__ import annotations

from aisize.models.counts import transformer_params
from aisize.models.kv_cache import kv_bytes_per_token
from aisize.precision import bytes_per_element

WEIGHT_DTYPES = ("bf16", "fp8", "mxfp4", "nvfp4", "int4-g128")
KV_DTYPES = ("bf16", "fp8")


def _b(n: float) -> str:
    return f"{n / 1e9:,.3f} B"


def model_text(m, *, safetensors_bytes: int | None = None, checkpoint_dtype: str | None = None) -> str:
    """What ``aisize model`` prints for a Transformer record ``m``.

    Parameters
    ----------
    safetensors_bytes : ``metadata.total_size`` of the model.safetensors.index.json beside the
        config, shown beside our count at ``checkpoint_dtype`` (the config's torch_dtype).
    """
    c = transformer_params(m)
    lines = [f"{m.name}  ({m.family}; {m.source})", ""]
    attn = m.attention.upper()
    if m.attention == "mla":
        attn += (f" (kv_lora_rank {m.kv_lora_rank}, q_lora_rank {m.q_lora_rank}, qk {m.qk_nope_head_dim}+"
                 f"{m.qk_rope_head_dim}, v {m.v_head_dim})")
    lines += [f"layers {m.layers}, hidden {m.hidden}, heads {m.heads}, kv_heads {m.kv_heads}, head_dim {m.head_dim}",
              f"attention {attn}; MLP {m.ffn_type} {m.ffn_hidden}; vocab {m.vocab:,}"
              f"{' (tied embeddings)' if m.tied_embeddings else ''}; context {m.max_seq:,} tokens"]
    if m.experts > 1:
        shared = f", shared {m.shared_experts} x (total inner {m.shared_ffn_hidden})" if m.shared_experts else ""
        lines.append(f"MoE: {m.experts} experts of {m.moe_ffn_hidden}, {m.experts_per_token} per token{shared}; "
                     f"{c.moe_layers} MoE layers, {m.dense_layers} dense")
    if m.sliding_layers:
        lines.append(f"{m.window_kind} window {m.sliding_window:,} tokens on {m.sliding_layers} of {m.layers} layers")
    lines += ["", f"parameters: total {_b(c.total)} ({c.total:,})",
              f"  active per token {_b(c.active)} with the embedding table (Meta, DeepSeek, Qwen), "
              f"{_b(c.active_excl_embedding)} without it (OpenAI)",
              f"  embedding {_b(c.embedding)}, attention {_b(c.attention)}, MLP/experts {_b(c.mlp)}, "
              f"norms {_b(c.norm)}, output head {_b(c.head)}"]
    if safetensors_bytes is not None:
        ours = "" if checkpoint_dtype is None else \
            f"; ours at {checkpoint_dtype}: {c.total * bytes_per_element(checkpoint_dtype) / 1e9:,.2f} GB"
        lines.append(f"  model.safetensors.index.json total_size: {safetensors_bytes / 1e9:,.2f} GB{ours}")
    lines += ["", "weights:   " + ", ".join(f"{d} {c.total * bytes_per_element(d) / 2**30:,.1f} GiB"
                                       for d in WEIGHT_DTYPES),
              "KV cache per token (all layers growing): "
              + ", ".join(f"{d} {kv_bytes_per_token(m, d) / 1024:,.1f} KiB" for d in KV_DTYPES)]
    return "\n".join(lines) + "\n"

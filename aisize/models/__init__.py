"""Transformer architectures: parameter counts, Hugging Face import, KV-cache sizes.

Every way of naming a model ends in one :class:`~aisize.catalog.Transformer` record::

    from aisize import models
    m = models.resolve("llama-3-70b")                 # a catalog id
    m = models.from_hf_config("path/to/config.json")  # or a folder, or the parsed dict
    models.params(m).total, models.params(m).active
    models.kv_bytes_per_token(m, "bf16", tp=8)
    models.kv_bytes_per_sequence(m, [1024, 32768], "fp8")
    models.ssm_state_bytes_per_sequence(m)            # hybrid Mamba-2 models: a fixed state per sequence
    models.block_params(m)                            # parameters by layer kind (attention, mamba, mlp, moe)
    models.expert_width(m)                            # latent MoE (Nemotron 3 Super): the experts' latent width

Active parameters include the embedding table (Meta's, Mistral's and DeepSeek's
convention); ``params(m).active_excl_embedding`` is OpenAI's (gpt-oss card).
"""

from aisize.models.counts import (GATED_FFN, BlockParams, ParamCount, active_params, attention_dim,
                                  attention_layer_count, block_params, expert_width, ffn_layer_count,
                                  latent_projection_params, mamba_block_params,
                                  mamba_scan_flops_per_token, moe_layers, transformer_params, validate)
from aisize.models.hf_config import from_hf_config, safetensors_total_bytes, supported_model_types
from aisize.models.kv_cache import (gqa_kv_bytes_per_token, kv_bytes_per_sequence, kv_bytes_per_token,
                                    layer_kv_bytes_per_token, mla_kv_bytes_per_token, ssm_state_bytes_per_sequence)
from aisize.models.resolve import from_fields, params, resolve

__all__ = ["resolve", "from_hf_config", "from_fields", "params", "ParamCount", "transformer_params",
           "active_params", "attention_dim", "moe_layers", "validate", "GATED_FFN", "supported_model_types",
           "safetensors_total_bytes", "kv_bytes_per_token", "kv_bytes_per_sequence", "layer_kv_bytes_per_token",
           "gqa_kv_bytes_per_token", "mla_kv_bytes_per_token", "ssm_state_bytes_per_sequence",
           "attention_layer_count", "ffn_layer_count", "mamba_block_params", "BlockParams", "block_params",
           "mamba_scan_flops_per_token", "expert_width", "latent_projection_params"]

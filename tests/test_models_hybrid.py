"""Hybrid Mamba-2 / attention models (Nemotron-H, Nemotron 3) from config.json, and MTP modules.

Published figures: NVIDIA Nemotron 3 Nano 30B-A3B model card (31.6 B total, 3.2 B active, 3.6 B with
embeddings); Nemotron-H 8B (arXiv:2504.03624: an 8 B model, 52 layers: 24 Mamba-2, 4 attention,
24 MLP).
"""

import pytest

from aisize import models, training

# nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (the keys that size it)
NANO = {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": False,
        "chunk_size": 128, "conv_kernel": 4, "head_dim": 128, "hidden_size": 2688,
        "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
        "intermediate_size": 1856, "mamba_head_dim": 64, "mamba_num_heads": 64, "max_position_embeddings": 262144,
        "mlp_hidden_act": "relu2", "moe_intermediate_size": 1856, "moe_shared_expert_intermediate_size": 3712,
        "n_groups": 8, "n_routed_experts": 128, "n_shared_experts": 1, "num_attention_heads": 32,
        "num_experts_per_tok": 6, "num_hidden_layers": 52, "num_key_value_heads": 2, "ssm_state_size": 128,
        "tie_word_embeddings": False, "vocab_size": 131072}
# nvidia/Nemotron-H-8B-Base-8K config.json (the keys that size it)
H8B = {"model_type": "nemotron_h", "hidden_size": 4096,
       "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
       "intermediate_size": 21504, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
       "mamba_num_heads": 128, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4,
       "vocab_size": 131072, "num_hidden_layers": 52, "tie_word_embeddings": False,
       "max_position_embeddings": 8192}


def test_nemotron3_nano_counts_match_the_model_card():
    m = models.from_hf_config(NANO)
    assert (m.layers, m.attention_layers, m.mamba_layers, m.ffn_layers) == (52, 6, 23, 23)
    p = models.params(m)
    assert p.total == pytest.approx(31.6e9, rel=0.005)
    assert p.active == pytest.approx(3.6e9, rel=0.02)  # "3.6 B including embeddings"
    assert p.active_excl_embedding == pytest.approx(3.2e9, rel=0.02)


def test_nemotron_h_8b_counts_and_blocks():
    m = models.from_hf_config(H8B)
    assert (m.attention_layers, m.mamba_layers, m.ffn_layers, m.norms_per_layer) == (4, 24, 24, 1)
    assert models.params(m).total == pytest.approx(8.1e9, rel=0.01)
    # one Mamba-2 block: in_proj 4096 x (8192 + 10240 + 128), conv (10240 x 5), 3 x 128, norm 8192, out 8192 x 4096
    assert models.mamba_block_params(m) == 4096 * 18560 + 10240 * 5 + 384 + 8192 + 8192 * 4096


def test_ssm_state_replaces_the_kv_cache_on_mamba_layers():
    m = models.from_hf_config(H8B)
    # 24 layers x (3 x 10,240 bf16 conv inputs + 128 x 64 x 128 fp32 state) = 102.1 MB, whatever the context
    assert models.ssm_state_bytes_per_sequence(m) == pytest.approx(24 * (3 * 10240 * 2 + 128 * 64 * 128 * 4))
    assert models.ssm_state_bytes_per_sequence(m, tp=8) < models.ssm_state_bytes_per_sequence(m) / 7
    # K and V on the 4 attention layers only: 4 x 2 x 8 x 128 x 2 B
    assert models.kv_bytes_per_token(m) == 4 * 2 * 8 * 128 * 2
    assert models.kv_bytes_per_sequence(m, 1000) == pytest.approx(1000 * 4 * 2 * 8 * 128 * 2)
    assert models.ssm_state_bytes_per_sequence("llama-3-8b") == 0.0


def test_bad_hybrid_configs_are_named():
    with pytest.raises(ValueError, match="hybrid_override_pattern"):
        models.from_hf_config({**H8B, "hybrid_override_pattern": "MX*"})
    with pytest.raises(ValueError, match="moe_latent_size"):
        models.from_hf_config({**H8B, "moe_latent_size": 1024})  # a latent needs MoE layers


def test_hybrid_training_counts_attention_on_its_layers_only():
    hybrid = models.from_hf_config(H8B)
    kw = dict(gpus=8, micro_batch=1, global_batch=64, seq_len=8192, framework="megatron", recompute="none")
    r = training.estimate(hybrid, "b200", **kw)
    assert r.fits and r.tokens_per_s_per_gpu > 0
    # the same widths with every mixer an attention layer: more attention FLOPs per token, slower
    dense = models.from_hf_config({**H8B, "hybrid_override_pattern": "*-*-*-*--*-*-*-*-*--*-*-*-*-*--*-*-*-*-*--*-*-*-*-*-"})
    assert training.estimate(dense, "b200", **kw).step_seconds > r.step_seconds


def test_mtp_module_adds_a_layer_and_a_head_on_the_last_stage():
    nano = models.from_hf_config(NANO)
    mtp = models.from_hf_config({**NANO, "num_nextn_predict_layers": 1})
    assert mtp.mtp_layers == 1 and models.params(mtp).total == models.params(nano).total  # not in the count
    kw = dict(gpus=8, micro_batch=2, global_batch=64, seq_len=4096, framework="megatron", recompute="none",
              expert_parallel=8, expert_tensor_parallel=1)
    a, b = training.estimate(nano, "b200", **kw), training.estimate(mtp, "b200", **kw)
    assert b.step_seconds > a.step_seconds and b.peak_memory_bytes > a.peak_memory_bytes

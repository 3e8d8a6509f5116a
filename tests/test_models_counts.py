"""Transformer parameter counts from architecture fields (aisize/models/counts.py)."""

import dataclasses
import json

import pytest

from aisize import catalog
from aisize.models import active_params, from_hf_config, transformer_params

# meta-llama/Llama-2-7b-hf config.json, as published (keys that matter for the count).
LLAMA2_7B_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 32, "vocab_size": 32000, "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-05, "hidden_act": "silu", "tie_word_embeddings": False,
    "torch_dtype": "float16", "_name_or_path": "meta-llama/Llama-2-7b-hf",
}


# Published figures rounded coarser than 1 %: Kimi K2's card says "1T" (count 1,026 B); Llama 4
# Scout's 109 B includes its vision encoder, which a record leaves out (count 107.8 B).
COARSE = {"kimi-k2": 0.05, "llama-4-scout": 0.015}


@pytest.mark.parametrize("row", list(catalog.transformers), ids=lambda r: r.id)
def test_every_catalog_model_matches_its_published_count(row):
    # 1 % on totals, 3 % on MoE active counts (published as "37B", "3.3B"); vendors count
    # active with the embedding table (Meta, DeepSeek, Qwen) or without it (OpenAI).
    count = transformer_params(row)
    assert count.total == pytest.approx(row.published_params, rel=COARSE.get(row.id, 0.01))
    assert count.total == count.embedding + count.attention + count.mlp + count.norm + count.head
    if row.published_active_params is not None:
        error = min(abs(a / row.published_active_params - 1) for a in (count.active, count.active_excl_embedding))
        assert error <= 0.03
    else:
        assert count.active == count.total


def test_llama2_7b_from_hf_config_is_exact():
    # HF tensor count of Llama-2-7b-hf weights: 6,738,415,616. reference/training_runs.csv's
    # 6,738,417,664 also counts 32 layers x 64 rotary inv_freq buffers (2,048) stored in the
    # early safetensors files; those are not parameters.
    arch = from_hf_config(LLAMA2_7B_CONFIG)
    count = transformer_params(arch)
    assert count.total == 6_738_415_616
    assert 6_738_417_664 - count.total == 32 * 128 // 2
    assert count.embedding == 32000 * 4096 and count.head == 32000 * 4096
    assert (arch.attention, arch.ffn_type, arch.norm) == ("mha", "swiglu", "rmsnorm")
    assert arch.published_params == count.total


def test_from_hf_config_reads_a_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA2_7B_CONFIG))
    assert transformer_params(from_hf_config(path, id="l2")).total == 6_738_415_616


def test_gpt2_xl_and_bert_large_exact_counts():
    # Sum of model.parameters() for HF gpt2-xl (1,557,611,200) and BertModel bert-large (335,141,888).
    gpt2 = {"model_type": "gpt2", "n_layer": 48, "n_embd": 1600, "n_head": 25, "n_positions": 1024,
            "vocab_size": 50257}
    bert = {"model_type": "bert", "num_hidden_layers": 24, "hidden_size": 1024, "num_attention_heads": 16,
            "intermediate_size": 4096, "vocab_size": 30522, "max_position_embeddings": 512,
            "type_vocab_size": 2}
    assert transformer_params(from_hf_config(gpt2)).total == 1_557_611_200
    assert transformer_params(from_hf_config(bert)).total == 335_141_888


def test_mixtral_and_deepseek_v3_active():
    # Mixtral paper: 46.7B total, 12.9B active; DeepSeek-V3 report: 671B total, 37B activated.
    mixtral = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
               "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
               "vocab_size": 32000, "max_position_embeddings": 32768, "num_local_experts": 8,
               "num_experts_per_tok": 2}
    m = from_hf_config(mixtral)
    assert m.attention == "gqa"
    assert transformer_params(m).total == pytest.approx(46.7e9, rel=0.001)
    assert active_params(m) == pytest.approx(12.9e9, rel=0.002)
    ds = {"model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168,
          "num_attention_heads": 128, "num_key_value_heads": 128, "intermediate_size": 18432,
          "moe_intermediate_size": 2048, "n_routed_experts": 256, "n_shared_experts": 1,
          "num_experts_per_tok": 8, "first_k_dense_replace": 3, "q_lora_rank": 1536,
          "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
          "vocab_size": 129280, "max_position_embeddings": 163840}
    d = from_hf_config(ds)
    assert transformer_params(d).total == pytest.approx(671e9, rel=0.001)
    assert active_params(d) == pytest.approx(37e9, rel=0.02)
    assert d == dataclasses.replace(catalog.transformers["deepseek-v3"], id=d.id, name=d.name,
                                    family=d.family, max_seq=d.max_seq, published_params=d.published_params,
                                    published_active_params=d.published_active_params,
                                    source=d.source, note=d.note)


def test_opt_13b_matches_vllm_kv_dimensions():
    # vLLM paper: OPT-13B, 40 layers x hidden 5120 -> 2 x 5120 x 40 x 2 B = 800 KiB per token.
    opt = catalog.transformers["opt-13b"]
    assert 2 * opt.kv_heads * opt.head_dim * opt.layers * 2 == 800 * 1024


def test_unknown_model_type_and_missing_key():
    with pytest.raises(ValueError, match="model_type"):
        from_hf_config({"model_type": "t5"})
    broken = {k: v for k, v in LLAMA2_7B_CONFIG.items() if k != "intermediate_size"}
    with pytest.raises(ValueError, match="intermediate_size"):
        from_hf_config(broken)
    with pytest.raises(ValueError, match="config"):
        from_hf_config("/nonexistent/config.json")


def test_bad_architecture_fields_raise():
    row = catalog.transformers["llama-2-7b"]
    with pytest.raises(ValueError, match="kv_heads"):
        transformer_params(dataclasses.replace(row, kv_heads=64))
    with pytest.raises(ValueError, match="ffn_type"):
        transformer_params(dataclasses.replace(row, ffn_type="mish"))
    with pytest.raises(ValueError, match="experts_per_token"):
        transformer_params(dataclasses.replace(row, experts=8, experts_per_token=9, moe_ffn_hidden=1))
    with pytest.raises(ValueError, match="moe_ffn_hidden"):
        transformer_params(dataclasses.replace(row, experts=8, experts_per_token=2))


def test_attention_dim_is_heads_times_head_dim():
    from aisize.models import attention_dim

    # Llama-3-70B: 64 heads x 128 = 8192 = hidden; DeepSeek-V3 MLA: 128 heads x
    # (192 query/key dims + 128 value dims) / 2 (config.json of deepseek-ai/DeepSeek-V3).
    assert attention_dim(catalog.transformers["llama-3-70b"]) == 8192
    assert attention_dim(catalog.transformers["deepseek-v3"]) == 128 * (192 + 128) // 2


def test_heads_must_be_a_multiple_of_kv_heads():
    row = catalog.transformers["llama-3-8b"]
    with pytest.raises(ValueError, match="heads=32 must be a multiple of kv_heads"):
        transformer_params(dataclasses.replace(row, kv_heads=5))
    with pytest.raises(ValueError, match="sliding_window"):
        transformer_params(dataclasses.replace(row, sliding_layers=4))


def test_resolve_accepts_ids_records_configs_and_inline_fields():
    from aisize.models import from_fields, params, resolve

    row = catalog.transformers["llama-2-7b"]
    assert resolve("llama-2-7b") is row and resolve(row) is row
    via_config = resolve({"hf_config": LLAMA2_7B_CONFIG, "id": "l2"})
    assert via_config.id == "l2" and params(via_config).total == 6_738_415_616
    inline = dict(id="my-7b", layers=32, hidden=4096, heads=32, vocab=32000, ffn_hidden=11008, max_seq=4096,
                  source="our design doc")
    m = resolve(inline)
    assert (m.kv_heads, m.head_dim, m.attention, m.ffn_type) == (32, 128, "mha", "swiglu")
    assert params(m).total == 6_738_415_616 and m.published_params == 6_738_415_616
    with pytest.raises(ValueError, match=r"\['source'\] are missing"):
        from_fields({k: v for k, v in inline.items() if k != "source"})
    with pytest.raises(ValueError, match="not allowed"):
        from_fields(dict(inline, wings=2))
    with pytest.raises(ValueError, match="kv_heads"):
        resolve(dict(inline, kv_heads=5))
    with pytest.raises(ValueError, match="model=3"):
        resolve(3)

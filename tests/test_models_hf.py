"""Hugging Face config.json import (aisize/models/hf_config.py, hf_families.py) against published counts."""

import json

import pytest

from aisize import catalog, models
from aisize.models import from_hf_config, params, safetensors_total_bytes
from hf_configs import (DEEPSEEK_V2_LITE, GEMMA3_27B, GPT_OSS_120B, LLAMA4_MAVERICK, LLAMA4_SCOUT, LLAMA_3_1_8B,
                        MIXTRAL_8X7B, PUBLISHED, QWEN1_5_MOE, QWEN2_5_7B, QWEN3_235B)

# Vendors that leave the input embeddings out of "active" (OpenAI's gpt-oss card says so;
# DeepSeek-V2-Lite's 2.4 B matches only without them). Everyone else counts them.
ACTIVE_WITHOUT_EMBEDDING = {"openai/gpt-oss-120b", "openai/gpt-oss-20b", "deepseek-ai/DeepSeek-V2-Lite"}
ACTIVE_TOLERANCE = 0.03  # published active counts have two or three significant digits


@pytest.mark.parametrize("repo", sorted(PUBLISHED))
def test_total_and_active_match_the_published_figures(repo):
    config, total, tol, active, _source = PUBLISHED[repo]
    count = params(from_hf_config(config))
    if tol == 0:
        assert count.total == total
    else:
        assert count.total == pytest.approx(total, rel=tol)
    if active is not None:
        got = count.active_excl_embedding if repo in ACTIVE_WITHOUT_EMBEDDING else count.active
        assert got == pytest.approx(active, rel=ACTIVE_TOLERANCE)
        assert count.active < count.total


def test_gpt_oss_conventions_differ_by_the_embedding_table():
    # card: 116.83 B total, 5.13 B active "counting the unembedding but not the embedding";
    # with the embedding table (our active) 201,088 x 2,880 more.
    count = params(from_hf_config(GPT_OSS_120B))
    assert count.active_excl_embedding == pytest.approx(5.13e9, rel=0.001)
    assert count.active - count.active_excl_embedding == 201_088 * 2_880
    m = from_hf_config(GPT_OSS_120B)
    assert (m.sliding_window, m.sliding_layers, m.attention_sinks, m.router_bias) == (128, 18, True, True)
    # attention of one layer: q, k, v, o weights and biases, and 64 sinks
    h, q, kv = 2880, 64 * 64, 8 * 64
    assert count.attention == 36 * (2 * h * q + 2 * h * kv + q + 2 * kv + h + 64)


def test_tied_embeddings_hold_one_table():
    tied = params(from_hf_config(dict(LLAMA_3_1_8B, tie_word_embeddings=True)))
    untied = params(from_hf_config(LLAMA_3_1_8B))
    assert untied.total - tied.total == 128256 * 4096 and tied.head == 0
    assert tied.active_excl_embedding == tied.active  # the tied table is the unembedding


def test_llama4_interleaved_moe_and_chunked_attention():
    mav, scout = from_hf_config(LLAMA4_MAVERICK), from_hf_config(LLAMA4_SCOUT)
    assert (mav.dense_layers, mav.ffn_hidden, mav.moe_ffn_hidden, mav.shared_ffn_hidden) == (24, 16384, 8192, 8192)
    assert (scout.dense_layers, scout.experts, scout.shared_experts) == (0, 16, 1)
    # attention_chunk_size 8192 on 3 of every 4 layers (no_rope_layers default)
    assert (scout.sliding_window, scout.sliding_layers, scout.window_kind) == (8192, 36, "chunked")
    assert mav.family == "llama4_text" and "vision encoder is not counted" in mav.note
    explicit = dict(LLAMA4_SCOUT, text_config=dict(LLAMA4_SCOUT["text_config"], moe_layers=[1, 3],
                                                   intermediate_size_mlp=16384))
    assert from_hf_config(explicit).dense_layers == 46


def test_qwen_biases_norms_and_shared_expert():
    q25 = params(from_hf_config(QWEN2_5_7B))
    h, q, kv = 3584, 28 * 128, 4 * 128
    assert q25.attention == 28 * (2 * h * q + 2 * h * kv + q + 2 * kv)  # q, k, v biases; o none
    q3 = from_hf_config(QWEN3_235B)
    assert q3.qk_norm and params(q3).norm == 94 * (2 * 4096 + 2 * 128) + 4096
    moe = from_hf_config(QWEN1_5_MOE)
    assert (moe.shared_experts, moe.shared_ffn_hidden, moe.shared_expert_gate) == (1, 5632, True)
    sparse_every_2nd = from_hf_config(dict(QWEN1_5_MOE, decoder_sparse_step=2, mlp_only_layers=[1]))
    assert sparse_every_2nd.dense_layers == 13  # 12 odd-numbered layers dense by the step, plus layer 1


def test_deepseek_mla_shared_experts_and_dense_layers():
    lite = from_hf_config(DEEPSEEK_V2_LITE)
    assert lite.q_lora_rank is None and lite.attention == "mla"
    assert (lite.dense_layers, lite.shared_experts, lite.shared_ffn_hidden) == (1, 2, 2 * 1408)
    v3 = from_hf_config(PUBLISHED["deepseek-ai/DeepSeek-V3"][0])
    assert v3.router_bias and not lite.router_bias  # V3's e_score_correction_bias
    row = catalog.transformers["deepseek-v3"]
    assert params(v3).total == params(row).total


def test_gemma3_pattern_norms_and_text_config():
    g = from_hf_config(GEMMA3_27B)
    assert (g.family, g.ffn_type, g.norms_per_layer, g.qk_norm, g.tied_embeddings) == (
        "gemma3_text", "geglu", 4, True, True)
    assert (g.sliding_window, g.sliding_layers, g.head_dim) == (1024, 52, 128)  # head_dim != 5376 / 32
    # Gemma 3 report Table 1: 25,600 M non-embedding parameters
    count = params(g)
    assert count.total - count.embedding == pytest.approx(25_600e6, rel=0.001)


def test_missing_optional_keys_take_the_hf_defaults():
    bare = {k: v for k, v in QWEN2_5_7B.items()
            if k in ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "num_key_value_heads", "intermediate_size", "vocab_size")}
    m = from_hf_config(bare)
    assert (m.max_seq, m.tied_embeddings, m.sliding_layers) == (32768, False, 0)  # Qwen2Config defaults
    mistral = from_hf_config({k: v for k, v in PUBLISHED["mistralai/Mistral-7B-v0.1"][0].items()
                              if k not in ("sliding_window", "max_position_embeddings")})
    assert (mistral.sliding_window, mistral.sliding_layers, mistral.max_seq) == (4096, 32, 131072)
    assert from_hf_config(dict(bare, model_type="mistral", sliding_window=None)).sliding_layers == 0
    gpt_oss = from_hf_config({k: v for k, v in GPT_OSS_120B.items() if k not in ("layer_types", "sliding_window")})
    assert (gpt_oss.sliding_window, gpt_oss.sliding_layers) == (128, 18)


def test_reads_a_file_a_folder_and_the_safetensors_index(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(MIXTRAL_8X7B))
    by_folder, by_file = from_hf_config(tmp_path), from_hf_config(tmp_path / "config.json", id="mx")
    assert params(by_folder).total == params(by_file).total == 46_702_792_704
    assert by_folder.id == tmp_path.name and by_file.id == "mx" and str(tmp_path) in by_file.source
    assert safetensors_total_bytes(tmp_path) is None
    index = {"metadata": {"total_size": 93_405_585_408}, "weight_map": {}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert safetensors_total_bytes(tmp_path / "config.json") == 2 * 46_702_792_704
    (tmp_path / "model.safetensors.index.json").write_text("{}")
    with pytest.raises(ValueError, match="total_size"):
        safetensors_total_bytes(tmp_path)


@pytest.mark.parametrize("change, message", [
    (dict(model_type="t5"), "model_type='t5' is not supported; supported: .*qwen3_moe"),
    (dict(num_attention_heads=0), "'num_attention_heads'=0 is not allowed: must be a whole number >= 1"),
    (dict(num_attention_heads=28, num_key_value_heads=5), "num_attention_heads=28 is not a multiple of "
                                                          "num_key_value_heads=5"),
    (dict(hidden_size=None), "'hidden_size' is missing and is required"),
    (dict(vocab_size="big"), "'vocab_size'='big' is not allowed"),
    (dict(tie_word_embeddings="yes"), "'tie_word_embeddings'='yes' is not allowed: must be true or false"),
])
def test_bad_configs_name_the_key(change, message):
    with pytest.raises(ValueError, match=message):
        from_hf_config({**QWEN2_5_7B, **change})


def test_bad_moe_configs_name_the_key():
    with pytest.raises(ValueError, match="num_experts_per_tok=9 exceeds num_local_experts=8"):
        from_hf_config(dict(MIXTRAL_8X7B, num_experts_per_tok=9))
    with pytest.raises(ValueError, match="'n_shared_experts' is missing"):
        from_hf_config({k: v for k, v in DEEPSEEK_V2_LITE.items() if k != "n_shared_experts"})
    with pytest.raises(ValueError, match="first_k_dense_replace=99 exceeds num_hidden_layers=27"):
        from_hf_config(dict(DEEPSEEK_V2_LITE, first_k_dense_replace=99))
    with pytest.raises(ValueError, match="'layer_types' is not allowed: must list one attention type per layer"):
        from_hf_config(dict(GPT_OSS_120B, layer_types=["full_attention"]))


def test_unreadable_sources_are_clear(tmp_path):
    with pytest.raises(ValueError, match="local files only"):
        from_hf_config("meta-llama/Llama-3.1-8B")  # a Hub id is never fetched
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON object"):
        from_hf_config(tmp_path)
    with pytest.raises(ValueError, match="config=42"):
        from_hf_config(42)


def test_every_supported_type_builds():
    assert set(models.supported_model_types()) >= {
        "llama", "llama4", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2",
        "deepseek_v3", "gpt_oss", "gemma2", "gemma3", "phi3", "gpt2", "opt", "bert"}

"""KV-cache bytes per token and per sequence (aisize/models/kv_cache.py): GQA, MLA, sliding and chunked."""

import numpy as np
import pytest

from aisize import models
from aisize.models import from_hf_config, kv_bytes_per_sequence, kv_bytes_per_token
from aisize.units import KiB
from hf_configs import DEEPSEEK_V3, GEMMA3_27B, GPT_OSS_120B, LLAMA4_SCOUT, LLAMA_3_1_70B, MISTRAL_7B_V01


def test_gqa_llama_3_1_70b_is_320_kib_per_token():
    # 80 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 327,680 B (DESIGN.md: 320 KiB); TP 8 splits heads.
    m = from_hf_config(LLAMA_3_1_70B)
    assert kv_bytes_per_token(m, "bf16") == 320 * KiB
    assert kv_bytes_per_token(m, "bf16", tp=8) == 40 * KiB
    assert kv_bytes_per_token(m, "fp8", tp=16) == 20 * KiB  # beyond 8 KV heads they are replicated
    assert kv_bytes_per_sequence(m, 131072, "bf16") == 131072 * 320 * KiB


def test_mla_deepseek_v3_caches_576_elements_per_layer():
    # DeepSeek-V2 paper Table 1: (d_c + d_h^R) = 512 + 64 per layer; 61 layers at bf16, on every TP rank.
    m = from_hf_config(DEEPSEEK_V3)
    assert kv_bytes_per_token(m, "bf16") == 61 * 576 * 2 == 70_272
    assert kv_bytes_per_token(m, "bf16", tp=8) == 70_272
    assert kv_bytes_per_sequence(m, 4096, "fp8") == 4096 * 61 * 576


def test_sliding_window_gemma3_27b():
    # Gemma 3 27B: 62 layers, 16 KV heads x 128 dims; 52 local layers keep 1,024 tokens, 10 global
    # layers keep everything. 2 x 16 x 128 x 2 B = 8 KiB per layer per token.
    m = from_hf_config(GEMMA3_27B)
    assert kv_bytes_per_token(m, "bf16") == 62 * 8 * KiB
    assert kv_bytes_per_sequence(m, 32768, "bf16") == 8 * KiB * (10 * 32768 + 52 * 1024)
    assert kv_bytes_per_sequence(m, 1000, "bf16") == 1000 * 62 * 8 * KiB  # below the window all grow


def test_sliding_window_gpt_oss_and_mistral_and_chunked_llama4():
    oss = from_hf_config(GPT_OSS_120B)  # 18 of 36 layers keep 128 tokens; 8 KV heads x 64 dims
    assert kv_bytes_per_sequence(oss, 8192, "bf16") == 2048 * (18 * 8192 + 18 * 128)
    mistral = from_hf_config(MISTRAL_7B_V01)  # every layer slides over 4,096 tokens (128 KiB per token)
    assert kv_bytes_per_token(mistral, "fp16") == 128 * KiB
    assert kv_bytes_per_sequence(mistral, 32768, "fp16") == 4096 * 128 * KiB
    scout = from_hf_config(LLAMA4_SCOUT)  # 36 chunked layers hold at most one 8,192-token chunk
    per_layer = 2 * 8 * 128 * 2
    assert kv_bytes_per_sequence(scout, 100_000, "bf16") == per_layer * (12 * 100_000 + 36 * 8192)


def test_per_sequence_is_vectorized_and_checks_inputs():
    m = from_hf_config(GEMMA3_27B)
    contexts = np.array([0, 512, 1024, 4096])
    got = kv_bytes_per_sequence(m, contexts, "bf16")
    assert got.shape == (4,) and got[0] == 0 and np.all(np.diff(got) > 0)
    assert got[3] == kv_bytes_per_sequence(m, 4096, "bf16")
    with pytest.raises(ValueError, match="context_tokens"):
        kv_bytes_per_sequence(m, -1, "bf16")
    with pytest.raises(ValueError, match="kv_dtype"):
        kv_bytes_per_token(m, "fp12")
    with pytest.raises(ValueError, match="tp"):
        kv_bytes_per_token(m, "bf16", tp=0)


def test_catalog_ids_resolve():
    assert kv_bytes_per_token("llama-3-70b", "bf16") == 320 * KiB
    assert models.layer_kv_bytes_per_token("deepseek-v3", "bf16") == 576 * 2
    with pytest.raises(ValueError, match="not in the catalog"):
        kv_bytes_per_token("no-such-model")

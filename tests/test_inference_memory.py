"""Inference memory: KV cache per token against vLLM, Llama and DeepSeek figures; weights; capacity."""

import pytest

from aisize.models import from_hf_config
from aisize.memory import (inference_memory, kv_bytes_per_token, kv_capacity, mla_kv_bytes_per_token,
                           paged_tokens, transformer_kv_bytes_per_token, weight_bytes)
from aisize.units import GB, GiB, KiB

# meta-llama/Llama-2-7b-hf config.json (Touvron et al. 2023, Table 1 / model card)
LLAMA2_7B = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
             "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
             "max_position_embeddings": 4096, "tie_word_embeddings": False, "rms_norm_eps": 1e-5}


def test_llama2_7b_512_kib_per_token():
    # 2 x 32 layers x 32 KV heads x 128 x 2 B = 524,288 B = 512 KiB (bytes exact).
    assert kv_bytes_per_token(32, 32, 128, "fp16") == 524288
    assert transformer_kv_bytes_per_token(from_hf_config(LLAMA2_7B), "fp16") == 512 * KiB


def test_opt13b_800_kb_per_token_and_1_6_gb_per_request():
    # Kwon et al. 2023 (vLLM), sec. 3: OPT-13B 2 x 5120 x 40 x 2 B = 800 KB/token; 2048 tokens -> 1.6 GB.
    per_token = kv_bytes_per_token(40, 40, 128, "fp16")
    assert per_token == 819200
    assert round(per_token * 2048 / GiB, 1) == 1.6


def test_llama3_70b_320_kib_and_tp_split():
    # Llama-3-70B: 80 layers, 8 KV heads, d_h 128 -> 327,680 B; TP splits KV heads over min(t, 8).
    assert kv_bytes_per_token(80, 8, 128, "bf16") == 320 * KiB
    assert kv_bytes_per_token(80, 8, 128, "bf16", tp=4) == 80 * KiB
    assert kv_bytes_per_token(80, 8, 128, "bf16", tp=16) == 40 * KiB


def test_deepseek_v3_mla_576_elements():
    # DeepSeek-V2 arXiv:2405.04434 sec. 2.1: MLA caches d_c + d_h^R = 512 + 64 = 576 elements per layer.
    assert mla_kv_bytes_per_token(1, 512, 64, "bf16") == 576 * 2
    assert mla_kv_bytes_per_token(61, 512, 64, "fp8") == 61 * 576


def test_paged_rounding():
    # vLLM KV blocks of 16 tokens (Kwon et al. sec. 4.1): a 17-token sequence takes two blocks.
    assert paged_tokens(17) == 32 and paged_tokens(16) == 16


def test_weight_bytes_quantized():
    # Llama-2-7B, 6,738,415,616 parameters: fp16 13.5 GB; MXFP4 at 4.25 bits (OCP MX v1.0) 3.58 GB.
    n = 6_738_415_616
    assert weight_bytes(n, "fp16") / GB == pytest.approx(13.48, abs=0.005)
    assert weight_bytes(n, "mxfp4") == pytest.approx(n * 4.25 / 8)
    assert weight_bytes(n, "int4-g128", tp=2) == pytest.approx(n * 4.125 / 16)


def test_capacity_fills_the_reserved_budget():
    # vLLM reserves gpu_memory_utilization (0.9) of HBM; the KV budget is what weights etc. leave.
    per_tok = kv_bytes_per_token(32, 32, 128, "fp16")
    mem = inference_memory(params=6.74e9, kv_bytes_per_token_per_gpu=per_tok, hidden=4096, ffn_hidden=11008,
                           vocab=32000, seq_len=4096, batch=1)
    cap = kv_capacity(80 * GiB, memory=mem, kv_bytes_per_token_per_gpu=per_tok, seq_len=4096)
    used = 0.9 * 80 * GiB - (mem.total_bytes - mem.kv_cache_bytes)
    assert cap.kv_budget_bytes == pytest.approx(used)
    assert cap.tokens * per_tok <= used < (cap.tokens + 1) * per_tok
    assert cap.sequences == cap.tokens // 4096
    assert mem.kv_cache_bytes == pytest.approx(4096 * per_tok)


@pytest.mark.parametrize("call, name", [
    (lambda: kv_bytes_per_token(0, 8, 128), "layers"),
    (lambda: kv_bytes_per_token(32, 8, 128, "fp12"), "dtype"),
    (lambda: weight_bytes(-1, "bf16"), "params"),
    (lambda: paged_tokens(100, block_tokens=0), "block_tokens"),
    (lambda: kv_bytes_per_token(32, 8, 128, tp=0), "tp"),
])
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()

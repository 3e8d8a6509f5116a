"""Hybrid Mamba-2 / attention models in training, layer kind by layer kind (issue 50, item 2).

Nemotron-H 8B (nvidia/Nemotron-H-8B-Base-8K config.json, tests/test_models_hybrid.py: 52 layers,
24 Mamba-2, 4 attention, 24 squared-ReLU MLP blocks; hidden h = 4096, Mamba-2 H = 128 heads of
P = 64 (d = 8192), G = 8 groups, state N = 128, convolution K = 4; attention 32 heads, 8 KV
heads of 128; MLP 21504; vocabulary 131072, untied). Published size: 8 B (arXiv:2504.03624).
The numbers below are worked by hand from those widths.
"""

import math

import numpy as np
import pytest

from aisize import models, training
from aisize.training.dims import model_dims
from aisize.training.memory_inputs import transformer_memory_inputs
from aisize.memory.activations import layer_bytes_core
from test_models_hybrid import H8B, NANO

h, d, G, N, H, P, K = 4096, 8192, 8, 128, 128, 64, 4
CONV = d + 2 * G * N  # x, B, C through the convolution: 10240
# in_proj h x (z, x, B, C, dt), conv (weights + bias), dt_bias/A_log/D, gated norm, out_proj, the block's RMSNorm
MAMBA_PARAMS = h * (2 * d + 2 * G * N + H) + CONV * (K + 1) + 3 * H + d + d * h + h
ATTN_PARAMS = 2 * h * 32 * 128 + 2 * h * 8 * 128 + h  # q, o; k, v; the block's RMSNorm
MLP_PARAMS = 2 * h * 21504 + h  # up, down (squared ReLU: no gate); RMSNorm


@pytest.fixture(scope="module")
def h8b():
    return models.from_hf_config(H8B)


def test_parameters_by_layer_kind_add_up_to_the_published_8b(h8b):
    kinds = {b.kind: b for b in models.block_params(h8b)}
    assert MAMBA_PARAMS == 109_640_064 and kinds["mamba"].params == MAMBA_PARAMS
    assert kinds["attention"].params == ATTN_PARAMS == 41_947_136
    assert kinds["mlp"].params == MLP_PARAMS == 176_164_864
    assert [(k, kinds[k].layers) for k in ("attention", "mamba", "mlp")] == [("attention", 4), ("mamba", 24), ("mlp", 24)]
    total = 24 * MAMBA_PARAMS + 4 * ATTN_PARAMS + 24 * MLP_PARAMS + 2 * 131072 * h + h  # + embedding, head, final norm
    assert total == models.params(h8b).total == 8_100_852_736
    assert total == pytest.approx(8e9, rel=0.02)


def test_block_params_add_up_for_transformers_moe_mla_and_latentless_hybrid_moe():
    for m in ("llama-3-8b", "mixtral-8x7b", "deepseek-v3", "llama-4-maverick", models.from_hf_config(NANO)):
        m = models.resolve(m)
        pc, blocks = models.params(m), models.block_params(m)
        final = 2 * m.hidden if m.norm == "layernorm" else m.hidden
        assert sum(b.layers * b.params for b in blocks) + pc.embedding + pc.head + final == pc.total
        assert sum(b.layers * b.active for b in blocks) + pc.embedding + pc.head + final == pc.active


def test_interleaved_dense_and_moe_layers_are_counted_per_layer():
    # Llama 4 Maverick: MoE every other layer (interleave_moe_layer_step 2), dense MLPs between
    m = models.resolve("llama-4-maverick")
    kinds = {b.kind: b.layers for b in models.block_params(m)}
    assert kinds == {"attention": 48, "mlp": 24, "moe": 24}
    # Nemotron 3 Nano: 23 Mamba-2, 6 attention, 23 MoE blocks, no dense MLP
    nano = {b.kind: b.layers for b in models.block_params(models.from_hf_config(NANO))}
    assert nano == {"attention": 6, "mamba": 23, "moe": 23}


def test_mla_attention_block_in_training():
    # DeepSeek-V3 (arXiv:2412.19437 sec. 2.1): h 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128,
    # rope 64, v 128: q_a + q_b + kv_a + kv_b + o + the latents' norms + the block's RMSNorm
    mla = 7168 * 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 * 128 * 256 + 128 * 128 * 7168 + 1536 + 512 + 7168
    attn = next(k for k in training.layer_kinds("deepseek-v3", seq_len=4096) if k.kind == "attention")
    assert attn.params == mla == 187_114_496
    # forward: 2 per weight + PaLM's 4·H·Q·s with H·Q = 128 x (192 + 128) / 2
    assert attn.forward_flops_per_token == 2 * mla + 4 * 128 * 160 * 4096


def test_one_mamba2_layer_flops_per_token_by_hand(h8b):
    # SSD scan, chunk Q = 128 (arXiv:2405.21060 sec. 6): C·Bᵀ 2QNG, (C·Bᵀ)x 2QPH, chunk states + read-out 4NPH
    scan = 2 * 128 * N * G + 2 * 128 * P * H + 4 * N * P * H
    assert scan == 262_144 + 2_097_152 + 4_194_304 == 6_553_600
    assert models.mamba_scan_flops_per_token(h8b, 128) == scan
    mamba = next(k for k in training.layer_kinds(h8b, seq_len=8192) if k.kind == "mamba")
    assert mamba.forward_flops_per_token == 2 * MAMBA_PARAMS + scan == 225_833_728
    assert mamba.training_flops_per_token == 6 * MAMBA_PARAMS + 3 * scan == 677_501_184


def test_model_flops_sum_the_layer_kinds(h8b):
    s = 8192
    kinds = training.layer_kinds(h8b, seq_len=s)
    pc = models.params(h8b)
    by_hand = sum(k.layers * k.training_flops_per_token for k in kinds) + 6 * (pc.embedding + pc.head + h)
    d = model_dims(h8b)
    assert training.model_flops_per_token(d, s) == pytest.approx(by_hand, rel=1e-12)
    # the scans are 24 x 3 x 6.55 MFLOP = 0.47 GFLOP of 49.2 GFLOP per token
    assert training.model_flops_per_token(d, s) - (6 * pc.active + 12 * 4 * 4096 * s) == pytest.approx(24 * 3 * 6_553_600)
    # full recompute runs the scans forward once more
    assert (training.model_flops_per_token(d, s, "full") - training.model_flops_per_token(d, s, "selective")
            == pytest.approx(2 * pc.active + 24 * 6_553_600))


def test_one_mamba2_layer_activation_bytes_by_hand(h8b):
    # Megatron-LM's memory-efficient mixer saves z, x, B, C, dt (2d + 2GN + H), the ungated scan
    # output (d), the gated norm's input (d) and fp32 rstd per group (4G B), out_proj's input (d);
    # the block keeps its RMSNorm input and in_proj input (2h + 2h); 16-bit
    mixer = 2 * (2 * d + 2 * G * N + H + 3 * d) + 4 * G
    assert mixer == 86_304 and training.mamba_saved_bytes_per_token(model_dims(h8b)) == mixer
    kinds = {k.kind: k for k in training.layer_kinds(h8b, seq_len=8192)}
    assert kinds["mamba"].activation_bytes_per_token == 4 * h + mixer == 102_688
    # one layer, one 8192-token sequence: 841 MB; TP 8 with sequence parallelism divides all of it
    assert kinds["mamba"].activation_bytes_per_token * 8192 == pytest.approx(841.2e6, rel=1e-3)
    tp8 = {k.kind: k for k in training.layer_kinds(h8b, seq_len=8192, tensor_parallel=8)}
    assert tp8["mamba"].activation_bytes_per_token == (4 * h + mixer) / 8
    # attention: Q, K, V, core output (4·4096 + 2·2·1024) + log-sum-exp 4 x 32 heads; MLP: its ReLU² output
    assert kinds["attention"].activation_bytes_per_token == 4 * h + 4 * 4096 + 4 * 1024 + 128
    assert kinds["mlp"].activation_bytes_per_token == 4 * h + 2 * 21504


def test_layer_kinds_match_the_memory_model(h8b):
    """The layers' activations in training memory (Megatron kernels, no recompute) are the layer kinds' sum."""
    s, t = 8192, 4
    inputs = transformer_memory_inputs(h8b, te=False)
    per_layer = layer_bytes_core(inputs["constants"], s, 1, h, 32, t, True, 0)
    kinds = training.layer_kinds(h8b, seq_len=s, tensor_parallel=t)
    assert 52 * per_layer == pytest.approx(s * sum(k.layers * k.activation_bytes_per_token for k in kinds), rel=1e-12)


def test_end_to_end_estimate_on_h100(h8b):
    r = training.estimate(h8b, "h100-sxm", gpus=8, micro_batch=1, global_batch=64, seq_len=8192,
                          framework="megatron", recompute="none")
    assert all(math.isfinite(x) and x > 0 for x in (r.tokens_per_s, r.tokens_per_s_per_gpu, r.mfu, r.peak_memory_bytes))
    assert 0.05 < r.mfu < 0.8 and r.fits
    # MFU counts the scans: model FLOPs per token x tokens/s / (GPUs x peak)
    flops = training.model_flops_per_token(model_dims(h8b), 8192)
    assert r.step.model_flops / r.step.tokens == pytest.approx(flops)
    # TP 8 (the 8 groups) is allowed and splits the Mamba-2 weights with the rest
    tp8 = training.estimate(h8b, "h100-sxm", gpus=8, tensor_parallel=8, micro_batch=1, global_batch=64,
                            seq_len=8192, framework="megatron", recompute="none")
    assert tp8.memory.weights_bytes == pytest.approx(r.memory.weights_bytes / 8, rel=0.05)
    assert np.isfinite(tp8.tokens_per_s_per_gpu)


def test_tp_must_divide_the_mamba_heads_and_groups(h8b):
    kw = dict(micro_batch=1, global_batch=64, seq_len=8192, framework="megatron")
    with pytest.raises(ValueError, match=r"tensor_parallel=16 .* 128 Mamba-2 heads and the 8 Mamba-2 groups"):
        training.estimate(h8b, "h100-sxm", gpus=16, tensor_parallel=16, **kw)
    with pytest.raises(ValueError, match="tensor_parallel=16"):
        training.layer_kinds(h8b, seq_len=8192, tensor_parallel=16)
    # CP splits each TP rank's Mamba-2 heads (128 / 8 = 16 heads): CP 32 cannot
    with pytest.raises(ValueError, match=r"context_parallel=32 .* 16 Mamba-2 heads per TP rank"):
        training.estimate(h8b, "b200", gpus=256, tensor_parallel=8, context_parallel=32, **kw)
    frame = training.search_layouts(h8b, "b200", 16, global_batch=64, seq_len=8192, top=50)
    assert set(frame["tp"]) <= {1, 2, 4, 8}
